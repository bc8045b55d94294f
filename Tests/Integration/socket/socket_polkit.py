"""Socket suite: `latchkey serve --uv polkit` against the real polkit — polkitd on a system bus of our own, the
action from udev/org.latchkey.verify-user.policy, a user with a password, and pkttyagent as that user's
authentication agent on a terminal, typing the password as a person would (PAM checks it through
polkit-agent-helper-1). Runs in a private mount namespace (`unshare --mount`: the action, the user and the bus
socket are bind-mounted over the system's own, which stay untouched); needs root, SKIP otherwise (never counted).

The key runs as the test user; python-fido2 (root) makes a user-verified passkey and signs in with it through
Fido2Client (clientPIN 0x06: getPinUvAuthTokenUsingUvWithPermissions) and through the uv option, verified by
Fido2Server; a wrong password is CTAP2_ERR_UV_INVALID and spends a uvRetry, the right one restores them; with no
agent the key declines (CTAP2_ERR_OPERATION_DENIED, no retry spent) and says why in its log."""

import pty
import shutil

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports
from socket_uv import NoPINInteraction

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
UID = 4242
PASSWORD = "a login password"

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/>
  </policy>
</busconfig>
"""


class Agent:
    """pkttyagent for the key's process, as the test user, on a pseudo-terminal: it shows polkit's request, and
    the test answers its Password: prompt with `answer`. (Ctrl-C ends pkttyagent itself, which polkit reports
    as not authorized, not as dismissed: a dismissal — exit 3, CTAP2_ERR_OPERATION_DENIED with no retry spent —
    is what a desktop agent's Cancel gives, and is covered by DesktopVerificationTests.)"""

    def __init__(self, key_pid):
        self.answer = PASSWORD
        self.transcript = b""
        self.requests = 0
        master, slave = pty.openpty()
        self.master = master

        def session():
            os.setsid()
            fcntl.ioctl(slave, __import__("termios").TIOCSCTTY, 0)
            os.setgid(UID)
            os.setgroups([])
            os.setuid(UID)
        self.process = subprocess.Popen(["pkttyagent", "--process", str(key_pid)], stdin=slave, stdout=slave, stderr=slave,
                                        preexec_fn=session, close_fds=True, pass_fds=(slave,))
        os.close(slave)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        seen = 0
        while True:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if not ready:
                if self.process.poll() is not None:
                    return
                continue
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                return
            if not chunk:
                return
            self.transcript += chunk
            while self.transcript.count(b"Password:") > seen:
                seen += 1
                self.requests += 1
                time.sleep(0.1)
                os.write(self.master, self.answer.encode() + b"\n")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait()
        os.close(self.master)


def add_test_user(work, name, gecos, shadow=None):
    """A user (uid UID) in copies of the account files bind-mounted over the system's (inside the check's
    mount namespace), with a private home in `work`; returns the home."""
    os.chmod(work, 0o755)   # the user reaches its home inside
    home = os.path.join(work, "home")
    os.makedirs(home, mode=0o700)
    os.chown(home, UID, UID)
    lines = [("passwd", f"{name}:x:{UID}:{UID}:{gecos}:{home}:/bin/sh"), ("group", f"{name}:x:{UID}:")]
    for file, line in lines + ([("shadow", shadow)] if shadow else []):
        copy = os.path.join(work, file)
        shutil.copy(f"/etc/{file}", copy)
        with open(copy, "a") as handle:
            handle.write(line + "\n")
        subprocess.run(["mount", "--bind", copy, f"/etc/{file}"], check=True)
    return home


def start_system_bus(work):
    """A system bus of our own where every client looks for it, /run/dbus/system_bus_socket (a private /run/dbus
    bind-mounted: setuid helpers such as polkit-agent-helper-1 ignore DBUS_SYSTEM_BUS_ADDRESS)."""
    os.environ.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
    run_dbus = os.path.join(work, "run-dbus")
    os.makedirs(run_dbus)
    os.makedirs("/run/dbus", exist_ok=True)
    subprocess.run(["mount", "--bind", run_dbus, "/run/dbus"], check=True)
    config = os.path.join(work, "bus.conf")
    with open(config, "w") as handle:
        handle.write(BUS_CONFIG)
    bus = subprocess.Popen(["dbus-daemon", "--config-file", config, "--nofork"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    wait_for(lambda: os.path.exists("/run/dbus/system_bus_socket"), what="the system bus")
    return bus


def inside(binary, work):
    """The whole check, run as root inside `unshare --mount` (main below)."""
    # The action, as scripts/install places it (polkit reads actions from this directory only).
    actions = os.path.join(work, "actions")
    shutil.copytree("/usr/share/polkit-1/actions", actions)
    shutil.copy(os.path.join(ROOT, "udev", "org.latchkey.verify-user.policy"), actions)
    subprocess.run(["mount", "--bind", actions, "/usr/share/polkit-1/actions"], check=True)
    crypted = subprocess.run(["openssl", "passwd", "-6", PASSWORD], capture_output=True, text=True, check=True).stdout.strip()
    home = add_test_user(work, "lkuv", "Latchkey UV test", shadow=f"lkuv:{crypted}:20000:0:99999:7:::")
    bus = start_system_bus(work)
    polkitd = subprocess.Popen(["/usr/lib/polkit-1/polkitd", "--no-debug"], stdout=subprocess.DEVNULL,
                               stderr=open(os.path.join(work, "polkitd.log"), "w"))
    wait_for(lambda: subprocess.run(["pkaction", "--action-id", "org.latchkey.verify-user"], capture_output=True).returncode == 0,
             what="polkitd with the action loaded")
    agent = key = None
    try:
        # The key, as the user, with built-in UV by polkit.
        store = os.path.join(home, "store")
        sock = os.path.join(home, "polkit.sock")
        log = open(os.path.join(work, "key.log"), "wb")

        def as_user():
            os.setsid()
            os.setgid(UID)
            os.setgroups([])
            os.setuid(UID)
        env = {"PATH": os.environ["PATH"], "HOME": home, "USER": "lkuv", "XDG_RUNTIME_DIR": home}
        key = subprocess.Popen([binary, "serve", "--transport", f"socket:{sock}", "--presence", "auto", "--uv", "polkit",
                                "--store", store, "--name", "polkit", "--log-level", "debug"], stdout=log, stderr=log,
                               stdin=subprocess.DEVNULL, preexec_fn=as_user, env=env)
        wait_for(lambda: os.path.exists(sock) or key.poll() is not None, what="the key's socket")
        assert key.poll() is None, open(os.path.join(work, "key.log")).read()

        def key_log():
            with open(os.path.join(work, "key.log"), errors="replace") as handle:
                return handle.read()[-3000:]

        # No agent yet: declined (OPERATION_DENIED), no retry spent, and the log says why.
        ctap = Ctap2(open_device(sock, peer_uid=UID))
        assert ctap.info.options.get("uv") is True and ctap.info.uv_modality == 0x4, (ctap.info.options, ctap.info.uv_modality)
        client_pin = ClientPin(ctap)
        expect_ctap_error(CtapError.ERR.OPERATION_DENIED, client_pin.get_uv_token, ClientPin.PERMISSION.MAKE_CREDENTIAL,
                          "polkit.example")
        assert client_pin.get_uv_retries() == 3
        assert "no polkit authentication agent" in key_log(), key_log()

        agent = Agent(key.pid)
        time.sleep(1.0)   # registered with polkitd
        client = Fido2Client(open_device(sock, peer_uid=UID), client_data_collector=DefaultClientDataCollector("https://polkit.example"),
                             user_interaction=NoPINInteraction())
        server = Fido2Server({"id": "polkit.example", "name": "Polkit RP"})
        user = {"id": os.urandom(16), "name": "pat@polkit.example", "displayName": "Pat"}
        options, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                               user_verification=UserVerificationRequirement.REQUIRED)
        auth_data = server.register_complete(state, client.make_credential(options.public_key))
        assert auth_data.is_user_verified(), "UV flag"
        assert agent.requests == 1, f"the agent was asked {agent.requests} times: {agent.transcript[-500:]!r}"
        assert b"verify that it is you" in agent.transcript and b"AUTHENTICATION COMPLETE" in agent.transcript, agent.transcript

        request, state = server.authenticate_begin(None, user_verification=UserVerificationRequirement.REQUIRED)
        selection = client.get_assertion(request.public_key)
        server.authenticate_complete(state, [auth_data.credential_data], selection.get_response(0))
        assert agent.requests == 2, "each verification asks again (auth_self, never kept)"

        # The uv option (no token): the same verification on the command itself.
        ctap = Ctap2(open_device(sock, peer_uid=UID))
        assertion = ctap.get_assertion("polkit.example", os.urandom(32), options={"uv": True})
        assert assertion.auth_data.flags & 0x04, "UV flag on the uv-option assertion"
        assert agent.requests == 3

        # A wrong password: UV_INVALID, one retry spent; then the right one restores them.
        client_pin = ClientPin(ctap)
        agent.answer = "not the password"
        expect_ctap_error(CtapError.ERR.UV_INVALID, client_pin.get_uv_token, ClientPin.PERMISSION.GET_ASSERTION,
                          "polkit.example")
        assert client_pin.get_uv_retries() == 2, client_pin.get_uv_retries()
        assert b"AUTHENTICATION FAILED" in agent.transcript
        agent.answer = PASSWORD
        client_pin.get_uv_token(ClientPin.PERMISSION.GET_ASSERTION, "polkit.example")
        assert client_pin.get_uv_retries() == 3, "a success restores the retries"
        assert "user verification by polkit: get a token at polkit.example" in key_log(), key_log()
        print(f"inside: {agent.requests} polkit authentications asked", flush=True)
    except BaseException:
        if agent:
            print("agent's terminal:", agent.transcript.decode(errors="replace")[-1500:], flush=True)
        raise
    finally:
        if agent:
            agent.stop()
        if key and key.poll() is None:
            key.terminate()
            key.wait()
        for process in (polkitd, bus):
            process.terminate()
            process.wait()


@check("--uv polkit against the real polkitd and pkttyagent (the user's password, checked by PAM): no agent → "
       "OPERATION_DENIED, no retry spent; a passkey made and used with UV by Fido2Client (clientPIN 0x06) and by the uv "
       "option, each asking again (auth_self), UV flags verified by Fido2Server; a wrong password → UV_INVALID and one "
       "retry spent, the right one restores the retries; getInfo uvModality passcode-internal")
def test_polkit_uv_inner(work):
    missing = [tool for tool in ("pkttyagent", "pkcheck", "pkaction", "dbus-daemon", "openssl") if shutil.which(tool) is None] \
        + [path for path in ("/usr/lib/polkit-1/polkitd",) if not os.path.exists(path)]
    assert not missing, f"the polkit check needs {', '.join(missing)} (Debian: polkitd, dbus-daemon, openssl)"
    run = subprocess.run(["unshare", "--mount", sys.executable, os.path.abspath(__file__), "--inside", BINARY, work],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    shutil.rmtree(work, ignore_errors=True)


def test_polkit_uv():
    if os.geteuid() != 0 or subprocess.run(["unshare", "--mount", "true"]).returncode != 0:
        print("SKIP  --uv polkit: needs root and `unshare --mount` (the action, a user and a system bus of its own); "
              "not counted", flush=True)
        return
    # Not under WORK (0700, root's): the test user must reach its home in it.
    test_polkit_uv_inner(tempfile.mkdtemp(prefix="latchkey-polkit-"))


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--inside":
    try:
        inside(sys.argv[2], sys.argv[3])
    finally:
        shutil.rmtree(WORK, ignore_errors=True)   # the empty work directory socket_support made on import
