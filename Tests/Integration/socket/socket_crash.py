"""Socket suite: crash safety. A client drives the real `latchkey serve` — registrations
(resident and not), assertions, deletions and renames over credentialManagement, store signals
and renames through the CLI, PIN set/change, correct and wrong PINs — and the key is killed with
SIGKILL at random moments (LATCHKEY_CRASH_KILLS times, default 300; LATCHKEY_CRASH_SEED makes a
run repeatable as far as timing allows). After every kill:

* the store passes `PRAGMA integrity_check` and `foreign_key_check`, its trigger-kept counts
  agree with its rows, and its durable global counter mark covers every value handed out;
* the key opens it again;
* every credential whose creation the client saw answered is still there and signs (the
  signature checked against the attested public key); answered deletions, hides and renames
  stay, and nothing the client never asked for appears;
* signature counters never go backwards (per resident credential; the global counter for the
  others);
* PIN retries are what the last answered operation left (or, with an attempt in flight at the
  kill, what that attempt may have left): a crash never gives a retry back.

`test_crash_pin_retries` makes the last point explicit: wrong PIN, SIGKILL the moment the answer
arrives, restart — the retries are exactly one lower.

The client's model of the key: for each credential the set of states it may be in (live,
hidden, deleted) and names it may have, the last signCount seen, and the set of (PIN, retries)
pairs the key may hold. An answered operation narrows a set to one value; an operation in flight
at the kill widens it to every outcome the operation allows; the checks after the restart
compare the key with the set and narrow it to what they saw."""

import base64
import collections
import random
import sqlite3

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports

CRASH_PINS = ("crash-1234", "crash-5678", "pïn ✓ 90")
CRASH_WRONG_PIN = "not-the-pin"
CRASH_RESIDENT_RPS = ("crash-a.example", "crash-b.example")
CRASH_NONRESIDENT_RP = "crash-nr.example"
CRASH_MAX_RETRIES = 8
CRASH_CATEGORIES = ("store", "credentials", "counters", "pin")


class CrashKey(Key):
    """A socket key that comes up as fast as it can (a 2 ms readiness poll, not 50 ms) and is
    only ever killed with SIGKILL."""

    def spawn(self):
        args = [BINARY, "serve", "--transport", f"socket:{self.socket_path}", "--presence", "auto",
                "--store", self.store, "--name", self.name, "--log-level", "info"]
        with open(self.log_path, "ab") as log:
            log.write(b"--- start ---\n")
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)

    def start(self, expect_up=True):
        started = time.time()
        self.spawn()
        deadline = started + 20
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"latchkey exited with {self.process.returncode}: {self.log()}")
            try:
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                try:
                    probe.connect(self.socket_path)
                    self.startup_seconds = time.time() - started
                    return self
                finally:
                    probe.close()
            except OSError:
                time.sleep(0.002)
        raise RuntimeError("latchkey did not come up: " + self.log())

    def kill(self):
        """SIGKILL (idempotent; safe from any thread); the caller reaps with `reap`."""
        if self.process is not None and self.process.returncode is None:
            try:
                os.kill(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def reap(self):
        self.kill()
        self.process.wait()


def pin_retries(client_pin):
    """getPINRetries' count; on a key without a PIN (CTAP2_ERR_PIN_NOT_SET, as a YubiKey 5 answers)
    the model's count for "no PIN", CRASH_MAX_RETRIES."""
    try:
        return client_pin.get_pin_retries()[0]
    except CtapError as error:
        if error.code != CtapError.ERR.PIN_NOT_SET:
            raise
        return CRASH_MAX_RETRIES


def crash_b64decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def crash_store_image(store, global_seen=0):
    """Checks the store files as the kill left them (read-only: nothing is checkpointed or
    repaired first). Returns a list of problems (empty when all is well)."""
    path = os.path.join(store, "credentials.sqlite")
    problems = []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        integrity = [row[0] for row in db.execute("PRAGMA integrity_check")]
        if integrity != ["ok"]:
            problems.append(f"PRAGMA integrity_check: {integrity[:5]}")
        foreign = db.execute("PRAGMA foreign_key_check").fetchall()
        if foreign:
            problems.append(f"PRAGMA foreign_key_check: {foreign[:5]}")
        rows = db.execute("SELECT COUNT(*) FROM credentials").fetchone()[0]
        meta = db.execute("SELECT value FROM meta WHERE name = 'credential_count'").fetchone()
        if meta is None or meta[0] != rows:
            problems.append(f"meta.credential_count {meta} but {rows} credential rows")
        per_rp = db.execute("""
            SELECT r.rp_key, r.credential_count, r.visible_count,
                   (SELECT COUNT(*) FROM credentials c WHERE c.rp_key = r.rp_key),
                   (SELECT COUNT(*) FROM credentials c WHERE c.rp_key = r.rp_key AND c.hidden_since IS NULL)
              FROM rps r""").fetchall()
        for rp_key, count, visible, actual, actual_visible in per_rp:
            if (count, visible) != (actual, actual_visible) or actual == 0:
                problems.append(f"rps row {rp_key.hex()[:12]}: counts ({count}, {visible}), rows ({actual}, {actual_visible})")
        orphans = db.execute("SELECT COUNT(*) FROM credentials WHERE rp_key NOT IN (SELECT rp_key FROM rps)").fetchone()[0]
        if orphans:
            problems.append(f"{orphans} credentials without their rps row")
        mark = db.execute("SELECT high_water FROM counters WHERE scope = 'global'").fetchone()
        if global_seen and (mark is None or mark[0] < global_seen):
            problems.append(f"the durable global counter mark is {mark} but the client saw signCount {global_seen}")
    finally:
        db.close()
    return problems


class CrashCredential:
    def __init__(self, credential_id, rp, resident, public_key, handle, names, count, cycle):
        self.id, self.rp, self.resident, self.public_key, self.handle = credential_id, rp, resident, public_key, handle
        self.states = {"live"}   # what the key may hold: live, hidden, deleted
        self.names = {names}     # (userName, displayName) pairs it may have
        self.count = count       # the last signCount the client saw
        self.cycle = cycle

    def label(self):
        kind = "resident" if self.resident else "non-resident"
        return f"{kind} credential {b64url(self.id)[:12]}… at {self.rp} (made in cycle {self.cycle})"


class CrashStop(Exception):
    """The client stops: the key was killed right after an answer."""


class CrashCliKilled(Exception):
    """A CLI process working on the store was killed along with the key."""


class CrashRun:
    """The client, its model of the key, and the kill/restart/verify loop."""

    def __init__(self, seed, kills):
        self.seed, self.kills = seed, kills
        self.rng = random.Random(seed)
        self.key = CrashKey("crash")
        self.creds = {}
        self.extras = set()             # IDs of unanswered registrations that landed
        self.unanswered = set()         # (rp, user handle) of resident registrations in flight at a kill
        self.pin_states = {(None, CRASH_MAX_RETRIES)}
        self.mismatches = 0             # consecutive wrong PINs since the key started
        self.global_seen = 0            # the last signCount of the global counter seen
        self.violations = {category: [] for category in CRASH_CATEGORIES}
        self.stats = collections.Counter()
        self.inflight = None            # (what, widen) of the operation whose answer is awaited
        self.touched = set()
        self.cycle = 0
        self.cycle_log = []
        self.stop = threading.Event()
        self.cli_process = None
        self.kill_cli = False
        self.answers_to_kill = 0
        self.answers = 0
        self.killed_by_client = False
        self.last_inflight = None
        self.elapsed = 0.0
        self.ctap = self.client_pin = None

    # --- bookkeeping ---------------------------------------------------------------------

    def violation(self, category, message):
        text = f"cycle {self.cycle}: {message} [seed {self.seed}; this cycle: {' → '.join(self.cycle_log[-12:]) or 'nothing'}]"
        self.violations[category].append(text)
        if len(self.violations[category]) <= 10:
            print(f"      VIOLATION ({category}) {text}", flush=True)

    def begin(self, what, widen=None):
        self.inflight = (what, widen)
        self.cycle_log.append(what + "…")

    def answered(self, what):
        self.inflight = None
        self.cycle_log[-1] = what
        self.stats["operations answered"] += 1
        self.stats[f"answered: {what}"] += 1
        self.answers += 1
        if self.answers == self.answers_to_kill:
            self.key.kill()
            self.stop.set()
            self.killed_by_client = True
            self.stats["kills right after an answer"] += 1
            raise CrashStop()

    def pin_state(self):
        assert len(self.pin_states) == 1, self.pin_states
        return next(iter(self.pin_states))

    def live(self, resident=None):
        return [c for c in self.creds.values() if c.states == {"live"} and (resident is None or c.resident == resident)]

    def counter_seen(self, credential, count, where):
        """signCount `count` came from `credential` (None: a non-resident registration): it must
        be past every value seen before from its counter. After a violation the model follows the
        key, so that one step back is reported once."""
        if credential is not None and count <= credential.count:
            self.violation("counters", f"{where}: signCount {count} of {credential.label()}, "
                                       f"but {credential.count} was seen before")
            credential.count = count
        if credential is None or not credential.resident:
            if count <= self.global_seen:
                self.violation("counters", f"{where}: global signCount {count}, but {self.global_seen} was seen before")
            self.global_seen = count
        if credential is not None:
            credential.count = count

    # --- operations (the client thread) ------------------------------------------------------

    def pin_token(self, permissions, rp_id=None):
        """A correct PIN attempt (retries are decremented, then reset to the maximum)."""
        pin, retries = self.pin_state()
        self.begin("PIN token", lambda: {(pin, retries), (pin, retries - 1), (pin, CRASH_MAX_RETRIES)})
        try:
            token = self.client_pin.get_pin_token(pin, permissions, rp_id)
        except CtapError as error:
            self.pin_refused(error, pin, retries)
        self.pin_states = {(pin, CRASH_MAX_RETRIES)}
        self.mismatches = 0
        self.answered("PIN token")
        return token

    def pin_refused(self, error, pin, retries):
        """The PIN the client set last was refused: a violation; which PIN the key holds the next
        restart finds out. Ends the client's operations."""
        self.violation("pin", f"the PIN the client set last was refused with {error.code!r} (model "
                              f"{self.pin_states}, {self.mismatches} mismatches)")
        if error.code != CtapError.ERR.PIN_INVALID:
            raise error
        self.mismatches += 1
        self.pin_states = {(other, retries - 1) for other in CRASH_PINS if other != pin}
        self.inflight = None
        raise CrashStop()

    def op_make_nonresident(self):
        client_data_hash = os.urandom(32)
        self.begin("makeCredential")
        attestation = self.ctap.make_credential(client_data_hash, {"id": CRASH_NONRESIDENT_RP, "name": "Crash"},
                                                {"id": os.urandom(16), "name": "nr"},
                                                [{"type": "public-key", "alg": self.rng.choice((-7, -8))}])
        data = attestation.auth_data.credential_data
        self.counter_seen(None, attestation.auth_data.counter, "makeCredential")
        credential = CrashCredential(bytes(data.credential_id), CRASH_NONRESIDENT_RP, False, data.public_key, None,
                                     None, attestation.auth_data.counter, self.cycle)
        self.creds[credential.id] = credential
        self.touched.add(credential.id)
        self.answered("makeCredential")

    def op_make_resident(self, replacing=None):
        rp = replacing.rp if replacing else self.rng.choice(CRASH_RESIDENT_RPS)
        handle = replacing.handle if replacing else os.urandom(self.rng.choice((8, 16, 32)))
        names = (f"user-{self.cycle}-{self.answers}", f"User {self.cycle}/{self.answers} ✓")
        client_data_hash = os.urandom(32)
        pin_auth = {}
        if self.pin_state()[0] is not None:
            token = self.pin_token(ClientPin.PERMISSION.MAKE_CREDENTIAL, rp)
            pin_auth = {"pin_uv_param": self.client_pin.protocol.authenticate(token, client_data_hash),
                        "pin_uv_protocol": self.client_pin.protocol.VERSION}

        def widen():
            self.unanswered.add((rp, handle))
            if replacing:
                replacing.states |= {"deleted"}
        what = "makeCredential rk" + (" (same user again)" if replacing else "")
        self.begin(what, widen)
        attestation = self.ctap.make_credential(client_data_hash, {"id": rp, "name": rp.upper()},
                                                {"id": handle, "name": names[0], "displayName": names[1]},
                                                [{"type": "public-key", "alg": self.rng.choice((-7, -8))}],
                                                options={"rk": True}, **pin_auth)
        data = attestation.auth_data.credential_data
        if replacing:
            replacing.states = {"deleted"}
            self.touched.add(replacing.id)
        credential = CrashCredential(bytes(data.credential_id), rp, True, data.public_key, handle, names, 0, self.cycle)
        self.counter_seen(credential, attestation.auth_data.counter, "makeCredential rk")
        self.creds[credential.id] = credential
        self.touched.add(credential.id)
        self.answered(what)

    def op_replace_resident(self):
        self.op_make_resident(replacing=self.rng.choice(self.live(resident=True)))

    def sign(self, credential, where):
        """getAssertion with the credential in the allowList; checks the signature and counter.
        Returns True when it signed, False on NO_CREDENTIALS."""
        client_data_hash = os.urandom(32)
        self.begin("getAssertion")
        try:
            assertion = self.ctap.get_assertion(credential.rp, client_data_hash,
                                                [{"type": "public-key", "id": credential.id}])
        except CtapError as error:
            if error.code != CtapError.ERR.NO_CREDENTIALS:
                raise
            self.answered("getAssertion: no credentials")
            return False
        try:
            assertion.verify(client_data_hash, credential.public_key)
        except Exception as error:  # noqa: BLE001 - cryptography's InvalidSignature and kin
            self.violation("credentials", f"{where}: {credential.label()} signed, but the signature does not verify "
                                          f"against the attested key ({type(error).__name__})")
        if bytes(assertion.credential["id"]) != credential.id:
            self.violation("credentials", f"{where}: asked {credential.label()}, got {b64url(assertion.credential['id'])}")
        if assertion.auth_data.rp_id_hash != hashlib.sha256(credential.rp.encode()).digest():
            self.violation("credentials", f"{where}: rpIdHash of {credential.label()} is wrong")
        self.counter_seen(credential, assertion.auth_data.counter, where)
        self.stats["signatures verified"] += 1
        self.answered("getAssertion")
        return True

    def op_assert(self):
        credential = self.rng.choice(self.live())
        if not self.sign(credential, "getAssertion before a kill"):
            self.violation("credentials", f"{credential.label()} is live but getAssertion answered NO_CREDENTIALS")
            credential.states = {"deleted", "hidden"}

    def credential_management(self):
        token = self.pin_token(ClientPin.PERMISSION.CREDENTIAL_MGMT)
        return CredentialManagement(self.ctap, self.client_pin.protocol, token)

    def op_cm_delete(self):
        target = self.rng.choice(self.live(resident=True))
        manager = self.credential_management()
        self.touched.add(target.id)
        self.begin("credMgmt delete", lambda: target.states.add("deleted"))
        manager.delete_cred({"type": "public-key", "id": target.id})
        target.states = {"deleted"}
        self.answered("credMgmt delete")

    def op_cm_rename(self):
        target = self.rng.choice(self.live(resident=True))
        manager = self.credential_management()
        names = (f"cm-{self.cycle}-{self.answers}", f"Renamed {self.cycle}")
        self.touched.add(target.id)
        self.begin("credMgmt updateUserInformation", lambda: target.names.add(names))
        manager.update_user_info({"type": "public-key", "id": target.id},
                                 {"id": target.handle, "name": names[0], "displayName": names[1]})
        target.names = {names}
        self.answered("credMgmt updateUserInformation")

    def cli(self, what, widen, *args):
        """A CLI verb on the store (the key keeps running); returns its JSON answer."""
        self.begin(what, widen)
        process = subprocess.Popen([BINARY, *args, "--store", self.key.store, "--json"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True, text=True)
        self.cli_process = process
        if self.stop.is_set() and self.kill_cli:
            process.kill()
        out, err = process.communicate(timeout=60)
        self.cli_process = None
        if process.returncode == -signal.SIGKILL:
            self.stats["CLI processes killed with the key"] += 1
            raise CrashCliKilled()
        if process.returncode != 0:
            self.violation("store", f"`latchkey {' '.join(args[:2])}` failed with {process.returncode}: {err.strip()}")
            raise CrashCliKilled()
        return json.loads(out)

    def op_cli_hide(self):
        target = self.rng.choice(self.live(resident=True))
        self.touched.add(target.id)
        result = self.cli("signal unknown", lambda: target.states.add("hidden"),
                          "signal", "unknown", "--rp", target.rp, b64url(target.id))
        assert result["hidden"] is True, result
        target.states = {"hidden"}
        self.answered("signal unknown")

    def op_cli_unhide(self):
        target = self.rng.choice([c for c in self.creds.values() if c.states == {"hidden"}])
        self.touched.add(target.id)
        result = self.cli("signal all-accepted", lambda: target.states.add("live"),
                          "signal", "all-accepted", "--rp", target.rp, "--user-handle", b64url(target.handle),
                          b64url(target.id))
        assert result["unhidden"] == 1, result
        target.states = {"live"}
        self.answered("signal all-accepted")

    def op_cli_current_user(self):
        target = self.rng.choice(self.live(resident=True))
        names = (f"signal-{self.cycle}-{self.answers}", f"Signalled {self.cycle}")
        self.touched.add(target.id)
        result = self.cli("signal current-user", lambda: target.names.add(names),
                          "signal", "current-user", "--rp", target.rp, "--user-handle", b64url(target.handle),
                          "--user-name", names[0], "--display-name", names[1])
        assert result["renamed"] == 1, result
        target.names = {names}
        self.answered("signal current-user")

    def op_cli_rename(self):
        target = self.rng.choice(self.live(resident=True))
        names = (f"cli-{self.cycle}-{self.answers}", f"CLI {self.cycle}")
        self.touched.add(target.id)
        self.cli("credentials rename", lambda: target.names.add(names), "credentials", "rename", b64url(target.id),
                 "--user-name", names[0], "--display-name", names[1])
        target.names = {names}
        self.answered("credentials rename")

    def op_cli_delete(self):
        target = self.rng.choice(self.live(resident=True))
        self.touched.add(target.id)
        self.cli("credentials delete", lambda: target.states.add("deleted"), "credentials", "delete", "--yes",
                 b64url(target.id))
        target.states = {"deleted"}
        self.answered("credentials delete")

    def op_set_pin(self):
        new = CRASH_PINS[0]
        self.begin("setPIN", lambda: {(None, CRASH_MAX_RETRIES), (new, CRASH_MAX_RETRIES)})
        self.client_pin.set_pin(new)
        self.pin_states = {(new, CRASH_MAX_RETRIES)}
        self.answered("setPIN")

    def op_change_pin(self):
        pin, retries = self.pin_state()
        new = self.rng.choice([p for p in CRASH_PINS if p != pin])
        self.begin("changePIN", lambda: {(pin, retries), (pin, retries - 1), (pin, CRASH_MAX_RETRIES),
                                         (new, CRASH_MAX_RETRIES)})
        try:
            self.client_pin.change_pin(pin, new)
        except CtapError as error:
            self.pin_refused(error, pin, retries)
        self.pin_states = {(new, CRASH_MAX_RETRIES)}
        self.mismatches = 0
        self.answered("changePIN")

    def op_correct_pin(self):
        self.pin_token(self.rng.choice((None, ClientPin.PERMISSION.CREDENTIAL_MGMT)))

    def op_wrong_pin(self):
        pin, retries = self.pin_state()
        self.begin("wrong PIN", lambda: {(pin, retries), (pin, retries - 1)})
        try:
            self.client_pin.get_pin_token(CRASH_WRONG_PIN, self.rng.choice((None, ClientPin.PERMISSION.CREDENTIAL_MGMT)))
            self.violation("pin", "a wrong PIN was accepted")
            self.pin_states = {(pin, CRASH_MAX_RETRIES)}
            self.answered("wrong PIN accepted")
            return
        except CtapError as error:
            self.mismatches += 1
            expected = CtapError.ERR.PIN_AUTH_BLOCKED if self.mismatches >= 3 else CtapError.ERR.PIN_INVALID
            if error.code != expected:
                self.violation("pin", f"wrong PIN #{self.mismatches} since the start answered {error.code!r}, not {expected!r}")
        self.pin_states = {(pin, retries - 1)}
        self.answered("wrong PIN")

    def op_blocked_pin(self):
        """Three wrong PINs since the key started: any attempt is PIN_AUTH_BLOCKED and costs nothing."""
        pin, retries = self.pin_state()
        self.begin("PIN while blocked")
        try:
            self.client_pin.get_pin_token(pin)
            self.violation("pin", "three wrong PINs since the start, yet the correct PIN was accepted")
            self.pin_states, self.mismatches = {(pin, CRASH_MAX_RETRIES)}, 0
        except CtapError as error:
            if error.code != CtapError.ERR.PIN_AUTH_BLOCKED:
                self.violation("pin", f"a PIN attempt after three wrong ones answered {error.code!r}, not PIN_AUTH_BLOCKED")
        self.answered("PIN while blocked")

    def op_read_retries(self):
        pin, retries = self.pin_state()
        self.begin("getPINRetries")
        seen = pin_retries(self.client_pin)
        if seen != retries:
            self.violation("pin", f"getPINRetries answered {seen} with no crash since the model's {retries}")
            self.pin_states = {(pin, seen)}
        self.answered("getPINRetries")

    def choose(self):
        pin, retries = self.pin_state()
        blocked = self.mismatches >= 3
        residents = bool(self.live(resident=True))
        pin_usable = pin is not None and not blocked
        choices = [(self.op_make_nonresident, 3), (self.op_assert, 6 if self.live() else 0),
                   (self.op_make_resident, 4 if pin is None or pin_usable else 0),
                   (self.op_replace_resident, 0.5 if residents and (pin is None or pin_usable) else 0),
                   (self.op_cm_delete, 1.2 if residents and pin_usable else 0),
                   (self.op_cm_rename, 1.2 if residents and pin_usable else 0),
                   (self.op_cli_hide, 0.8 if residents else 0),
                   (self.op_cli_unhide, 1 if any(c.states == {"hidden"} for c in self.creds.values()) else 0),
                   (self.op_cli_current_user, 0.5 if residents else 0),
                   (self.op_cli_rename, 0.3 if residents else 0),
                   (self.op_cli_delete, 0.3 if residents and pin is None else 0.15 if residents else 0),
                   (self.op_set_pin, 2 if pin is None else 0),
                   (self.op_change_pin, 0.8 if pin_usable else 0),
                   (self.op_correct_pin, (6 if retries <= 4 else 0.8) if pin_usable else 0),
                   (self.op_wrong_pin, 2.5 if pin is not None and retries >= 4 and self.mismatches < 3 else 0),
                   (self.op_blocked_pin, 1 if pin is not None and blocked else 0),
                   (self.op_read_retries, 0.7 if pin is not None else 0)]
        operations, weights = zip(*[(op, w) for op, w in choices if w > 0])
        return self.rng.choices(operations, weights)[0]

    def client(self, operations, outcome):
        """The client thread: operations until the key dies or the list runs out."""
        try:
            for operation in operations:
                if self.stop.is_set():
                    return
                operation = self.choose() if operation is None else operation
                operation()
        except CrashStop:
            pass
        except (OSError, CrashCliKilled) as error:
            outcome["lost"] = error
        except CtapError as error:
            if self.stop.is_set():   # an answer cut short by the kill (a CTAPHID timeout/abort)
                outcome["lost"] = error
            else:
                outcome["error"] = error
                traceback.print_exc(limit=6)
        except Exception as error:  # noqa: BLE001 - a harness error ends the run
            outcome["error"] = error
            traceback.print_exc(limit=6)

    # --- after a kill -----------------------------------------------------------------------

    def verify(self):
        """The restarted key against the model; narrows the model to what it finds."""
        self.ctap = Ctap2(self.key.device())
        self.client_pin = ClientPin(self.ctap)
        self.mismatches = 0
        has_pin = bool(self.ctap.info.options.get("clientPin"))
        retries = pin_retries(self.client_pin)
        fits = {(pin, r) for pin, r in self.pin_states if (pin is not None) == has_pin and r == retries}
        if not fits:
            self.violation("pin", f"after the restart clientPin={has_pin}, retries {retries}; the answers allow only "
                                  f"{sorted(self.pin_states, key=str)}" + self.inflight_note())
            fits = {(pin, retries) for pin, _ in self.pin_states if (pin is not None) == has_pin} or {(None, retries)}
        elif retries < max(r for _, r in self.pin_states if r is not None):
            self.stats["restarts with a retry spent by an attempt in flight"] += 1
        pins = sorted({pin for pin, _ in fits}, key=str)
        if len(pins) > 1:   # changePIN in flight at the kill: which PIN is it now?
            self.stats["PIN outcomes resolved after a restart"] += 1
            for candidate in pins:
                try:
                    self.client_pin.get_pin_token(candidate)
                    self.pin_states, self.mismatches = {(candidate, CRASH_MAX_RETRIES)}, 0
                    break
                except CtapError as error:
                    assert error.code == CtapError.ERR.PIN_INVALID, error
                    self.mismatches += 1
                    retries -= 1
                    if pin_retries(self.client_pin) != retries:
                        self.violation("pin", "a wrong PIN after the restart did not cost exactly one retry")
            else:
                raise AssertionError(f"none of the PINs {pins} opens the key")
        else:
            self.pin_states = {(pins[0], retries)}

        self.verify_listing()

        chosen = {c.id: c for c in self.creds.values() if c.id in self.touched}
        live = [c for c in self.creds.values() if c.id not in chosen and "live" in c.states]
        gone = [c for c in self.creds.values() if c.id not in chosen and "live" not in c.states]
        for credential in self.rng.sample(live, min(6, len(live))) + self.rng.sample(gone, min(1, len(gone))):
            chosen[credential.id] = credential
        for credential in chosen.values():
            self.verify_signs(credential, "after the restart")
        self.touched = set()

    def inflight_note(self):
        return f" (in flight at the kill: {self.last_inflight})" if self.last_inflight else " (nothing in flight at the kill)"

    def verify_signs(self, credential, where):
        signed = self.sign(credential, where)
        if signed and "live" not in credential.states:
            self.violation("credentials", f"{where}: {credential.label()} signed, but its "
                                          f"{'/'.join(sorted(credential.states))} state was answered" + self.inflight_note())
        if not signed and credential.states == {"live"}:
            self.violation("credentials", f"{where}: {credential.label()} no longer signs (NO_CREDENTIALS), but its "
                                          "creation was answered and nothing removed it" + self.inflight_note())
        if signed:
            credential.states = {"live"}
            self.stats["credentials verified after a crash"] += 1
        else:
            credential.states = (credential.states - {"live"}) or {"deleted"}

    def verify_listing(self):
        """The store's discoverable credentials (`latchkey credentials list --all --json`, the key running)."""
        listed = latchkey_cli("credentials", "list", "--store", self.key.store, "--all", "--json", new_session=True)
        if listed.returncode != 0:
            self.violation("store", f"credentials list failed after the restart: {listed.stderr.strip()}")
            return
        entries = {crash_b64decode(e["credentialId"]): e for e in json.loads(listed.stdout)["credentials"]}
        for credential in self.creds.values():
            if not credential.resident:
                continue
            entry = entries.get(credential.id)
            state = "deleted" if entry is None else "hidden" if entry["hidden"] else "live"
            if state not in credential.states:
                self.violation("credentials", f"{credential.label()} is {state} in the store; the answers allow "
                                              f"{sorted(credential.states)}" + self.inflight_note())
            if len(credential.states) > 1:
                self.stats[f"in-flight outcomes found after a restart: {state}"] += 1
            credential.states = {state}
            if entry is None:
                continue
            names = (entry["userName"], entry["userDisplayName"])
            if names not in credential.names:
                self.violation("credentials", f"{credential.label()} is named {names}; the answers allow "
                                              f"{sorted(credential.names)}" + self.inflight_note())
            credential.names = {names}
            if entry["rpId"] != credential.rp or crash_b64decode(entry["userHandle"]) != credential.handle:
                self.violation("credentials", f"{credential.label()} lists as {entry['rpId']} / {entry['userHandle']}")
        for credential_id, entry in entries.items():
            if credential_id in self.creds or credential_id in self.extras:
                continue
            if (entry["rpId"], crash_b64decode(entry["userHandle"])) in self.unanswered:
                self.extras.add(credential_id)
                self.stats["unanswered registrations that landed"] += 1
            else:
                self.violation("credentials", f"the store holds a credential nobody registered: {entry}")
                self.extras.add(credential_id)

    # --- the loop -----------------------------------------------------------------------

    def run(self):
        self.last_inflight = None
        started = time.time()
        self.key.start()
        self.startup_seconds = self.key.startup_seconds
        for self.cycle in range(1, self.kills + 1):
            self.cycle_log = []
            self.answers_to_kill = 0
            self.verify()
            # How this cycle ends: a timer (0–150 ms into the operations, or within the first
            # 10 ms), or right after the k-th answer, from the client thread itself.
            mode = self.rng.random()
            self.answers = 0
            self.answers_to_kill = self.rng.randint(1, 6) if mode < 0.3 else 0
            delay = self.rng.uniform(0, 0.010) if mode > 0.9 else self.rng.uniform(0, 0.150)
            self.kill_cli = self.rng.random() < 0.5
            self.killed_by_client = False
            self.stop.clear()
            outcome = {}
            thread = threading.Thread(target=self.client, args=([None] * 40, outcome))
            thread.start()
            if self.answers_to_kill:
                thread.join(timeout=3)
            else:
                thread.join(timeout=delay)
            self.stop.set()
            if not self.killed_by_client:
                self.stats["kills on a timer" if thread.is_alive() else "kills with the client idle"] += 1
            self.key.kill()
            cli = self.cli_process
            if cli is not None and self.kill_cli:
                cli.kill()
            thread.join(timeout=60)
            self.key.reap()
            self.stats["kills"] += 1
            assert not thread.is_alive(), "the client thread hangs after the kill"
            if "error" in outcome:
                raise AssertionError(f"cycle {self.cycle}: the client failed: {outcome['error']!r} "
                                     f"[seed {self.seed}; {' → '.join(self.cycle_log)}]")
            self.last_inflight = None
            if "lost" in outcome and self.inflight is not None:
                what, widen = self.inflight
                self.last_inflight = what
                self.stats["operations in flight at a kill"] += 1
                self.stats[f"in flight at a kill: {what}"] += 1
                if widen is not None:
                    widened = widen()
                    if isinstance(widened, set):
                        self.pin_states = widened
            self.inflight = None

            for problem in crash_store_image(self.key.store, self.global_seen):
                self.violation("store", f"the store after the kill: {problem}" + self.inflight_note())
            if self.rng.random() < 0.1:
                # Killed again while it opens the store (WAL recovery, migrations, purge).
                self.key.spawn()
                time.sleep(self.rng.uniform(0, 1.5 * self.startup_seconds))
                self.key.reap()
                self.stats["more kills while the key starts"] += 1
                for problem in crash_store_image(self.key.store, self.global_seen):
                    self.violation("store", f"the store after a kill while the key started: {problem}")
            try:
                self.key.start()
                self.startup_seconds = 0.8 * self.startup_seconds + 0.2 * self.key.startup_seconds
            except RuntimeError as error:
                self.violation("store", f"the key does not start after the kill: {error}")
                raise
        # The end: every credential, a clean stop, and the store once more.
        self.cycle_log = ["final check"]
        self.answers_to_kill = 0
        self.verify()
        for credential in list(self.creds.values()):
            self.verify_signs(credential, "final check")
            self.stats["credentials checked at the end"] += 1
        self.key.process.send_signal(signal.SIGTERM)
        if self.key.process.wait(timeout=20) != 0:
            self.violation("store", f"the key exited with {self.key.process.returncode} on SIGTERM: {self.key.log()}")
        for problem in crash_store_image(self.key.store, self.global_seen):
            self.violation("store", f"the store after a clean stop: {problem}")
        self.elapsed = time.time() - started


CRASH_RUN = {}


def crash_report(category):
    run = CRASH_RUN.get("run")
    assert run is not None, "the crash run did not happen"
    if CRASH_RUN.get("aborted"):
        raise AssertionError(f"the run stopped early: {CRASH_RUN['aborted']}")
    problems = run.violations[category]
    assert not problems, f"{len(problems)} violations; first: " + " | ".join(problems[:3])


def test_crash_safety():
    """The kill loop (four checks: store, credentials, counters, PIN retries), then the explicit
    wrong-PIN-then-kill check."""
    kills = int(os.environ.get("LATCHKEY_CRASH_KILLS", "300"))
    seed = int(os.environ.get("LATCHKEY_CRASH_SEED") or int.from_bytes(os.urandom(4), "big"))
    print(f"      (crash safety: {kills} kills, LATCHKEY_CRASH_SEED={seed})", flush=True)
    run = CrashRun(seed, kills)
    CRASH_RUN["run"] = run
    try:
        run.run()
    except Exception as error:  # noqa: BLE001 - reported by the checks below
        CRASH_RUN["aborted"] = f"{type(error).__name__}: {error}"
        traceback.print_exc(limit=6)
        run.elapsed = 0
    finally:
        run.key.reap() if run.key.process else None

    names = {
        "store": f"crash safety ({kills} SIGKILLs of `latchkey serve` at random moments under registrations, assertions, "
                 "deletions, renames, signals, PIN set/change, wrong PINs): after each the store passes integrity_check "
                 "and foreign_key_check, its counts agree, its counter mark covers what was handed out, and the key opens it",
        "credentials": "crash safety: every credential whose creation the client saw answered still signs (signature "
                       "checked); answered deletions, hides and renames stay; nothing unasked-for appears",
        "counters": "crash safety: signature counters never go backwards (per resident credential; global for the rest)",
        "pin": "crash safety: a crash never gives back a PIN retry (after a restart, retries are what the last answer "
               "left, or one lower with an attempt in flight)",
    }
    for category in CRASH_CATEGORIES:
        check(names[category])(crash_report)(category)
    stats = run.stats
    print(f"      ({stats['kills']} kills in {run.elapsed:.1f} s: {stats['kills on a timer']} on a timer, "
          f"{stats['kills right after an answer']} right after an answer, {stats['kills with the client idle']} idle; "
          f"{stats['operations answered']} operations answered, {stats['operations in flight at a kill']} in flight "
          f"at a kill, {stats['CLI processes killed with the key']} CLI processes killed too; "
          f"{stats['more kills while the key starts']} more kills while the key started, which takes "
          f"{1000 * run.startup_seconds:.0f} ms)", flush=True)
    residents = sum(1 for c in run.creds.values() if c.resident)
    print(f"      ({len(run.creds)} credentials made ({residents} resident, "
          f"{sum(1 for c in run.creds.values() if c.states == {'deleted'})} since deleted, "
          f"{stats['unanswered registrations that landed']} unanswered ones landed); "
          f"{stats['signatures verified']} signatures verified, {stats['credentials verified after a crash']} "
          f"credentials signing after a restart, all {stats['credentials checked at the end']} checked at the end; "
          f"global signCount {run.global_seen})", flush=True)
    print("      (answered: " + ", ".join(f"{k[len('answered: '):]} {v}" for k, v in sorted(stats.items()) if k.startswith("answered: "))
          + ")", flush=True)
    print("      (in flight at a kill: " + (", ".join(f"{k[len('in flight at a kill: '):]} {v}" for k, v in sorted(stats.items())
                                                   if k.startswith("in flight at a kill: ")) or "none") + ")", flush=True)
    print("      (" + ", ".join(f"{k} {v}" for k, v in sorted(stats.items())
                               if k.startswith(("in-flight outcomes", "restarts with", "PIN outcomes")))
          + ")", flush=True)
    test_crash_pin_retries()


@check("wrong PIN, SIGKILL the moment the answer arrives, restart: retries are exactly one lower; a correct PIN's "
       "reset and setPIN survive a kill at once; when the kill races the answer, retries never come back")
def test_crash_pin_retries():
    rounds = int(os.environ.get("LATCHKEY_CRASH_PIN_ROUNDS", "20"))
    rng = random.Random(int(os.environ.get("LATCHKEY_CRASH_SEED") or 0) ^ 0x5EED)
    key = CrashKey("crash-pin")
    pin = CRASH_PINS[1]
    figures = collections.Counter()
    latencies = []

    def restart():
        key.reap()
        problems = crash_store_image(key.store)
        assert not problems, problems
        key.start()
        ctap = Ctap2(key.device())
        return ctap, ClientPin(ctap)

    def attempt(client_pin, candidate):
        """Sends one PIN attempt (getPinToken) on a key agreement made beforehand."""
        key_agreement, shared_secret = client_pin._get_shared_secret()
        pin_hash_enc = client_pin.protocol.encrypt(shared_secret, hashlib.sha256(candidate.encode()).digest()[:16])
        return lambda: client_pin.ctap.client_pin(client_pin.protocol.VERSION, ClientPin.CMD.GET_TOKEN_USING_PIN_LEGACY,
                                                  key_agreement=key_agreement, pin_hash_enc=pin_hash_enc)

    try:
        key.start()
        ctap, client_pin = ctap21_session(key)
        client_pin.set_pin(pin)
        key.kill()   # setPIN answered, kill at once
        ctap, client_pin = restart()
        assert ctap.info.options.get("clientPin") is True, "setPIN was answered, then lost in a kill"
        assert client_pin.get_pin_retries()[0] == CRASH_MAX_RETRIES

        for round_number in range(2 * rounds):
            racing = round_number % 2 == 1
            before = client_pin.get_pin_retries()[0]
            if before <= 3:
                send = attempt(client_pin, pin)
                send()
                key.kill()   # the correct PIN answered: its reset must be durable
                ctap, client_pin = restart()
                after = client_pin.get_pin_retries()[0]
                assert after == CRASH_MAX_RETRIES, f"correct PIN answered at {before} retries, killed at once: {after} after"
                figures["correct PIN, killed at once"] += 1
                before = after
            send = attempt(client_pin, CRASH_WRONG_PIN)
            if not racing:
                sent = time.time()
                try:
                    send()
                    raise AssertionError("a wrong PIN was accepted")
                except CtapError as error:
                    key.kill()
                    latencies.append(time.time() - sent)
                    assert error.code == CtapError.ERR.PIN_INVALID, error.code
                answered = True
            else:
                # The kill lands anywhere from before the attempt arrives to just after its answer.
                thread, outcome = in_background(send)
                time.sleep(rng.uniform(0, 1.2 * sorted(latencies)[len(latencies) // 2]))
                key.kill()
                thread.join(timeout=20)
                error = outcome.get("error")
                answered = isinstance(error, CtapError)
                if answered:
                    assert error.code == CtapError.ERR.PIN_INVALID, error.code
                else:
                    assert isinstance(error, OSError), f"neither an answer nor a lost connection: {outcome}"
            ctap, client_pin = restart()
            after = client_pin.get_pin_retries()[0]
            if answered:
                assert after == before - 1, (f"round {round_number}: wrong PIN answered at {before} retries, "
                                             f"killed {'racing' if racing else 'at once'}: {after} after the restart")
                figures["racing kills after the answer" if racing else "kills at once after the answer"] += 1
            else:
                assert after in (before, before - 1), f"round {round_number}: {before} retries, kill raced the wrong " \
                                                      f"PIN unanswered: {after} after the restart"
                figures["racing kills before the answer, attempt counted" if after == before - 1 else
                        "racing kills before the answer, attempt not made"] += 1
    finally:
        key.reap() if key.process else None
    print("      (" + ", ".join(f"{k} {v}" for k, v in sorted(figures.items()))
          + f"; a wrong PIN's answer takes {1000 * sorted(latencies)[len(latencies) // 2]:.1f} ms)", flush=True)
