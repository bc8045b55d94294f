"""Socket suite: --presence notify, with a stand-in notify-send and with the real one on a
private D-Bus session."""

import shutil

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
    daemon = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fakes", "fake_notification_daemon.py")
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


def desktop_session(work, script):
    """`script` under a private D-Bus session (dbus-run-session), in its own process group."""
    return subprocess.Popen(["dbus-run-session", "--", "bash", "-c", script], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


@check("presence notify with the real dunst 1.9 on Xvfb (no dmenu): the notification shows the request; `dunstctl action` "
       "(dunst's middle click: the default action) approves at once, `dunstctl close` denies (OPERATION_DENIED); a request "
       "cancelled by the client (CTAPHID_CANCEL: KEEPALIVE_CANCEL) takes its notification off the screen within 2 s")
def test_notify_dunst():
    work = tempfile.mkdtemp(prefix="dunst-", dir=WORK)
    socket_path, key_log, bus = os.path.join(work, "k.sock"), os.path.join(work, "key.log"), os.path.join(work, "bus")
    for tool in ("dunst", "dunstctl", "Xvfb", "xdpyinfo", "dbus-run-session"):
        assert shutil.which(tool), f"{tool} is not installed (scripts/test installs dunst, xvfb, x11-utils and dbus)"
    display = f":{90 + os.getpid() % 9}"
    config = os.path.join(work, "dunstrc")
    open(config, "w").close()
    script = f"""
Xvfb {display} -screen 0 800x600x24 -nolisten tcp >{work}/xvfb.log 2>&1 &
export DISPLAY={display}
for i in $(seq 100); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
dunst -config {config} >{work}/dunst.log 2>&1 &
for i in $(seq 100); do dunstctl debug >/dev/null 2>&1 && break; sleep 0.1; done
echo "$DBUS_SESSION_BUS_ADDRESS" >{bus}
exec {BINARY} serve --transport socket:{socket_path} --presence notify --store {work}/store --log-level debug >{key_log} 2>&1
"""
    session = desktop_session(work, script)

    def dunstctl(*args):
        env = {**os.environ, "DBUS_SESSION_BUS_ADDRESS": open(bus).read().strip(), "DISPLAY": display}
        return subprocess.run(["dunstctl", *args], env=env, capture_output=True, text=True, timeout=10)

    try:
        wait_for(lambda: os.path.exists(socket_path) or session.poll() is not None, seconds=30, what="the key under dunst")
        assert os.path.exists(socket_path), open(key_log).read() if os.path.exists(key_log) else "no key log"
        params = [{"type": "public-key", "alg": -7}]
        for rp, act, expected in (("dunst-approve.example", "action", None), ("dunst-deny.example", "close", CtapError.ERR.OPERATION_DENIED)):
            ctap = Ctap2(open_device(socket_path))
            outcome = {}

            def register():
                try:
                    outcome["created"] = ctap.make_credential(hashlib.sha256(rp.encode()).digest(), {"id": rp},
                                                              {"id": b"dunst", "name": "dana"}, params)
                except CtapError as error:
                    outcome["error"] = error.code
            worker = threading.Thread(target=register)
            worker.start()
            wait_for(lambda: dunstctl("count", "displayed").stdout.strip() == "1", seconds=10, what="dunst showing the notification")
            clicked = time.time()
            assert dunstctl(act).returncode == 0
            worker.join(timeout=10)
            assert not worker.is_alive() and time.time() - clicked < 5, "the click answered the request at once"
            if expected is None:
                assert outcome.get("created") and outcome["created"].auth_data.is_user_present(), outcome
            else:
                assert outcome.get("error") == expected, outcome
        # Cancelled by the client: the key closes its notification (notify-send gets SIGINT, which it must not
        # have blocked: it is started with an empty signal mask).
        ctap = Ctap2(open_device(socket_path))
        cancel, outcome = threading.Event(), {}

        def cancelled_register():
            try:
                ctap.make_credential(hashlib.sha256(b"dunst-cancel.example").digest(), {"id": "dunst-cancel.example"},
                                     {"id": b"dunst", "name": "dana"}, params, event=cancel)
            except CtapError as error:
                outcome["error"] = error.code
        worker = threading.Thread(target=cancelled_register)
        worker.start()
        wait_for(lambda: dunstctl("count", "displayed").stdout.strip() == "1", seconds=10, what="dunst showing the notification")
        cancel.set()
        worker.join(timeout=10)
        assert outcome.get("error") == CtapError.ERR.KEEPALIVE_CANCEL, outcome
        wait_for(lambda: dunstctl("count", "displayed").stdout.strip() == "0", seconds=2,
                 what="the cancelled request's notification closed")
        log = open(key_log).read()
        assert "presence approved in the notification" in log and "presence denied in the notification" in log, log[-2000:]
    finally:
        os.killpg(session.pid, signal.SIGTERM)
        session.wait(timeout=10)


@check("presence notify with a notification server that shows no buttons (GetCapabilities without actions) and no terminal: "
       "the key says so at start and takes `latchkey approve` on its control socket instead")
def test_notify_without_actions_falls_back():
    work = tempfile.mkdtemp(prefix="noactions-", dir=WORK)
    log, key_log, socket_path = os.path.join(work, "notifications"), os.path.join(work, "key.log"), os.path.join(work, "k.sock")
    control = os.path.join(work, "k.control")
    daemon = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fakes", "fake_notification_daemon.py")
    script = f"""
{sys.executable} {daemon} {log} --no-actions &
for i in $(seq 100); do grep -q ready {log} 2>/dev/null && break; sleep 0.1; done
exec {BINARY} serve --transport socket:{socket_path} --presence notify --control {control} --store {work}/store --log-level debug >{key_log} 2>&1
"""
    session = desktop_session(work, script)
    try:
        wait_for(lambda: os.path.exists(socket_path) or session.poll() is not None, seconds=20, what="the key")
        text = open(key_log).read()
        assert 'GetCapabilities has no "actions"' in text and "latchkey approve" in text, text
        ctap = Ctap2(open_device(socket_path))
        outcome = {}
        worker = threading.Thread(target=lambda: outcome.update(created=ctap.make_credential(
            hashlib.sha256(b"fallback").digest(), {"id": "fallback.example"}, {"id": b"f", "name": "fay"},
            [{"type": "public-key", "alg": -7}])))
        worker.start()
        approved = None
        deadline = time.time() + 10
        while time.time() < deadline:
            approved = latchkey_cli("approve", "--control", control)
            if approved.returncode == 0:
                break
            time.sleep(0.2)
        worker.join(timeout=10)
        assert approved.returncode == 0 and outcome.get("created"), (approved.stdout, approved.stderr, outcome)
        assert not os.path.exists(log) or "fallback.example" not in open(log).read(), "no notification was shown"
    finally:
        os.killpg(session.pid, signal.SIGTERM)
        session.wait(timeout=10)
