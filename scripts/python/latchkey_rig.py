"""A client for the control socket of `latchkey rig` (protocol version 1): add and remove keys,
seed and read their credentials, set what their "user" does, and follow what they do.

Standard library only (Python 3.11+); copy this file next to your tests.

    import tempfile
    import latchkey_rig

    work = tempfile.mkdtemp(prefix="rig-")      # the keys' stores go in work/<authenticatorId>/
    with latchkey_rig.start_rig(control=f"{work}/rig.control", root=work) as process, \\
            latchkey_rig.Rig(process.control) as rig, \\
            latchkey_rig.EventStream(process.control) as events:
        key = rig.add_authenticator(has_user_verification=True, is_user_verified=True)   # a uhid key
        print(key["authenticatorId"], key["uniq"])        # k1 latchkey:rig-k1: find it as any security key
        # ... a browser, OpenSSH or python-fido2 registers a passkey on it ...
        added = events.wait_for("credentialAdded", authenticatorId=key["authenticatorId"], timeout=30)
        print(added["params"]["rpId"], latchkey_rig.b64url_decode(added["params"]["credentialId"]).hex())
        for credential in rig.get_credentials(key["authenticatorId"]):
            print(credential["rpId"], credential["signCount"])

To test how a relying party or client copes with a misbehaving key: `set_response_override_bits`
(a bogus signature, flags without UV or UP), `inject_fault` (a status answered at once, a delay,
a dropped or truncated response, a flood of KEEPALIVEs; it returns the faultId) and
`clear_faults` (returns how many it removed). `add_authenticator(protocol="u2f")` makes a
CTAP1-only key:

    rig.set_response_override_bits("k1", is_bad_uv=True)       # UV flag cleared, signature valid
    rig.inject_fault("k1", "makeCredential", "status", status=0x28)   # the next one: KEY_STORE_FULL
    rig.inject_fault("k1", "getInfo", "delay", delay_ms=800, times=0)  # every getInfo, until…
    rig.clear_faults("k1")                                      # … this; returns 1

Option and credential names may be given as the protocol spells them (`hasUserVerification`) or in
snake case (`has_user_verification`); binary credential members (`credentialId`, `userHandle`,
`privateKey`, `largeBlob`) may be given as bytes and are sent as base64url. Results are returned
as the rig sends them: binary members are base64url strings (decode with `b64url_decode`).

A pytest fixture (UNIX socket paths are limited to 107 bytes, hence a short temporary directory
rather than pytest's `tmp_path`):

    import shutil, tempfile
    import pytest
    import latchkey_rig

    @pytest.fixture
    def rig():
        work = tempfile.mkdtemp(prefix="rig-")
        process = latchkey_rig.start_rig(control=f"{work}/rig.control", root=work)
        try:
            with latchkey_rig.Rig(process.control) as client:
                yield client
        finally:
            process.stop()
            shutil.rmtree(work, ignore_errors=True)

    def test_passkey(rig):
        key = rig.add_authenticator(transport="socket", socket_path=f"{rig.path}.k1")
        # ... python-fido2 talks to key["socketPath"] (docs/socket-transport.md), or use the default
        # transport (usb) and find the key as any hidraw security key, by key["uniq"] ...
"""

import base64
import binascii
import collections
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import threading
import time

__all__ = ["RigError", "RigStartError", "Rig", "EventStream", "RigProcess", "start_rig",
           "default_control_path", "b64url", "b64url_decode"]

PROTOCOL_VERSION = 1
MAX_LINE = 1 << 20          # the protocol's longest line, 1 MiB
DEFAULT_PRESENCE_WAIT_MS = 30000
BINARY_MEMBERS = ("credentialId", "userHandle", "privateKey", "largeBlob")


class RigError(Exception):
    """An error response: `code` is one of the protocol's codes (`invalidParams`, `unsupported`,
    `noSuchAuthenticator`, …), `message` the rig's explanation."""

    def __init__(self, code, message, response=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.response = response


class RigStartError(RuntimeError):
    """`start_rig` could not get a rig up; the message carries what the process printed."""


def b64url(data):
    """base64url without padding, as the protocol sends binary values."""
    return base64.urlsafe_b64encode(bytes(data)).rstrip(b"=").decode("ascii")


def b64url_decode(text):
    """bytes from base64url, with or without padding; rejects characters outside its alphabet
    (standard base64's `+` and `/` included)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("ascii")
    text = text.strip().rstrip("=")
    if "+" in text or "/" in text:
        raise ValueError(f"not base64url (+ or / of standard base64): {text[:40]!r}")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except binascii.Error as error:
        raise ValueError(f"not base64url: {text[:40]!r}: {error}") from None


def default_control_path():
    """Where `latchkey rig` listens by default: `$XDG_RUNTIME_DIR/latchkey/rig.control` when
    XDG_RUNTIME_DIR is set and absolute, otherwise `$XDG_CACHE_HOME/latchkey/run-<host>/rig.control`
    (`~/.cache/…`): never a shared directory such as /tmp."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "latchkey", "rig.control")
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not (cache and os.path.isabs(cache)):
        home = os.environ.get("HOME", "")
        if not (home and os.path.isabs(home)):
            import pwd
            home = pwd.getpwuid(os.getuid()).pw_dir
        cache = os.path.join(home.rstrip("/") or "/", ".cache")
    host = "".join(c for c in socket.gethostname().split(".")[0] if c.isascii() and (c.isalnum() or c == "-"))[:32]
    return os.path.join(cache, "latchkey", "run-" + (host or "localhost"), "rig.control")


def _check_private_directory(directory):
    """The default directory must be this user's, mode 0700, not a link (as the rig requires)."""
    try:
        status = os.lstat(directory)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid() or status.st_mode & 0o077:
        raise PermissionError(f"{directory} must be a directory owned by you with mode 0700, but it is owned by uid "
                              f"{status.st_uid} with mode {stat.S_IMODE(status.st_mode):o}: another user may have made it; "
                              "remove it, or pass the control path")


def _check_peer(sock, path):
    """Refuses a rig run by another user (SO_PEERCRED) before a byte is sent."""
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid not in (os.getuid(), 0):
        raise PermissionError(f"the control socket {path} is served by uid {uid}, not by you (uid {os.getuid()}); "
                              "nothing was sent to it")


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _camel_keys(mapping):
    return {_camel(key): value for key, value in mapping.items()}


def _wire_binary(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return b64url(value)
    return value


def _wire_credential(credential):
    wire = _camel_keys(credential)
    for member in BINARY_MEMBERS:
        if member in wire:
            wire[member] = _wire_binary(wire[member])
    return wire


class _LineConnection:
    """One SOCK_STREAM connection carrying newline-terminated JSON objects."""

    def __init__(self, path, timeout, default_path=False):
        self.path = path
        if default_path:
            _check_private_directory(os.path.dirname(path))
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(path)
            _check_peer(self.sock, path)
        except BaseException:
            self.sock.close()
            raise
        self.buffer = bytearray()
        self.closed = False

    def send(self, message, timeout):
        line = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        self.sock.settimeout(timeout)
        self.sock.sendall(line)

    def read(self, timeout):
        """The next JSON value; TimeoutError after `timeout` seconds (None: wait for ever).
        A partial line stays buffered for the next call."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[:end + 1]
                if not line.strip():
                    continue
                try:
                    return json.loads(line)
                except ValueError as error:
                    raise ConnectionError(f"the rig sent a line that is not JSON ({error}): {line[:200]!r}") from None
            if len(self.buffer) > MAX_LINE:
                raise ConnectionError(f"the rig sent a line longer than {MAX_LINE} bytes")
            if deadline is None:
                self.sock.settimeout(None)
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"nothing from the rig at {self.path} in {timeout:.3g} s")
                self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise TimeoutError(f"nothing from the rig at {self.path} in {timeout:.3g} s") from None
            if not chunk:
                raise ConnectionError(f"the rig at {self.path} closed the connection")
            self.buffer += chunk

    def close(self):
        if not self.closed:
            self.closed = True
            self.sock.close()


class _OverConnection:
    """What Rig and EventStream share: one `_LineConnection`, closed by close() or `with`."""

    def close(self):
        self._connection.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Rig(_OverConnection):
    """A connection to the rig's control socket. `call` sends one request and returns its result;
    every method below is one request. Event lines that arrive on this connection (after a
    `subscribe` sent through `call`) are kept in `events`. Calls from several threads are
    answered one after another."""

    def __init__(self, path=None, timeout=60.0):
        self.path = path or default_control_path()
        self.timeout = timeout
        self.events = collections.deque()
        self._connection = _LineConnection(self.path, timeout, default_path=path is None)
        self._next_id = 1
        self._abandoned = set()     # ids whose responses a timed-out call gave up on
        self._lock = threading.Lock()

    # -- the protocol --

    def call(self, method, params=None, /, **more):
        """Sends `{"v":1,"id":N,"method":method,"params":{...}}` (params from the dict and the
        keyword arguments, names as the protocol spells them) and returns the result object;
        raises RigError for an error response, TimeoutError after `self.timeout` seconds."""
        merged = dict(params or {})
        merged.update(more)
        return self._request(method, merged, self.timeout)

    def _request(self, method, params, timeout):
        with self._lock:
            if self._connection.closed:
                raise ConnectionError("this Rig connection is closed")
            request_id = self._next_id
            self._next_id += 1
            deadline = time.monotonic() + timeout
            self._connection.send({"v": PROTOCOL_VERSION, "id": request_id, "method": method, "params": params}, timeout)
            while True:
                try:
                    message = self._connection.read(max(0.0, deadline - time.monotonic()))
                except TimeoutError:
                    self._abandoned.add(request_id)
                    raise TimeoutError(f"no answer to {method} from the rig at {self.path} in {timeout:.3g} s") from None
                if not isinstance(message, dict):
                    raise ConnectionError(f"the rig sent something other than an object: {message!r}")
                if "event" in message:
                    self.events.append(message)
                    continue
                response_id = message.get("id")
                if response_id in self._abandoned:
                    self._abandoned.discard(response_id)
                    continue
                if response_id != request_id and not ("error" in message and "id" not in message):
                    raise ConnectionError(f"response id {response_id!r} to request {request_id} ({method})")
                if "error" in message:
                    error = message["error"] if isinstance(message["error"], dict) else {}
                    raise RigError(error.get("code", "?"), error.get("message", str(message["error"])), message)
                if "result" not in message:
                    raise ConnectionError(f"a response with neither result nor error: {message!r}")
                return message["result"]

    # -- authenticators --

    def add_authenticator(self, **options):
        """addAuthenticator; returns the Authenticator (`authenticatorId`, `uniq`, `socketPath`, …)."""
        return self.call("addAuthenticator", _camel_keys(options))

    def remove_authenticator(self, authenticator_id):
        self.call("removeAuthenticator", authenticatorId=authenticator_id)

    def list_authenticators(self):
        """The Authenticators, as a list."""
        return self.call("listAuthenticators")["authenticators"]

    # -- credentials --

    def add_credential(self, authenticator_id, credential):
        """addCredential; `credential` is a Credential dict (bytes values are sent as base64url)."""
        self.call("addCredential", authenticatorId=authenticator_id, credential=_wire_credential(credential))

    def get_credential(self, authenticator_id, credential_id):
        """The Credential with that ID (bytes or base64url)."""
        return self.call("getCredential", authenticatorId=authenticator_id, credentialId=_wire_binary(credential_id))

    def get_credentials(self, authenticator_id):
        """The key's resident credentials, as a list of Credentials (with their private keys)."""
        return self.call("getCredentials", authenticatorId=authenticator_id)["credentials"]

    def remove_credential(self, authenticator_id, credential_id):
        self.call("removeCredential", authenticatorId=authenticator_id, credentialId=_wire_binary(credential_id))

    def select_credential(self, authenticator_id, rp_id, credential_id=None, user_handle=None):
        """selectCredential: the account (by credential ID or user handle, bytes or base64url) the
        key answers the next sign-in at `rp_id` with when the platform sends no allowList — as
        its user would pick it on a key with a display; the browser then shows no chooser."""
        if (credential_id is None) == (user_handle is None):
            raise ValueError("give credential_id or user_handle")
        params = {"authenticatorId": authenticator_id, "rpId": rp_id}
        if credential_id is not None:
            params["credentialId"] = _wire_binary(credential_id)
        else:
            params["userHandle"] = _wire_binary(user_handle)
        self.call("selectCredential", params)

    def set_credential_properties(self, authenticator_id, credential_id, backup_eligibility=None, backup_state=None):
        """setCredentialProperties: the BE/BS flags the credential's later assertions carry; a
        flag left as None keeps its value."""
        params = {"authenticatorId": authenticator_id, "credentialId": _wire_binary(credential_id)}
        if backup_eligibility is not None:
            params["backupEligibility"] = backup_eligibility
        if backup_state is not None:
            params["backupState"] = backup_state
        self.call("setCredentialProperties", params)

    def remove_all_credentials(self, authenticator_id):
        """removeAllCredentials; returns how many were removed."""
        return self.call("removeAllCredentials", authenticatorId=authenticator_id)["removed"]

    # -- the user --

    def set_user_verified(self, authenticator_id, is_user_verified):
        self.call("setUserVerified", authenticatorId=authenticator_id, isUserVerified=is_user_verified)

    def set_user_consenting(self, authenticator_id, is_user_consenting):
        self.call("setUserConsenting", authenticatorId=authenticator_id, isUserConsenting=is_user_consenting)

    def set_automatic_presence_simulation(self, authenticator_id, enabled):
        self.call("setAutomaticPresenceSimulation", authenticatorId=authenticator_id, enabled=enabled)

    def answer_presence(self, authenticator_id, approve, rp_id=None, timeout_ms=None):
        """Answers the key's next (or pending) presence check — only one for `rp_id`, if given —
        waiting up to `timeout_ms` (the rig's default: 30 s) for one. Returns
        `{"result": "approved"|"denied"|"none", "operation", "rpId"}`."""
        params = {"authenticatorId": authenticator_id, "approve": approve}
        if rp_id is not None:
            params["rpId"] = rp_id
        if timeout_ms is not None:
            params["timeoutMs"] = timeout_ms
        wait = (DEFAULT_PRESENCE_WAIT_MS if timeout_ms is None else timeout_ms) / 1000
        return self._request("answerPresence", params, max(self.timeout, wait + 10))

    def power_cycle(self, authenticator_id):
        self.call("powerCycle", authenticatorId=authenticator_id)

    # -- faults --

    def set_response_override_bits(self, authenticator_id, is_bogus_signature=False, is_bad_uv=False, is_bad_up=False):
        """setResponseOverrideBits: every later makeCredential/getAssertion response of the key has
        a signature that does not verify (`is_bogus_signature`), or flags without UV (`is_bad_uv`)
        or UP (`is_bad_up`) under a valid signature. Each call sets all three: a bit not given is
        set back to false."""
        self.call("setResponseOverrideBits", authenticatorId=authenticator_id, isBogusSignature=is_bogus_signature,
                  isBadUV=is_bad_uv, isBadUP=is_bad_up)

    def inject_fault(self, authenticator_id, command, fault, status=None, delay_ms=None, keepalives=None, times=None):
        """injectFault: the key's next `times` requests named `command` (`makeCredential`,
        `getInfo`, `u2fRegister`, …, or `any`) meet `fault` — `status` (answer `status` at once: a
        CTAP2 status, or a U2F status word such as 0x6985), `delay` (`delay_ms`), `drop`,
        `truncate` or `keepaliveFlood` (`keepalives`, the rig's default 1000). `times` defaults
        to 1 (the rig's default); 0 applies it until `clear_faults`. Returns the faultId."""
        params = {"authenticatorId": authenticator_id, "command": command, "fault": fault}
        for member, value in (("status", status), ("delayMs", delay_ms), ("keepalives", keepalives), ("times", times)):
            if value is not None:
                params[member] = value
        return self.call("injectFault", params)["faultId"]

    def clear_faults(self, authenticator_id):
        """clearFaults: removes the key's injected faults; returns how many there were."""
        return self.call("clearFaults", authenticatorId=authenticator_id)["cleared"]


class EventStream(_OverConnection):
    """A connection of its own that subscribes to the rig's events (of one key, or of all).
    `next` returns the next event; `wait_for` the next one that matches, keeping the events it
    skipped in `seen`."""

    def __init__(self, path=None, authenticator_id=None, timeout=10.0):
        self.path = path or default_control_path()
        self.seen = []
        self._queue = collections.deque()
        self._connection = _LineConnection(self.path, timeout, default_path=path is None)
        try:
            params = {} if authenticator_id is None else {"authenticatorId": authenticator_id}
            self._connection.send({"v": PROTOCOL_VERSION, "id": 1, "method": "subscribe", "params": params}, timeout)
            deadline = time.monotonic() + timeout
            while True:
                message = self._connection.read(max(0.0, deadline - time.monotonic()))
                if isinstance(message, dict) and "event" in message:
                    self._queue.append(message)
                    continue
                if isinstance(message, dict) and "error" in message:
                    error = message["error"] if isinstance(message["error"], dict) else {}
                    raise RigError(error.get("code", "?"), error.get("message", str(message["error"])), message)
                if isinstance(message, dict) and "result" in message:
                    break
                raise ConnectionError(f"unexpected answer to subscribe: {message!r}")
        except BaseException:
            self._connection.close()
            raise

    def next(self, timeout=10.0):
        """The next event (`{"event", "seq", "authenticatorId", "params"}`); TimeoutError if none
        comes in `timeout` seconds (None: wait for ever). An `overflow` event is returned like any
        other; the rig closes the connection after it."""
        if self._queue:
            return self._queue.popleft()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            message = self._connection.read(remaining)
            if isinstance(message, dict) and "event" in message:
                return message
            # Anything else (there should be nothing: this connection sends no more requests) is skipped.

    def wait_for(self, event_name, timeout=10.0, **match):
        """The first event named `event_name` whose params have every given key and value (a key
        the params lack is looked up in the event itself, so `authenticatorId="k1"` works; a bytes
        value matches the base64url string that encodes it). Events skipped on the way are
        appended to `seen`. TimeoutError after `timeout` seconds; ConnectionError on overflow."""
        deadline = time.monotonic() + timeout
        skipped = []
        while True:
            remaining = deadline - time.monotonic()
            try:
                event = self.next(max(0.0, remaining))
            except TimeoutError:
                names = ", ".join(e.get("event", "?") for e in skipped) or "none"
                raise TimeoutError(f"no {event_name} event matching {match} in {timeout:g} s "
                                   f"(events on the way: {names})") from None
            if event.get("event") == event_name and _matches(event, match):
                return event
            self.seen.append(event)
            skipped.append(event)
            if event.get("event") == "overflow":
                raise ConnectionError("the rig sent overflow: this subscriber fell too far behind")



_MISSING = object()


def _matches(event, match):
    params = event.get("params") or {}
    for key, expected in match.items():
        actual = params[key] if key in params else event.get(key, _MISSING)
        if actual is _MISSING:
            return False
        if isinstance(expected, (bytes, bytearray, memoryview)):
            try:
                if not isinstance(actual, str) or b64url_decode(actual) != bytes(expected):
                    return False
            except ValueError:
                return False
        elif actual != expected:
            return False
    return True


class RigProcess:
    """A running `latchkey rig`: `process` (subprocess.Popen), `control` (its control socket),
    `root` (--root, or None), `output()` (what it printed on stdout and stderr)."""

    def __init__(self, process, control, root, log):
        self.process = process
        self.control = control
        self.root = root
        self._log = log
        self._saved_output = ""

    @property
    def pid(self):
        return self.process.pid

    @property
    def returncode(self):
        return self.process.returncode

    def output(self):
        """What the rig printed so far (stdout and stderr together)."""
        if self._log.closed:
            return self._saved_output
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def connect(self, timeout=60.0):
        """A Rig client on this rig's control socket."""
        return Rig(self.control, timeout=timeout)

    def stop(self, timeout=10.0):
        """SIGTERM, then wait (SIGKILL after `timeout` seconds); returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self._log.closed:
            self._saved_output = self.output()
            self._log.close()
        return self.process.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _answers(path):
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1)
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def start_rig(binary="latchkey", control=None, root=None, extra_args=(), timeout=10, pid_file=None):
    """Starts `BINARY rig --control CONTROL [--root ROOT] EXTRA_ARGS…` and returns a RigProcess
    once its control socket accepts a connection. Raises RigStartError (with what the process
    printed) if it exits first or is not up in `timeout` seconds, or if a rig already answers on
    CONTROL. With `pid_file`, the process's pid is written there as soon as it exists, before the
    wait, so a script killed while waiting leaves a rig that can still be found and stopped."""
    control = os.path.abspath(control or default_control_path())
    if _answers(control):
        raise RigStartError(f"something already answers on {control}: another rig?")
    args = [binary, "rig", "--control", control]
    if root is not None:
        args += ["--root", root]
    args += list(extra_args)
    log = tempfile.TemporaryFile(prefix="latchkey-rig-")
    try:
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    except BaseException:
        log.close()
        raise
    rig = RigProcess(process, control, root, log)
    try:
        if pid_file is not None:
            with open(pid_file, "w") as handle:
                handle.write(f"{process.pid}\n")
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RigStartError(f"{' '.join(args)} exited with status {process.returncode}: {rig.output()}")
            if os.path.exists(control) and _answers(control):
                return rig
            if time.monotonic() > deadline:
                raise RigStartError(f"{' '.join(args)}: no control socket at {control} after {timeout:g} s: {rig.output()}")
            time.sleep(0.05)
    except BaseException:
        rig.stop(timeout=2)
        raise
