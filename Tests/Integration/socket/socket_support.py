"""What the socket-transport suite's checks share: the `latchkey serve` process under test
(`Key`, `ControlKey`), the `check` decorator that records each result, python-fido2 clients and
relying parties, raw-socket and CLI helpers. The checks live in socket_*.py;
test_socket_suite.py runs them under pytest."""

import fcntl
import hashlib
import json
import os
import pty
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

# The helpers the socket suite shares with the VM suite live in ../support; the Python modules
# Latchkey ships (latchkey_socket, latchkey_rig) in scripts/python/.
SUPPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support")
SCRIPTS = os.path.normpath(os.path.join(SUPPORT, os.pardir, os.pardir, os.pardir, "scripts", "python"))
for directory in (SCRIPTS, SUPPORT):
    if directory not in sys.path:
        sys.path.insert(0, directory)

from fido2.attestation import AttestationType, PackedAttestation
from fido2 import cbor
from fido2.client import DefaultClientDataCollector, Fido2Client, UserInteraction
from fido2.ctap import CtapError
from fido2.ctap1 import ApduError, Ctap1
from fido2.ctap2 import ClientPin, Config, CredentialManagement, Ctap2, LargeBlobs
from fido2.ctap2.base import args as ctap2_args
from fido2.hid import CTAPHID
from fido2.server import Fido2Server
from fido2.webauthn import (
    AttestationConveyancePreference,
    PublicKeyCredentialParameters,
    PublicKeyCredentialType,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

import ctaphid_frames  # noqa: E402 - ../support
from check_support import RESULTS, check, close_quietly  # noqa: F401 - shared with the socket_* files
from latchkey_socket import open_device

# The binary under test: --latchkey (conftest.py sets LATCHKEY_BINARY), or the first argument of
# a script run by hand (socket_provider.py, a check run alone).
BINARY = os.path.abspath(os.environ.get("LATCHKEY_BINARY") or (sys.argv[1] if len(sys.argv) > 1 else "latchkey"))
WORK = tempfile.mkdtemp(prefix="latchkey-it-")
# --trace-dir (conftest.py sets LATCHKEY_TRACE_DIR): every key the suite starts leaves its traffic
# there as a trace (`serve --trace`, or a copy of the one the check asked for), which is what
# Fuzz/make-corpus.py makes its seeds from.
TRACE_DIR = os.environ.get("LATCHKEY_TRACE_DIR")
_traces_kept = 0


def keep_trace(name):
    """A new file name in TRACE_DIR for a trace of the key `name`."""
    global _traces_kept
    _traces_kept += 1
    return os.path.join(TRACE_DIR, f"{_traces_kept:03d}-{name}.trace")

def connect_nonblocking(path, seconds=3, pause=0.002, note=""):
    """A non-blocking SOCK_SEQPACKET connection to `path`; fails if connect still waits (a full
    backlog, EAGAIN) after `seconds`: the key must accept or turn a client away within a few poll turns."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.setblocking(False)
    deadline = time.time() + seconds
    while True:
        try:
            sock.connect(path)
            return sock
        except BlockingIOError:
            assert time.time() < deadline, f"connect still waits after {seconds} s{note}"
            time.sleep(pause)


class Key:
    """One `latchkey serve` process on a socket, optionally under a pseudo-terminal so that
    `--presence prompt` has a real controlling terminal to ask on. `extra`: its other flags, as
    data (`Key("k", extra=["--uv", "auto"])`); `environment`: variables added to its own."""

    def __init__(self, name, presence="auto", use_pty=False, store=None, preexec=None, account_choice="client",
                 extra=(), environment=None):
        self.name = name
        self.extra = list(extra)
        self.environment = environment
        # The suite's protocol checks walk an RP's accounts with getNextAssertion, as a platform
        # does with a key that has no display: `--account-choice client`. None: the default
        # (`recent`: a key with automatic presence picks the account itself; socket_ctap21.py).
        self.account_choice = account_choice
        self.preexec = preexec
        self.socket_path = os.path.join(WORK, f"{name}.sock")
        self.store = store or os.path.join(WORK, f"{name}-store")
        self.log_path = os.path.join(WORK, f"{name}.log")
        self.presence = presence
        self.use_pty = use_pty
        self.master = None
        self.process = None

    def extra_args(self):
        """Options beyond transport, presence, store, name and log level: `extra` (and what a
        subclass with behaviour of its own adds)."""
        return self.extra

    def ready_paths(self):
        """Files that exist once the key is up."""
        return [self.socket_path]

    def start(self, expect_up=True):
        choice = ["--account-choice", self.account_choice] if self.account_choice else []
        args = [BINARY, "serve", "--transport", f"socket:{self.socket_path}", "--presence", self.presence, *choice,
                *self.extra_args(), "--store", self.store, "--name", self.name, "--log-level", "debug"]
        self.own_trace = args[args.index("--trace") + 1] if "--trace" in args else None
        if TRACE_DIR and self.own_trace is None:
            args += ["--trace", keep_trace(self.name)]
        log = open(self.log_path, "ab")
        if self.use_pty:
            master, slave = pty.openpty()
            self.master = master

            def controlling_terminal():
                os.setsid()
                fcntl.ioctl(slave, __import__("termios").TIOCSCTTY, 0)

            self.process = subprocess.Popen(args, stdin=slave, stdout=log, stderr=log,
                                            preexec_fn=controlling_terminal, close_fds=True, pass_fds=(slave,))
            os.close(slave)
        else:
            env = dict(os.environ, **self.environment) if self.environment else None
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=self.preexec,
                                            env=env)
        if not expect_up:
            return self
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"latchkey exited with {self.process.returncode}: {self.log()}")
            if all(os.path.exists(path) for path in self.ready_paths()):
                try:
                    probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                    probe.connect(self.socket_path)
                    probe.close()
                    return self
                except OSError:
                    pass
            time.sleep(0.05)
        raise RuntimeError("latchkey did not come up: " + self.log())

    def device(self):
        return open_device(self.socket_path)

    def tty_output(self, wait=2.0):
        """What the key printed on its terminal so far (the presence prompt)."""
        out = b""
        deadline = time.time() + wait
        while time.time() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    out += os.read(self.master, 4096)
                except OSError:
                    break
                if b"Approve?" in out:
                    break
        return out.decode(errors="replace")

    def answer(self, text):
        os.write(self.master, text.encode() + b"\n")

    def power_cycle(self):
        self.process.send_signal(signal.SIGHUP)
        time.sleep(0.3)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.master is not None:
            os.close(self.master)
            self.master = None
        if TRACE_DIR and getattr(self, "own_trace", None) and os.path.exists(self.own_trace):
            shutil.copyfile(self.own_trace, keep_trace(self.name))
        return self.process.returncode

    def log(self):
        try:
            with open(self.log_path, errors="replace") as handle:
                return handle.read()[-3000:]
        except OSError:
            return ""


def expect_ctap_error(code, function, *args, **kwargs):
    try:
        function(*args, **kwargs)
    except CtapError as error:
        assert error.code == code, f"expected {code!r}, got {error.code!r}"
        return
    raise AssertionError(f"expected CTAP error {code!r}, got success")


def client_for(device, origin="https://example.com"):
    return Fido2Client(device, client_data_collector=DefaultClientDataCollector(origin))


def server_for(rp_id="example.com", algorithms=None, attestation=AttestationConveyancePreference.DIRECT):
    server = Fido2Server({"id": rp_id, "name": "Example RP"}, attestation=attestation,
                         verify_attestation=verify_packed_attestation)
    if algorithms is not None:
        server.allowed_algorithms = [PublicKeyCredentialParameters(type=PublicKeyCredentialType.PUBLIC_KEY, alg=alg)
                                     for alg in algorithms]
    return server


def verify_packed_attestation(attestation_object, client_data_hash):
    """The relying party's attestation check: packed, batch (x5c) attestation whose certificate
    meets WebAuthn §8.2.1 and whose signature covers authData ‖ clientDataHash."""
    assert attestation_object.fmt == "packed", attestation_object.fmt
    result = PackedAttestation().verify(attestation_object.att_stmt, attestation_object.auth_data, client_data_hash)
    assert result.attestation_type == AttestationType.BASIC, result.attestation_type


def raw_socket(key):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.settimeout(5)
    sock.connect(key.socket_path)
    return sock


# --- presence control, tracing: latchkey serve --presence control --trace, approve, deny, trace ---

class ControlKey(Key):
    """A key with `--presence control --control PATH --trace FILE`; `latchkey approve/deny` answer it."""

    def __init__(self, name):
        super().__init__(name, presence="control")
        self.control_path = os.path.join(WORK, f"{name}.control")
        self.trace_path = os.path.join(WORK, f"{name}.trace")

    def extra_args(self):
        return ["--control", self.control_path, "--trace", self.trace_path]

    def ready_paths(self):
        return [self.socket_path, self.control_path]

    def answer(self, verb, *extra, timeout=30):
        return subprocess.run([BINARY, verb, "--control", self.control_path, *extra],
                              capture_output=True, text=True, timeout=timeout)


class RecordingConnection:
    """Wraps a python-fido2 HID connection and keeps every packet it writes and reads."""

    def __init__(self, inner):
        self.inner, self.packets = inner, []

    def write_packet(self, data):
        self.packets.append(("out", bytes(data)))
        self.inner.write_packet(data)

    def read_packet(self):
        data = self.inner.read_packet()
        self.packets.append(("in", bytes(data)))
        return data

    def close(self):
        self.inner.close()


def in_background(function, *args, **kwargs):
    """Runs function in a thread; returns (thread, outcome) where outcome gets 'value' or 'error'."""
    outcome = {}

    def run():
        try:
            outcome["value"] = function(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - handed to the test
            outcome["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def wait_for(condition, seconds=10.0, what="condition"):
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def status_line(key):
    """The raw control-socket status response (JSON)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(key.control_path)
        sock.sendall(b'{"v":1,"action":"status"}\n')
        return sock.recv(4096).decode()


# --- credentials, signals and PINs from the CLI: latchkey credentials | signal | pin ---

def latchkey_cli(*args, timeout=60, new_session=False):
    """Runs the CLI; new_session detaches it from any terminal (as in CI)."""
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, start_new_session=new_session)


def b64url(data):
    import base64
    return base64.urlsafe_b64encode(bytes(data)).rstrip(b"=").decode()


def offered_ids(ctap, rp_id):
    """Credential IDs getAssertion offers for rp_id with an empty allowList (all of them, via getNextAssertion)."""
    try:
        first = ctap.get_assertion(rp_id, hashlib.sha256(b"offered").digest())
    except CtapError as error:
        if error.code == CtapError.ERR.NO_CREDENTIALS:
            return set()
        raise
    ids = {bytes(first.credential["id"])}
    for _ in range((first.number_of_credentials or 1) - 1):
        ids.add(bytes(ctap.get_next_assertion().credential["id"]))
    return ids


def make_resident(ctap, rp_id, handle, name, display_name=None):
    user = {"id": handle, "name": name}
    if display_name:
        user["displayName"] = display_name
    created = ctap.make_credential(hashlib.sha256(name.encode()).digest(), {"id": rp_id, "name": rp_id}, user,
                                   [{"type": "public-key", "alg": -7}], options={"rk": True})
    return bytes(created.auth_data.credential_data.credential_id)


# --- CTAP 2.1: credentialManagement, config, largeBlobs, a Chrome-like passkey flow -----------
# These run on a key of their own (`Key("pinned")`) with a PIN set through ClientPin: the main
# key has no PIN, and the checks after it depend on that.

CTAP21_PIN = "12345678"


class Ctap21PinInteraction(UserInteraction):
    """Answers Fido2Client's PIN prompts as a user at a browser's PIN dialog would."""

    def __init__(self, pin):
        self.pin = pin
        self.requests = []

    def request_pin(self, permissions, rp_id):
        self.requests.append((permissions, rp_id))
        return self.pin


def ctap21_session(key):
    ctap = Ctap2(key.device())
    return ctap, ClientPin(ctap)


def ctap21_make_resident(ctap, client_pin, rp, user, extensions=None, permissions=None):
    """makeCredential rk with a fresh mc token (a PIN is set, so discoverable needs one)."""
    permissions = permissions or ClientPin.PERMISSION.MAKE_CREDENTIAL
    token = client_pin.get_pin_token(CTAP21_PIN, permissions, rp["id"])
    client_data_hash = hashlib.sha256(os.urandom(16)).digest()
    attestation = ctap.make_credential(client_data_hash, rp, user, [{"type": "public-key", "alg": -7}],
                                       extensions=extensions, options={"rk": True},
                                       pin_uv_param=client_pin.protocol.authenticate(token, client_data_hash),
                                       pin_uv_protocol=client_pin.protocol.VERSION)
    return attestation, token
