"""Socket suite: the CLI against running keys — diagnostics, --presence control with
`latchkey approve`/`deny` and the trace, store signals, credential management over CTAP2."""

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports

@check("latchkey probe/wink/doctor --socket: the diagnostics CLI against the running key; doctor names a Flatpak browser "
       "without device access and the override that fixes it")
def test_cli_diagnostics(key):
    def latchkey(*args, timeout=60):
        return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout)

    probe = latchkey("probe", "--socket", key.socket_path, "--pings", "10", "--json")
    assert probe.returncode == 0, probe.stdout + probe.stderr
    report = json.loads(probe.stdout)
    assert report["ok"] and report["error"] is None, report
    assert report["transport"] == "socket"
    assert report["init"]["protocolVersion"] == 2, report["init"]
    assert {"WINK", "CBOR"} <= set(report["init"]["capabilityNames"]), report["init"]
    ping = report["ping"]
    assert ping["count"] == 10 and 0 < ping["minMicroseconds"] <= ping["medianMicroseconds"] <= ping["p99Microseconds"], ping
    assert report["echo"] == {**report["echo"], "bytes": 7609, "matched": True, "firstMismatch": None}, report["echo"]
    assert report["wink"]["done"] is True
    # The CLI's getInfo agrees with python-fido2's reading of the same key.
    info = report["getInfo"]
    device = key.device()
    reference = Ctap2(device).info
    device.close()
    assert bytes.fromhex(info["aaguid"].replace("-", "")) == bytes(reference.aaguid), info["aaguid"]
    assert info["versions"] == list(reference.versions), (info["versions"], reference.versions)
    assert info["options"] == dict(reference.options), (info["options"], reference.options)
    assert info["maxMsgSize"] == reference.max_msg_size
    assert info["pinUvAuthProtocols"] == list(reference.pin_uv_protocols)
    assert [a["alg"] for a in info["algorithms"]] == [a["alg"] for a in reference.algorithms]

    text = latchkey("probe", "--socket", key.socket_path, "--pings", "3")
    assert text.returncode == 0 and "authenticatorGetInfo" in text.stdout and "WINK              ok" in text.stdout, text.stdout
    wink = latchkey("wink", "--socket", key.socket_path)
    assert wink.returncode == 0 and wink.stdout.startswith("Winked socket "), wink.stdout + wink.stderr
    assert "wink" in key.log()

    doctor = latchkey("doctor", "--socket", key.socket_path, "--store", key.store, "--json")
    checks = {c["id"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["key-running"]["status"] == "OK" and key.socket_path in checks["key-running"]["detail"], checks
    assert checks["store"]["status"] == "OK" and "integrity check passed" in checks["store"]["detail"], checks["store"]

    # Sandboxed browsers, from a user's Flatpak installation laid out as flatpak lays it out: the
    # app's metadata grants only dri, so doctor names the override that lets it open keys.
    data_home = os.path.join(WORK, "doctor-data-home")
    metadata = os.path.join(data_home, "flatpak/app/org.chromium.Chromium/current/active/metadata")
    os.makedirs(os.path.dirname(metadata), exist_ok=True)
    with open(metadata, "w") as handle:
        handle.write("[Application]\nname=org.chromium.Chromium\n\n[Context]\nshared=network;ipc;\ndevices=dri;\n")
    sandboxed = subprocess.run([BINARY, "doctor", "--store", key.store, "--json"], capture_output=True, text=True, timeout=60,
                               env={**os.environ, "XDG_DATA_HOME": data_home})
    checks = {c["id"]: c for c in json.loads(sandboxed.stdout)["checks"]}
    chromium = checks["browser-flatpak-org.chromium.Chromium"]
    assert chromium["status"] == "WARN" and chromium["fix"].startswith("flatpak override --user --device=all org.chromium.Chromium"), chromium
    os.makedirs(os.path.join(data_home, "flatpak/overrides"), exist_ok=True)
    with open(os.path.join(data_home, "flatpak/overrides/org.chromium.Chromium"), "w") as handle:
        handle.write("[Context]\ndevices=all;\n")   # what that command writes
    sandboxed = subprocess.run([BINARY, "doctor", "--store", key.store, "--json"], capture_output=True, text=True, timeout=60,
                               env={**os.environ, "XDG_DATA_HOME": data_home})
    checks = {c["id"]: c for c in json.loads(sandboxed.stdout)["checks"]}
    assert checks["browser-flatpak-org.chromium.Chromium"]["status"] == "OK", checks["browser-flatpak-org.chromium.Chromium"]

    # A silent peer (a socket nobody answers on) is a diagnosis within the timeout, not a hang.
    silent_path = os.path.join(WORK, "silent.sock")
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    silent.bind(silent_path)
    silent.listen(1)
    try:
        started = time.time()
        hung = latchkey("probe", "--socket", silent_path, "--timeout", "300", "--json", timeout=20)
        assert hung.returncode == 1 and time.time() - started < 10, hung
        assert "the device is silent" in json.loads(hung.stdout)["error"], hung.stdout
    finally:
        silent.close()
    usage = latchkey("probe", "--socket", key.socket_path, "--pings", "lots")
    assert usage.returncode == 64 and "Usage: latchkey probe" in usage.stderr, usage


@check("presence control: makeCredential waits (UPNEEDED) for `latchkey approve`; `latchkey deny` → OPERATION_DENIED; "
       "U2F polling approved; `latchkey trace` decodes the session; no PIN or token in the trace")
def test_control_presence_and_trace():
    import json
    from fido2 import cbor
    from fido2.ctap2 import ClientPin
    from fido2.hid import CtapHidDevice
    from fido2.hid.base import HidDescriptor
    from latchkey_socket import REPORT_SIZE, SocketHidConnection

    key = ControlKey("control").start()
    try:
        mode = stat.S_IMODE(os.stat(key.control_path).st_mode)
        assert mode == 0o600, f"control socket mode {oct(mode)}"
        trace_mode = stat.S_IMODE(os.stat(key.trace_path).st_mode)
        assert trace_mode == 0o600, f"trace file mode {oct(trace_mode)}"
        ctap = Ctap2(key.device())
        rp, params = {"id": "control.example", "name": "Control"}, [{"type": "public-key", "alg": -7}]

        # 1. The request waits, with UPNEEDED keepalives, until `latchkey approve`.
        statuses = []
        thread, outcome = in_background(ctap.make_credential, hashlib.sha256(b"approve").digest(), rp,
                                        {"id": b"ann", "name": "ann"}, params, on_keepalive=statuses.append)
        wait_for(lambda: 2 in statuses, what="an UPNEEDED keepalive")   # python-fido2 reports status changes
        time.sleep(0.5)
        assert thread.is_alive(), f"the request waits for an answer: {outcome}"
        approved = key.answer("approve", "--timeout", "10")
        assert approved.returncode == 0, approved
        assert approved.stdout.strip() == "approved: register at control.example for ann (request 1)", approved.stdout
        thread.join(timeout=10)
        assert "value" in outcome and outcome["value"].auth_data.is_user_present(), outcome

        # 2. `latchkey deny --rp` started before the request arrives (race-free for rigs) → OPERATION_DENIED;
        #    another RP's request, answered by its id, does not take it.
        deny_thread, deny_outcome = in_background(key.answer, "deny", "--rp", "control.example", "--timeout", "20")
        wait_for(lambda: '"waiting_answers":1' in status_line(key), what="the deny answer to register")
        other_thread, other_outcome = in_background(ctap.make_credential, hashlib.sha256(b"other").digest(),
                                                    {"id": "other.example", "name": "Other"}, {"id": b"eve", "name": "eve"},
                                                    params)
        wait_for(lambda: '"rp_id":"other.example"' in status_line(key), what="the other RP's request pending")
        assert '"waiting_answers":1' in status_line(key), "the answer for control.example still waits"
        other_id = json.loads(status_line(key))["pending"]["request"]
        wrong = key.answer("approve", "--request", str(other_id + 5))
        assert wrong.returncode == 1 and f"request {other_id + 5} is not pending" in wrong.stderr, wrong
        other_denied = key.answer("deny", "--request", str(other_id))
        assert other_denied.returncode == 0 and other_denied.stdout.startswith("denied: register at other.example"), other_denied
        other_thread.join(timeout=10)
        assert isinstance(other_outcome.get("error"), CtapError) and other_outcome["error"].code == CtapError.ERR.OPERATION_DENIED, \
            other_outcome
        expect_ctap_error(CtapError.ERR.OPERATION_DENIED, ctap.make_credential, hashlib.sha256(b"deny").digest(), rp,
                          {"id": b"dan", "name": "dan"}, params)
        deny_thread.join(timeout=20)
        assert deny_outcome["value"].returncode == 0 and deny_outcome["value"].stdout.startswith("denied: register at control.example"), \
            deny_outcome

        # 3. Nothing pending: a bare approve answers nothing, at once, whatever its --timeout (it
        #    would otherwise approve whatever came next); one for an RP gives up after its timeout.
        started = time.time()
        idle = key.answer("approve", "--timeout", "3600")
        assert idle.returncode == 1 and "no presence request is pending" in idle.stderr, idle
        idle = key.answer("approve", "--rp", "control.example", "--timeout", "0.3")
        assert idle.returncode == 1 and "no presence request for control.example came" in idle.stderr, idle
        assert time.time() - started < 5
        status = subprocess.run([BINARY, "presence", "status", "--control", key.control_path],
                                capture_output=True, text=True, timeout=10)
        assert status.returncode == 0 and "no presence request pending" in status.stdout, status

        # 4. U2F: the client polls with short requests; one `latchkey approve` answers a poll.
        ctap1 = Ctap1(key.device())
        app_param = hashlib.sha256(b"https://u2f.control.example").digest()

        def register_polling():
            polls = 0
            deadline = time.time() + 15
            while True:
                polls += 1
                try:
                    return polls, ctap1.register(hashlib.sha256(b"u2f").digest(), app_param)
                except ApduError as error:
                    if error.code != 0x6985 or time.time() > deadline:
                        raise
                    time.sleep(0.1)

        u2f_thread, u2f_outcome = in_background(register_polling)
        time.sleep(1.2)   # a few polls time out first
        u2f_approved = key.answer("approve", "--timeout", "10")
        u2f_thread.join(timeout=20)
        assert u2f_approved.returncode == 0 and "U2F register" in u2f_approved.stdout, u2f_approved
        polls, registration = u2f_outcome["value"]
        registration.verify(app_param, hashlib.sha256(b"u2f").digest())
        assert polls > 1, polls

        # 5. clientPIN (if this build has it): set a PIN and get a token over a recorded connection.
        pin_secrets = []
        if ctap.info.options.get("clientPin") is not None:
            recording = RecordingConnection(SocketHidConnection(key.socket_path))
            device = CtapHidDevice(HidDescriptor(key.socket_path, 0x1209, 0x4C4B, REPORT_SIZE, REPORT_SIZE, "Latchkey", None),
                                   recording)
            pin_ctap = Ctap2(device)
            client_pin = ClientPin(pin_ctap)
            pin = "correct horse 42"
            if not pin_ctap.info.options.get("clientPin"):
                client_pin.set_pin(pin)
            token = client_pin.get_pin_token(pin, ClientPin.PERMISSION.MAKE_CREDENTIAL, "control.example")
            device.close()
            for direction, _, command, payload in ctaphid_frames.reassemble(recording.packets):
                if command != 0x10 or len(payload) < 2:
                    continue
                body = cbor.decode(payload[1:])
                if direction == "out" and payload[0] == 0x06:
                    pin_secrets += [body[k] for k in (5, 6) if k in body]
                elif direction == "in" and isinstance(body, dict) and 2 in body and isinstance(body[2], bytes):
                    pin_secrets.append(body[2])   # the encrypted pinUvAuthToken
            assert len(pin_secrets) >= 2, f"saw the PIN blocks and the token on the wire: {len(pin_secrets)}"
            pin_secrets += [token, pin.encode(), hashlib.sha256(pin.encode()).digest()[:16]]
    finally:
        assert key.stop() == 0, key.log()

    # 6. `latchkey trace` decodes the session; the trace holds no PIN block, PIN or token.
    decoded = subprocess.run([BINARY, "trace", key.trace_path], capture_output=True, text=True, timeout=60)
    assert decoded.returncode == 0, decoded.stderr
    for needle in ("authenticatorMakeCredential (0x01)", "CTAP2_ERR_OPERATION_DENIED (0x27)", "KEEPALIVE UPNEEDED ×",
                   "U2F_REGISTER (ins 0x01)", "SW 6985", "SW 9000", '"id": <redacted 15 bytes>'):
        assert needle in decoded.stdout, f"{needle!r} not in the decoded trace:\n{decoded.stdout[-3000:]}"
    # Where its user has accounts is not in the trace (the RP and user entities are blanked).
    for identifying in ("control.example", "other.example", '"ann"', '"dan"'):
        assert identifying not in decoded.stdout, f"{identifying!r} in the decoded trace"
    as_json = subprocess.run([BINARY, "trace", "--json", key.trace_path], capture_output=True, text=True, timeout=60)
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    statuses = [e.get("ctap_status") for e in events if e.get("dir") == "out"]
    assert "CTAP2_ERR_OPERATION_DENIED" in statuses and "CTAP2_OK" in statuses, statuses
    waits = [e for e in events if e.get("kind") == "keepalive" and e["summary"].startswith("KEEPALIVE UPNEEDED")]
    assert waits and max(e["count"] for e in waits) >= 3, waits
    raw = open(key.trace_path, "rb").read()
    text = raw.decode().lower()
    for secret in pin_secrets:
        assert secret.hex() not in text and secret not in raw, f"a {len(secret)}-byte secret is in the trace"
    if pin_secrets:
        fields = {r["field"] for e in events for r in e.get("redacted", [])}
        assert {"clientPIN.pinUvAuthToken"} <= fields and fields & {"clientPIN.newPinEnc", "clientPIN.pinHashEnc"}, fields
        print(f"      (clientPIN exercised: {len(pin_secrets)} secrets checked absent from the trace)", flush=True)
    else:
        print("      (clientPIN not in this build's getInfo: PIN part skipped)", flush=True)


@check("CLI on a running key's store: credentials list --json, signal all-accepted/unknown hide (getAssertion stops offering), "
       "un-hiding brings back, current-user renames, delete needs --yes without a terminal")
def test_cli_store_signals():
    key = Key("signals").start()
    try:
        ctap = Ctap2(key.device())
        rp = "signal.example"
        alice = make_resident(ctap, rp, b"alice-handle", "alice", "Alice")
        bob = make_resident(ctap, rp, b"bob-handle", "bob", "Bob")
        make_resident(ctap, "elsewhere.example", b"carol-handle", "carol")
        assert offered_ids(ctap, rp) == {alice, bob}

        listed = latchkey_cli("credentials", "list", "--store", key.store, "--json")
        assert listed.returncode == 0, listed.stderr
        entries = {e["credentialId"]: e for e in json.loads(listed.stdout)["credentials"]}
        assert set(entries) >= {b64url(alice), b64url(bob)} and len(entries) == 3, entries.keys()
        assert entries[b64url(alice)]["userHandle"] == b64url(b"alice-handle")
        assert entries[b64url(alice)]["rpId"] == rp and entries[b64url(alice)]["algorithm"] == "ES256"

        # all-accepted for alice without her ID: hidden, not offered any more, nothing deleted.
        # An ID typed as an argument that names none of alice's credentials is an error: nothing hidden.
        typo = latchkey_cli("signal", "all-accepted", "--store", key.store, "--rp", rp, "--user-handle",
                            b64url(b"alice-handle"), "--json", "--", b64url(b"some-other-id"))
        assert typo.returncode == 1 and "names none of" in typo.stderr, typo
        assert offered_ids(ctap, rp) == {alice, bob}, "a typo hid a credential"
        site_list = os.path.join(WORK, "site-accepted.txt")
        with open(site_list, "w") as handle:
            handle.write(b64url(b"some-other-id") + "\n")   # the site's list: a credential on another key
        signal = latchkey_cli("signal", "all-accepted", "--store", key.store, "--rp", rp, "--user-handle",
                              b64url(b"alice-handle"), "--json", "--ids-file", site_list)
        assert signal.returncode == 0, signal.stderr
        assert json.loads(signal.stdout)["hidden"] == 1, signal.stdout
        assert offered_ids(ctap, rp) == {bob}, "the running key no longer offers the hidden credential"
        expect_ctap_error(CtapError.ERR.NO_CREDENTIALS, ctap.get_assertion, rp, hashlib.sha256(b"x").digest(),
                          [{"type": "public-key", "id": alice}])
        everything = json.loads(latchkey_cli("credentials", "list", "--store", key.store, "--all", "--json").stdout)
        hidden = {e["credentialId"]: e["hidden"] for e in everything["credentials"]}
        assert hidden[b64url(alice)] is True and hidden[b64url(bob)] is False, hidden
        text = latchkey_cli("credentials", "list", "--store", key.store)
        assert text.stdout.startswith(f"2 credentials in the store {key.store}:"), text.stdout

        # Listing alice's ID again un-hides it.
        signal = latchkey_cli("signal", "all-accepted", "--store", key.store, "--rp", rp, "--user-handle",
                              b64url(b"alice-handle"), "--json", b64url(alice))
        assert json.loads(signal.stdout)["unhidden"] == 1, signal.stdout
        assert offered_ids(ctap, rp) == {alice, bob}

        # unknown hides one credential; an --ids-file brings it back.
        signal = latchkey_cli("signal", "unknown", "--store", key.store, "--rp", rp, b64url(bob))
        assert signal.returncode == 0 and "is hidden" in signal.stdout, signal.stdout + signal.stderr
        assert offered_ids(ctap, rp) == {alice}
        ids_file = os.path.join(WORK, "accepted-ids.txt")
        with open(ids_file, "w") as handle:
            handle.write("\n".join(b64url(os.urandom(16)) for _ in range(9999)) + "\n" + b64url(bob) + "\n")
        signal = latchkey_cli("signal", "all-accepted", "--store", key.store, "--rp", rp, "--user-handle",
                              b64url(b"bob-handle"), "--ids-file", ids_file, "--json")
        result = json.loads(signal.stdout)
        assert result["accepted"] == 10000 and result["unhidden"] == 1, result
        assert offered_ids(ctap, rp) == {alice, bob}

        # current-user renames.
        signal = latchkey_cli("signal", "current-user", "--store", key.store, "--rp", rp, "--user-handle",
                              b64url(b"alice-handle"), "--user-name", "alice@new.example", "--display-name", "Alice New")
        assert signal.returncode == 0 and "1 credential" in signal.stdout, signal.stdout + signal.stderr
        shown = json.loads(latchkey_cli("credentials", "show", "--store", key.store, "--json", b64url(alice)).stdout)
        assert (shown["userName"], shown["userDisplayName"]) == ("alice@new.example", "Alice New"), shown

        # delete: without a terminal and without --yes a usage error; with --yes gone for good.
        refused = latchkey_cli("credentials", "delete", "--store", key.store, b64url(bob), new_session=True)
        assert refused.returncode == 64 and "pass --yes" in refused.stderr and "Usage: latchkey credentials" in refused.stderr, refused
        deleted = latchkey_cli("credentials", "delete", "--store", key.store, "--yes", b64url(bob)[:10] + "…")
        assert deleted.returncode == 0 and deleted.stdout.startswith(f"Deleted credential {b64url(bob)}"), deleted
        assert offered_ids(ctap, rp) == {alice}
        usage = latchkey_cli("signal", "unknown", "--store", key.store, b64url(bob))
        assert usage.returncode == 64 and usage.stderr.startswith("Error: --rp is required"), usage
    finally:
        assert key.stop() == 0, key.log()


@check("CLI over --socket (CTAP2 credentialManagement and clientPIN): pin status/set/change, credentials list/rename/delete "
       "and signals, checked with python-fido2; pin --offline only while no key runs")
def test_cli_device_credential_management():
    from fido2.ctap2 import ClientPin, CredentialManagement
    from fido2.ctap2.pin import PinProtocolV2

    key = Key("credman").start()
    restarted = None
    try:
        ctap = Ctap2(key.device())
        if not ctap.info.options.get("credMgmt"):
            print("      (credMgmt not in this build's getInfo: device part skipped)", flush=True)
            return
        rp = "credman.example"
        alice = make_resident(ctap, rp, b"alice", "alice", "Alice")
        bob = make_resident(ctap, rp, b"bob", "bob", "Bob")
        dave = make_resident(ctap, "dave.example", b"dave", "dave")

        status = latchkey_cli("pin", "status", "--socket", key.socket_path, "--json")
        assert status.returncode == 0 and json.loads(status.stdout)["pinSet"] is False, status

        # A PIN set by python-fido2; the CLI reads it from a file.
        pin, new_pin = "4242 abcd", "new PIN ✓"
        ClientPin(ctap).set_pin(pin)
        pin_file, new_pin_file, wrong_file = (os.path.join(WORK, name) for name in ("pin", "new-pin", "wrong-pin"))
        for path, text in ((pin_file, pin), (new_pin_file, new_pin), (wrong_file, "0000")):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
                handle.write(text + "\n")
        again = latchkey_cli("pin", "set", "--socket", key.socket_path, "--pin-file", pin_file)
        assert again.returncode == 1 and "already has a PIN" in again.stderr, again

        def python_view():
            ctap_now = Ctap2(key.device())
            token = ClientPin(ctap_now).get_pin_token(current_pin[0], ClientPin.PERMISSION.CREDENTIAL_MGMT)
            manager = CredentialManagement(ctap_now, PinProtocolV2(), token)
            view = {}
            for party in manager.enumerate_rps():
                for credential in manager.enumerate_creds(party[CredentialManagement.RESULT.RP_ID_HASH]):
                    user = credential[CredentialManagement.RESULT.USER]
                    view[bytes(credential[CredentialManagement.RESULT.CREDENTIAL_ID]["id"])] = (
                        party[CredentialManagement.RESULT.RP]["id"], user.get("name"), user.get("displayName"))
            return view

        current_pin = [pin]
        listed = latchkey_cli("credentials", "list", "--socket", key.socket_path, "--pin-file", pin_file, "--json")
        assert listed.returncode == 0, listed.stderr
        mine = {e["credentialId"]: (e["rpId"], e["userName"], e["userDisplayName"]) for e in json.loads(listed.stdout)["credentials"]}
        assert mine == {b64url(k): v for k, v in python_view().items()}, (mine, python_view())
        assert len(mine) == 3

        wrong = latchkey_cli("credentials", "list", "--socket", key.socket_path, "--pin-file", wrong_file)
        assert wrong.returncode == 1 and "wrong PIN" in wrong.stderr and "7 attempts left" in wrong.stderr, wrong
        status = json.loads(latchkey_cli("pin", "status", "--socket", key.socket_path, "--json").stdout)
        assert status["pinSet"] is True and status["retries"] == 7, status

        # rename, current-user (updateUserInformation), seen by python-fido2 and by an assertion with UV.
        renamed = latchkey_cli("credentials", "rename", "--socket", key.socket_path, "--pin-file", pin_file,
                               b64url(bob), "--display-name", "Robert")
        assert renamed.returncode == 0, renamed.stderr
        assert python_view()[bob] == (rp, "bob", "Robert"), python_view()[bob]
        signal = latchkey_cli("signal", "current-user", "--socket", key.socket_path, "--pin-file", pin_file, "--rp", rp,
                              "--user-handle", b64url(b"alice"), "--user-name", "alice@new", "--json")
        assert signal.returncode == 0 and json.loads(signal.stdout)["renamed"] == 1, signal
        assert python_view()[alice] == (rp, "alice@new", "Alice"), python_view()[alice]
        client_pin = ClientPin(ctap)
        token = client_pin.get_pin_token(pin, ClientPin.PERMISSION.GET_ASSERTION, rp)
        client_data_hash = hashlib.sha256(b"uv").digest()
        assertion = ctap.get_assertion(rp, client_data_hash, [{"type": "public-key", "id": alice}],
                                       pin_uv_param=client_pin.protocol.authenticate(token, client_data_hash),
                                       pin_uv_protocol=client_pin.protocol.VERSION)
        assert assertion.user.get("name") == "alice@new", assertion.user

        # all-accepted for bob without his ID: the device cannot hide, so it deletes (after --yes).
        bob_list = os.path.join(WORK, "bob-accepted.txt")
        with open(bob_list, "w") as handle:
            handle.write(b64url(alice) + "\n")   # the site's list for bob names only another user's credential
        signal = latchkey_cli("signal", "all-accepted", "--socket", key.socket_path, "--pin-file", pin_file, "--rp", rp,
                              "--user-handle", b64url(b"bob"), "--json", "--ids-file", bob_list, new_session=True)
        assert signal.returncode == 64 and "--yes" in signal.stderr, signal
        signal = latchkey_cli("signal", "all-accepted", "--socket", key.socket_path, "--pin-file", pin_file, "--rp", rp,
                              "--user-handle", b64url(b"bob"), "--yes", "--json", "--ids-file", bob_list)
        result = json.loads(signal.stdout)
        assert result["deleted"] == 1 and "cannot hide" in result["note"], result
        assert set(python_view()) == {alice, dave}
        signal = latchkey_cli("signal", "unknown", "--socket", key.socket_path, "--pin-file", pin_file, "--rp", "dave.example",
                              "--yes", b64url(dave))
        assert signal.returncode == 0 and "deleted" in signal.stdout, signal
        deleted = latchkey_cli("credentials", "delete", "--socket", key.socket_path, "--pin-file", pin_file, "--yes", b64url(alice))
        assert deleted.returncode == 0, deleted
        assert python_view() == {}
        empty = latchkey_cli("credentials", "list", "--socket", key.socket_path, "--pin-file", pin_file)
        assert empty.returncode == 0 and empty.stdout.startswith("0 credentials on socket"), empty

        # pin change over clientPIN; python-fido2 then needs the new PIN.
        changed = latchkey_cli("pin", "change", "--socket", key.socket_path, "--pin-file", pin_file, "--new-pin-file", new_pin_file)
        assert changed.returncode == 0, changed.stderr
        current_pin[0] = new_pin
        ClientPin(Ctap2(key.device())).get_pin_token(new_pin, ClientPin.PERMISSION.CREDENTIAL_MGMT)
        expect_ctap_error(CtapError.ERR.PIN_INVALID, ClientPin(Ctap2(key.device())).get_pin_token, pin,
                          ClientPin.PERMISSION.CREDENTIAL_MGMT)

        # --offline refuses a store a key is running on, and works once it stopped.
        offline = latchkey_cli("pin", "change", "--offline", "--store", key.store, "--pin-file", new_pin_file,
                               "--new-pin-file", pin_file)
        assert offline.returncode == 1 and "a key is running on the store" in offline.stderr, offline
    finally:
        assert key.stop() == 0, key.log()
    offline = latchkey_cli("pin", "change", "--offline", "--store", key.store, "--pin-file", new_pin_file, "--new-pin-file", pin_file)
    assert offline.returncode == 0, offline
    restarted = Key("credman", store=key.store).start()
    try:
        ClientPin(Ctap2(restarted.device())).get_pin_token(pin, ClientPin.PERMISSION.CREDENTIAL_MGMT)
    finally:
        assert restarted.stop() == 0, restarted.log()
