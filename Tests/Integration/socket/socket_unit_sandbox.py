"""Socket suite: the user unit's sandbox (udev/latchkey.service) against what the key really does. This
machine has no systemd user manager to run the unit in, so its rules are checked one by one on the real
processes: every system call a key makes (a PIN, a discoverable credential with a large blob, a sign-in,
credential management, the store sealed with and opened through the login keyring) and notify-send
makes, traced with strace, is in @system-service (as `systemd-analyze syscall-filter` expands it); none
maps memory writable and executable (MemoryDenyWriteExecute); only UNIX and netlink sockets are opened
(RestrictAddressFamilies); and `systemd-analyze security --offline --user` rates the unit's exposure."""

import re
import shutil

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports
from socket_seal_methods import PrivateKeyring

UNIT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir,
                                     "udev", "latchkey.service"))
FAMILIES = {"AF_UNIX", "AF_NETLINK"}


def syscall_set(group, seen=None):
    """The system calls in a systemd syscall-filter group, groups inside it expanded."""
    seen = set() if seen is None else seen
    listed = subprocess.run(["systemd-analyze", "syscall-filter", group], capture_output=True, text=True, timeout=30)
    assert listed.returncode == 0, listed.stderr
    calls = set()
    for line in listed.stdout.splitlines()[1:]:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@"):
            if line not in seen:
                seen.add(line)
                calls |= syscall_set(line, seen)
        else:
            calls.add(line)
    return calls


def traced(log):
    """(system calls used, writable+executable mappings, socket families) of an strace -f log."""
    calls, wx, families = set(), [], set()
    for line in open(log, errors="replace"):
        match = re.match(r"\d+\s+(\w+)\(", line)
        if not match:
            continue
        calls.add(match.group(1))
        if match.group(1) in ("mmap", "mprotect", "pkey_mprotect") and "PROT_WRITE" in line and "PROT_EXEC" in line:
            wx.append(line.strip())
        family = re.match(r"\d+\s+socket\((\w+)", line)
        if family:
            families.add(family.group(1))
    return calls, wx, families


def key_workload(path):
    """What a desktop key is asked: a PIN set, a discoverable credential with a large blob, a sign-in,
    credential management."""
    device = open_device(path)
    try:
        ctap = Ctap2(device)
        client_pin = ClientPin(ctap)
        client_pin.set_pin("246810")
        token = client_pin.get_pin_token("246810", ClientPin.PERMISSION.MAKE_CREDENTIAL | ClientPin.PERMISSION.LARGE_BLOB_WRITE,
                                         "sandbox.example")
        data_hash = os.urandom(32)
        made = ctap.make_credential(data_hash, {"id": "sandbox.example"}, {"id": b"u", "name": "u"},
                                    [{"type": "public-key", "alg": -7}], options={"rk": True}, extensions={"largeBlobKey": True},
                                    pin_uv_param=client_pin.protocol.authenticate(token, data_hash),
                                    pin_uv_protocol=client_pin.protocol.VERSION)
        LargeBlobs(ctap, client_pin.protocol, token).put_blob(made.large_blob_key, b"sandboxed")
        ctap.get_assertion("sandbox.example", os.urandom(32))
        management = CredentialManagement(ctap, client_pin.protocol,
                                          client_pin.get_pin_token("246810", ClientPin.PERMISSION.CREDENTIAL_MGMT))
        assert management.get_metadata()[1] >= 1
    finally:
        device.close()


@check("the user unit's sandbox holds for what the key does: every system call of a key serving a PIN, a discoverable credential "
       "with a large blob, a sign-in and credential management, of its store sealed with and opened through a real login keyring, "
       "and of notify-send, traced with strace, is in @system-service; no mapping is writable and executable; only UNIX and "
       "netlink sockets; systemd-analyze security --offline --user rates udev/latchkey.service under 7 (9.8 without it)")
def test_unit_sandbox():
    allowed = syscall_set("@system-service")
    assert {"read", "write", "mlock", "clone3"} <= allowed, "systemd-analyze gave a short @system-service"
    work = tempfile.mkdtemp(dir=WORK, prefix="sandbox-")
    keyring = PrivateKeyring(work, "sandbox")
    logs = []
    try:
        store, path = os.path.join(work, "store"), os.path.join(work, "key.sock")
        log = os.path.join(work, "key.strace")
        key = subprocess.Popen(["strace", "-f", "-qq", "-o", log, BINARY, "serve", "--transport", f"socket:{path}", "--store", store,
                                "--name", "sandbox", "--presence", "auto", "--uv", "auto"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=keyring.env, start_new_session=True)
        try:
            wait_for(lambda: os.path.exists(path), seconds=30, what="the traced key's socket")
            key_workload(path)
        finally:
            os.killpg(key.pid, signal.SIGTERM)   # strace and the key it runs (a session of their own)
            key.wait(timeout=30)
        logs.append(log)
        for name, arguments in (("seal", ["store", "seal", "--keyring", "--store", store]),
                                ("open", ["credentials", "list", "--store", store])):
            log = os.path.join(work, f"{name}.strace")
            done = subprocess.run(["strace", "-f", "-qq", "-o", log, BINARY, *arguments], capture_output=True, text=True,
                                  timeout=60, env=keyring.env, stdin=subprocess.DEVNULL)
            assert done.returncode == 0, done.stderr
            logs.append(log)
        if shutil.which("notify-send"):
            log = os.path.join(work, "notify-send.strace")
            subprocess.run(["strace", "-f", "-qq", "-o", log, "notify-send", "--expire-time=1", "Latchkey sandbox check"],
                           capture_output=True, timeout=60, env=keyring.env, stdin=subprocess.DEVNULL)
            logs.append(log)
        for log in logs:
            calls, wx, families = traced(log)
            assert len(calls) > 20, f"{log}: only {sorted(calls)}: strace saw too little to prove anything"
            assert calls <= allowed, f"{os.path.basename(log)}: outside @system-service: {sorted(calls - allowed)}"
            assert not wx, f"{os.path.basename(log)}: writable and executable memory: {wx[:3]}"
            assert families <= FAMILIES, f"{os.path.basename(log)}: sockets of {sorted(families - FAMILIES)}"
    finally:
        keyring.stop()
    runtime = os.path.join(work, "runtime")
    os.makedirs(runtime, mode=0o700, exist_ok=True)
    scores = {}
    for name, text in (("with", open(UNIT).read()),
                       ("without", re.sub(r"(?ms)^# Sandbox:.*?^RestrictAddressFamilies=[^\n]*\n", "", open(UNIT).read()))):
        unit = os.path.join(work, name, "latchkey.service")
        os.makedirs(os.path.dirname(unit), exist_ok=True)
        with open(unit, "w") as handle:
            handle.write(text)
        rated = subprocess.run(["systemd-analyze", "security", "--offline=true", "--user", unit], capture_output=True, text=True,
                               timeout=60, env={**os.environ, "XDG_RUNTIME_DIR": runtime})
        score = re.search(r"Overall exposure level for latchkey.service: ([0-9.]+)", rated.stdout + rated.stderr)
        assert score, rated.stdout[-500:] + rated.stderr
        scores[name] = float(score.group(1))
    print(f"      (exposure: {scores['without']} without the sandbox, {scores['with']} with it)")
    assert scores["with"] < 7.0 < scores["without"], scores
