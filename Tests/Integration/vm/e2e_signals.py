#!/usr/bin/env python3
"""Websites' signals reach the key: a headless browser with Latchkey's extension loaded (Chromium:
--load-extension; Firefox ESR: a temporary add-on through Marionette) and the native-messaging host
wired by `latchkey bridge install`, against a uhid key with built-in UV (`--uv auto`).

On an http://localhost page the browser makes two passkeys (alice, bob; RP localhost), then:
1. signalUnknownCredential(alice) → alice's credential is hidden in the store (`latchkey
   credentials list --all --json`), and a get() with an empty allowCredentials signs in with bob's;
2. signalAllAcceptedCredentials(alice, [an ID of alice's on another authenticator]) → alice's is
   hidden; again listing hers too → visible (the key holds one credential per account, CTAP's
   rule, so "the user's two IDs" are hers here and one elsewhere);
3. signalCurrentUserDetails(bob) → bob's name and display name change in the store;
4. negatives: http://127.0.0.1 naming rpId localhost is a SecurityError in the page and changes
   nothing; a malformed ID is a TypeError; 1,000 signals in a loop leave the key answering a get()
   within its usual time (and the rate limit keeps them out of the journal); a garbage frame sent
   to `latchkey native-host` by hand is answered, changes nothing, and the host exits 1.
Each check prints PASS/FAIL; the summary line counts them; the exit status is 0 when all passed.
`latchkey signal log --json` must show each applied signal with the page's origin.
Usage: e2e_signals.py WORK chromium|firefox LATCHKEY_BINARY STORE_DIR EXTENSION_DIR
Exit 77: the browser did not come up or load the page in time, twice (nothing was asked of the key)."""

import base64
import http.server
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_browser as web  # noqa: E402 - beside this file: the page, the browsers, create()/get(), the RP
from fido2.webauthn import ResidentKeyRequirement, UserVerificationRequirement  # noqa: E402

ALICE = b"latchkey-signals-alice"
BOB = b"latchkey-signals-bob"
ELSEWHERE_ID = base64.urlsafe_b64encode(b"alice's passkey on another authenticator").rstrip(b"=").decode()
STORE_WAIT = 30      # s for a signal to reach the store (page → extension → host → SQLite)
LOOP_SIGNALS = 1000

# Calls one signal method in the page: {ok: true} or {error: "Name: message"}.
SIGNAL_SCRIPT = """
const [method, options, done] = arguments;
try {
  PublicKeyCredential[method](options).then(() => done({ok: true}), e => done({error: e.name + ': ' + e.message}));
} catch (e) { done({error: 'threw ' + e.name + ': ' + e.message}); }
"""
LOOP_SCRIPT = """
const [count, options, done] = arguments;
const calls = [];
for (let i = 0; i < count; i++) calls.push(PublicKeyCredential.signalCurrentUserDetails(options).then(() => 1, () => 0));
Promise.all(calls).then(results => done({ok: results.reduce((a, b) => a + b, 0)}));
"""
BRIDGE_PRESENT = "return Object.prototype.hasOwnProperty.call(PublicKeyCredential, Symbol.for('latchkey.signalBridge'));"

results = []


def check(name, body):
    """Runs one check: PASS or FAIL (with why), counted in `results`."""
    began = time.time()
    try:
        body()
    except Exception as error:  # noqa: BLE001 - any failure is this check's FAIL, and the run goes on
        results.append(False)
        print(f"FAIL  {name} ({time.time() - began:.1f} s): {type(error).__name__}: {error}", flush=True)
        return
    results.append(True)
    print(f"PASS  {name} ({time.time() - began:.1f} s)", flush=True)


class Key:
    """The key's store, read through the CLI as a user would (works while the key runs)."""

    def __init__(self, binary, store):
        self.binary, self.store = binary, store

    def cli(self, *arguments):
        done = subprocess.run([self.binary, *arguments, "--store", self.store], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"latchkey {' '.join(arguments)}: {done.stderr.strip()}"
        return json.loads(done.stdout)

    def credentials(self):
        return {c["credentialId"]: c for c in self.cli("credentials", "list", "--all", "--json")["credentials"]
                if c["rpId"] == "localhost"}

    def journal(self):
        return self.cli("signal", "log", "--json")["entries"]

    def wait_until(self, what, predicate):
        deadline = time.time() + STORE_WAIT
        while True:
            credentials = self.credentials()
            if predicate(credentials):
                return credentials
            if time.time() > deadline:
                raise AssertionError(f"{what}: not seen in the store after {STORE_WAIT} s; the store: "
                                     f"{json.dumps(list(credentials.values()))[:600]}; the journal: {self.journal()[-3:]}")
            time.sleep(0.5)


class Browser:
    """What the checks need of either browser: scripts in the page, and navigation."""

    def __init__(self, name, opened):
        self.name, self.opened = name, opened

    def run_async(self, script, *arguments, timeout=90):
        if self.name == "chromium":
            return self.opened.driver.execute_async_script(script, *arguments)
        return self.opened.ff.execute_async(script, list(arguments), timeout=timeout)

    def run(self, script):
        if self.name == "chromium":
            return self.opened.driver.execute_script(script)
        return self.opened.ff.execute(script, timeout=30)

    def navigate(self, url):
        if self.name == "chromium":
            self.opened.driver.get(url)
        else:
            self.opened.ff.navigate(url, timeout=web.FIREFOX_LOAD)

    def signal(self, method, options):
        return self.run_async(SIGNAL_SCRIPT, method, options)

    def wait_for_bridge(self, url):
        """The extension's MAIN-world script marks PublicKeyCredential; a page loaded before the
        extension was ready is loaded again."""
        deadline = time.time() + 120
        while not self.run(BRIDGE_PRESENT):
            if time.time() > deadline:
                raise AssertionError(f"the extension's script is not in {url} after 120 s")
            time.sleep(2)
            self.navigate(url)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_passkey(browser, server, user_id, name):
    user = {"id": user_id, "name": name, "displayName": name.capitalize()}
    creation, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                            user_verification=UserVerificationRequirement.PREFERRED)
    created, took = web.webauthn(browser.opened, web.CREATE, dict(creation), f"{name}'s passkey create()")
    data = server.register_complete(state, created).credential_data
    print(f"{name}'s passkey made in {took:.1f} s: {b64(data.credential_id)[:16]}…", flush=True)
    return data


def sign_in(browser, server, passkeys, allow=None):
    """get() with an empty allowCredentials (or `allow`, credential data to list): the credential
    used, verified, and the seconds taken. With an empty list the key must hold one visible
    account for localhost: with two, the browser shows an account chooser no WebDriver reaches."""
    request, state = server.authenticate_begin(allow, user_verification=UserVerificationRequirement.PREFERRED)
    asserted, took = web.webauthn(browser.opened, web.GET, dict(request),
                                  "get() (" + ("allowCredentials listed" if allow else "empty allowCredentials") + ")")
    result = server.authenticate_complete(state, passkeys, asserted)
    return b64(result.credential_id), took


def garbage_to_native_host(key):
    """A frame announcing 2 GiB, then junk: answered with an error, nothing applied, exit 1."""
    before = (key.credentials(), len(key.journal()))
    frame = struct.pack("=I", 0x7FFF_FFFF) + b"\xff garbage"
    host = subprocess.run([key.binary, "native-host", "--store", key.store, "chrome-extension://glcknlabcnogofidfcaeigbkbeieoaoj/"], input=frame,
                          capture_output=True, timeout=30)
    assert host.returncode == 1, f"native-host exited {host.returncode} (stderr: {host.stderr.decode()[-300:]})"
    length = struct.unpack("=I", host.stdout[:4])[0]
    reply = json.loads(host.stdout[4:4 + length])
    assert reply["ok"] is False and reply["error"] == "TypeError", f"reply {reply}"
    assert (key.credentials(), len(key.journal())) == before, "the garbage frame changed the store"
    print(f"native-host answered {reply}", flush=True)


def run_checks(browser, key):
    server = web.relying_party()
    alice = make_passkey(browser, server, ALICE, "alice")
    bob = make_passkey(browser, server, BOB, "bob")
    alice_id, bob_id = b64(alice.credential_id), b64(bob.credential_id)
    journal_before = len(key.journal())
    usual = {}

    def unknown():
        assert not key.credentials()[alice_id]["hidden"], "alice's passkey starts visible"
        outcome = browser.signal("signalUnknownCredential", {"rpId": "localhost", "credentialId": alice_id})
        assert outcome == {"ok": True}, f"the page got {outcome}"
        key.wait_until("alice's passkey hidden", lambda c: c[alice_id]["hidden"] and not c[bob_id]["hidden"])
        used, _ = sign_in(browser, server, [alice, bob])
        assert used == bob_id, f"get() used {used[:16]}…, not bob's passkey (alice's is hidden)"
        entry = key.journal()[-1]
        assert (entry["source"], entry["method"], entry["hidden"]) == (web.ORIGIN, "unknownCredential", [alice_id]), entry
    check("signalUnknownCredential hides alice's passkey; get() then signs in with bob's", unknown)

    def all_accepted():
        key.cli("credentials", "unhide", alice_id, "--json")
        outcome = browser.signal("signalAllAcceptedCredentials",
                                 {"rpId": "localhost", "userId": b64(ALICE), "allAcceptedCredentialIds": [ELSEWHERE_ID]})
        assert outcome == {"ok": True}, f"the page got {outcome}"
        key.wait_until("alice's passkey hidden (not accepted)", lambda c: c[alice_id]["hidden"] and not c[bob_id]["hidden"])
        outcome = browser.signal("signalAllAcceptedCredentials",
                                 {"rpId": "localhost", "userId": b64(ALICE), "allAcceptedCredentialIds": [ELSEWHERE_ID, alice_id]})
        assert outcome == {"ok": True}, f"the page got {outcome}"
        key.wait_until("alice's passkey visible again (accepted)", lambda c: not c[alice_id]["hidden"])
        assert [e["unhidden"] for e in key.journal()[-2:]] == [[], [alice_id]], key.journal()[-2:]
    check("signalAllAcceptedCredentials without alice's ID hides it; listing it makes it visible again", all_accepted)

    def current_user():
        outcome = browser.signal("signalCurrentUserDetails",
                                 {"rpId": "localhost", "userId": b64(BOB), "name": "bob@renamed.example", "displayName": "Bob Renamed"})
        assert outcome == {"ok": True}, f"the page got {outcome}"
        key.wait_until("bob renamed", lambda c: (c[bob_id]["userName"], c[bob_id]["userDisplayName"])
                       == ("bob@renamed.example", "Bob Renamed"))
        assert key.credentials()[alice_id]["userName"] == "alice", "alice's name is untouched"
    check("signalCurrentUserDetails renames bob's passkey in the store", current_user)

    def malformed():
        outcome = browser.signal("signalUnknownCredential", {"rpId": "localhost", "credentialId": "not base64url!"})
        assert outcome.get("error", "").startswith("TypeError"), f"the page got {outcome}"
    check("a malformed credential ID is a TypeError in the page", malformed)

    def other_origin():
        before = (key.credentials(), len(key.journal()))
        other = web.ORIGIN.replace("localhost", "127.0.0.1")
        browser.navigate(other + "/")
        try:
            outcome = browser.signal("signalUnknownCredential", {"rpId": "localhost", "credentialId": bob_id})
            assert outcome.get("error", "").startswith("SecurityError"), f"the page on {other} got {outcome}"
            time.sleep(5)   # time for a signal that got through to reach the store: none must
            assert (key.credentials(), len(key.journal())) == before, "the store changed"
        finally:
            browser.navigate(web.ORIGIN + "/")
            browser.wait_for_bridge(web.ORIGIN + "/")
    check("a page on http://127.0.0.1 naming rpId localhost gets a SecurityError; the store is unchanged", other_origin)

    def loop():
        # Both passkeys are visible now: sign in by ID (an empty list would bring an account chooser).
        _, usual["get"] = sign_in(browser, server, [bob], allow=[bob])
        entries = len(key.journal())
        began = time.time()
        outcome = browser.run_async(LOOP_SCRIPT, LOOP_SIGNALS,
                                    {"rpId": "localhost", "userId": b64(BOB), "name": "bob@loop", "displayName": "Bob Loop"})
        print(f"{LOOP_SIGNALS} signals in a loop: {outcome} resolved in {time.time() - began:.1f} s", flush=True)
        key.wait_until("bob renamed by the loop", lambda c: c[bob_id]["userName"] == "bob@loop")
        # What got through may still be on its way (page → extension → host, each a durable
        # commit, slow under TCG): wait until the journal has stopped growing for 5 s.
        applied, still, deadline = -1, 0, time.time() + 90
        while still < 5 and time.time() < deadline:
            now = len(key.journal()) - entries
            still = still + 1 if now == applied else 0
            applied = now
            time.sleep(1)
        assert still >= 5, f"signals still arriving {time.time() - began:.0f} s after the loop began"
        allowed = 16 + int(time.time() - began) + 2   # a burst of 16, then one a second
        assert 1 <= applied <= allowed, f"{applied} of {LOOP_SIGNALS} signals reached the store (at most {allowed} may)"
        _, took = sign_in(browser, server, [bob], allow=[bob])
        limit = max(3 * usual["get"], usual["get"] + 5)
        assert took <= limit, f"get() took {took:.1f} s after the loop, {usual['get']:.1f} s before (limit {limit:.1f} s)"
        print(f"{applied} of the loop's signals applied; get() then took {took:.1f} s ({usual['get']:.1f} s before)", flush=True)
    check(f"{LOOP_SIGNALS} signals in a loop: the rate limit lets a few through, and get() answers in its usual time", loop)

    check("a garbage frame sent to `latchkey native-host` is answered, changes nothing, exit 1",
          lambda: garbage_to_native_host(key))

    def journal():
        # The page's signals, and the test's own `credentials unhide` (source cli), nothing else.
        entries = key.journal()[journal_before:]
        assert all(e["source"] in (web.ORIGIN, "cli") and e["rpId"] == "localhost" for e in entries), entries[:3]
        entries = [e for e in entries if e["source"] == web.ORIGIN]
        methods = {e["method"] for e in entries}
        assert methods >= {"unknownCredential", "allAcceptedCredentials", "currentUserDetails"}, methods
    check("`latchkey signal log` shows every applied signal with the page's origin", journal)


def main(work, browser_name, binary, store, extension, label="signals", pages=((web.PORT, web.Page),),
         browser_class=Browser, checks=run_checks):
    """One browser with Latchkey's extension and native host: `checks(browser, key)` on the
    pages served at `pages` (port, handler); e2e_provider.py runs its own checks through this."""
    # The step's `timeout` sends SIGTERM: exit through the finally below, which quits the browser.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"{os.path.basename(sys.argv[0])}: Python and its imports ready{web.step_stamp()}", flush=True)
    key = Key(binary, store)
    # The host manifests for this HOME (Firefox) and for each Chromium profile folder the attempts use.
    for attempt in (1, 2):
        wired = subprocess.run([binary, "bridge", "install", "--store", store,
                                "--user-data-dir", os.path.join(work, f"chromium-profile-{attempt}")],
                               capture_output=True, text=True, timeout=60)
        assert wired.returncode == 0, wired.stderr
    print(wired.stdout.strip(), flush=True)
    if browser_name == "chromium":
        # Chromium 137+ ignores --load-extension unless this feature is off (branded Chrome: always).
        arguments = (f"--load-extension={extension}", "--disable-features=DisableLoadExtensionCommandLineSwitch")
        opener = lambda attempt: web.open_chromium(work, attempt, extra_arguments=arguments)  # noqa: E731
    else:
        opener = lambda attempt: web.open_firefox(work, attempt, addon=extension)  # noqa: E731
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) for port, handler in pages]
    for httpd in servers:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
    opened, outcomes = None, []
    try:
        for attempt in (1, 2):
            opened, why = opener(attempt)
            if opened is not None:
                break
            outcomes.append(why)
        if opened is None:
            if all(why == "slow" for why in outcomes):
                print(f"NOT RUN: {browser_name} did not start or load the test page in two attempts", flush=True)
                return 77
            print(f"FAIL: {browser_name} did not start or load the test page ({', '.join(outcomes)})", flush=True)
            return 1
        browser = browser_class(browser_name, opened)
        began = time.time()
        browser.wait_for_bridge(web.ORIGIN + "/")
        print(f"the extension's script is in the page after {time.time() - began:.1f} s", flush=True)
        checks(browser, key)
        print(f"checks done{web.step_stamp()}", flush=True)
        status = subprocess.run([binary, "bridge", "status", "--store", store], capture_output=True, text=True, timeout=60)
        print(status.stdout.strip(), flush=True)
    except Exception as error:  # noqa: BLE001 - the run could not go on: said, counted as a failure
        results.append(False)
        print(f"FAIL  {browser_name}: {type(error).__name__}: {error}", flush=True)
    finally:
        if opened is not None:
            opened.quit()
        for httpd in servers:
            httpd.shutdown()
    passed = sum(results)
    print(f"{label} ({browser_name}): {passed} passed, {len(results) - passed} failed", flush=True)
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__.split("Usage: ")[1].splitlines()[0])
    sys.exit(main(sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3]), os.path.abspath(sys.argv[4]),
                  os.path.abspath(sys.argv[5])))
