"""Socket suite: `latchkey replay` — a session recorded by `latchkey serve --trace`, replayed against a fresh
key (the same decisions throughout, the credential the session registered signing in again under the new key's
ID) and against a key that differs (built-in UV: getInfo's options change, and replay says so and exits 1)."""

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports (and ../support on the path)
from latchkey_socket import open_device


def record_session(key):
    """A relying party's session on one connection: getInfo, then a non-discoverable and a discoverable credential,
    each registered and signed in with (Fido2Server verifies everything). Returns the getInfo and the first
    credential's ID."""
    device = key.device()
    first = None
    try:
        info = Ctap2(device).info
        client = client_for(device, origin="https://replay.example")
        server = server_for(rp_id="replay.example")
        for resident in (False, True):
            options, state = server.register_begin(
                {"id": os.urandom(8), "name": "replayed"}, user_verification=UserVerificationRequirement.DISCOURAGED,
                resident_key_requirement=ResidentKeyRequirement.REQUIRED if resident else ResidentKeyRequirement.DISCOURAGED)
            credential = server.register_complete(state, client.make_credential(options.public_key)).credential_data
            first = first if resident else credential.credential_id
            request, state = server.authenticate_begin(None if resident else [credential],
                                                       user_verification=UserVerificationRequirement.DISCOURAGED)
            server.authenticate_complete(state, [credential], client.get_assertion(request.public_key).get_response(0))
    finally:
        device.close()
    return info, first


def replay(trace, key, *options):
    result = latchkey_cli("replay", trace, "--socket", key.socket_path, "--json", *options)
    return result.returncode, json.loads(result.stdout or "{}"), result


@check("latchkey replay: a traced session (INIT, getInfo, makeCredential and getAssertion twice) replayed against a key "
       "writes nothing by default (the discoverable makeCredential skipped, and the getInfo and sign-in that depend on "
       "it; the key's store empty after); with --allow-writes against a fresh key it gives the same decisions (exit 0; the allowList sign-in works because the recorded credential ID is replaced by "
       "the new key's); against a key with --uv auto getInfo differs (options.uv new) and replay exits 1; a missing trace "
       "is an error; --as-device on a socket answers python-fido2 with the recording (its getInfo, its registration's credential "
       "ID) and exits 0 on SIGTERM")
def test_replay():
    trace = os.path.join(WORK, "replay.trace")
    recorded = Key("replay-recorded", extra=["--trace", trace]).start()
    try:
        recorded_info, first_credential_id = record_session(recorded)
    finally:
        recorded.stop()
    # By default a replay writes nothing: the discoverable makeCredential (whose RP ID and user the
    # trace blanked) is skipped, and so is the sign-in that needs it; the key holds no credential after.
    untouched = Key("replay-untouched").start()
    try:
        status, report, raw = replay(trace, untouched)
        assert status == 0 and report["differing"] == 0, raw.stdout + raw.stderr
        skipped = [(r["request"], r["skipped"]) for r in report["results"] if r["skipped"]]
        # python-fido2's client asks getInfo again before the sign-in: its count of discoverable credentials
        # depends on the skipped write, so it is skipped too.
        assert [request for request, _ in skipped] == ["CBOR authenticatorMakeCredential", "CBOR authenticatorGetInfo",
                                                       "CBOR authenticatorGetAssertion"], skipped
        assert "stores a discoverable credential" in skipped[0][1] and "--allow-writes" in skipped[0][1], skipped
        assert all("depends on a write the replay skipped" in reason for _, reason in skipped[1:]), skipped
    finally:
        untouched.stop()
    listed = latchkey_cli("credentials", "list", "--store", untouched.store, "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)["credentials"] == [], listed.stdout + listed.stderr
    fresh = Key("replay-fresh").start()
    try:
        status, report, raw = replay(trace, fresh, "--allow-writes")
        assert status == 0 and report["differing"] == 0 and report["skipped"] == 0, raw.stdout + raw.stderr
        requests = [r["request"] for r in report["results"]]
        assert requests.count("CBOR authenticatorMakeCredential") == 2 and requests.count("CBOR authenticatorGetAssertion") >= 2, requests
    finally:
        fresh.stop()
    different = Key("replay-uv", extra=["--uv", "auto"]).start()
    try:
        status, report, raw = replay(trace, different)
        assert status == 1 and report["differing"] > 0, raw.stdout + raw.stderr
        differences = [d for r in report["results"] if r["request"] == "CBOR authenticatorGetInfo" for d in r["differences"]]
        assert any(d.startswith("4.uv is new") for d in differences), differences
    finally:
        different.stop()
    # --as-device: the recording answers a client on the socket transport in its own order.
    device_path = os.path.join(WORK, "replay-device.sock")
    player = subprocess.Popen([BINARY, "replay", trace, "--as-device", "--transport", f"socket:{device_path}"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: os.path.exists(device_path), seconds=10, what="the replay's socket")
        ctap = Ctap2(open_device(device_path))   # the recording's first getInfo answer
        assert ctap.info.aaguid == recorded_info.aaguid and ctap.info.options == recorded_info.options, ctap.info
        created = ctap.make_credential(os.urandom(32), {"id": "replay.example"}, {"id": b"x", "name": "x"},
                                       [{"type": "public-key", "alg": -7}])
        assert created.auth_data.credential_data.credential_id == first_credential_id, "the recorded registration's answer"
    finally:
        player.terminate()
        output = player.communicate(timeout=10)[0]
    assert player.returncode == 0 and "recorded answers were not asked for" in output, output

    missing = latchkey_cli("replay", os.path.join(WORK, "no-such.trace"), "--socket", "/nonexistent")
    assert missing.returncode == 1 and "no-such.trace" in missing.stderr, missing.stderr
