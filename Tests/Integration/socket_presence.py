"""Socket suite: --presence notify, with a stand-in notify-send and with the real one on a
private D-Bus session."""

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports


FAKE_NOTIFY_SEND = """#!/bin/sh
# A stand-in for notify-send (libnotify-bin): answers with $DIR/answer, or waits to be closed (SIGINT).
dir="$LATCHKEY_FAKE_NOTIFY_DIR"
[ "$1" = "--version" ] && { echo "notify-send 0.8.1"; exit 0; }
printf '%s\\n' "$@" >"$dir/args.$$"
trap 'echo closed >"$dir/closed.$$"; exit 0' INT
sleep 0.3
answer=$(cat "$dir/answer" 2>/dev/null)
case "$answer" in approve|deny) echo "$answer"; exit 0 ;; esac
while :; do sleep 0.05; done
"""

@check("presence notify (stand-in notify-send): Approve → created, Deny → OPERATION_DENIED, CANCEL closes the notification")
def test_notify_presence_with_stand_in():
    import glob

    fake_dir = os.path.join(WORK, "fake-notify")
    os.makedirs(fake_dir, exist_ok=True)
    script = os.path.join(fake_dir, "notify-send")
    with open(script, "w") as handle:
        handle.write(FAKE_NOTIFY_SEND)
    os.chmod(script, 0o755)
    key = Key("notify", presence="notify")
    saved = {name: os.environ.get(name) for name in ("PATH", "DBUS_SESSION_BUS_ADDRESS", "LATCHKEY_FAKE_NOTIFY_DIR")}
    os.environ.update(PATH=fake_dir + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                      DBUS_SESSION_BUS_ADDRESS="unix:path=/nonexistent/bus", LATCHKEY_FAKE_NOTIFY_DIR=fake_dir)
    try:
        key.start()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    try:
        ctap = Ctap2(key.device())
        rp, params = {"id": "notify.example"}, [{"type": "public-key", "alg": -7}]

        def answer(text):
            with open(os.path.join(fake_dir, "answer"), "w") as handle:
                handle.write(text)

        answer("approve")
        created = ctap.make_credential(hashlib.sha256(b"n1").digest(), rp, {"id": b"nora", "name": "nora"}, params)
        assert created.auth_data.is_user_present()
        arguments = open(glob.glob(os.path.join(fake_dir, "args.*"))[0]).read().splitlines()
        assert "--action=approve=Approve" in arguments and "--action=deny=Deny" in arguments and "--wait" in arguments, arguments
        assert arguments[-3:] == ["--", "Latchkey", "register at notify.example for nora"], arguments

        answer("deny")
        expect_ctap_error(CtapError.ERR.OPERATION_DENIED, ctap.make_credential, hashlib.sha256(b"n2").digest(), rp,
                          {"id": b"ned", "name": "ned"}, params)

        answer("wait")
        event = threading.Event()
        threading.Timer(0.8, event.set).start()
        expect_ctap_error(CtapError.ERR.KEEPALIVE_CANCEL, ctap.make_credential, hashlib.sha256(b"n3").digest(), rp,
                          {"id": b"nell", "name": "nell"}, params, event=event)
        wait_for(lambda: glob.glob(os.path.join(fake_dir, "closed.*")), seconds=5, what="notify-send closed by SIGINT")
    finally:
        assert key.stop() == 0, key.log()


@check("presence notify with the real notify-send and D-Bus (a stand-in notification server clicks): Approve → created, Deny → OPERATION_DENIED")
def test_notify_real_dbus():
    work = tempfile.mkdtemp(prefix="notify-", dir=WORK)
    log, key_log, socket_path = os.path.join(work, "notifications"), os.path.join(work, "key.log"), os.path.join(work, "k.sock")
    daemon = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_notification_daemon.py")
    script = f"""
{sys.executable} {daemon} {log} &
for i in $(seq 100); do grep -q ready {log} 2>/dev/null && break; sleep 0.1; done
exec {BINARY} serve --transport socket:{socket_path} --presence notify --store {work}/store --log-level debug >{key_log} 2>&1
"""
    session = subprocess.Popen(["dbus-run-session", "--", "bash", "-c", script], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 20
        while not os.path.exists(socket_path):
            assert time.time() < deadline and session.poll() is None, f"key did not come up: {open(key_log).read() if os.path.exists(key_log) else ''}"
            time.sleep(0.1)
        ctap = Ctap2(open_device(socket_path))
        params = [{"type": "public-key", "alg": -7}]
        created = ctap.make_credential(hashlib.sha256(b"n1").digest(), {"id": "approve.example"}, {"id": b"n1", "name": "alice"}, params)
        assert created.auth_data.is_user_present()
        expect_ctap_error(CtapError.ERR.OPERATION_DENIED, ctap.make_credential, hashlib.sha256(b"n2").digest(),
                          {"id": "deny-me.example"}, {"id": b"n2", "name": "bob"}, params)
        shown = open(log).read()
        assert "register at approve.example for alice" in shown and "approve,Approve,deny,Deny" in shown, shown
        assert "register at deny-me.example for bob" in shown, shown
    finally:
        os.killpg(session.pid, signal.SIGTERM)
        session.wait(timeout=10)
