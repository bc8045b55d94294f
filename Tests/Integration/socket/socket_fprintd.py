"""Socket suite: `latchkey serve --uv fprintd` with the real fprintd-verify (Debian's fprintd) talking to a stand-in
fprintd (fake_fprintd.py: the interfaces fprintd installs, one reader, scripted finger by finger) on a system bus of
our own, as no reader is here. Runs in a private mount and PID namespace (`unshare`: a test user and the bus socket
bind-mounted over the system's own, which stay untouched, and nothing outlives the check); needs root, SKIP
otherwise (never counted).

The key runs as the test user, with USER naming it; getInfo says uv and uvModality fingerprint-internal;
python-fido2 (root) makes a user-verified passkey and signs in with it through Fido2Client (clientPIN 0x06:
getPinUvAuthTokenUsingUvWithPermissions), UV flags verified by Fido2Server, and through the uv option after a
retry-scan; a finger that does not match is CTAP2_ERR_UV_INVALID and spends a uvRetry; no reader, no enrolled
finger and a disconnected reader decline (CTAP2_ERR_OPERATION_DENIED, no retry spent) and the key's log says why;
a match restores the retries. The stand-in saw each fprintd-verify claim the reader for the key's user, from the
key's uid, in fprintd-verify's order of calls."""

import json
import shutil

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports
from socket_polkit import UID, add_test_user, start_system_bus  # UID: the test user add_test_user makes
from socket_uv import NoPINInteraction

HERE = os.path.dirname(os.path.abspath(__file__))
USER = "lkfp"
# One fprintd-verify run against fprintd 1.94, as the stand-in sees it (GDBusProxy reads each object's
# properties first).
ONE_RUN = ["GetAll", "GetDefaultDevice", "GetAll", "Claim", "ListEnrolledFingers", "VerifyStart", "VerifyStop", "Release"]


class StandIn:
    """fake_fprintd.py as root on our system bus, told what the reader does through its control file."""

    def __init__(self, work):
        self.control = os.path.join(work, "fprintd.control")
        self.record_path = os.path.join(work, "fprintd.record")
        self.script("match")
        open(self.record_path, "w").close()
        self.process = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(HERE), "fakes", "fake_fprintd.py"), self.control,
                                         self.record_path], stdout=subprocess.DEVNULL,
                                        stderr=open(os.path.join(work, "fprintd.log"), "w"))
        wait_for(lambda: self.records() or self.process.poll() is not None, what="the stand-in fprintd")
        assert self.process.poll() is None and self.records()[0].get("ready"), open(os.path.join(work, "fprintd.log")).read()

    def script(self, mode):
        with open(self.control + ".new", "w") as handle:
            handle.write(mode + "\n")
        os.rename(self.control + ".new", self.control)

    def records(self):
        with open(self.record_path) as handle:
            return [json.loads(line) for line in handle if line.endswith("\n")]

    def runs(self):
        """How many times fprintd-verify asked for the reader."""
        return sum(1 for entry in self.records() if entry.get("call") == "GetDefaultDevice")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait()


def inside(binary, work):
    """The whole check, run as root inside `unshare` (test_fprintd_uv_inner below)."""
    import socket_support
    try:
        run_inside(binary, work)
    finally:
        # Importing socket_support made a work directory this process never uses.
        shutil.rmtree(socket_support.WORK, ignore_errors=True)


def run_inside(binary, work):
    # The test user, in copies of the account files (the stand-in, as fprintd, names a caller by its uid).
    home = add_test_user(work, USER, "Latchkey fprintd test")
    bus = start_system_bus(work)
    stand_in = key = None
    log_path = os.path.join(work, "key.log")

    def key_log():
        try:
            with open(log_path, errors="replace") as handle:
                return handle.read()[-3000:]
        except FileNotFoundError:
            return "(the key did not start)"
    try:
        stand_in = StandIn(work)
        # The key, as the user, with built-in UV by fprintd.
        sock = os.path.join(home, "fprintd.sock")
        env = {"PATH": os.environ["PATH"], "HOME": home, "USER": USER, "XDG_RUNTIME_DIR": home}

        def as_user():
            os.setgid(UID)
            os.setgroups([])
            os.setuid(UID)
        key = subprocess.Popen([binary, "serve", "--transport", f"socket:{sock}", "--presence", "auto", "--uv", "fprintd",
                                "--store", os.path.join(home, "store"), "--name", "fprintd", "--log-level", "debug"],
                               stdout=open(log_path, "wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               preexec_fn=as_user, env=env)
        wait_for(lambda: os.path.exists(sock) or key.poll() is not None, what="the key's socket")
        assert key.poll() is None, key_log()
        assert "uv fprintd: each verification asks for a finger on the reader" in key_log(), key_log()

        ctap = Ctap2(open_device(sock, peer_uid=UID))
        assert ctap.info.options.get("uv") is True and ctap.info.uv_modality == 0x2, (ctap.info.options, ctap.info.uv_modality)
        assert stand_in.runs() == 0, "getInfo runs no verification"

        # A finger that matches: a user-verified passkey made and used through Fido2Client.
        stand_in.script("match")
        client = Fido2Client(open_device(sock, peer_uid=UID), client_data_collector=DefaultClientDataCollector("https://fprintd.example"),
                             user_interaction=NoPINInteraction())
        server = Fido2Server({"id": "fprintd.example", "name": "Fprintd RP"})
        user = {"id": os.urandom(16), "name": "pat@fprintd.example", "displayName": "Pat"}
        options, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                               user_verification=UserVerificationRequirement.REQUIRED)
        auth_data = server.register_complete(state, client.make_credential(options.public_key))
        assert auth_data.is_user_verified(), "UV flag"
        assert stand_in.runs() == 1, stand_in.runs()
        calls = [entry["call"] for entry in stand_in.records() if "call" in entry]
        assert calls == ONE_RUN, f"fprintd-verify's calls changed: {calls}"

        request, state = server.authenticate_begin(None, user_verification=UserVerificationRequirement.REQUIRED)
        selection = client.get_assertion(request.public_key)
        server.authenticate_complete(state, [auth_data.credential_data], selection.get_response(0))
        assert stand_in.runs() == 2, "each verification asks for the finger again"

        # The uv option: the reader asks to scan again, then matches (fprintd-verify's last result counts).
        stand_in.script("retry")
        ctap = Ctap2(open_device(sock, peer_uid=UID))
        assertion = ctap.get_assertion("fprintd.example", os.urandom(32), options={"uv": True})
        assert assertion.auth_data.flags & 0x04, "UV flag on the uv-option assertion"
        assert stand_in.runs() == 3
        statuses = [entry["body"] for entry in stand_in.records() if entry.get("signal") == "VerifyStatus"]
        assert statuses[-2:] == [["verify-retry-scan", False], ["verify-match", True]], statuses

        # A finger that does not match: UV_INVALID, one retry spent.
        client_pin = ClientPin(ctap)
        assert client_pin.get_uv_retries() == 3
        stand_in.script("no-match")
        expect_ctap_error(CtapError.ERR.UV_INVALID, client_pin.get_uv_token, ClientPin.PERMISSION.GET_ASSERTION,
                          "fprintd.example")
        assert client_pin.get_uv_retries() == 2, client_pin.get_uv_retries()
        assert stand_in.runs() == 4

        # No reader, no finger enrolled, a reader gone mid-scan: declined, no retry spent, the log says why.
        for mode, said in (("no-device", "net.reactivated.Fprint.Error.NoSuchDevice: No devices available; is a reader present"),
                           ("no-enrolled", "net.reactivated.Fprint.Error.NoEnrolledPrints: Failed to discover prints"),
                           ("disconnected", "the reader gave verify-disconnected")):
            runs = stand_in.runs()
            stand_in.script(mode)
            expect_ctap_error(CtapError.ERR.OPERATION_DENIED, client_pin.get_uv_token, ClientPin.PERMISSION.GET_ASSERTION,
                              "fprintd.example")
            assert client_pin.get_uv_retries() == 2, (mode, client_pin.get_uv_retries())
            assert stand_in.runs() == runs + 1, (mode, stand_in.runs())
            assert "user verification by fprintd: " in key_log() and said in key_log(), (mode, key_log())

        # A match restores the retries.
        stand_in.script("match")
        client_pin.get_uv_token(ClientPin.PERMISSION.GET_ASSERTION, "fprintd.example")
        assert client_pin.get_uv_retries() == 3, "a match restores the retries"
        assert stand_in.runs() == 8
        assert "user verification by fprintd: get a token at fprintd.example" in key_log(), key_log()

        # Every claim was the key's user's, from the key's uid, and each ended (no-enrolled: fprintd-verify exits
        # without Release, and the stand-in lets the claim go with its connection, as fprintd does).
        records = stand_in.records()
        claims = [entry for entry in records if "claimed" in entry]
        assert len(claims) == 7 and all((c["asked"], c["claimed"], c["uid"]) == (USER, USER, UID) for c in claims), claims
        ends = [entry for entry in records if "released" in entry or "vanished" in entry]
        assert len(ends) == 7 and sum(1 for entry in ends if "vanished" in entry) == 1, ends
        assert not [entry for entry in records if "crashed" in entry], records
        print(f"inside: {stand_in.runs()} fprintd-verify runs, {len(claims)} claims for {USER} (uid {UID})", flush=True)
    except BaseException:
        print("key's log:", key_log()[-2000:], flush=True)
        if stand_in:
            print("stand-in saw:", "".join(json.dumps(entry) + "\n" for entry in stand_in.records()[-30:]), flush=True)
        raise
    finally:
        if key and key.poll() is None:
            key.terminate()
            key.wait()
        if stand_in:
            stand_in.stop()
        bus.terminate()
        bus.wait()


UNSHARE = ["unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]


@check("--uv fprintd with the real fprintd-verify against a stand-in fprintd (the installed interfaces, one reader): "
       "getInfo uvModality fingerprint-internal; a passkey made and used with UV by Fido2Client (clientPIN 0x06) and by "
       "the uv option after a retry-scan, UV flags verified by Fido2Server; no match → UV_INVALID and one retry spent; "
       "no reader, no enrolled finger, a disconnected reader → OPERATION_DENIED, no retry spent, the log says why; a "
       "match restores the retries; every claim for the key's user from its uid")
def test_fprintd_uv_inner(work):
    missing = [tool for tool in ("fprintd-verify", "dbus-daemon") if shutil.which(tool) is None] \
        + [path for path in ("/usr/share/dbus-1/interfaces/net.reactivated.Fprint.Device.xml",) if not os.path.exists(path)]
    assert not missing, f"the fprintd check needs {', '.join(missing)} (Debian: fprintd, dbus-daemon)"
    try:
        run = subprocess.run(UNSHARE + [sys.executable, os.path.abspath(__file__), "--inside", BINARY, work],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_fprintd_uv():
    if os.geteuid() != 0 or subprocess.run(UNSHARE + ["true"]).returncode != 0:
        print("SKIP  --uv fprintd: needs root and `unshare` (a user and a system bus of its own); not counted", flush=True)
        return
    # Not under WORK (0700, root's): the test user must reach its home in it.
    test_fprintd_uv_inner(tempfile.mkdtemp(prefix="latchkey-fprintd-"))


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--inside":
    inside(sys.argv[2], sys.argv[3])
