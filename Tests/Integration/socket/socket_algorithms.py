"""Socket suite: the COSE algorithms beyond ES256 (-7) and EdDSA (-8) — RS256 (-257) and PS256 (-37), ES384 (-35, P-384, SHA-384),
ES512 (-36, P-521, SHA-512) and ES256K (-47, secp256k1, SHA-256), on a key of their own.

getInfo lists the algorithms in the key's order of preference; each new algorithm registers through
Fido2Client + Fido2Server (packed batch attestation, alg -7, whatever the credential's algorithm) as a
non-discoverable and as a discoverable credential, and every assertion is verified twice: by
Fido2Server and by `cryptography` alone. makeCredential takes the first pubKeyCredParams entry the key
supports (none → CTAP2_ERR_UNSUPPORTED_ALGORITHM); a discoverable ES512 credential survives a restart
and credential management lists it with its COSE key."""

from collections import namedtuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from fido2.cose import ES256, ES256K, ES384, ES512, PS256, RS256, CoseKey

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports (and ../support on the path)
from flood_support import CMD_CBOR, CMD_ERROR, CMD_KEEPALIVE, CMD_PING, allocate_channels, fragments, init_packet, read_message

# alg → python-fido2 class, COSE crv, cryptography curve and hash, x/y length, non-discoverable credential ID length
EcAlgorithm = namedtuple("EcAlgorithm", "name cose_class crv curve hash size id_length")
EC_ALGORITHMS = {
    -35: EcAlgorithm("ES384", ES384, 2, ec.SECP384R1(), hashes.SHA384(), 48, 80),
    -36: EcAlgorithm("ES512", ES512, 3, ec.SECP521R1(), hashes.SHA512(), 66, 98),
    -47: EcAlgorithm("ES256K", ES256K, 8, ec.SECP256K1(), hashes.SHA256(), 32, 64),
}
RS512 = -259  # a COSE algorithm the key never offers
RSA_PADDINGS = {  # alg → python-fido2 class and the padding `cryptography` verifies with (RFC 8230: salt = hash length)
    -257: (RS256, lambda: padding.PKCS1v15()),
    -37: (PS256, lambda: padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32)),
}


def key_params(algorithms):
    return [{"type": "public-key", "alg": alg} for alg in algorithms]


def check_ec_public_key(cose, alg):
    """`cose` is alg's COSE EC2 key: python-fido2 class, kty 2, alg, crv, x and y of the curve's size, a point
    on the curve. Returns it as a `cryptography` public key."""
    spec = EC_ALGORITHMS[alg]
    assert type(cose) is spec.cose_class, f"{type(cose).__name__}, expected {spec.name}: {dict(cose)}"
    assert cose[1] == 2 and cose[3] == alg and cose[-1] == spec.crv, dict(cose)
    assert len(cose[-2]) == len(cose[-3]) == spec.size, (len(cose[-2]), len(cose[-3]), spec.size)
    return ec.EllipticCurvePublicKey.from_encoded_point(spec.curve, b"\x04" + cose[-2] + cose[-3])


def verify_with_cryptography(cose, response):
    """The assertion's ECDSA signature over authData ‖ SHA-256(clientDataJSON), checked with `cryptography`
    directly (curve and hash from the table above, not from python-fido2); RSA with the padding of RSA_PADDINGS."""
    assertion = response.response
    message = bytes(assertion.authenticator_data) + hashlib.sha256(bytes(assertion.client_data)).digest()
    if cose[1] == 3:
        check_rsa_public_key(cose, cose[3]).verify(assertion.signature, message, RSA_PADDINGS[cose[3]][1](), hashes.SHA256())
        return
    public_key = check_ec_public_key(cose, cose[3])
    public_key.verify(assertion.signature, message, ec.ECDSA(EC_ALGORITHMS[cose[3]].hash))


def check_rsa_public_key(cose, alg):
    """`cose` is alg's COSE RSA key (kty 3, a 2048-bit n, e 65537); returns it as a `cryptography` public key."""
    assert type(cose) is RSA_PADDINGS[alg][0], f"{type(cose).__name__}: {dict(cose)}"
    assert cose[1] == 3 and cose[3] == alg and len(cose[-1]) == 256 and cose[-1][0] >= 0x80 and cose[-2] == b"\x01\x00\x01", \
        {k: (v.hex()[:16] if isinstance(v, bytes) else v) for k, v in dict(cose).items()}
    return rsa.RSAPublicNumbers(int.from_bytes(cose[-2], "big"), int.from_bytes(cose[-1], "big")).public_key()


def register_with(device, rp_id, algorithms, resident):
    """A WebAuthn registration offering only `algorithms`; Fido2Server verifies the packed batch attestation,
    which is ES256 whatever the credential's algorithm. Returns the server and the attested credential."""
    server = server_for(rp_id=rp_id, algorithms=algorithms)
    user = {"id": os.urandom(16), "name": f"user-{os.urandom(3).hex()}@{rp_id}", "displayName": "Algorithm User"}
    options, state = server.register_begin(
        user, resident_key_requirement=ResidentKeyRequirement.REQUIRED if resident else ResidentKeyRequirement.DISCOURAGED,
        user_verification=UserVerificationRequirement.DISCOURAGED)
    registration = client_for(device, origin=f"https://{rp_id}").make_credential(options.public_key)
    auth_data = server.register_complete(state, registration)
    attestation = registration.response.attestation_object
    assert attestation.att_stmt["alg"] == -7, f"attestation alg {attestation.att_stmt['alg']}, expected -7"
    return server, auth_data.credential_data


def sign_in_with(device, server, credential, discoverable):
    """A sign-in through `server` (empty allowCredentials if discoverable, else [credential]): exactly this
    credential answers, Fido2Server verifies the assertion, and so does `cryptography`."""
    client = client_for(device, origin=f"https://{server.rp.id}")
    request, state = server.authenticate_begin(None if discoverable else [credential],
                                               user_verification=UserVerificationRequirement.DISCOURAGED)
    selection = client.get_assertion(request.public_key)
    assert len(selection.get_assertions()) == 1, f"{len(selection.get_assertions())} credentials answered"
    response = selection.get_response(0)
    assert response.raw_id == credential.credential_id, "the registered credential answered"
    server.authenticate_complete(state, [credential], response)
    verify_with_cryptography(credential.public_key, response)


@check("getInfo algorithms of a key started without --algorithms is exactly ES256 (-7), EdDSA (-8), ES384 (-35), "
       "ES512 (-36), ES256K (-47), all public-key, in that order (no RSA unless named); [-257, -35] → ES384")
def test_algorithm_list(key):
    ctap = Ctap2(key.device())
    assert ctap.info.algorithms == key_params([-7, -8, -35, -36, -47]), ctap.info.algorithms
    created = ctap.make_credential(os.urandom(32), {"id": "default.algorithms.example", "name": "Default"},
                                   {"id": os.urandom(8), "name": "default"}, key_params([-257, -35]))
    assert type(created.auth_data.credential_data.public_key) is ES384


@check("serve --algorithms ES256,RS256,PS256: getInfo [-7, -257, -37]; RS256 and PS256 via Fido2Client + Fido2Server: "
       "2048-bit COSE RSA keys (e 65537), 32-byte credential IDs (the key is stored, even for a non-discoverable "
       "credential); assertions by allowList and discoverable verified by Fido2Server and by cryptography (PKCS#1 v1.5 / "
       "PSS with a 32-byte salt); each padding fails the other's check")
def test_algorithm_rsa(key):
    assert Ctap2(key.device()).info.algorithms == key_params([-7, -257, -37])
    for alg, (cose_class, _) in RSA_PADDINGS.items():
        rp_id = f"{cose_class.__name__.lower()}.algorithms.example"
        device = key.device()
        try:
            for resident in (False, True):
                server, credential = register_with(device, rp_id, [alg], resident=resident)
                check_rsa_public_key(credential.public_key, alg)
                assert len(credential.credential_id) == 32, len(credential.credential_id)
                if resident:
                    sign_in_with(device, server, credential, discoverable=True)
                else:
                    sign_in_with(device, server, credential, discoverable=False)
                    # The same assertion does not verify under the other padding.
                    client = client_for(device, origin=f"https://{rp_id}")
                    request, _ = server.authenticate_begin([credential], user_verification=UserVerificationRequirement.DISCOURAGED)
                    response = client.get_assertion(request.public_key).get_response(0)
                    other = -37 if alg == -257 else -257
                    public = check_rsa_public_key(credential.public_key, alg)
                    message = bytes(response.response.authenticator_data) + hashlib.sha256(bytes(response.response.client_data)).digest()
                    try:
                        public.verify(response.response.signature, message, RSA_PADDINGS[other][1](), hashes.SHA256())
                    except InvalidSignature:
                        pass
                    else:
                        raise AssertionError(f"a {cose_class.__name__} signature verified with the other padding")
        finally:
            device.close()


def registration_check(alg):
    """The check for one of EC_ALGORITHMS: a non-discoverable and a discoverable credential, each registered
    and signed in with; on an RP of its own, so that a discoverable sign-in finds exactly one credential."""
    spec = EC_ALGORITHMS[alg]

    @check(f"{spec.name} ({alg}) via Fido2Client + Fido2Server: packed attestation (alg -7) verified; COSE EC2 key, "
           f"crv {spec.crv}, {spec.size}-byte x and y; {spec.id_length}-byte non-discoverable credential ID; assertions "
           f"for it and for a discoverable one (empty allowCredentials) verified by Fido2Server and by cryptography "
           f"ECDSA-{spec.hash.name.upper()}")
    def test_algorithm(key):
        rp_id = f"{spec.name.lower()}.algorithms.example"
        device = key.device()
        try:
            server, credential = register_with(device, rp_id, [alg], resident=False)
            check_ec_public_key(credential.public_key, alg)
            assert len(credential.credential_id) == spec.id_length, (len(credential.credential_id), spec.id_length)
            sign_in_with(device, server, credential, discoverable=False)
            server, credential = register_with(device, rp_id, [alg], resident=True)
            check_ec_public_key(credential.public_key, alg)
            sign_in_with(device, server, credential, discoverable=True)
        finally:
            device.close()

    return test_algorithm


test_algorithm_es384, test_algorithm_es512, test_algorithm_es256k = (registration_check(alg) for alg in EC_ALGORITHMS)


@check("makeCredential takes the client's first supported pubKeyCredParams entry: [-47, -7] → ES256K, [-7, -47] → ES256, "
       "[-259 (RS512), -35] → ES384, each with verified packed attestation; [-259] alone → CTAP2_ERR_UNSUPPORTED_ALGORITHM (0x26)")
def test_algorithm_preference(key):
    ctap = Ctap2(key.device())
    rp = {"id": "preference.algorithms.example", "name": "Preference"}
    for offered, expected in (([-47, -7], ES256K), ([-7, -47], ES256), ([RS512, -35], ES384)):
        client_data_hash = os.urandom(32)
        created = ctap.make_credential(client_data_hash, rp, {"id": os.urandom(8), "name": "pref"}, key_params(offered))
        verify_packed_attestation(created, client_data_hash)
        public_key = created.auth_data.credential_data.public_key
        assert type(public_key) is expected, f"{offered} gave {type(public_key).__name__}: {dict(public_key)}"
        if expected.ALGORITHM in EC_ALGORITHMS:
            check_ec_public_key(public_key, expected.ALGORITHM)
    expect_ctap_error(CtapError.ERR.UNSUPPORTED_ALGORITHM, ctap.make_credential, os.urandom(32), rp,
                      {"id": os.urandom(8), "name": "rs512"}, key_params([RS512]))


@check("a discoverable ES512 credential survives a restart of the key on its store and still signs (Fido2Server and "
       "cryptography); with a PIN set, credential management lists it alone for its RP with its attested COSE key: alg -36, crv 3")
def test_es512_restart_and_credential_management(key):
    device = key.device()
    try:
        server, credential = register_with(device, "durable.algorithms.example", [-36], resident=True)
    finally:
        device.close()
    assert key.stop() == 0, key.log()
    key.start()
    device = key.device()
    try:
        sign_in_with(device, server, credential, discoverable=True)
        ctap = Ctap2(device)
        client_pin = ClientPin(ctap)
        client_pin.set_pin(CTAP21_PIN)
        credman = CredentialManagement(ctap, client_pin.protocol,
                                       client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.CREDENTIAL_MGMT))
        listed = credman.enumerate_creds(hashlib.sha256(b"durable.algorithms.example").digest())
        assert len(listed) == 1, listed
        entry = listed[0]
        assert entry[CredentialManagement.RESULT.CREDENTIAL_ID]["id"] == credential.credential_id
        listed_key = entry[CredentialManagement.RESULT.PUBLIC_KEY]
        assert listed_key[3] == -36 and listed_key[-1] == 3, listed_key
        check_ec_public_key(CoseKey.parse(listed_key), -36)
        assert listed_key == credential.public_key, "the COSE key as attested"
    finally:
        device.close()


@check("an RS256 makeCredential (an RSA key to make: 50 ms to a second) runs off the key's poll loop with --presence "
       "auto: another client's PING, sent after it, is answered at once (ERR_CHANNEL_BUSY: the key is in a transaction), "
       "before the makeCredential's answer; that then succeeds")
def test_rsa_keygen_does_not_stall(key):
    maker, pinger = raw_socket(key), raw_socket(key)
    try:
        (maker_cid,), (pinger_cid,) = allocate_channels(maker, 1), allocate_channels(pinger, 1)
        request = b"\x01" + cbor.encode({1: os.urandom(32), 2: {"id": "stall.algorithms.example"},
                                          3: {"id": os.urandom(8), "name": "stall"}, 4: key_params([-257])})
        for packet in fragments(maker_cid, CMD_CBOR, request):
            maker.send(packet)
        time.sleep(0.002)   # the key has the request before the PING
        token = os.urandom(16)
        pinger.send(init_packet(pinger_cid, CMD_PING, len(token), token))
        # CTAPHID runs one transaction at a time: another channel is told the key is busy, at once.
        # (Had the loop made the key itself, the PING would have waited and then been echoed.)
        assert read_message(pinger) == (pinger_cid, CMD_ERROR, b"\x06")
        # What the maker has been sent by then: KEEPALIVEs at most, not the answer (had the loop made
        # the key itself, the answer would have gone out before the PING's).
        maker.setblocking(False)
        early = []
        try:
            while True:
                early.append(maker.recv(65))
        except BlockingIOError:
            pass
        maker.setblocking(True)
        maker.settimeout(30)
        assert all(packet[4] == 0x80 | CMD_KEEPALIVE for packet in early), \
            f"the makeCredential was answered before the PING: {[packet[:8].hex() for packet in early]}"
        while True:
            cid, command, payload = read_message(maker)
            if command != CMD_KEEPALIVE:
                break
        assert (cid, command, payload[:1]) == (maker_cid, CMD_CBOR, b"\x00"), (hex(cid), command, payload[:1].hex())
    finally:
        maker.close()
        pinger.close()


@check("serve --algorithms ES384,ES256: getInfo lists exactly [-35, -7]; [-8, -7] → ES256, [-7, -35] → ES256, "
       "[-36, -47, -8] → CTAP2_ERR_UNSUPPORTED_ALGORITHM; a bad list stops the key before it serves, naming the entry")
def test_limited_algorithms(key):
    ctap = Ctap2(key.device())
    assert [entry["alg"] for entry in ctap.info.algorithms] == [-35, -7], ctap.info.algorithms
    rp = {"id": "limited.algorithms.example", "name": "Limited"}
    for offered, expected in (([-8, -7], ES256), ([-7, -35], ES256), ([-8, -35], ES384)):
        created = ctap.make_credential(os.urandom(32), rp, {"id": os.urandom(8), "name": "lim"}, key_params(offered))
        public_key = created.auth_data.credential_data.public_key
        assert type(public_key) is expected, f"{offered} gave {type(public_key).__name__}"
    expect_ctap_error(CtapError.ERR.UNSUPPORTED_ALGORITHM, ctap.make_credential, os.urandom(32), rp,
                      {"id": os.urandom(8), "name": "none"}, key_params([-36, -47, -8]))
    refused = subprocess.run([BINARY, "serve", "--transport", f"socket:{key.socket_path}.bad", "--presence", "auto",
                              "--store", key.store + "-bad", "--algorithms", "ES256,RS1"],
                             capture_output=True, text=True, timeout=10)
    assert refused.returncode != 0 and "unknown algorithm 'RS1'" in refused.stderr, (refused.returncode, refused.stderr)
    assert not os.path.exists(key.socket_path + ".bad"), "no socket for a key that did not start"


def run_on_own_key(key, tests):
    """`tests` on `key`, started here and stopped after, whose exit status must be 0."""
    key.start()
    try:
        for test in tests:
            test(key)
    finally:
        key.stop()
    if key.process.returncode != 0:
        RESULTS.append((f"{key.name} key exited cleanly", False))
        print(f"FAIL  {key.name} key exit status", key.process.returncode, key.log())


def test_algorithms():
    """The algorithm checks, on keys of their own; the last check on the first key restarts it and sets a PIN."""
    run_on_own_key(Key("algorithms"), (test_algorithm_list, test_algorithm_es384, test_algorithm_es512, test_algorithm_es256k,
                                       test_algorithm_preference, test_es512_restart_and_credential_management))
    run_on_own_key(Key("rsa-algorithms", extra=["--algorithms", "ES256,RS256,PS256"]), (test_algorithm_rsa, test_rsa_keygen_does_not_stall))
    run_on_own_key(Key("limited-algorithms", extra=["--algorithms", "ES384,ES256"]), (test_limited_algorithms,))
