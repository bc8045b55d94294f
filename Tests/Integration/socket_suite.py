#!/usr/bin/env python3
"""Socket-transport integration suite: the real `latchkey serve` driven by python-fido2 2.2.1.

Usage: socket_suite.py PATH/TO/latchkey
Prints one line per check and a final `N passed, N failed` line; exits 1 on any failure.
"""

import fcntl
import hashlib
import json
import os
import pty
import select
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

from latchkey_socket import open_device

BINARY = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "latchkey"
WORK = tempfile.mkdtemp(prefix="latchkey-it-")
RESULTS = []


class Key:
    """One `latchkey serve` process on a socket, optionally under a pseudo-terminal so that
    `--presence prompt` has a real controlling terminal to ask on."""

    def __init__(self, name, presence="auto", use_pty=False, store=None):
        self.name = name
        self.socket_path = os.path.join(WORK, f"{name}.sock")
        self.store = store or os.path.join(WORK, f"{name}-store")
        self.log_path = os.path.join(WORK, f"{name}.log")
        self.presence = presence
        self.use_pty = use_pty
        self.master = None
        self.process = None

    def extra_args(self):
        """Options beyond transport, presence, store, name and log level (subclasses add theirs)."""
        return []

    def ready_paths(self):
        """Files that exist once the key is up."""
        return [self.socket_path]

    def start(self, expect_up=True):
        args = [BINARY, "serve", "--transport", f"socket:{self.socket_path}", "--presence", self.presence,
                *self.extra_args(), "--store", self.store, "--name", self.name, "--log-level", "debug"]
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
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
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
        return self.process.returncode

    def log(self):
        try:
            with open(self.log_path, errors="replace") as handle:
                return handle.read()[-3000:]
        except OSError:
            return ""


def check(name):
    def decorator(function):
        def run(*args):
            started = time.time()
            try:
                function(*args)
                RESULTS.append((name, True))
                print(f"PASS  {name} ({time.time() - started:.2f} s)", flush=True)
            except Exception as error:  # noqa: BLE001 - every failure is reported, the suite goes on
                RESULTS.append((name, False))
                print(f"FAIL  {name}: {type(error).__name__}: {error}", flush=True)
                traceback.print_exc(limit=4)
        return run
    return decorator


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


# ---------------------------------------------------------------------------------------------

@check("CTAPHID INIT, PING (1 and 7609 bytes) and WINK")
def test_ping_wink(key):
    device = key.device()
    assert device.version == 2
    assert device.capabilities & 0x04, "CBOR capability"
    assert device.ping(b"hello") == b"hello"
    payload = os.urandom(7609)
    assert device.ping(payload) == payload
    device.wink()
    device.close()


@check("getInfo reports what Latchkey does")
def test_get_info(key):
    info = Ctap2(key.device()).info
    assert "FIDO_2_0" in info.versions and "U2F_V2" in info.versions, info.versions
    assert info.max_msg_size == 7609
    assert info.options.get("rk") is True and info.options.get("up") is True
    assert len(info.aaguid) == 16
    algorithms = [entry["alg"] for entry in info.algorithms]
    assert -7 in algorithms and -8 in algorithms, algorithms
    assert info.remaining_disc_creds is not None and info.remaining_disc_creds > 0


def register_and_authenticate(key, algorithms, resident):
    device = key.device()
    client = client_for(device)
    server = server_for(algorithms=algorithms)
    user = {"id": os.urandom(16), "name": f"user-{os.urandom(3).hex()}", "displayName": "Test User"}
    options, state = server.register_begin(
        user, resident_key_requirement=ResidentKeyRequirement.REQUIRED if resident else ResidentKeyRequirement.DISCOURAGED,
        user_verification=UserVerificationRequirement.DISCOURAGED)
    registration = client.make_credential(options.public_key)
    auth_data = server.register_complete(state, registration)
    credential = auth_data.credential_data
    assert credential.public_key[3] == algorithms[0], credential.public_key
    allow = None if resident else [credential]
    request, state = server.authenticate_begin(allow, user_verification=UserVerificationRequirement.DISCOURAGED)
    selection = client.get_assertion(request.public_key)
    response = selection.get_response(0)
    server.authenticate_complete(state, [credential], response)
    device.close()
    return credential, user


@check("Fido2Client makeCredential ES256, packed attestation verified; getAssertion verified by Fido2Server")
def test_register_es256(key):
    register_and_authenticate(key, [-7], resident=False)


@check("Fido2Client makeCredential EdDSA; assertion verified by Fido2Server")
def test_register_eddsa(key):
    register_and_authenticate(key, [-8], resident=False)


@check("discoverable credential: getAssertion with an empty allowList")
def test_resident(key):
    register_and_authenticate(key, [-7], resident=True)


@check("getNextAssertion walks 3 accounts, each signature verifies")
def test_get_next_assertion(key):
    ctap = Ctap2(key.device())
    rp = {"id": "multi.example", "name": "Multi"}
    keys = {}
    for index in range(3):
        user = {"id": bytes([index + 1]) * 8, "name": f"account{index}", "displayName": f"Account {index}"}
        attestation = ctap.make_credential(hashlib.sha256(b"mc%d" % index).digest(), rp, user,
                                           [{"type": "public-key", "alg": -7}], options={"rk": True})
        keys[attestation.auth_data.credential_data.credential_id] = attestation.auth_data.credential_data.public_key
    client_data_hash = hashlib.sha256(b"ga").digest()
    first = ctap.get_assertion("multi.example", client_data_hash)
    assert first.number_of_credentials == 3, first.number_of_credentials
    responses = [first] + [ctap.get_next_assertion() for _ in range(2)]
    seen = set()
    for response in responses:
        credential_id = response.credential["id"]
        response.verify(client_data_hash, keys[credential_id])
        seen.add(credential_id)
    assert seen == set(keys), "every account once"
    expect_ctap_error(CtapError.ERR.NOT_ALLOWED, ctap.get_next_assertion)


@check("excludeList hit answers CREDENTIAL_EXCLUDED")
def test_exclude_list(key):
    ctap = Ctap2(key.device())
    rp = {"id": "exclude.example", "name": "Exclude"}
    user = {"id": b"u" * 8, "name": "u"}
    params = [{"type": "public-key", "alg": -7}]
    created = ctap.make_credential(hashlib.sha256(b"x").digest(), rp, user, params)
    credential_id = created.auth_data.credential_data.credential_id
    expect_ctap_error(CtapError.ERR.CREDENTIAL_EXCLUDED, ctap.make_credential, hashlib.sha256(b"y").digest(), rp, user,
                      params, exclude_list=[{"type": "public-key", "id": credential_id}])


@check("U2F register/authenticate via Ctap1, signatures verified")
def test_u2f(key):
    ctap1 = Ctap1(key.device())
    assert ctap1.get_version() == "U2F_V2"
    app_param = hashlib.sha256(b"https://u2f.example").digest()
    client_param = hashlib.sha256(b"u2f-register").digest()
    registration = ctap1.register(client_param, app_param)
    registration.verify(app_param, client_param)
    challenge = hashlib.sha256(b"u2f-auth").digest()
    signature = ctap1.authenticate(challenge, app_param, registration.key_handle)
    signature.verify(app_param, challenge, registration.public_key)
    try:
        ctap1.authenticate(challenge, app_param, registration.key_handle, check_only=True)
        raise AssertionError("check-only must not sign")
    except ApduError as error:
        assert error.code == 0x6985, hex(error.code)
    try:
        ctap1.authenticate(challenge, hashlib.sha256(b"other").digest(), registration.key_handle)
        raise AssertionError("a key handle for another app must be rejected")
    except ApduError as error:
        assert error.code == 0x6A80, hex(error.code)


@check("two clients at once on separate channels get their own replies")
def test_two_clients(key):
    first, second = key.device(), key.device()
    assert first._channel_id != second._channel_id
    results = {}

    def worker(label, device):
        for round_number in range(20):
            payload = f"{label}-{round_number}".encode() * 50
            assert device.ping(payload) == payload
        results[label] = True

    threads = [threading.Thread(target=worker, args=(label, device)) for label, device in (("a", first), ("b", second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == {"a": True, "b": True}, results
    first.close()
    second.close()


def raw_socket(key):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.settimeout(5)
    sock.connect(key.socket_path)
    return sock


@check("wrong-size packets are dropped and the connection keeps working")
def test_bad_packets(key):
    sock = raw_socket(key)
    sock.send(b"\xff" * 63)
    sock.send(b"\xff" * 65)
    nonce = os.urandom(8)
    sock.send(struct.pack(">IBH", 0xFFFFFFFF, 0x80 | CTAPHID.INIT, 8).ljust(7, b"\0") + nonce + b"\0" * 49)
    reply = sock.recv(100)
    assert len(reply) == 64 and reply[7:15] == nonce, reply.hex()
    sock.close()


@check("CTAPHID errors: CID 0 → INVALID_CHANNEL, declared length 7610 → INVALID_LEN")
def test_hid_errors(key):
    sock = raw_socket(key)
    sock.send(struct.pack(">IBH", 0, 0x80 | CTAPHID.PING, 1) + b"\0" * 57)
    reply = sock.recv(100)
    assert reply[4] == 0xBF and reply[7] == 0x0B, reply[:8].hex()
    device = key.device()
    channel = device._channel_id
    sock.send(struct.pack(">IBH", channel, 0x80 | CTAPHID.PING, 7610) + b"\0" * 57)
    reply = sock.recv(100)
    assert reply[4] == 0xBF and reply[7] == 0x03, reply[:8].hex()
    sock.close()
    device.close()


@check("socket file is mode 0600")
def test_socket_mode(key):
    mode = stat.S_IMODE(os.stat(key.socket_path).st_mode)
    assert mode == 0o600, oct(mode)


@check("reset after a power cycle (SIGHUP) wipes credentials; too late without one → NOT_ALLOWED")
def test_reset(key):
    ctap = Ctap2(key.device())
    rp = {"id": "reset.example"}
    created = ctap.make_credential(hashlib.sha256(b"r").digest(), rp, {"id": b"r" * 4, "name": "r"},
                                   [{"type": "public-key", "alg": -7}], options={"rk": True})
    credential_id = created.auth_data.credential_data.credential_id
    time.sleep(0.1)
    started = time.time()
    if time.time() - key.started < 10.5:
        time.sleep(max(0.0, 10.5 - (time.time() - key.started)))
    expect_ctap_error(CtapError.ERR.NOT_ALLOWED, ctap.reset)
    key.power_cycle()
    ctap = Ctap2(key.device())
    ctap.reset()
    expect_ctap_error(CtapError.ERR.NO_CREDENTIALS, ctap.get_assertion, "reset.example", hashlib.sha256(b"q").digest(),
                      allow_list=[{"type": "public-key", "id": credential_id}])
    assert time.time() - started < 30


@check("prompt presence: UPNEEDED keepalive, CANCEL → KEEPALIVE_CANCEL (0x2D), then 'y' on the terminal approves")
def test_cancel_and_prompt():
    key = Key("prompt", presence="prompt", use_pty=True).start()
    try:
        ctap = Ctap2(key.device())
        event = threading.Event()
        statuses = []
        timer = threading.Timer(0.7, event.set)
        timer.start()
        expect_ctap_error(CtapError.ERR.KEEPALIVE_CANCEL, ctap.make_credential, hashlib.sha256(b"c").digest(),
                          {"id": "cancel.example"}, {"id": b"c" * 4, "name": "carol"},
                          [{"type": "public-key", "alg": -7}], event=event, on_keepalive=statuses.append)
        assert 2 in statuses, f"UPNEEDED keepalive seen: {statuses}"
        prompt = key.tty_output()
        assert "cancel.example" in prompt, prompt

        def approve():
            output = key.tty_output(wait=5)
            assert "Approve?" in output, output
            key.answer("y")

        answering = threading.Thread(target=approve)
        answering.start()
        created = ctap.make_credential(hashlib.sha256(b"d").digest(), {"id": "cancel.example"},
                                       {"id": b"d" * 4, "name": "dave"}, [{"type": "public-key", "alg": -7}])
        answering.join()
        assert created.auth_data.is_user_present()

        def deny():
            key.tty_output(wait=5)
            key.answer("n")

        answering = threading.Thread(target=deny)
        answering.start()
        expect_ctap_error(CtapError.ERR.OPERATION_DENIED, ctap.make_credential, hashlib.sha256(b"e").digest(),
                          {"id": "cancel.example"}, {"id": b"e" * 4, "name": "erin"}, [{"type": "public-key", "alg": -7}])
        answering.join()

        # A client that vanishes mid-request cancels it; the key keeps serving others.
        sock = raw_socket(key)
        nonce = os.urandom(8)
        sock.send(struct.pack(">IBH", 0xFFFFFFFF, 0x80 | CTAPHID.INIT, 8) + nonce + b"\0" * 49)
        channel = struct.unpack(">I", sock.recv(64)[15:19])[0]
        request = bytes([0x0B])  # authenticatorSelection waits for a touch
        sock.send(struct.pack(">IBH", channel, 0x80 | CTAPHID.CBOR, len(request)) + request + b"\0" * (57 - len(request)))
        time.sleep(0.4)
        sock.close()
        time.sleep(0.4)
        assert key.process.poll() is None, "key still running"
        device = key.device()
        assert device.ping(b"still here") == b"still here"
        device.close()
        assert "cancelled" in key.log(), "the vanished client's request was cancelled"
    finally:
        key.stop()


@check("credentials survive a restart; the socket is removed at exit; a second key on the same store is refused")
def test_restart_and_lock():
    key = Key("durable").start()
    ctap = Ctap2(key.device())
    rp = {"id": "durable.example"}
    created = ctap.make_credential(hashlib.sha256(b"p").digest(), rp, {"id": b"p" * 4, "name": "pat"},
                                   [{"type": "public-key", "alg": -7}], options={"rk": True})
    public_key = created.auth_data.credential_data.public_key
    first_count = ctap.get_assertion("durable.example", hashlib.sha256(b"1").digest()).auth_data.counter

    second = Key("durable-twin", store=key.store).start(expect_up=False)
    status = second.process.wait(timeout=20)
    assert status == 1, status
    assert "in use by another running key" in second.log(), second.log()

    assert key.stop() == 0
    assert not os.path.exists(key.socket_path), "socket removed on shutdown"
    key = Key("durable").start()
    try:
        ctap = Ctap2(key.device())
        client_data_hash = hashlib.sha256(b"2").digest()
        assertion = ctap.get_assertion("durable.example", client_data_hash)
        assertion.verify(client_data_hash, public_key)
        assert assertion.auth_data.counter > first_count, "counter never goes backwards across restarts"
    finally:
        key.stop()


@check("latchkey probe/wink/doctor --socket: the diagnostics CLI against the running key")
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


def reassemble(packets):
    """CTAPHID messages (direction, channel, cmd, payload) from 64-byte packets."""
    messages, partial = [], {}
    for direction, packet in packets:
        channel, kind = struct.unpack(">IB", packet[:5])
        if kind & 0x80:
            length = struct.unpack(">H", packet[5:7])[0]
            partial[(direction, channel)] = [kind & 0x7F, length, bytearray(packet[7:7 + length])]
        elif (direction, channel) in partial:
            partial[(direction, channel)][2] += packet[5:5 + partial[(direction, channel)][1] - len(partial[(direction, channel)][2])]
        else:
            continue
        command, length, data = partial[(direction, channel)]
        if len(data) >= length:
            messages.append((direction, channel, command, bytes(data)))
            del partial[(direction, channel)]
    return messages


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
        assert approved.stdout.strip() == "approved: register at control.example for ann", approved.stdout
        thread.join(timeout=10)
        assert "value" in outcome and outcome["value"].auth_data.is_user_present(), outcome

        # 2. `latchkey deny` started before the request arrives (race-free for rigs) → OPERATION_DENIED.
        deny_thread, deny_outcome = in_background(key.answer, "deny", "--timeout", "20")
        wait_for(lambda: '"waiting_answers":1' in status_line(key), what="the deny answer to register")
        expect_ctap_error(CtapError.ERR.OPERATION_DENIED, ctap.make_credential, hashlib.sha256(b"deny").digest(), rp,
                          {"id": b"dan", "name": "dan"}, params)
        deny_thread.join(timeout=20)
        assert deny_outcome["value"].returncode == 0 and deny_outcome["value"].stdout.startswith("denied: register at control.example"), \
            deny_outcome

        # 3. Nothing pending: approve gives up after its timeout, exit status 1.
        started = time.time()
        idle = key.answer("approve", "--timeout", "0.3")
        assert idle.returncode == 1 and "no presence request came" in idle.stderr, idle
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
            for direction, _, command, payload in reassemble(recording.packets):
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
                   "U2F_REGISTER (ins 0x01)", "SW 6985", "SW 9000", '"id": "control.example"'):
        assert needle in decoded.stdout, f"{needle!r} not in the decoded trace:\n{decoded.stdout[-3000:]}"
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
        signal = latchkey_cli("signal", "all-accepted", "--store", key.store, "--rp", rp, "--user-handle",
                              b64url(b"alice-handle"), "--json", "--", b64url(b"some-other-id"))
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
            with open(path, "w") as handle:
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
        signal = latchkey_cli("signal", "all-accepted", "--socket", key.socket_path, "--pin-file", pin_file, "--rp", rp,
                              "--user-handle", b64url(b"bob"), "--json", b64url(alice), new_session=True)
        assert signal.returncode == 64 and "--yes" in signal.stderr, signal
        signal = latchkey_cli("signal", "all-accepted", "--socket", key.socket_path, "--pin-file", pin_file, "--rp", rp,
                              "--user-handle", b64url(b"bob"), "--yes", "--json", b64url(alice))
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


@check("getInfo advertises CTAP 2.1: FIDO_2_1, credMgmt (+ preview), authnrCfg, setMinPINLength, largeBlobs, alwaysUv off")
def test_get_info_ctap21(key):
    info = Ctap2(key.device()).info
    assert info.versions == ["U2F_V2", "FIDO_2_0", "FIDO_2_1"], info.versions
    for option in ("credMgmt", "credentialMgmtPreview", "authnrCfg", "setMinPINLength", "largeBlobs", "makeCredUvNotRqd"):
        assert info.options.get(option) is True, (option, info.options)
    assert info.options.get("alwaysUv") is False, info.options
    assert "largeBlobKey" in info.extensions and "minPinLength" in info.extensions, info.extensions
    assert info.max_large_blob is not None and info.max_large_blob >= 1024, info.max_large_blob
    assert info.max_rpids_for_min_pin is not None and info.max_rpids_for_min_pin >= 1


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
       "update_user_info, delete_cred; subcommand 7 on 0x41 too; an RP-bound token stays in its RP")
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


def main():
    print(f"socket integration suite: {BINARY}, work dir {WORK}", flush=True)
    key = Key("main").start()
    key.started = time.time()
    try:
        for test in (test_ping_wink, test_cli_diagnostics, test_get_info, test_register_es256, test_register_eddsa, test_resident,
                     test_get_next_assertion, test_exclude_list, test_u2f, test_two_clients, test_bad_packets,
                     test_hid_errors, test_socket_mode, test_get_info_ctap21, test_reset):
            test(key)
    finally:
        key.stop()
    if key.process.returncode != 0:
        RESULTS.append(("key exited cleanly", False))
        print("FAIL  key exit status", key.process.returncode, key.log())
    test_cancel_and_prompt()
    test_restart_and_lock()
    test_notify_real_dbus()
    test_control_presence_and_trace()
    test_notify_presence_with_stand_in()
    test_cli_store_signals()
    test_cli_device_credential_management()
    test_ctap21_pinned_key()
    passed = sum(1 for _, ok in RESULTS if ok)
    failed = len(RESULTS) - passed
    if failed:
        print("--- last log of the main key ---\n" + key.log())
    print(f"socket integration: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
