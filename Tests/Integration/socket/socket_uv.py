"""Socket suite: built-in user verification (`latchkey serve --uv auto|deny`) through python-fido2:
getInfo advertises uv, a Chrome-like passkey (rk + uv required) is made and used with no PIN
and no prompt (Fido2Client takes a token by clientPIN 0x06), and a `--uv deny` key counts its
uvRetries down to UV_BLOCKED."""

from fido2.ctap import CtapError

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports


class NoPINInteraction(UserInteraction):
    """Fails the check if Fido2Client ever asks for a PIN: built-in UV must be enough."""

    def request_pin(self, permissions, rp_id):
        raise AssertionError("Fido2Client asked for a PIN from a key with built-in UV")

    def request_uv(self, permissions, rp_id):
        return True


@check("--uv auto: getInfo uv, preferredPlatformUvAttempts, uvModality; a Chrome-like passkey (rk + uv required) "
       "is created and signs in through Fido2Client with no PIN: UV by clientPIN 0x06, UV flag verified by Fido2Server")
def test_uv_auto_passkey(key):
    info = Ctap2(key.device()).info
    assert info.options.get("uv") is True and info.options.get("pinUvAuthToken") is True, info.options
    assert info.options.get("clientPin") is False, info.options
    assert info.preferred_platform_uv_attempts == 3, info.preferred_platform_uv_attempts
    assert info.uv_modality == 0x800, info.uv_modality
    client = Fido2Client(key.device(), client_data_collector=DefaultClientDataCollector("https://uv.example"),
                         user_interaction=NoPINInteraction())
    server = Fido2Server({"id": "uv.example", "name": "UV RP"})
    user = {"id": os.urandom(16), "name": "uma@uv.example", "displayName": "Uma Verified"}
    options, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                           user_verification=UserVerificationRequirement.REQUIRED)
    auth_data = server.register_complete(state, client.make_credential(options.public_key))
    assert auth_data.is_user_verified() and auth_data.is_user_present()
    request, state = server.authenticate_begin(None, user_verification=UserVerificationRequirement.REQUIRED)
    selection = client.get_assertion(request.public_key)
    assertions = selection.get_assertions()
    assert len(assertions) == 1 and assertions[0].user.get("name") == user["name"], assertions[0].user
    server.authenticate_complete(state, [auth_data.credential_data], selection.get_response(0))
    assert "user verification auto-approved" in key.log(), key.log()[-2000:]


@check("--uv deny: each clientPIN 0x06 is CTAP2_ERR_UV_INVALID and spends one of 3 uvRetries, the last "
       "CTAP2_ERR_UV_BLOCKED (and stays so); then the uv option is CTAP2_ERR_PIN_BLOCKED (the spec's code for blocked built-in UV)")
def test_uv_deny_lockout(key):
    ctap = Ctap2(key.device())
    client_pin = ClientPin(ctap)
    assert client_pin.get_uv_retries() == 3
    codes = []
    for _ in range(4):
        try:
            client_pin.get_uv_token(ClientPin.PERMISSION.GET_ASSERTION, "deny.example")
            codes.append("granted")
        except CtapError as error:
            codes.append(error.code)
    assert codes == [CtapError.ERR.UV_INVALID, CtapError.ERR.UV_INVALID, CtapError.ERR.UV_BLOCKED,
                     CtapError.ERR.UV_BLOCKED], codes
    assert client_pin.get_uv_retries() == 0
    try:
        ctap.get_assertion("deny.example", hashlib.sha256(b"x").digest(), options={"uv": True})
        raise AssertionError("an assertion with uv on a blocked key")
    except CtapError as error:
        assert error.code == CtapError.ERR.PIN_BLOCKED, error.code


def test_builtin_uv():
    """The built-in UV checks, each on a key of its own."""
    for name, mode, test in (("uv-auto", "auto", test_uv_auto_passkey), ("uv-deny", "deny", test_uv_deny_lockout)):
        key = Key(name, extra=["--uv", mode]).start()
        try:
            test(key)
        finally:
            key.stop()
