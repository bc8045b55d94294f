"""Socket suite: secrets at rest and in logs. A full CTAP 2.1 session through python-fido2 on a
key run with `--presence control --trace FILE --log-level debug` — setPIN, resident credentials
with hmac-secret, credBlob and largeBlobKey, large blobs written and read, assertions with and
without UV, credentialManagement rename, the three WebAuthn signals through `latchkey signal`
(on the store and over the socket with --pin-file), a PIN change — then every byte of the store
directory (while the key runs, -wal and -shm included, and after it stopped), the trace (the
file, its reassembled CTAPHID messages and `latchkey trace` of it), the key's log and the CLI's
output is searched for every secret the session involved, in several encodings:

* known on the client: the PINs (and SHA-256 / LEFT(SHA-256, 16) of them), every
  pinUvAuthToken and ECDH shared secret, the hmac-secret salts and outputs, credBlobs,
  largeBlobKeys, large-blob plaintexts, user names, display names, user handles, RP IDs and
  RP names;
* read from the store with its master.key (the test opens the sealed rows as the key does):
  each credential's private key (checked against the attested public key), its CredRandoms
  (checked against the hmac-secret outputs), the wrapping and attestation keys, the stored PIN
  hash, and the master key itself (outside master.key).

Encodings: raw bytes / UTF-8 (text case-insensitively), UTF-16LE, hex (any case, also
space-separated) and base64 / base64url at each of the three alignments, so that a secret
inside a longer base64 string is found too. Any hit fails the check, and each is named; the
only exceptions are master.key holding the master key, and a CLI command's answer on stdout
repeating the RP ID, user handle or names given on its own command line (listed, not counted).

The running key's memory (/proc/PID/mem, read as root after the session) is searched too: key
material (private keys, device secrets, master key, tokens, ECDH secrets, salts, hmac outputs,
CredRandoms, the PIN and its hash) may appear only inside the secure heap, the MADV_DONTDUMP
mapping (SecureHeap); what the key hands the platform (credBlob, largeBlobKey, large blobs) and
what identifies (names, IDs) may appear elsewhere; both scans have positive controls.

A second check: the key disables core dumps (RLIMIT_CORE 0/0, PR_SET_DUMPABLE 0,
ProcessHardening). It is started with RLIMIT_CORE raised and its working directory in a temp
dir, shown to have 0/0 in /proc/PID/limits after it came up, used (PIN token, hmac-secret),
sent SIGSEGV (twice if the Swift runtime's backtracer survives the first, as it does for a
kill(2)'d signal), and no core file may appear; its crash output is searched like the logs. A
process without the hardening, killed the same way, shows that this machine writes cores
there (if /proc/sys/kernel/core_pattern is a pipe, only the limits can be checked)."""

import base64
import hmac
import resource
import shutil
import sqlite3

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports

SECRETS_PIN = "Zq7-secret-PIN"
SECRETS_NEW_PIN = "Wv9-rotated-PIN-k2m"
SECRETS_RP_A = ("secret-rp-7f3a.example", "Seventhreea Secret Relying Party")
SECRETS_RP_B = ("hidden-rp-c19e.example", "Cnineteene Hidden Relying Party")
# (rp, user name, display name): the first two at RP A, the third at RP B.
SECRETS_USERS = (
    (SECRETS_RP_A, "grace.secretname@7f3a", "Grace Secretname"),
    (SECRETS_RP_A, "hopper.quietname@7f3a", "Hopper Quietname"),
    (SECRETS_RP_B, "ivan.obscurename@c19e", "Ivan Obscurename"),
)
SECRETS_RENAMES = (   # credentialManagement, `signal current-user --store`, `signal current-user --socket`
    ("grace.renamed.k4p@7f3a", "Grace Renamedperson"),
    ("hopper.cli.z5t@7f3a", "Hopper Clinamed"),
    ("ivan.socket.m3w@c19e", "Ivan Socketnamed"),
)
STORE_SALT = b"latchkey credential store v1"
# Key material: in the running key's memory it may only be in the secure heap (mlocked, out of
# cores). What the key hands the platform by protocol (credBlob, largeBlobKey, large blobs) and
# what identifies (names, IDs) also lives in ordinary buffers.
HEAP_ONLY = {"credential private key", "device secret", "store master key", "pinUvAuthToken", "ECDH shared secret",
             "hmac-secret salt", "hmac-secret output", "CredRandom", "PIN"}
# What identifies rather than authenticates (a CLI's answer may repeat what it was given).
IDENTIFYING = {"RP ID", "RP name", "user name", "display name", "user handle"}


class Secrets:
    """Every secret of the session: kind → [(label, value)], value bytes or str."""

    def __init__(self):
        self.items = {}

    def add(self, kind, label, value):
        if value is None or len(value) == 0:
            return
        value = value if isinstance(value, str) else bytes(value)
        entries = self.items.setdefault(kind, [])
        if all(existing != value for _, existing in entries):
            entries.append((label, value))

    def all(self):
        return [(kind, label, value) for kind, entries in self.items.items() for label, value in entries]


def encodings(value):
    """(encoding, needle, case_insensitive) for one secret."""
    if isinstance(value, str):
        raw = value.encode()
        found = [("utf-8", raw, True), ("utf-16le", value.encode("utf-16-le"), True)]
    else:
        raw = value
        found = [("raw", raw, False)]
    found.append(("hex", raw.hex().encode(), True))
    found.append(("hex spaced", " ".join(f"{b:02x}" for b in raw).encode(), True))
    for name, encode in (("base64", base64.b64encode), ("base64url", base64.urlsafe_b64encode)):
        for shift in range(3):
            encoded = encode(b"\0" * shift + raw)
            start, end = -(-8 * shift // 6), 8 * (shift + len(raw)) // 6
            needle = encoded[start:end]
            if len(needle) >= 8 and all(needle != n for _, n, _ in found):
                found.append((f"{name}@{shift}", needle, False))
    return found


def search(places, secrets, skip=lambda kind, place: False):
    """[(kind, label, encoding, place, offset)] for every secret in every place."""
    lowered = {place: data.lower() for place, data in places.items()}
    findings = []
    for kind, label, value in secrets.all():
        for encoding, needle, insensitive in encodings(value):
            for place, data in places.items():
                if skip(kind, place):
                    continue
                haystack, wanted = (lowered[place], needle.lower()) if insensitive else (data, needle)
                offset = haystack.find(wanted)
                if offset >= 0:
                    findings.append((kind, label, encoding, place, offset))
    return findings


def report_findings(findings, places, secrets, title):
    needles = sum(len(encodings(value)) for _, _, value in secrets.all())
    print(f"      ({title}: {len(places)} places, {sum(len(d) for d in places.values())} bytes; "
          f"{len(secrets.all())} secrets of {len(secrets.items)} kinds, {needles} needles)", flush=True)
    for place, data in places.items():
        print(f"        searched {place}: {len(data)} bytes", flush=True)
    seen = set()
    for kind, label, encoding, place, offset in findings:
        if (kind, label, place) in seen:
            continue
        seen.add((kind, label, place))
        encodings_here = sorted({e for k, l, e, p, _ in findings if (k, l, p) == (kind, label, place)})
        print(f"        FOUND {kind} [{label}] in {place} as {', '.join(encodings_here)} (first at byte {offset})", flush=True)


class SecretsKey(ControlKey):
    """A control-presence key with a trace, all its files in `directory`."""

    def __init__(self, name, directory, store, presence="control", preexec=None):
        super().__init__(name)
        self.presence, self.preexec, self.store = presence, preexec, store
        self.socket_path = os.path.join(directory, f"{name}.sock")
        self.log_path = os.path.join(directory, f"{name}.log")
        self.control_path = os.path.join(directory, f"{name}.control")
        self.trace_path = os.path.join(directory, f"{name}.trace")

    def extra_args(self):
        return super().extra_args() if self.presence == "control" else ["--trace", self.trace_path]

    def ready_paths(self):
        return super().ready_paths() if self.presence == "control" else [self.socket_path]


def control_call(path, request):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(path)
        sock.sendall(json.dumps(request).encode() + b"\n")
        line = b""
        while not line.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            line += chunk
        return json.loads(line)


class Approver:
    """Approves every presence request of a control key through its control socket (as
    `latchkey approve --request N` would, without printing what it approved)."""

    def __init__(self, key):
        self.key, self.done, self.approved = key, threading.Event(), 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.is_set():
            try:
                pending = control_call(self.key.control_path, {"v": 1, "action": "status"}).get("pending")
                if pending and "request" in pending:
                    answer = control_call(self.key.control_path, {"v": 1, "action": "approve",
                                                                  "request": pending["request"], "timeout_ms": 5000})
                    self.approved += answer.get("result") == "approved"
                    continue
            except (OSError, ValueError):
                pass
            time.sleep(0.015)

    def stop(self):
        self.done.set()
        self.thread.join(timeout=10)


class Session:
    """The client's side of the session: what it holds, and the CLI output it saw."""

    def __init__(self, key, helper_dir, secrets):
        self.key, self.helper_dir, self.secrets = key, helper_dir, secrets
        self.ctap = Ctap2(key.device())
        self.client_pin = ClientPin(self.ctap)
        self.pin = None
        self.cli_stdout, self.cli_stderr = bytearray(), bytearray()
        self.credentials = {}   # user name at creation → dict
        inner = self.client_pin._get_shared_secret

        def recording_shared_secret():
            key_agreement, shared_secret = inner()
            self.note_shared_secret(shared_secret)
            return key_agreement, shared_secret

        self.client_pin._get_shared_secret = recording_shared_secret

    def note_shared_secret(self, shared_secret):
        number = len(self.secrets.items.get("ECDH shared secret", []))
        self.secrets.add("ECDH shared secret", f"#{number}", shared_secret)
        if len(shared_secret) == 64:   # protocol two: HMAC key ‖ AES key
            self.secrets.add("ECDH shared secret", f"#{number} HMAC key", shared_secret[:32])
            self.secrets.add("ECDH shared secret", f"#{number} AES key", shared_secret[32:])

    def set_pin(self, pin):
        self.client_pin.set_pin(pin)
        self.note_pin(pin)

    def note_pin(self, pin):
        self.pin = pin
        self.secrets.add("PIN", pin, pin)
        self.secrets.add("PIN", f"SHA-256({pin})", hashlib.sha256(pin.encode()).digest())
        self.secrets.add("PIN", f"LEFT(SHA-256({pin}), 16)", hashlib.sha256(pin.encode()).digest()[:16])

    def token(self, permissions, rp_id=None):
        token = self.client_pin.get_pin_token(self.pin, permissions, rp_id)
        self.secrets.add("pinUvAuthToken", f"{permissions!r} {rp_id or ''}".strip(), token)
        return token

    def cli(self, *args):
        result = latchkey_cli(*args, new_session=True)
        header = f"--- latchkey {args[0]} {args[1] if len(args) > 1 else ''} → {result.returncode}\n".encode()
        self.cli_stdout += header + result.stdout.encode()
        self.cli_stderr += header + result.stderr.encode()
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return json.loads(result.stdout) if "--json" in args else result.stdout

    def make_credential(self, rp, name, display_name):
        rp_id, rp_name = rp
        handle = os.urandom(16)
        cred_blob = os.urandom(32)
        token = self.token(ClientPin.PERMISSION.MAKE_CREDENTIAL | ClientPin.PERMISSION.LARGE_BLOB_WRITE, rp_id)
        client_data_hash = hashlib.sha256(os.urandom(16)).digest()
        attestation = self.ctap.make_credential(
            client_data_hash, {"id": rp_id, "name": rp_name}, {"id": handle, "name": name, "displayName": display_name},
            [{"type": "public-key", "alg": -7}],
            extensions={"hmac-secret": True, "credBlob": cred_blob, "largeBlobKey": True}, options={"rk": True},
            pin_uv_param=self.client_pin.protocol.authenticate(token, client_data_hash),
            pin_uv_protocol=self.client_pin.protocol.VERSION)
        outputs = attestation.auth_data.extensions or {}
        assert outputs.get("hmac-secret") is True and outputs.get("credBlob") is True, outputs
        large_blob_key = attestation.large_blob_key
        assert large_blob_key and len(large_blob_key) == 32, large_blob_key
        credential = {"rp": rp_id, "handle": handle, "blob": cred_blob, "large_blob_key": bytes(large_blob_key),
                      "id": bytes(attestation.auth_data.credential_data.credential_id),
                      "public_key": attestation.auth_data.credential_data.public_key, "token": token}
        self.credentials[name] = credential
        for kind, label, value in (("RP ID", rp_id, rp_id), ("RP name", rp_name, rp_name), ("user name", name, name),
                                   ("display name", display_name, display_name), ("user handle", name, handle),
                                   ("credBlob", name, cred_blob), ("largeBlobKey", name, large_blob_key)):
            self.secrets.add(kind, label, value)
        return credential

    def hmac_assertion(self, name, salts, uv):
        """getAssertion of one credential with hmac-secret (two salts), credBlob, largeBlobKey."""
        credential = self.credentials[name]
        key_agreement, shared_secret = self.client_pin._get_shared_secret()
        protocol = self.client_pin.protocol
        salt_enc = protocol.encrypt(shared_secret, b"".join(salts))
        extensions = {"hmac-secret": {1: key_agreement, 2: salt_enc, 3: protocol.authenticate(shared_secret, salt_enc),
                                      4: protocol.VERSION},
                      "credBlob": True, "largeBlobKey": True}
        client_data_hash = hashlib.sha256(os.urandom(16)).digest()
        extra = {}
        if uv:
            token = self.token(ClientPin.PERMISSION.GET_ASSERTION, credential["rp"])
            extra = {"pin_uv_param": protocol.authenticate(token, client_data_hash), "pin_uv_protocol": protocol.VERSION}
        assertion = self.ctap.get_assertion(credential["rp"], client_data_hash,
                                            [{"type": "public-key", "id": credential["id"]}], extensions=extensions, **extra)
        assert bool(assertion.auth_data.flags & 0x04) == uv, assertion.auth_data.flags
        outputs = assertion.auth_data.extensions or {}
        assert outputs.get("credBlob") == credential["blob"], outputs
        assert assertion.large_blob_key == credential["large_blob_key"]
        decrypted = protocol.decrypt(shared_secret, outputs["hmac-secret"])
        assert len(decrypted) == 64, len(decrypted)
        results = [decrypted[:32], decrypted[32:]]
        for index, (salt, output) in enumerate(zip(salts, results)):
            self.secrets.add("hmac-secret salt", f"salt {index + 1}", salt)
            self.secrets.add("hmac-secret output", f"{name} {'UV' if uv else 'no UV'} salt {index + 1}", output)
        return results


def run_secrets_session(key, helper_dir, secrets, state):
    session = Session(key, helper_dir, secrets)
    approver = Approver(key)
    try:
        session.set_pin(SECRETS_PIN)
        state["pin"] = SECRETS_PIN
        for rp, name, display_name in SECRETS_USERS:
            session.make_credential(rp, name, display_name)
        grace, hopper, ivan = (session.credentials[name] for _, name, _ in SECRETS_USERS)

        # Large blobs: one for grace, one for ivan (python-fido2 compresses and encrypts them
        # with the largeBlobKey; the key stores the array).
        blobs = {}
        for credential, name in ((grace, "grace"), (ivan, "ivan")):
            data = f"large blob plaintext of {name}: Kx8-blob-secret-{name}-".encode() * 8
            token = session.token(ClientPin.PERMISSION.LARGE_BLOB_WRITE)
            LargeBlobs(session.ctap, session.client_pin.protocol, token).put_blob(credential["large_blob_key"], data)
            blobs[name] = data
            secrets.add("large-blob data", name, data)
            secrets.add("large-blob data", f"{name} (first 40 bytes)", data[:40])
        reader = LargeBlobs(session.ctap)
        assert reader.get_blob(grace["large_blob_key"]) == blobs["grace"]
        assert reader.get_blob(ivan["large_blob_key"]) == blobs["ivan"]

        # hmac-secret with UV and without (two CredRandoms), credBlob and largeBlobKey back.
        salts = [os.urandom(32), os.urandom(32)]
        grace_uv = session.hmac_assertion("grace.secretname@7f3a", salts, uv=True)
        grace_no_uv = session.hmac_assertion("grace.secretname@7f3a", salts, uv=False)
        assert grace_uv != grace_no_uv, "with and without UV give different outputs"
        session.hmac_assertion("ivan.obscurename@c19e", [os.urandom(32), os.urandom(32)], uv=True)
        state["salts"] = salts

        # A discoverable assertion with UV: the key returns both users of RP A with their names.
        token = session.token(ClientPin.PERMISSION.GET_ASSERTION, SECRETS_RP_A[0])
        client_data_hash = hashlib.sha256(b"discoverable").digest()
        first = session.ctap.get_assertion(SECRETS_RP_A[0], client_data_hash,
                                           pin_uv_param=session.client_pin.protocol.authenticate(token, client_data_hash),
                                           pin_uv_protocol=session.client_pin.protocol.VERSION)
        users = {first.user["name"]} | {session.ctap.get_next_assertion().user["name"]
                                        for _ in range((first.number_of_credentials or 1) - 1)}
        assert users == {"grace.secretname@7f3a", "hopper.quietname@7f3a"}, users

        # credentialManagement: enumerate, rename grace.
        manager = CredentialManagement(session.ctap, session.client_pin.protocol,
                                       session.token(ClientPin.PERMISSION.CREDENTIAL_MGMT))
        assert {rp[CredentialManagement.RESULT.RP]["id"] for rp in manager.enumerate_rps()} == {SECRETS_RP_A[0], SECRETS_RP_B[0]}
        new_name, new_display = SECRETS_RENAMES[0]
        manager.update_user_info({"type": "public-key", "id": grace["id"]},
                                 {"id": grace["handle"], "name": new_name, "displayName": new_display})
        for kind, value in (("user name", new_name), ("display name", new_display)):
            secrets.add(kind, value, value)

        # The three signals through the CLI on the running key's store, then current-user over
        # the socket with the PIN in a file.
        store = key.store
        hidden = session.cli("signal", "unknown", "--store", store, "--rp", SECRETS_RP_A[0], "--json", "--", b64url(hopper["id"]))
        assert hidden.get("hidden") == 1, hidden
        assert offered_ids(session.ctap, SECRETS_RP_A[0]) == {grace["id"]}, "hopper hidden"
        shown = session.cli("signal", "all-accepted", "--store", store, "--rp", SECRETS_RP_A[0], "--user-handle",
                            b64url(hopper["handle"]), "--json", "--", b64url(hopper["id"]))
        assert shown.get("unhidden") == 1, shown
        new_name, new_display = SECRETS_RENAMES[1]
        session.cli("signal", "current-user", "--store", store, "--rp", SECRETS_RP_A[0], "--user-handle",
                    b64url(hopper["handle"]), "--user-name", new_name, "--display-name", new_display, "--json")
        for kind, value in (("user name", new_name), ("display name", new_display)):
            secrets.add(kind, value, value)
        pin_file = os.path.join(helper_dir, "pin")
        with open(os.open(pin_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
            handle.write(session.pin + "\n")
        new_name, new_display = SECRETS_RENAMES[2]
        renamed = session.cli("signal", "current-user", "--socket", key.socket_path, "--pin-file", pin_file, "--rp",
                              SECRETS_RP_B[0], "--user-handle", b64url(ivan["handle"]), "--user-name", new_name,
                              "--display-name", new_display, "--json")
        assert renamed.get("renamed") == 1, renamed
        for kind, value in (("user name", new_name), ("display name", new_display)):
            secrets.add(kind, value, value)
        session.cli("pin", "status", "--socket", key.socket_path, "--json")

        # The renames as python-fido2 sees them.
        manager = CredentialManagement(session.ctap, session.client_pin.protocol,
                                       session.token(ClientPin.PERMISSION.CREDENTIAL_MGMT))
        names = {}
        for rp in manager.enumerate_rps():
            for entry in manager.enumerate_creds(rp[CredentialManagement.RESULT.RP_ID_HASH]):
                user = entry[CredentialManagement.RESULT.USER]
                names[user["id"]] = (user.get("name"), user.get("displayName"))
        assert names == {grace["handle"]: SECRETS_RENAMES[0], hopper["handle"]: SECRETS_RENAMES[1],
                         ivan["handle"]: SECRETS_RENAMES[2]}, names

        # PIN change; the same salts with UV give the same outputs under the new PIN.
        session.client_pin.change_pin(session.pin, SECRETS_NEW_PIN)
        session.note_pin(SECRETS_NEW_PIN)
        state["pin"] = SECRETS_NEW_PIN
        assert session.hmac_assertion("grace.secretname@7f3a", salts, uv=True) == grace_uv
        expect_ctap_error(CtapError.ERR.PIN_INVALID, session.client_pin.get_pin_token, SECRETS_PIN,
                          ClientPin.PERMISSION.GET_ASSERTION, SECRETS_RP_A[0])
        state["complete"] = True
        return session, approver
    except BaseException:
        approver.stop()
        raise


def read_process_memory(pid):
    """{"secure heap": bytes, "elsewhere": bytes} of a running process's writable memory (as root:
    the key is not dumpable, so /proc/PID/mem needs CAP_SYS_PTRACE), split by whether the mapping is
    left out of core dumps (VmFlags dd: the secure heap) or not; and the secure heap's figures."""
    assert os.geteuid() == 0, "searching the key's memory needs root (the key is not dumpable): run the suite as root"
    regions, current = [], None
    with open(f"/proc/{pid}/smaps") as handle:
        for line in handle:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                low, high = (int(part, 16) for part in head.split("-"))
                current = {"low": low, "high": high, "perms": line.split()[1], "name": line.split()[-1] if len(line.split()) > 5 else ""}
                regions.append(current)
            elif head == "VmFlags:":
                current["flags"] = line.split()[1:]
    parts = {"secure heap": bytearray(), "elsewhere": bytearray()}
    heap = {"bytes": 0, "locked": False}
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
        for region in regions:
            if "r" not in region["perms"] or region["name"] in ("[vvar]", "[vvar_vclock]", "[vsyscall]"):
                continue
            try:
                memory.seek(region["low"])
                data = memory.read(region["high"] - region["low"])
            except OSError:
                continue
            dont_dump = "dd" in region.get("flags", [])
            parts["secure heap" if dont_dump else "elsewhere"] += data
            if dont_dump:
                heap["bytes"] += len(data)
                heap["locked"] = heap["locked"] or "lo" in region.get("flags", [])
    return {name: bytes(data) for name, data in parts.items()}, heap


def snapshot_directory(path, label):
    places = {}
    for root, _, files in os.walk(path):
        for name in sorted(files):
            full = os.path.join(root, name)
            with open(full, "rb") as handle:
                places[f"{label}/{os.path.relpath(full, path)}"] = handle.read()
    return places


def trace_messages(path):
    """The trace's CTAPHID messages reassembled (a secret split across reports is whole again)."""
    with open(path) as handle:
        records = [json.loads(line) for line in handle if line.strip()][1:]
    records = sorted((r for r in records if r.get("report")), key=lambda r: r["t"])
    packets = [((record["conn"], record["dir"]), bytes.fromhex(record["report"])) for record in records]
    return [payload for _, _, _, payload in ctaphid_frames.reassemble(packets)]


def open_store(store_dir, helper_dir):
    """The sealed rows of a store, opened with its master.key: {(table, name): {tag: bytes}}."""
    with open(os.path.join(store_dir, "master.key"), "rb") as handle:
        master = handle.read()
    seal_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=STORE_SALT, info=b"seal key").derive(master)
    copy_dir = tempfile.mkdtemp(dir=helper_dir, prefix="store-copy-")
    for name in os.listdir(store_dir):
        if name.startswith("credentials.sqlite"):
            shutil.copy(os.path.join(store_dir, name), copy_dir)
    database = sqlite3.connect(os.path.join(copy_dir, "credentials.sqlite"))

    def binding(table, keys):
        return b"latchkey.store.v1\0" + table.encode() + b"\0" + b"".join(len(k).to_bytes(2, "big") + k for k in keys)

    def fields(plaintext):
        assert plaintext[0] == 1, plaintext[:2]
        result, offset = {"kind": plaintext[1]}, 2
        while offset < len(plaintext):
            tag, length = plaintext[offset], int.from_bytes(plaintext[offset + 1:offset + 5], "big")
            result[tag] = plaintext[offset + 5:offset + 5 + length]
            offset += 5 + length
        return result

    def unseal(sealed, aad):
        return AESGCM(seal_key).decrypt(sealed[:12], sealed[12:], aad)

    rows, plaintexts = {}, []
    try:
        for cred_key, rp_key, user_key, sealed in database.execute(
                "SELECT cred_key, rp_key, user_key, sealed FROM credentials"):
            plaintext = unseal(sealed, binding("credentials", [cred_key, rp_key, user_key]))
            plaintexts.append(plaintext)
            rows[("credentials", cred_key)] = fields(plaintext)
        for rp_key, sealed in database.execute("SELECT rp_key, sealed FROM rps"):
            plaintext = unseal(sealed, binding("rps", [rp_key]))
            plaintexts.append(plaintext)
            rows[("rps", rp_key)] = fields(plaintext)
        for name, sealed in database.execute("SELECT name, sealed FROM device"):
            plaintext = unseal(sealed, binding("device", [name.encode()]))
            plaintexts.append(plaintext)
            rows[("device", name)] = fields(plaintext)
    finally:
        database.close()
    return master, rows, b"\n".join(plaintexts)


def add_store_secrets(store_dir, helper_dir, session, state, secrets):
    """The secrets only the store knows, read with its master key and checked against what the
    client saw; returns the decrypted plaintext (the search's positive control)."""
    master, rows, plaintext = open_store(store_dir, helper_dir)
    secrets.add("store master key", "master.key", master)
    by_handle = {c["handle"]: (name, c) for name, c in session.credentials.items()}
    checked = 0
    for (table, _), record in rows.items():
        if table == "credentials":
            name, credential = by_handle[record[5]]
            private_key = record[9]
            public = ec.derive_private_key(int.from_bytes(private_key, "big"), ec.SECP256R1()).public_key().public_numbers()
            assert (public.x.to_bytes(32, "big"), public.y.to_bytes(32, "big")) == \
                (credential["public_key"][-2], credential["public_key"][-3]), f"the private key of {name} signs for its public key"
            secrets.add("credential private key", name, private_key)
            with_uv, without_uv = record[13], record[14]
            secrets.add("CredRandom", f"{name} with UV", with_uv)
            secrets.add("CredRandom", f"{name} without UV", without_uv)
            if name == "grace.secretname@7f3a":
                expected = hmac.new(with_uv, state["salts"][0], hashlib.sha256).digest()
                assert any(value == expected for _, value in secrets.items["hmac-secret output"]), \
                    "HMAC(CredRandomWithUV, salt1) is the output the client got"
            assert record[11] == credential["blob"] and record[12] == credential["large_blob_key"]
            checked += 1
        elif (table, record["kind"]) == ("device", 3):
            secrets.add("device secret", "wrapping key", record[2])
            secrets.add("device secret", "attestation private key", record[3])
        elif (table, record["kind"]) == ("device", 4):
            secrets.add("PIN", "stored PIN hash", record[1])
    assert checked == len(session.credentials), (checked, len(session.credentials))
    return plaintext


@check("secrets at rest and in logs: after a full session (PIN, hmac-secret, credBlob, largeBlob, credMgmt, "
       "signals, PIN change) no private key, PIN, token, salt, hmac output, credBlob, large blob, user name "
       "or RP ID is in clear in the store directory, the trace, the key's log or the CLI's output; "
       "in the running key's memory, key material is only in the secure heap")
def test_secrets_in_files(work, state):
    secrets = Secrets()
    store = os.path.join(work, "store")
    helper_dir = tempfile.mkdtemp(dir=WORK, prefix="secrets-helper-")
    key = SecretsKey("secrets", work, store).start()
    state["store"] = store
    approver = None
    try:
        session, approver = run_secrets_session(key, helper_dir, secrets, state)
        state["session"] = session
        approver.stop()
        memory, heap = read_process_memory(key.process.pid)
        running = snapshot_directory(store, "store (key running)")
        print(f"      (store files while the key runs: {', '.join(p.split('/', 1)[1] for p in running)})", flush=True)
    finally:
        if approver:
            approver.stop()
        stopped = key.stop()
    assert stopped == 0, key.log()
    print(f"      (session: {approver.approved} presence requests approved, "
          f"{len(secrets.items['pinUvAuthToken'])} tokens)", flush=True)

    places = dict(running)
    places.update(snapshot_directory(store, "store (key stopped)"))
    with open(key.trace_path, "rb") as handle:
        places["trace file"] = handle.read()
    places["trace messages (reassembled)"] = b"\n".join(trace_messages(key.trace_path))
    for label, extra in (("latchkey trace", []), ("latchkey trace --json", ["--json"])):
        decoded = subprocess.run([BINARY, "trace", *extra, key.trace_path], capture_output=True, timeout=60)
        assert decoded.returncode == 0, decoded.stderr
        places[label] = decoded.stdout + decoded.stderr
    with open(key.log_path, "rb") as handle:
        places["key log"] = handle.read()
    places["CLI stderr"] = bytes(session.cli_stderr)
    places["CLI stdout"] = bytes(session.cli_stdout)

    plaintext = add_store_secrets(store, helper_dir, session, state, secrets)
    state["secrets"] = secrets
    # Positive control: the searcher finds what the store holds once it is opened.
    control = search({"decrypted store": plaintext}, secrets)
    for kind in ("credential private key", "CredRandom", "user name", "RP ID", "credBlob", "largeBlobKey", "user handle"):
        assert any(f[0] == kind for f in control), f"the search does not find the {kind} in the decrypted store"

    # master.key holds the master key, by design; a CLI's answer on stdout names the RP, user
    # handle and names it was given on its command line (not a log: said apart, not a failure).
    # Everything else anywhere is a finding.
    def by_design(kind, place):
        return (kind == "store master key" and place.endswith("/master.key")) or \
            (place == "CLI stdout" and kind in IDENTIFYING)

    print(f"      (key memory: secure heap {heap['bytes'] // 1024} kB{' mlocked' if heap['locked'] else ''}, "
          f"{len(memory['elsewhere']) // 1024} kB elsewhere)", flush=True)
    in_memory = search({f"key memory, {name}": data for name, data in memory.items()}, secrets)
    seen = {(kind, place.split(", ")[1]) for kind, _, _, place, _ in in_memory}
    for where in ("secure heap", "elsewhere"):
        kinds = sorted({kind for kind, place in seen if place == where})
        print(f"        in the key's memory, {where}: {', '.join(kinds) or 'nothing'}", flush=True)
    # Positive controls: the scan reads the heap and the rest (a key it must hold; an RP ID it must have seen).
    assert ("credential private key", "secure heap") in seen, "no credential key found in the secure heap: the scan is blind"
    assert ("RP ID", "elsewhere") in seen, "no RP ID found outside the secure heap: the scan is blind"
    stray = sorted({f"{kind} [{label}]" for kind, label, _, place, _ in in_memory
                    if kind in HEAP_ONLY and place.endswith("elsewhere")})
    assert not stray, f"key material outside the secure heap, where a core or swap would hold it: {stray}"

    findings = search(places, secrets, skip=by_design)
    report_findings(findings, places, secrets, "searched")
    echoes = sorted({f"{kind} [{label}]" for kind, label, _, _, _ in
                     search({"CLI stdout": places["CLI stdout"]}, secrets) if kind in IDENTIFYING})
    if echoes:
        print(f"        (not counted: the CLI's answers on stdout echo their arguments: {', '.join(echoes)})", flush=True)
    if findings:
        summary = sorted({f"{kind} in {place.split('/')[0]}" for kind, _, _, place, _ in findings})
        raise AssertionError(f"{len(findings)} hits: " + "; ".join(summary))


@check("no core dump: the key comes up with RLIMIT_CORE 0/0 even when started with it unlimited; "
       "SIGSEGV after a PIN token and an hmac-secret assertion leaves no core file in its working directory, "
       "and its crash output holds no secret")
def test_no_core_dump(work, state):
    try:
        with open("/proc/sys/kernel/core_pattern") as handle:
            pattern = handle.read().strip()
    except OSError:
        pattern = None
    piped = pattern is not None and pattern.startswith("|")

    def allow_cores(directory):
        def preexec():
            os.chdir(directory)
            try:
                resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            except (ValueError, OSError):
                hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
                resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))
        return preexec

    # The control: an unhardened process killed the same way leaves a core here?
    control_dir = tempfile.mkdtemp(dir=work, prefix="core-control-")
    control = subprocess.Popen(["sleep", "30"], preexec_fn=allow_cores(control_dir))
    time.sleep(0.2)
    with open(f"/proc/{control.pid}/limits") as handle:
        control_limit = next(line for line in handle if line.startswith("Max core file size")).split()[4:6]
    control.send_signal(signal.SIGSEGV)
    control.wait(timeout=10)
    control_cores = os.listdir(control_dir)
    shutil.rmtree(control_dir, ignore_errors=True)
    cores_land_here = bool(control_cores)
    print(f"      (core_pattern {pattern!r}{' (a pipe: cores leave the machine’s files, only the limits are checked)' if piped else ''}; "
          f"an unhardened process with limit {' '.join(control_limit)} left {control_cores or 'no core'})", flush=True)

    crash_dir = tempfile.mkdtemp(dir=work, prefix="core-crash-")
    signals, log_before = 0, 0
    store = state.get("store") if state.get("complete") else None
    key = SecretsKey("crashing", work, store or os.path.join(work, "crash-store"), presence="auto",
                     preexec=allow_cores(crash_dir)).start()
    try:
        with open(f"/proc/{key.process.pid}/limits") as handle:
            line = next(line for line in handle if line.startswith("Max core file size"))
        soft, hard = line.split()[4:6]
        assert (soft, hard) == ("0", "0"), f"RLIMIT_CORE of the running key: {line.strip()}"
        if store:
            # Put the secrets back into the key's memory: a PIN token, the CredRandom, the salts.
            session = Session(key, work, state["secrets"])
            session.pin = state["pin"]
            session.credentials = state["session"].credentials
            session.hmac_assertion("grace.secretname@7f3a", state["salts"], uv=True)
        time.sleep(0.2)
        log_before = os.path.getsize(key.log_path)
        # The Swift runtime's backtracer catches the first SIGSEGV, prints a crash report and
        # returns (SIG_DFL from then on): a kill(2)'d SIGSEGV does not fault again, so the key
        # may live on. A second one takes the default action (a core, were it allowed).
        while key.process.poll() is None and signals < 2:
            mark = os.path.getsize(key.log_path)
            key.process.send_signal(signal.SIGSEGV)
            signals += 1
            deadline = time.time() + 15
            while key.process.poll() is None and time.time() < deadline:
                with open(key.log_path, "rb") as handle:
                    handle.seek(mark)
                    if b"Backtrace took" in handle.read():   # the backtracer is done
                        deadline = min(deadline, time.time() + 0.5)
                time.sleep(0.05)
            if key.process.poll() is None:
                if signals == 1:
                    device = key.device()
                    answers = Ctap2(device).info is not None
                    device.close()
                    print(f"      (NOTE: the key survived a SIGSEGV{' and still answers getInfo' if answers else ''}: "
                          "the Swift backtracer handled it; sending a second one)", flush=True)
    finally:
        survived = key.process.poll() is None
        if survived:
            key.process.kill()
            key.process.wait()
    assert not survived, "two SIGSEGVs did not end the key (SIGKILLed)"
    print(f"      (key exit status {key.process.returncode} after {signals} SIGSEGV)", flush=True)
    time.sleep(0.3)
    leftovers = os.listdir(crash_dir)
    assert not leftovers, f"the crashed key left {leftovers} in its working directory"
    if not piped and not cores_land_here:
        print("      (this machine wrote no core for the unhardened process either: only the limits prove it)", flush=True)
    assert key.process.returncode != 0, "SIGSEGV ended the key"

    with open(key.log_path, "rb") as handle:
        handle.seek(log_before)
        crash_output = handle.read()
    if b"Registers:" in crash_output:
        print("      (NOTE: the crash output is a Swift backtrace with the 16 bytes each register points at, "
              "written to the log: memory contents of the crashed key)", flush=True)
    if store:
        places = {"crash output of the key": crash_output}
        findings = search(places, state["secrets"])
        report_findings(findings, places, state["secrets"], "crash output searched")
        assert not findings, f"secrets in the crash output: {sorted({f[0] for f in findings})}"


def test_secrets_at_rest():
    """Run the secrets checks on keys of their own, in a directory of their own."""
    work = tempfile.mkdtemp(dir=WORK, prefix="secrets-")
    state = {}
    test_secrets_in_files(work, state)
    test_no_core_dump(work, state)
