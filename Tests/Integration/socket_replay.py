"""Socket suite: `latchkey replay` — a session recorded by `latchkey serve --trace`, replayed against a fresh
key (the same decisions throughout, the credential the session registered signing in again under the new key's
ID) and against a key that differs (built-in UV: getInfo's options change, and replay says so and exits 1)."""

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports


class ExtraArgsKey(Key):
    def __init__(self, name, *extra):
        super().__init__(name)
        self.extra = list(extra)

    def extra_args(self):
        return self.extra


def record_session(key):
    """A relying party's session: a non-discoverable and a discoverable credential, each registered and signed in
    with (Fido2Server verifies everything)."""
    device = key.device()
    try:
        client = client_for(device, origin="https://replay.example")
        server = server_for(rp_id="replay.example")
        for resident in (False, True):
            options, state = server.register_begin(
                {"id": os.urandom(8), "name": "replayed"}, user_verification=UserVerificationRequirement.DISCOURAGED,
                resident_key_requirement=ResidentKeyRequirement.REQUIRED if resident else ResidentKeyRequirement.DISCOURAGED)
            credential = server.register_complete(state, client.make_credential(options.public_key)).credential_data
            request, state = server.authenticate_begin(None if resident else [credential],
                                                       user_verification=UserVerificationRequirement.DISCOURAGED)
            server.authenticate_complete(state, [credential], client.get_assertion(request.public_key).get_response(0))
    finally:
        device.close()


def replay(trace, key):
    result = latchkey_cli("replay", trace, "--socket", key.socket_path, "--json")
    return result.returncode, json.loads(result.stdout or "{}"), result


@check("latchkey replay: a traced session (INIT, getInfo, makeCredential and getAssertion twice) replayed against a fresh "
       "key gives the same decisions (exit 0; the allowList sign-in works because the recorded credential ID is replaced by "
       "the new key's); against a key with --uv auto getInfo differs (options.uv new) and replay exits 1; a missing trace "
       "is an error")
def test_replay():
    trace = os.path.join(WORK, "replay.trace")
    recorded = ExtraArgsKey("replay-recorded", "--trace", trace).start()
    try:
        record_session(recorded)
    finally:
        recorded.stop()
    fresh = Key("replay-fresh").start()
    try:
        status, report, raw = replay(trace, fresh)
        assert status == 0 and report["differing"] == 0, raw.stdout + raw.stderr
        requests = [r["request"] for r in report["results"]]
        assert requests.count("CBOR authenticatorMakeCredential") == 2 and requests.count("CBOR authenticatorGetAssertion") >= 2, requests
    finally:
        fresh.stop()
    different = ExtraArgsKey("replay-uv", "--uv", "auto").start()
    try:
        status, report, raw = replay(trace, different)
        assert status == 1 and report["differing"] > 0, raw.stdout + raw.stderr
        differences = [d for r in report["results"] if r["request"] == "CBOR authenticatorGetInfo" for d in r["differences"]]
        assert any(d.startswith("4.uv is new") for d in differences), differences
    finally:
        different.stop()
    missing = latchkey_cli("replay", os.path.join(WORK, "no-such.trace"), "--socket", "/nonexistent")
    assert missing.returncode == 1 and "no-such.trace" in missing.stderr, missing.stderr
