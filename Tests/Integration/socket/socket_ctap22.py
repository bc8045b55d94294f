"""Socket suite: CTAP 2.2 behaviour through python-fido2 2.2.1 — the persistentPinUvAuthToken (pcmr,
perCredMgmtRO, encIdentifier) across restarts, the thirdPartyPayment extension through Fido2Client, PRF
with hmac-secret-mc (outputs at registration), and
enterprise attestation (Config.enable_enterprise_attestation, makeCredential enterpriseAttestation 1 and
2, epAtt, a chain that identifies the installation), on keys of their own (`serve --enterprise-rp`)."""

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from fido2.ctap2.extensions import ThirdPartyPaymentExtension
from fido2.utils import websafe_decode
from fido2.webauthn import PublicKeyCredentialDescriptor

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports

PCMR = ClientPin.PERMISSION.PERSISTENT_CREDENTIAL_MGMT
ENTERPRISE_RP = "corp.example"


def persistent_credman(key, token):
    """A CredentialManagement session on a fresh connection that authenticates with `token`."""
    ctap = Ctap2(key.device())
    return ctap, CredentialManagement(ctap, ClientPin(ctap).protocol, token)


@check("persistentPinUvAuthToken: getInfo perCredMgmtRO; pcmr with cm → CTAP2_ERR_UNAUTHORIZED_PERMISSION; pcmr alone (PIN) "
       "gives a token that lists the key's passkeys after a SIGHUP power cycle and after a restart of the process, the same "
       "token when asked again; delete with it → CTAP2_ERR_PIN_AUTH_INVALID and the credential stays; encIdentifier "
       "decrypts (Info.get_identifier) to the same 16 bytes before and after the restart; CTAP 2.3's encCredStoreState "
       "(Info.get_cred_store_state) too, until a passkey is made; a PIN change ends the token")
def test_ctap22_persistent_token(key):
    ctap, client_pin = ctap21_session(key)
    assert ctap.info.options.get("perCredMgmtRO") is True, ctap.info.options
    assert ctap.info.enc_identifier is None, "no encIdentifier before a persistent token exists"
    client_pin.set_pin(CTAP21_PIN)
    for name in ("ada", "grace"):
        ctap21_make_resident(ctap, client_pin, {"id": "persistent.example", "name": "Persistent"},
                             {"id": name.encode(), "name": name})
    expect_ctap_error(CtapError.ERR.UNAUTHORIZED_PERMISSION, client_pin.get_pin_token, CTAP21_PIN,
                      PCMR | ClientPin.PERMISSION.CREDENTIAL_MGMT)
    token = client_pin.get_pin_token(CTAP21_PIN, PCMR)
    assert client_pin.get_pin_token(CTAP21_PIN, PCMR, "ignored.example") == token, "asking again gives the same token"
    identifier = Ctap2(key.device()).info.get_identifier(token)
    assert identifier is not None and len(identifier) == 16, identifier
    state = Ctap2(key.device()).info.get_cred_store_state(token)
    assert state is not None and len(state) == 16 and state != identifier, state

    key.power_cycle()
    _, credman = persistent_credman(key, token)
    assert credman.get_metadata()[CredentialManagement.RESULT.EXISTING_CRED_COUNT] == 2
    assert key.stop() == 0, key.log()
    key.start()
    ctap, credman = persistent_credman(key, token)
    assert ctap.info.get_identifier(token) == identifier, "the same key, told only to the token's holder"
    assert ctap.info.get_cred_store_state(token) == state, "the same credentials: the same state, across a restart"
    rps = credman.enumerate_rps()
    assert [rp[CredentialManagement.RESULT.RP]["id"] for rp in rps] == ["persistent.example"], rps
    credentials = credman.enumerate_creds(hashlib.sha256(b"persistent.example").digest())
    assert sorted(c[CredentialManagement.RESULT.USER]["name"] for c in credentials) == ["ada", "grace"], credentials
    victim = credentials[0][CredentialManagement.RESULT.CREDENTIAL_ID]
    expect_ctap_error(CtapError.ERR.PIN_AUTH_INVALID, credman.delete_cred, victim)
    assert credman.get_metadata()[CredentialManagement.RESULT.EXISTING_CRED_COUNT] == 2, "read only: nothing deleted"
    assert Ctap2(key.device()).info.get_cred_store_state(token) == state, "reads and refusals leave the state"
    ctap21_make_resident(ctap, ClientPin(ctap), {"id": "persistent.example", "name": "Persistent"},
                         {"id": b"linus", "name": "linus"})
    assert Ctap2(key.device()).info.get_cred_store_state(token) != state, "a passkey made: another state"

    ClientPin(ctap).change_pin(CTAP21_PIN, CTAP21_PIN[::-1])
    expect_ctap_error(CtapError.ERR.PIN_AUTH_INVALID, credman.get_metadata)
    ClientPin(ctap).change_pin(CTAP21_PIN[::-1], CTAP21_PIN)


def payment_inputs():
    return {"payment": {"isPayment": True}}


@check("thirdPartyPayment through Fido2Client (ThirdPartyPaymentExtension, payment.isPayment): getInfo lists it; a payment "
       "credential's registration says thirdPartyPayment true in authData (Fido2Server verifies it) and its assertions say "
       "true, an ordinary credential's false; after a restart too; credential management marks the discoverable one (0x0C)")
def test_ctap22_third_party_payment(key):
    device = key.device()
    try:
        assert "thirdPartyPayment" in Ctap2(device).info.extensions
        client = Fido2Client(device, client_data_collector=DefaultClientDataCollector("https://bank.example"),
                             user_interaction=Ctap21PinInteraction(CTAP21_PIN), extensions=[ThirdPartyPaymentExtension()])
        server = server_for(rp_id="bank.example")
        credentials = {}
        for name, payment, resident in (("card", True, True), ("plain", False, False)):
            options, state = server.register_begin(
                {"id": name.encode(), "name": name}, user_verification=UserVerificationRequirement.DISCOURAGED,
                resident_key_requirement=ResidentKeyRequirement.REQUIRED if resident else ResidentKeyRequirement.DISCOURAGED)
            public_key = dict(options.public_key)
            if payment:
                public_key["extensions"] = payment_inputs()
            registration = client.make_credential(public_key)
            auth_data = server.register_complete(state, registration)
            expected = {"thirdPartyPayment": True} if payment else None
            assert auth_data.extensions == expected, auth_data.extensions
            credentials[name] = auth_data.credential_data
    finally:
        device.close()
    key.stop()
    key.start()
    device = key.device()
    try:
        client = Fido2Client(device, client_data_collector=DefaultClientDataCollector("https://bank.example"),
                             user_interaction=Ctap21PinInteraction(CTAP21_PIN), extensions=[ThirdPartyPaymentExtension()])
        for name, expected in (("card", True), ("plain", False)):
            request, state = server.authenticate_begin([credentials[name]], user_verification=UserVerificationRequirement.DISCOURAGED)
            public_key = dict(request.public_key)
            public_key["extensions"] = payment_inputs()
            response = client.get_assertion(public_key).get_response(0)
            server.authenticate_complete(state, [credentials[name]], response)
            extensions = response.response.authenticator_data.extensions
            assert extensions == {"thirdPartyPayment": expected}, (name, extensions)
        ctap, client_pin = ctap21_session(key)
        token = client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.CREDENTIAL_MGMT)
        listed = CredentialManagement(ctap, client_pin.protocol, token).enumerate_creds(hashlib.sha256(b"bank.example").digest())
        assert [c.get(CredentialManagement.RESULT.THIRD_PARTY_PAYMENT) for c in listed] == [True], listed
    finally:
        device.close()


@check("PRF through Fido2Client (hmac-secret-mc): prf.eval at registration gives 32-byte results at once; the same salt at "
       "sign-in gives the same output, another salt another, and both outputs come back together (UV required both times, "
       "so the same CredRandom)")
def test_ctap22_prf_at_registration(key):
    device = key.device()
    try:
        client = Fido2Client(device, client_data_collector=DefaultClientDataCollector("https://prf.example"),
                             user_interaction=Ctap21PinInteraction(CTAP21_PIN))
        server = server_for(rp_id="prf.example")
        first, second = hashlib.sha256(b"prf first").digest(), hashlib.sha256(b"prf second").digest()
        options, state = server.register_begin({"id": b"prf-user", "name": "prf"},
                                               resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                               user_verification=UserVerificationRequirement.REQUIRED)
        public_key = dict(options.public_key)
        public_key["extensions"] = {"prf": {"eval": {"first": first}}}
        registration = client.make_credential(public_key)
        credential = server.register_complete(state, registration).credential_data
        prf = registration.client_extension_results["prf"]
        assert prf["enabled"] is True, prf
        at_creation = prf["results"]["first"]   # base64url, as a browser's JSON gives it
        assert len(websafe_decode(at_creation)) == 32, at_creation

        request, state = server.authenticate_begin([credential], user_verification=UserVerificationRequirement.REQUIRED)
        public_key = dict(request.public_key)
        public_key["extensions"] = {"prf": {"eval": {"first": first, "second": second}}}
        response = client.get_assertion(public_key).get_response(0)
        server.authenticate_complete(state, [credential], response)
        results = response.client_extension_results["prf"]["results"]
        assert results["first"] == at_creation, "the same salt, the same output"
        assert len(websafe_decode(results["second"])) == 32 and results["second"] != at_creation
    finally:
        device.close()


def enterprise_make_credential(ctap, rp_id, value, token=None, protocol=None):
    client_data_hash = os.urandom(32)
    kwargs = {}
    if token is not None:
        kwargs = {"pin_uv_param": protocol.authenticate(token, client_data_hash), "pin_uv_protocol": protocol.VERSION}
    created = ctap.make_credential(client_data_hash, {"id": rp_id, "name": rp_id}, {"id": os.urandom(8), "name": "employee"},
                                   [{"type": "public-key", "alg": -7}], enterprise_attestation=value, **kwargs)
    return created, client_data_hash


def check_chain(created, client_data_hash):
    """x5c is [leaf, CA]: the CA signed the leaf, the leaf signed authData ‖ clientDataHash. Returns the leaf (DER)."""
    x5c = created.att_stmt["x5c"]
    assert len(x5c) == 2, f"{len(x5c)} certificates"
    leaf, ca = (x509.load_der_x509_certificate(der) for der in x5c)
    ca.public_key().verify(leaf.signature, leaf.tbs_certificate_bytes, ec.ECDSA(leaf.signature_hash_algorithm))
    leaf.public_key().verify(created.att_stmt["sig"], bytes(created.auth_data) + client_data_hash,
                             ec.ECDSA(leaf.signature_hash_algorithm))
    assert leaf.issuer == ca.subject
    return x5c[0]


@check("enterprise attestation: getInfo ep false and authenticatorConfigCommands [1, 2, 3]; makeCredential "
       "enterpriseAttestation before enabling → CTAP1_ERR_INVALID_PARAMETER; Config.enable_enterprise_attestation (acfg token) "
       "→ ep true; 1 for the configured RP and 2 for any RP → epAtt true and x5c [leaf, CA] verified with cryptography, not the "
       "batch leaf; 1 for another RP → no epAtt, the batch certificate; 3 → CTAP2_ERR_INVALID_OPTION; Fido2Client with "
       "attestation 'enterprise' and Fido2Server(ENTERPRISE) register; another store's chain differs; reset turns ep off")
def test_ctap22_enterprise_attestation(key):
    ctap, client_pin = ctap21_session(key)
    assert ctap.info.options.get("ep") is False, ctap.info.options
    assert ctap.info.authenticator_config_commands == [1, 2, 3], ctap.info.authenticator_config_commands
    mc_token = client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.MAKE_CREDENTIAL, ENTERPRISE_RP)
    expect_ctap_error(CtapError.ERR.INVALID_PARAMETER, enterprise_make_credential, ctap, ENTERPRISE_RP, 1, mc_token, client_pin.protocol)
    acfg = client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.AUTHENTICATOR_CFG)
    Config(ctap, client_pin.protocol, acfg).enable_enterprise_attestation()
    assert Ctap2(key.device()).info.options.get("ep") is True

    ordinary, ordinary_hash = enterprise_make_credential(ctap, "elsewhere.example", 1)
    assert ordinary.ep_att is None, ordinary.ep_att
    batch_leaf = ordinary.att_stmt["x5c"][0]
    assert len(ordinary.att_stmt["x5c"]) == 1
    leaves = set()
    for rp_id, value in ((ENTERPRISE_RP, 1), ("anything.example", 2)):
        created, client_data_hash = enterprise_make_credential(ctap, rp_id, value)
        assert created.ep_att is True, (rp_id, value, created.ep_att)
        assert created.fmt == "packed"
        leaves.add(check_chain(created, client_data_hash))
    assert len(leaves) == 1 and batch_leaf not in leaves, "one installation chain, not the shared batch certificate"
    expect_ctap_error(CtapError.ERR.INVALID_OPTION, enterprise_make_credential, ctap, ENTERPRISE_RP, 3)

    # A WebAuthn client asking for "enterprise" attestation (vendor-facilitated) and an RP that verifies it.
    server = server_for(rp_id=ENTERPRISE_RP, attestation=AttestationConveyancePreference.ENTERPRISE)
    options, state = server.register_begin({"id": b"employee", "name": "employee"},
                                           user_verification=UserVerificationRequirement.DISCOURAGED)
    client = Fido2Client(key.device(), client_data_collector=DefaultClientDataCollector(f"https://{ENTERPRISE_RP}"),
                         user_interaction=Ctap21PinInteraction(CTAP21_PIN))
    registration = client.make_credential(options.public_key)
    server.register_complete(state, registration)
    assert registration.response.attestation_object.att_stmt["x5c"][0] in leaves

    other = Key("ctap22-other", extra=["--enterprise-rp", ENTERPRISE_RP]).start()
    try:
        other_ctap = Ctap2(other.device())
        Config(other_ctap).enable_enterprise_attestation()   # no PIN on that key: config is open
        created, client_data_hash = enterprise_make_credential(other_ctap, "anything.example", 2)
        assert created.ep_att is True and check_chain(created, client_data_hash) not in leaves, "another installation, another chain"
    finally:
        other.stop()

    key.power_cycle()
    Ctap2(key.device()).reset()
    info = Ctap2(key.device()).info
    assert info.options.get("ep") is False and info.enc_identifier is None, info.options


def test_ctap22():
    """The CTAP 2.2 checks, on a key of their own (the last one resets it)."""
    key = Key("ctap22", extra=["--enterprise-rp", ENTERPRISE_RP]).start()
    try:
        for test in (test_ctap22_persistent_token, test_ctap22_third_party_payment, test_ctap22_prf_at_registration,
                     test_ctap22_enterprise_attestation):
            test(key)
    finally:
        key.stop()
    if key.process.returncode != 0:
        RESULTS.append(("ctap22 key exited cleanly", False))
        print("FAIL  ctap22 key exit status", key.process.returncode, key.log())
