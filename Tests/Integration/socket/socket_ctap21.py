"""Socket suite: CTAP 2.1 through python-fido2 — getInfo, setPIN, a Chrome-like passkey,
credential management, large blobs, authenticatorConfig, a key with a PIN from the start."""

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports

@check("getInfo advertises CTAP 2.1 and 2.3: FIDO_2_1 and FIDO_2_3, credMgmt (+ preview), authnrCfg, setMinPINLength, largeBlobs, alwaysUv off; "
       "and the CTAP 2.2 members attestationFormats, transportsForReset, pinComplexityPolicy, maxPINLength, "
       "authenticatorConfigCommands (enableEnterpriseAttestation, toggleAlwaysUv, setMinPINLength), perCredMgmtRO, ep false, "
       "thirdPartyPayment")
def test_get_info_ctap21(key):
    info = Ctap2(key.device()).info
    # CTAP 2.3's version string beside 2.1's (there is no FIDO_2_2); python-fido2 reads both.
    assert info.versions == ["U2F_V2", "FIDO_2_0", "FIDO_2_1", "FIDO_2_3"], info.versions
    for option in ("credMgmt", "credentialMgmtPreview", "authnrCfg", "setMinPINLength", "largeBlobs", "makeCredUvNotRqd"):
        assert info.options.get(option) is True, (option, info.options)
    assert info.options.get("alwaysUv") is False, info.options
    assert "largeBlobKey" in info.extensions and "minPinLength" in info.extensions, info.extensions
    assert info.max_large_blob is not None and info.max_large_blob >= 1024, info.max_large_blob
    assert info.max_rpids_for_min_pin is not None and info.max_rpids_for_min_pin >= 1
    # CTAP 2.2 members, read by python-fido2 2.2.1's Info.
    assert info.attestation_formats == ["packed", "none"], info.attestation_formats
    assert info.transports_for_reset == ["usb"], info.transports_for_reset
    assert info.pin_complexity_policy is False, info.pin_complexity_policy
    assert info.max_pin_length == 63, info.max_pin_length
    assert info.authenticator_config_commands == [1, 2, 3], info.authenticator_config_commands
    assert info.options.get("perCredMgmtRO") is True and info.options.get("ep") is False, info.options
    assert "thirdPartyPayment" in info.extensions, info.extensions


@check("ClientPin setPIN on a key of its own (the PIN checks below use it)")
def test_ctap21_set_pin(key):
    ctap, client_pin = ctap21_session(key)
    assert ctap.info.options.get("clientPin") is False
    client_pin.set_pin(CTAP21_PIN)
    assert Ctap2(key.device()).info.options.get("clientPin") is True
    assert client_pin.get_pin_retries()[0] == 8


@check("Chrome-like passkey: rk=required + uv=required makeCredential through Fido2Client with a PIN; "
       "getAssertion with an empty allowList returns the user's name")
def test_chrome_like_passkey(key):
    interaction = Ctap21PinInteraction(CTAP21_PIN)
    client = Fido2Client(key.device(), client_data_collector=DefaultClientDataCollector("https://passkey.example"),
                         user_interaction=interaction)
    server = Fido2Server({"id": "passkey.example", "name": "Passkey RP"}, attestation=AttestationConveyancePreference.DIRECT,
                         verify_attestation=verify_packed_attestation)
    user = {"id": os.urandom(16), "name": "pat@passkey.example", "displayName": "Pat Passkey"}
    options, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                           user_verification=UserVerificationRequirement.REQUIRED)
    registration = client.make_credential(options.public_key)
    auth_data = server.register_complete(state, registration)
    assert auth_data.is_user_verified() and auth_data.is_user_present()
    request, state = server.authenticate_begin(None, user_verification=UserVerificationRequirement.REQUIRED)
    assert not request.public_key.allow_credentials, "discoverable: no allowList"
    selection = client.get_assertion(request.public_key)
    assertions = selection.get_assertions()
    assert len(assertions) == 1, len(assertions)
    assert assertions[0].user["id"] == user["id"]
    assert assertions[0].user.get("name") == user["name"], assertions[0].user
    assert assertions[0].user.get("displayName") == user["displayName"], assertions[0].user
    server.authenticate_complete(state, [auth_data.credential_data], selection.get_response(0))
    assert len(interaction.requests) >= 2, interaction.requests


@check("credentialManagement via python-fido2 CredentialManagement: metadata, enumerate RPs and credentials, "
       "update_user_info, delete_cred; metadata, enumerations and subcommand 7 on 0x41 too; an RP-bound token stays in its RP")
def test_ctap21_credential_management(key):
    ctap, client_pin = ctap21_session(key)
    made = {}
    for rp_id, handle, name in (("cm-a.example", b"a1" * 4, "ann"), ("cm-a.example", b"a2" * 4, "abe"),
                                ("cm-b.example", b"b1" * 4, "bea")):
        attestation, _ = ctap21_make_resident(ctap, client_pin, {"id": rp_id, "name": rp_id.upper()},
                                              {"id": handle, "name": name, "displayName": name.title()})
        made[handle] = attestation.auth_data.credential_data

    token = client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.CREDENTIAL_MGMT)
    credman = CredentialManagement(ctap, client_pin.protocol, token)
    metadata = credman.get_metadata()
    existing = metadata[CredentialManagement.RESULT.EXISTING_CRED_COUNT]
    assert existing >= 3, metadata
    assert metadata[CredentialManagement.RESULT.MAX_REMAINING_COUNT] > 0, metadata

    rps = {entry[CredentialManagement.RESULT.RP]["id"]: entry for entry in credman.enumerate_rps()}
    assert {"cm-a.example", "cm-b.example"} <= set(rps), list(rps)
    assert rps["cm-a.example"][CredentialManagement.RESULT.RP]["name"] == "CM-A.EXAMPLE"
    assert rps["cm-a.example"][CredentialManagement.RESULT.RP_ID_HASH] == hashlib.sha256(b"cm-a.example").digest()

    listed = credman.enumerate_creds(hashlib.sha256(b"cm-a.example").digest())
    assert len(listed) == 2, listed
    by_handle = {entry[CredentialManagement.RESULT.USER]["id"]: entry for entry in listed}
    assert set(by_handle) == {b"a1" * 4, b"a2" * 4}
    for handle, entry in by_handle.items():
        assert entry[CredentialManagement.RESULT.CREDENTIAL_ID]["id"] == made[handle].credential_id
        assert entry[CredentialManagement.RESULT.PUBLIC_KEY] == made[handle].public_key, "COSE key as attested"
        assert entry[CredentialManagement.RESULT.CRED_PROTECT] == 1

    # The same reads on the preview command 0x41 (libfido2 uses it on keys that offer only
    # credentialMgmtPreview): the same answers, an enumeration continued with its own Next.
    def preview(subcommand, params=None):
        message = bytes([subcommand]) + (cbor.encode(params) if params else b"")
        return ctap.send_cbor(0x41, ctap2_args(subcommand, params, client_pin.protocol.VERSION,
                                               client_pin.protocol.authenticate(token, message)))
    assert preview(1) == credman.get_metadata()
    first_rp = preview(2)
    assert first_rp[CredentialManagement.RESULT.TOTAL_RPS] == len(rps), first_rp
    first = preview(4, {1: hashlib.sha256(b"cm-a.example").digest()})
    assert first[CredentialManagement.RESULT.TOTAL_CREDENTIALS] == 2, first
    second = ctap.send_cbor(0x41, ctap2_args(5))
    assert {first[CredentialManagement.RESULT.USER]["id"], second[CredentialManagement.RESULT.USER]["id"]} == set(by_handle)

    # updateUserInformation: names replaced, an absent displayName removed.
    target = {"type": "public-key", "id": made[b"a1" * 4].credential_id}
    credman.update_user_info(target, {"id": b"a1" * 4, "name": "ann.renamed"})
    user = {e[CredentialManagement.RESULT.USER]["id"]: e[CredentialManagement.RESULT.USER]
            for e in credman.enumerate_creds(hashlib.sha256(b"cm-a.example").digest())}[b"a1" * 4]
    assert user.get("name") == "ann.renamed" and "displayName" not in user, user
    expect_ctap_error(CtapError.ERR.INVALID_PARAMETER, credman.update_user_info, target, {"id": b"wrong", "name": "x"})

    # libfido2 1.12 sends every subcommand, 7 included, on the preview command 0x41.
    params = {2: {"id": made[b"a2" * 4].credential_id, "type": "public-key"},
              3: {"id": b"a2" * 4, "name": "abe.preview", "displayName": "Abe Preview"}}
    pin_uv_param = client_pin.protocol.authenticate(token, b"\x07" + cbor.encode(params))
    ctap.send_cbor(0x41, ctap2_args(7, params, client_pin.protocol.VERSION, pin_uv_param))
    user = {e[CredentialManagement.RESULT.USER]["id"]: e[CredentialManagement.RESULT.USER]
            for e in credman.enumerate_creds(hashlib.sha256(b"cm-a.example").digest())}[b"a2" * 4]
    assert user == {"id": b"a2" * 4, "name": "abe.preview", "displayName": "Abe Preview"}, user

    # deleteCredential: gone from enumeration, from metadata and from getAssertion.
    credman.delete_cred(target)
    assert len(credman.enumerate_creds(hashlib.sha256(b"cm-a.example").digest())) == 1
    assert credman.get_metadata()[CredentialManagement.RESULT.EXISTING_CRED_COUNT] == existing - 1
    expect_ctap_error(CtapError.ERR.NO_CREDENTIALS, ctap.get_assertion, "cm-a.example", hashlib.sha256(b"q").digest(),
                      allow_list=[target])
    expect_ctap_error(CtapError.ERR.NO_CREDENTIALS, credman.delete_cred, target)

    # A token with a permissions RP ID manages only that RP (CTAP 2.1 §6.8).
    bound = CredentialManagement(ctap, client_pin.protocol,
                                 client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.CREDENTIAL_MGMT, "cm-b.example"))
    expect_ctap_error(CtapError.ERR.PIN_AUTH_INVALID, bound.get_metadata)
    expect_ctap_error(CtapError.ERR.PIN_AUTH_INVALID, bound.enumerate_creds, hashlib.sha256(b"cm-a.example").digest())
    assert len(bound.enumerate_creds(hashlib.sha256(b"cm-b.example").digest())) == 1

    # GetNext belongs to the channel that began: another connection gets NOT_ALLOWED.
    credman = CredentialManagement(ctap, client_pin.protocol,
                                   client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.CREDENTIAL_MGMT))
    first = credman.enumerate_rps_begin()
    assert first[CredentialManagement.RESULT.TOTAL_RPS] >= 2
    expect_ctap_error(CtapError.ERR.NOT_ALLOWED, Ctap2(key.device()).credential_mgmt, CredentialManagement.CMD.ENUMERATE_RPS_NEXT)
    credman.enumerate_rps_next()


@check("largeBlobs via python-fido2 LargeBlobs: a largeBlobKey credential's blob written with an lbw token, "
       "read back without one; getAssertion returns the key; an oversized array is LARGE_BLOB_STORAGE_FULL")
def test_ctap21_large_blobs(key):
    ctap, client_pin = ctap21_session(key)
    attestation, token = ctap21_make_resident(
        ctap, client_pin, {"id": "blob.example", "name": "Blob"}, {"id": b"blob-user", "name": "blobby"},
        extensions={"largeBlobKey": True},
        permissions=ClientPin.PERMISSION.MAKE_CREDENTIAL | ClientPin.PERMISSION.LARGE_BLOB_WRITE)
    large_blob_key = attestation.large_blob_key
    assert large_blob_key is not None and len(large_blob_key) == 32
    # lbw outlives the token's use in makeCredential (CTAP 2.1 §6.1.2 step 14).
    data = b"a large blob for blob.example " * 40
    LargeBlobs(ctap, client_pin.protocol, token).put_blob(large_blob_key, data)
    reader = LargeBlobs(Ctap2(key.device()))
    assert reader.get_blob(large_blob_key) == data
    assert len(reader.read_blob_array()) == 1

    ga_token = client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.GET_ASSERTION, "blob.example")
    client_data_hash = hashlib.sha256(b"blob-ga").digest()
    assertion = ctap.get_assertion("blob.example", client_data_hash, extensions={"largeBlobKey": True},
                                   pin_uv_param=client_pin.protocol.authenticate(ga_token, client_data_hash),
                                   pin_uv_protocol=client_pin.protocol.VERSION)
    assert assertion.large_blob_key == large_blob_key

    # Without a token a write is refused; an array past maxSerializedLargeBlobArray does not fit.
    expect_ctap_error(CtapError.ERR.PUAT_REQUIRED, LargeBlobs(ctap).put_blob, large_blob_key, b"x")
    writer = LargeBlobs(ctap, client_pin.protocol,
                        client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.LARGE_BLOB_WRITE))
    expect_ctap_error(CtapError.ERR.LARGE_BLOB_STORAGE_FULL, writer.put_blob, large_blob_key,
                      os.urandom(ctap.info.max_large_blob + 100))
    assert reader.get_blob(large_blob_key) == data, "the old array stays"
    writer.delete_blob(large_blob_key)
    assert reader.read_blob_array() == []


@check("authenticatorConfig via python-fido2 Config: setMinPINLength (raise only, RP IDs, minPinLength extension), "
       "toggleAlwaysUv (UV everywhere, U2F off, Fido2Client asks for the PIN) and back")
def test_ctap21_config(key):
    ctap, client_pin = ctap21_session(key)
    config = Config(ctap, client_pin.protocol,
                    client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.AUTHENTICATOR_CFG))
    config.set_min_pin_length(6, rp_ids=["minpin.example"])
    info = Ctap2(key.device()).info
    assert info.min_pin_length == 6, info.min_pin_length
    assert not info.force_pin_change, "the 8-digit PIN meets the new minimum"
    expect_ctap_error(CtapError.ERR.PIN_POLICY_VIOLATION, config.set_min_pin_length, 5)
    expect_ctap_error(CtapError.ERR.PUAT_REQUIRED, Config(ctap).set_min_pin_length, 7)

    attestation, _ = ctap21_make_resident(ctap, client_pin, {"id": "minpin.example"}, {"id": b"mp", "name": "mp"},
                                          extensions={"minPinLength": True})
    assert attestation.auth_data.extensions == {"minPinLength": 6}, attestation.auth_data.extensions
    attestation, _ = ctap21_make_resident(ctap, client_pin, {"id": "other.example"}, {"id": b"op", "name": "op"},
                                          extensions={"minPinLength": True})
    assert not attestation.auth_data.extensions, attestation.auth_data.extensions

    Config(ctap, client_pin.protocol,
           client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.AUTHENTICATOR_CFG)).toggle_always_uv()
    try:
        info = Ctap2(key.device()).info
        assert info.options.get("alwaysUv") is True and info.options.get("makeCredUvNotRqd") is False, info.options
        assert "U2F_V2" not in info.versions, info.versions
        expect_ctap_error(CtapError.ERR.PUAT_REQUIRED, ctap.make_credential, hashlib.sha256(b"auv").digest(),
                          {"id": "auv.example"}, {"id": b"auv", "name": "auv"}, [{"type": "public-key", "alg": -7}])
        try:
            Ctap1(key.device()).get_version()
            raise AssertionError("U2F must be off while alwaysUv is on")
        except ApduError as error:
            assert error.code == 0x6D00, hex(error.code)
        # A client that reads getInfo verifies the user even when the RP discourages it.
        interaction = Ctap21PinInteraction(CTAP21_PIN)
        client = Fido2Client(key.device(), client_data_collector=DefaultClientDataCollector("https://auv.example"),
                             user_interaction=interaction)
        server = server_for(rp_id="auv.example")
        options, state = server.register_begin({"id": b"auv-user", "name": "auv"},
                                               user_verification=UserVerificationRequirement.DISCOURAGED)
        auth_data = server.register_complete(state, client.make_credential(options.public_key))
        assert auth_data.is_user_verified() and interaction.requests, interaction.requests
    finally:
        Config(ctap, client_pin.protocol,
               client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.AUTHENTICATOR_CFG)).toggle_always_uv()
    info = Ctap2(key.device()).info
    assert info.options.get("alwaysUv") is False and "U2F_V2" in info.versions, info
    assert Ctap1(key.device()).get_version() == "U2F_V2"


def test_ctap21_pinned_key():
    """Run the PIN-protected CTAP 2.1 checks on a key of their own."""
    key = Key("pinned").start()
    try:
        for test in (test_ctap21_set_pin, test_chrome_like_passkey, test_ctap21_credential_management,
                     test_ctap21_large_blobs, test_ctap21_config):
            test(key)
    finally:
        key.stop()
    if key.process.returncode != 0:
        RESULTS.append(("pinned key exited cleanly", False))
        print("FAIL  pinned key exit status", key.process.returncode, key.log())


@check("accounts chosen on the key: `serve --presence auto` (default --account-choice recent) answers a discoverable "
       "getAssertion at an RP with two passkeys with one, userSelected and no numberOfCredentials: the one made last, "
       "then the one that signed last; each signature verifies; `--account-choice bogus` is a usage error")
def test_accounts_chosen_on_key():
    key = Key("chooser", account_choice=None).start()
    try:
        ctap = Ctap2(key.device())
        made = {}
        for handle, name in ((b"ann-handle", "ann"), (b"ben-handle", "ben")):
            attestation = ctap.make_credential(os.urandom(32), {"id": "accounts.example", "name": "Accounts"},
                                               {"id": handle, "name": name}, [{"type": "public-key", "alg": -7}],
                                               options={"rk": True})
            made[handle] = attestation.auth_data.credential_data

        def sign_in(allow=None):
            client_data_hash = os.urandom(32)
            assertion = ctap.get_assertion("accounts.example", client_data_hash, allow)
            handle = bytes(assertion.user["id"]) if assertion.user else None
            made[handle].public_key.verify(assertion.auth_data + client_data_hash, assertion.signature)
            return assertion, handle

        assertion, handle = sign_in()
        assert assertion.user_selected is True and assertion.number_of_credentials is None, assertion
        assert handle == b"ben-handle", handle
        sign_in([{"type": "public-key", "id": made[b"ann-handle"].credential_id}])
        assertion, handle = sign_in()
        assert handle == b"ann-handle" and assertion.user_selected is True, (handle, assertion)
    finally:
        key.stop()
    bogus = subprocess.run([BINARY, "serve", "--transport", f"socket:{WORK}/bogus.sock", "--account-choice", "bogus"],
                           capture_output=True, text=True, timeout=30)
    assert bogus.returncode == 64 and "use recent or client" in bogus.stderr, bogus.stderr
