"""Socket suite: a master key sealed to the login keyring (libsecret against a real gnome-keyring-daemon on a
private D-Bus session) and to a TPM 2.0 (tpm2-tss against a real swtpm on loopback) — what a user meets: `serve`
opening without a passphrase, every credential still signing (verified as a relying party would), a copy of the
directory that opens nowhere else (another keyring, another TPM) with an error naming why, a locked keyring and a
missing TPM named as such, PCR binding, switching between methods with no keyring item left behind, and SIGKILLs
in the middle of switches that never leave a store no method opens."""

import random
import re
import shutil

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports
from socket_sealed import cli, private_file, register, sign_in

QUICK = ["--scrypt-log-n", "10"]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PrivateKeyring:
    """A D-Bus session bus of our own and a gnome-keyring-daemon on it whose login keyring is unlocked
    (created on first use), in a private HOME: the desktop session a user has, without a desktop."""

    def __init__(self, work, name):
        self.home = os.path.join(work, name + "-home")
        os.makedirs(self.home, mode=0o700, exist_ok=True)
        self.bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"], stdout=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self.address = self.bus.stdout.readline().strip()
        assert self.address.startswith("unix:"), f"dbus-daemon gave no address: {self.address!r}"
        self.env = {**os.environ, "HOME": self.home, "XDG_DATA_HOME": os.path.join(self.home, "data"),
                    "XDG_RUNTIME_DIR": self.home, "DBUS_SESSION_BUS_ADDRESS": self.address}
        self.env.pop("LATCHKEY_PASSPHRASE_FILE", None)
        self.daemon = subprocess.Popen(["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       env=self.env, start_new_session=True)
        self.daemon.stdin.write(b"login password")
        self.daemon.stdin.close()
        wait_for(lambda: self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                                   "org.freedesktop.secrets").returncode == 0
                 and "true" in self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                                         "org.freedesktop.secrets").stdout, what="gnome-keyring-daemon on the private bus")

    def call(self, destination, path, method, *args):
        return subprocess.run(["gdbus", "call", "--session", "--dest", destination, "--object-path", path, "--method", method, *args],
                              capture_output=True, text=True, timeout=20, env=self.env, stdin=subprocess.DEVNULL)

    def items(self, item):
        """The object paths of the keyring's items named `item` (unlocked and locked)."""
        found = self.call("org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.SearchItems",
                          "{'item': '%s'}" % item)
        assert found.returncode == 0, found.stderr
        return [path for path in found.stdout.split("'") if path.startswith("/org/freedesktop/secrets/collection/")]

    def lock(self):
        locked = self.call("org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.Lock",
                           "['/org/freedesktop/secrets/collection/login']")
        assert locked.returncode == 0, locked.stderr

    def cli(self, *args, timeout=60):
        return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              start_new_session=True, env=self.env)

    def stop(self):
        for process in (self.daemon, self.bus):
            if process.poll() is None:
                process.kill()
            process.wait()


class SoftwareTPM:
    """swtpm on loopback (its own state directory: its own TPM), reached through TSS2_TCTI."""

    def __init__(self, work, name):
        self.state = os.path.join(work, name + "-tpm")
        os.makedirs(self.state, exist_ok=True)
        self.port = free_port()
        self.process = None
        self.start()

    @property
    def tcti(self):
        return f"swtpm:host=127.0.0.1,port={self.port}"

    @property
    def tools_env(self):
        """The environment tpm2-tools need to reach this swtpm."""
        return {**os.environ, "TPM2TOOLS_TCTI": self.tcti}

    def start(self):
        # Its control port is the next one, which another program may hold: then swtpm exits at
        # once, and it is tried again on other ports (the state directory, the TPM, stays).
        for attempt in range(5):
            self.process = subprocess.Popen(["swtpm", "socket", "--tpm2", "--tpmstate", f"dir={self.state}",
                                             "--server", f"type=tcp,port={self.port},bindaddr=127.0.0.1",
                                             "--ctrl", f"type=tcp,port={self.port + 1},bindaddr=127.0.0.1",
                                             "--flags", "not-need-init,startup-clear"],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

            def answers():
                with socket.socket() as probe:
                    return probe.connect_ex(("127.0.0.1", self.port)) == 0 or self.process.poll() is not None
            wait_for(answers, seconds=20, what="swtpm listening")
            if self.process.poll() is None:
                return
            self.port = free_port()
        raise AssertionError("swtpm did not start on five pairs of ports")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
        if self.process:
            self.process.wait()

    def flush_after_kill(self):
        """What the kernel's resource manager (/dev/tpmrm0, the key's default TCTI) does when a process
        holding TPM handles dies: flushes them. swtpm reached directly has none, so a process killed
        between loading a key and flushing it would leave it there, and after three such kills the
        TPM's object slots are full (TPM_RC_OBJECT_MEMORY). True when anything was left."""
        env = self.tools_env
        left = False
        for kind, flag in (("handles-transient", "-t"), ("handles-loaded-session", "-l")):
            listed = subprocess.run(["tpm2_getcap", kind], capture_output=True, text=True, env=env, timeout=30)
            assert listed.returncode == 0, listed.stderr
            if listed.stdout.strip():
                left = True
                flushed = subprocess.run(["tpm2_flushcontext", flag], capture_output=True, text=True, env=env, timeout=30)
                assert flushed.returncode == 0, flushed.stderr
        return left

    def extend_pcr(self, pcr):
        env = self.tools_env
        extended = subprocess.run(["tpm2_pcrextend", f"{pcr}:sha256=" + "ab" * 32], capture_output=True, text=True, env=env,
                                  timeout=30)
        assert extended.returncode == 0, extended.stderr


def tpm_cli(tpm, *args, passphrase_file=None):
    os.environ["TSS2_TCTI"] = tpm.tcti
    try:
        return cli(*args, passphrase_file=passphrase_file)
    finally:
        del os.environ["TSS2_TCTI"]


def master_key(store):
    with open(os.path.join(store, "master.key"), "rb") as handle:
        return handle.read()


def two_credentials(store, name):
    key = Key(name, store=store).start()
    try:
        return [register(key, f"{name}.example", resident=False), register(key, f"{name}-rk.example", resident=True)]
    finally:
        key.stop()


def key_with_env(name, store, env):
    """A key started on `store` with `env` as its whole environment (the keyring's bus, TSS2_TCTI…)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        return Key(name, store=store).start()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def signs_both(name, store, made, env):
    """A key serving the store with `env` (the keyring's bus, or TSS2_TCTI) signs for both credentials."""
    key = key_with_env(name, store, env)
    try:
        for (server, credential), discoverable in zip(made, (False, True)):
            sign_in(key, server, credential, discoverable)
    finally:
        assert key.stop() == 0, key.log()


@check("store seal --keyring (a real gnome-keyring-daemon, private D-Bus session): status says keyring and that it answers; "
       "serve needs no passphrase and signs for both credentials made before (Fido2Server verifies); the directory copied "
       "under another user's keyring opens nothing ('no key for it'); a locked keyring is named as locked and changes "
       "nothing; re-sealing clears the old item; passphrase → keyring → unseal gives back the same key file")
def test_keyring_seal(work):
    store = os.path.join(work, "keyring-store")
    made = two_credentials(store, "keyring")
    raw = master_key(store)
    keyring, other = PrivateKeyring(work, "keyring"), None
    try:
        sealed = keyring.cli("store", "seal", "--keyring", "--store", store)
        assert sealed.returncode == 0 and "login keyring" in sealed.stdout, sealed.stdout + sealed.stderr
        status = json.loads(keyring.cli("store", "status", "--store", store, "--json").stdout)
        assert status["method"] == "keyring" and status["keyringAnswers"] is True, status
        item = status["item"]
        assert len(keyring.items(item)) == 1, "the wrapping key is in the keyring under the item master.key names"
        assert raw not in master_key(store)
        signs_both("keyring-serving", store, made, keyring.env)

        copy = os.path.join(work, "keyring-copy")
        shutil.copytree(store, copy)
        other = PrivateKeyring(work, "other-user")
        listed = other.cli("credentials", "list", "--store", copy)
        assert listed.returncode == 1 and "no key for it" in listed.stderr, listed.stderr
        outside = cli("credentials", "list", "--store", copy)   # no session bus at all
        assert outside.returncode == 1 and "login keyring" in outside.stderr, outside.stderr

        before = master_key(store)
        keyring.lock()
        locked = keyring.cli("credentials", "list", "--store", store)
        assert locked.returncode == 1 and "keyring is locked" in locked.stderr, locked.stderr
        assert master_key(store) == before, "a locked keyring changed master.key"

        keyring.stop()
        keyring = PrivateKeyring(work, "keyring")   # the same HOME: the login keyring unlocked again, as at the next login
        listed = keyring.cli("credentials", "list", "--store", store, "--json")
        assert listed.returncode == 0 and len(json.loads(listed.stdout)["credentials"]) == 1, listed.stdout + listed.stderr

        # Switch to a passphrase and back: the old item is cleared once master.key no longer names it.
        passphrase = private_file(os.path.join(work, "keyring-pass"), "a passphrase for the switch")
        switched = keyring.cli("store", "seal", "--passphrase", "--passphrase-file", passphrase, *QUICK, "--store", store)
        assert switched.returncode == 0, switched.stderr
        assert keyring.items(item) == [], "the keyring item of the old seal is left behind"
        env = {**keyring.env, "LATCHKEY_PASSPHRASE_FILE": passphrase}
        back = subprocess.run([BINARY, "store", "seal", "--keyring", "--store", store], capture_output=True, text=True,
                              timeout=60, env=env, stdin=subprocess.DEVNULL)
        assert back.returncode == 0, back.stderr
        item = json.loads(keyring.cli("store", "status", "--store", store, "--json").stdout)["item"]
        unsealed = keyring.cli("store", "unseal", "--store", store)
        assert unsealed.returncode == 0, unsealed.stderr
        assert master_key(store) == raw, "unsealing gives back the very same key"
        assert keyring.items(item) == [], "unsealing leaves the keyring item behind"
    finally:
        keyring.stop()
        if other:
            other.stop()


@check("store seal --tpm (tpm2-tss against a real swtpm; TSS2_TCTI names it): serve needs no passphrase and signs for both "
       "credentials; the directory copied to a machine with another TPM opens nothing ('another TPM'); with the TPM gone the "
       "error (and store status) says no TPM answered; --pcr 7 opens until PCR 7 is extended, then names the PCR; unseal gives back the key file")
def test_tpm_seal(work):
    store = os.path.join(work, "tpm-store")
    made = two_credentials(store, "tpm")
    raw = master_key(store)
    tpm, other = SoftwareTPM(work, "machine"), None
    try:
        sealed = tpm_cli(tpm, "store", "seal", "--tpm", "--store", store)
        assert sealed.returncode == 0 and "TPM 2.0" in sealed.stdout, sealed.stdout + sealed.stderr
        status = json.loads(tpm_cli(tpm, "store", "status", "--store", store, "--json").stdout)
        assert status["method"] == "tpm" and status["pcrs"] == [] and status["tpmAnswers"] is True, status
        assert raw not in master_key(store)
        signs_both("tpm-serving", store, made, {**os.environ, "TSS2_TCTI": tpm.tcti})

        copy = os.path.join(work, "tpm-copy")
        shutil.copytree(store, copy)
        other = SoftwareTPM(work, "other-machine")
        listed = tpm_cli(other, "credentials", "list", "--store", copy)
        assert listed.returncode == 1 and "another TPM" in listed.stderr, listed.stderr
        other.stop()
        gone = tpm_cli(other, "credentials", "list", "--store", copy)
        assert gone.returncode == 1 and "no TPM answered" in gone.stderr, gone.stderr
        # store status says so too, not only "sealed to this machine's TPM" (its JSON: tpmAnswers false).
        told = tpm_cli(other, "store", "status", "--store", copy)
        assert told.returncode == 0 and "TPM not answering: no TPM answered" in told.stdout, told.stdout + told.stderr
        told = json.loads(tpm_cli(other, "store", "status", "--store", copy, "--json").stdout)
        assert told["tpmAnswers"] is False, told

        bound = tpm_cli(tpm, "store", "seal", "--tpm", "--pcr", "7", "--store", store)
        assert bound.returncode == 0 and "PCR 7" in bound.stdout, bound.stdout + bound.stderr
        listed = tpm_cli(tpm, "credentials", "list", "--store", store, "--json")
        assert listed.returncode == 0 and len(json.loads(listed.stdout)["credentials"]) == 1, listed.stderr
        before = master_key(store)
        tpm.extend_pcr(7)
        changed = tpm_cli(tpm, "credentials", "list", "--store", store)
        assert changed.returncode == 1 and "PCR" in changed.stderr, changed.stderr
        assert master_key(store) == before, "a failed PCR policy changed master.key"

        # The swtpm restarted (startup-clear: PCRs reset, as at a reboot into the same state) opens it again.
        tpm.stop()
        tpm.start()
        unsealed = tpm_cli(tpm, "store", "unseal", "--store", store)
        assert unsealed.returncode == 0, unsealed.stderr
        assert master_key(store) == raw, "unsealing gives back the very same key"
    finally:
        tpm.stop()
        if other:
            other.stop()


@check("kill -9 while switching between TPM, keyring and passphrase seals and unsealing, at random moments "
       "(LATCHKEY_SEAL_KILLS, default 150): after each kill some method opens the store and lists its credential")
def test_method_switch_kills(work):
    store = os.path.join(work, "switch-store")
    key = Key("switch-kills", store=store).start()
    try:
        register(key, "switch.example", resident=True)
    finally:
        key.stop()
    passphrase = private_file(os.path.join(work, "switch-pass"), "switching passphrase")
    keyring, tpm = PrivateKeyring(work, "switch"), SoftwareTPM(work, "switch")
    env = {**keyring.env, "TSS2_TCTI": tpm.tcti, "LATCHKEY_PASSPHRASE_FILE": passphrase}
    steps = [["store", "seal", "--tpm"], ["store", "seal", "--keyring"],
             ["store", "seal", "--passphrase", "--passphrase-file", passphrase, "--current-passphrase-file", passphrase, *QUICK],
             ["store", "unseal"]]
    kills = int(os.environ.get("LATCHKEY_SEAL_KILLS", "150"))
    rng = random.Random(int(os.environ.get("LATCHKEY_CRASH_SEED") or 11))
    outcomes = {"killed": 0, "finished": 0, "left TPM handles": 0}
    seen = set()
    try:
        for _ in range(kills):
            args = rng.choice(steps)
            process = subprocess.Popen([BINARY, *args, "--store", store], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True, env=env)
            time.sleep(rng.uniform(0, 0.15))   # a switch takes 30–100 ms here: kills land before, during and after
            killed = process.poll() is None
            if killed:
                process.kill()
            outcomes["killed" if killed else "finished"] += 1
            process.wait()
            left = tpm.flush_after_kill()
            assert killed or not left, f"`{' '.join(args)}` finished and left handles in the TPM"
            outcomes["left TPM handles"] += left
            opened = subprocess.run([BINARY, "credentials", "list", "--store", store, "--json"], capture_output=True, text=True,
                                    timeout=60, env=env, stdin=subprocess.DEVNULL)
            assert opened.returncode == 0 and len(json.loads(opened.stdout)["credentials"]) == 1, \
                f"no method opens the store after `{' '.join(args)}`: {opened.stderr}"
            status = subprocess.run([BINARY, "store", "status", "--store", store, "--json"], capture_output=True, text=True,
                                    timeout=60, env=env, stdin=subprocess.DEVNULL)
            seen.add(json.loads(status.stdout).get("method", "unsealed"))
            assert not tpm.flush_after_kill(), "`credentials list` or `store status` left handles in the TPM"
        print(f"      ({kills} rounds: {outcomes['killed']} killed mid-way ({outcomes['left TPM handles']} of them left TPM handles, "
              f"flushed as tpmrm would), {outcomes['finished']} finished first; "
              f"states seen: {', '.join(sorted(seen))})", flush=True)
        assert outcomes["killed"] > 0, "no round was killed mid-way: the test did not test"
        assert seen == {"tpm", "keyring", "passphrase", "unsealed"}, f"the rounds did not switch through every method: {seen}"
    finally:
        keyring.stop()
        tpm.stop()


def TPMKey(name, tpm, store):  # noqa: N802 - reads as the key it makes
    """`latchkey serve --keys tpm` reaching `tpm` (TSS2_TCTI in its environment only)."""
    tcti = tpm.tcti if tpm else "swtpm:host=127.0.0.1,port=9"
    return Key(name, store=store, extra=["--keys", "tpm"], environment={"TSS2_TCTI": tcti})


def no_credential_signs(key, server, credential, discoverable):
    try:
        sign_in(key, server, credential, discoverable)
    except Exception as error:  # python-fido2: ClientError (NO_CREDENTIALS), or the RP's check
        return str(error)
    raise AssertionError("a copied TPM-bound credential signed on another key")


@check("serve --keys tpm (swtpm): getInfo offers ES256 alone; credentials made there sign in (Fido2Server verifies), "
       "resident and not; `credentials list` says TPM for each; the same store on another TPM, and on a key without "
       "--keys tpm, has none of them; the first TPM still signs after a restart; no TPM and --algorithms EdDSA are "
       "refused with what to do")
def test_tpm_keys(work):
    store = os.path.join(work, "tpm-keys-store")
    tpm, other = SoftwareTPM(work, "keys"), None
    try:
        key = TPMKey("tpm-keys", tpm, store).start()
        try:
            device = key.device()
            try:
                info = Ctap2(device).info
            finally:
                device.close()
            assert [p["alg"] for p in info.algorithms] == [-7], info.algorithms
            made = [register(key, "tpm-keys.example", resident=False), register(key, "tpm-keys-rk.example", resident=True)]
            for (server, credential), discoverable in zip(made, (False, True)):
                sign_in(key, server, credential, discoverable)
        finally:
            assert key.stop() == 0, key.log()
        with open(key.log_path, errors="replace") as log:
            assert "made and kept by the TPM" in log.read(), key.log()

        listed = cli("credentials", "list", "--store", store, "--all", "--json")
        assert listed.returncode == 0, listed.stderr
        credentials = json.loads(listed.stdout)["credentials"]
        assert len(credentials) == 2 and all(c["keyStorage"] == "tpm" for c in credentials), credentials
        assert all(c["exportable"] is False for c in credentials), credentials
        table = cli("credentials", "list", "--store", store, "--all")
        assert table.stdout.count("ES256 (TPM)") == 2, table.stdout

        copy = os.path.join(work, "tpm-keys-copy")
        shutil.copytree(store, copy)
        for name in ("lock", "serving"):
            if os.path.exists(os.path.join(copy, name)):
                os.unlink(os.path.join(copy, name))
        other = SoftwareTPM(work, "keys-elsewhere")
        for elsewhere in (TPMKey("tpm-keys-elsewhere", other, copy), Key("tpm-keys-software", store=copy)):
            elsewhere.start()
            try:
                for (server, credential), discoverable in zip(made, (False, True)):
                    no_credential_signs(elsewhere, server, credential, discoverable)
            finally:
                assert elsewhere.stop() == 0, elsewhere.log()

        again = TPMKey("tpm-keys-again", tpm, store).start()
        try:
            for (server, credential), discoverable in zip(made, (False, True)):
                sign_in(again, server, credential, discoverable)
        finally:
            assert again.stop() == 0, again.log()

        absent = TPMKey("tpm-keys-absent", None, os.path.join(work, "tpm-keys-absent")).start(expect_up=False)
        assert absent.process.wait(timeout=30) == 1
        assert "--keys tpm: no TPM answered" in absent.log(), absent.log()
        refused = cli("serve", "--keys", "tpm", "--algorithms", "EdDSA", "--transport", "socket:" + os.path.join(work, "x.sock"))
        assert refused.returncode == 64 and "ES256 keys only" in refused.stderr, refused.stderr
    finally:
        tpm.stop()
        if other:
            other.stop()


SEALED_HEADER = b"latchkey sealed master key\n"


def serves_one(store, name, env):
    """A key started with `env` on `store` makes a discoverable credential and signs with it (Fido2Server verifies)."""
    key = key_with_env(name, store, env)
    try:
        server, credential = register(key, f"{name}.example", resident=True)
        sign_in(key, server, credential, True)
    finally:
        assert key.stop() == 0, key.log()


def traced_writes(log, store):
    """From an strace -f -y -xx log: each write(2)/pwrite64(2) to a master.key file of `store`
    (master.key itself, or its temporaries), as (path, first bytes)."""
    def decoded(escaped):   # -xx writes paths and data as \xNN
        return bytes.fromhex(escaped.replace("\\x", ""))
    found = []
    for line in open(log, errors="replace"):
        match = re.search(r'\b(?:write|pwrite64|writev|pwritev)\((\d+)<([^>]*)>, \[?\{?(?:iov_base=)?"((?:\\x[0-9a-f]{2})*)', line)
        if match:
            path = decoded(match.group(2)).decode(errors="replace")
            if path.startswith(store + "/master.key"):
                found.append((path, decoded(match.group(3))))
    return found


@check("latchkey init on a fresh account (a real swtpm and gnome-keyring): the store is sealed to the TPM from its first "
       "byte — every write to master.key or its temporaries, traced with strace, is the sealed record, never a raw key — "
       "and serve then signs; with no TPM the login keyring seals it; with neither and no terminal it stops, creating "
       "nothing, and says to give --passphrase-file; LATCHKEY_SEAL=tpm makes `serve` create its store sealed the same way")
def test_init(work):
    keyring, tpm = PrivateKeyring(work, "init"), SoftwareTPM(work, "init-machine")
    try:
        store = os.path.join(keyring.home, "data", "latchkey", "default")
        log = os.path.join(work, "init.strace")
        env = {**keyring.env, "TSS2_TCTI": tpm.tcti}
        done = subprocess.run(["strace", "-f", "-y", "-s", "48", "-xx", "-e", "trace=write,pwrite64,writev,pwritev", "-o", log,
                               BINARY, "init", "--no-unit", "--no-bridge", "--json"],
                              capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads(done.stdout)
        assert "to this machine's TPM 2.0 from the first byte" in report["done"][0], report
        writes = traced_writes(log, store)
        assert writes, "strace saw no write to master.key: the check would prove nothing"
        for path, data in writes:
            assert data.startswith(SEALED_HEADER[:len(data)]), f"{path} was written {data!r}, not a sealed record"
        status = json.loads(subprocess.run([BINARY, "store", "status", "--json"], capture_output=True, text=True, timeout=60,
                                           env=env, stdin=subprocess.DEVNULL).stdout)
        assert status["method"] == "tpm" and status["tpmAnswers"] is True, status
        serves_one(store, "init-serving", env)

        # No TPM answers (another account): the login keyring seals it.
        other = os.path.join(work, "init-keyring-store")
        no_tpm = {**keyring.env, "TSS2_TCTI": "swtpm:host=127.0.0.1,port=9"}
        done = subprocess.run([BINARY, "init", "--store", other, "--no-unit", "--no-bridge", "--json"], capture_output=True,
                              text=True, timeout=120, env=no_tpm, stdin=subprocess.DEVNULL)
        assert done.returncode == 0 and "with the login keyring from the first byte" in done.stdout, done.stdout + done.stderr

        # Neither, and no terminal: nothing is made, and the message says what to give.
        bare = {k: v for k, v in os.environ.items() if k not in ("DBUS_SESSION_BUS_ADDRESS", "LATCHKEY_PASSPHRASE_FILE")}
        bare.update({"TSS2_TCTI": "swtpm:host=127.0.0.1,port=9", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"})
        nothing = os.path.join(work, "init-nothing")
        refused = subprocess.run([BINARY, "init", "--store", nothing, "--no-unit", "--no-bridge"], capture_output=True,
                                 text=True, timeout=120, env=bare, stdin=subprocess.DEVNULL, start_new_session=True)
        assert refused.returncode == 1 and "--passphrase-file FILE" in refused.stderr, refused.stdout + refused.stderr
        assert not os.path.exists(nothing), "a store was made with no way to seal it"

        # serve creating a store with LATCHKEY_SEAL=tpm: sealed from the first byte too.
        served = os.path.join(work, "init-served")
        serves_one(served, "init-sealed-serve", {**env, "LATCHKEY_SEAL": "tpm"})
        assert master_key(served).startswith(SEALED_HEADER)
        status = json.loads(subprocess.run([BINARY, "store", "status", "--store", served, "--json"], capture_output=True,
                                           text=True, timeout=60, env=env, stdin=subprocess.DEVNULL).stdout)
        assert status["method"] == "tpm", status
    finally:
        keyring.stop()
        tpm.stop()


def test_seal_methods():
    work = tempfile.mkdtemp(dir=WORK, prefix="seal-methods-")
    test_keyring_seal(work)
    test_tpm_seal(work)
    test_tpm_keys(work)
    test_method_switch_kills(work)
    test_init(work)
