"""Websites' signals reach the key, in this machine's headless Chromium and Firefox ESR with
Latchkey's extension and native host (e2e_extension.main), against a socket key with built-in UV
(`--uv auto`). Run by socket_provider.py as one part of each browser's run.

The signals' path is page → extension → native host → the key's store, none of it through
uhid; the passkeys the signals name are made and used by python-fido2 2.2.1 over the key's
socket with the page's origin in clientDataJSON (this machine has no uhid, so the browser's own
WebAuthn reaches no key; the VM's provider step has the browser's own create()/get() and a
site's signal over hidraw). The key answers a discoverable get() with every account it offers
(`--account-choice client`), so a hidden passkey that was still offered is seen.

Two passkeys (alice, bob; RP localhost), then:
1. signalUnknownCredential(alice) → alice's credential is hidden in the store (`latchkey
   credentials list --all --json`), and a get() with an empty allowCredentials offers bob's alone;
2. signalAllAcceptedCredentials(alice, [an ID of alice's on another authenticator]) → alice's is
   hidden; again listing hers too → visible (the key holds one credential per account, CTAP's
   rule, so "the user's two IDs" are hers here and one elsewhere);
3. signalCurrentUserDetails(bob) → bob's name and display name change in the store;
4. negatives: http://127.0.0.1 naming rpId localhost is a SecurityError in the page and changes
   nothing; a malformed ID is a TypeError; 1,000 signals in a loop leave the key answering a get()
   within its usual time (and the rate limit keeps them out of the journal); a garbage frame sent
   to `latchkey native-host` by hand is answered, changes nothing, and the host exits 1;
5. `latchkey signal log --json` shows each applied signal with the page's origin."""

import base64
import json
import struct
import subprocess
import time

import e2e_browser as web  # Tests/Integration/vm, on the path socket_provider.py sets
import e2e_extension as extension
import latchkey_socket
from fido2.client import DefaultClientDataCollector, Fido2Client
from fido2.webauthn import ResidentKeyRequirement, UserVerificationRequirement

ALICE = b"latchkey-signals-alice"
BOB = b"latchkey-signals-bob"
ELSEWHERE_ID = base64.urlsafe_b64encode(b"alice's passkey on another authenticator").rstrip(b"=").decode()
LOOP_SIGNALS = 1000
# Serve options of the key these checks run against (socket_provider.browser_run starts it).
KEY_OPTIONS = ("--uv", "auto", "--account-choice", "client")

LOOP_SCRIPT = """
const [count, options, done] = arguments;
const calls = [];
for (let i = 0; i < count; i++) calls.push(PublicKeyCredential.signalCurrentUserDetails(options).then(() => 1, () => 0));
Promise.all(calls).then(results => done({ok: results.reduce((a, b) => a + b, 0)}));
"""

b64 = extension.b64
check = extension.check


class Passkeys:
    """python-fido2's client over the key's socket, as the page's origin, with `interaction`
    (socket_provider.Interaction: the key's built-in UV, no PIN)."""

    def __init__(self, path, interaction):
        self.path, self.interaction = path, interaction

    def client(self):
        device = latchkey_socket.open_device(self.path)
        return device, Fido2Client(device, DefaultClientDataCollector(web.ORIGIN), user_interaction=self.interaction)

    def make(self, server, user_id, name):
        user = {"id": user_id, "name": name, "displayName": name.capitalize()}
        creation, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                                user_verification=UserVerificationRequirement.PREFERRED)
        device, client = self.client()
        try:
            data = server.register_complete(state, client.make_credential(creation["publicKey"])).credential_data
        finally:
            device.close()
        print(f"{name}'s passkey made: {b64(data.credential_id)[:16]}…", flush=True)
        return data

    def sign_in(self, server, passkeys, allow=None):
        """get() with an empty allowCredentials (or `allow`, credential data to list): the one
        account the key offered, verified, and the seconds taken. More than one is a failure."""
        request, state = server.authenticate_begin(allow, user_verification=UserVerificationRequirement.PREFERRED)
        device, client = self.client()
        try:
            began = time.time()
            selection = client.get_assertion(request["publicKey"])
            took = time.time() - began
        finally:
            device.close()
        offered = [b64(assertion.credential["id"]) for assertion in selection.get_assertions()]
        assert len(offered) == 1, f"the key offered {len(offered)} accounts: {[i[:16] for i in offered]}"
        result = server.authenticate_complete(state, passkeys, selection.get_response(0))
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


def run_checks(browser, key, path, interaction):
    """The checks above in `browser` (e2e_extension.Browser) against the socket key at `path`."""
    server = web.relying_party()
    passkeys = Passkeys(path, interaction)
    alice = passkeys.make(server, ALICE, "alice")
    bob = passkeys.make(server, BOB, "bob")
    alice_id, bob_id = b64(alice.credential_id), b64(bob.credential_id)
    journal_before = len(key.journal())
    usual = {}

    def unknown():
        assert not key.credentials()[alice_id]["hidden"], "alice's passkey starts visible"
        outcome = browser.signal("signalUnknownCredential", {"rpId": "localhost", "credentialId": alice_id})
        assert outcome == {"ok": True}, f"the page got {outcome}"
        key.wait_until("alice's passkey hidden", lambda c: c[alice_id]["hidden"] and not c[bob_id]["hidden"])
        used, _ = passkeys.sign_in(server, [alice, bob])
        assert used == bob_id, f"get() used {used[:16]}…, not bob's passkey (alice's is hidden)"
        entry = key.journal()[-1]
        assert (entry["source"], entry["method"], entry["hidden"]) == (web.ORIGIN, "unknownCredential", [alice_id]), entry
    check("signalUnknownCredential hides alice's passkey; get() then offers bob's alone", unknown)

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
        _, usual["get"] = passkeys.sign_in(server, [bob], allow=[bob])
        entries = len(key.journal())
        began = time.time()
        outcome = browser.run_async(LOOP_SCRIPT, LOOP_SIGNALS,
                                    {"rpId": "localhost", "userId": b64(BOB), "name": "bob@loop", "displayName": "Bob Loop"})
        print(f"{LOOP_SIGNALS} signals in a loop: {outcome} resolved in {time.time() - began:.1f} s", flush=True)
        key.wait_until("bob renamed by the loop", lambda c: c[bob_id]["userName"] == "bob@loop")
        # What got through may still be on its way (page → extension → host, each a durable
        # commit): wait until the journal has stopped growing for 5 s.
        applied, still, deadline = -1, 0, time.time() + 90
        while still < 5 and time.time() < deadline:
            now = len(key.journal()) - entries
            still = still + 1 if now == applied else 0
            applied = now
            time.sleep(1)
        assert still >= 5, f"signals still arriving {time.time() - began:.0f} s after the loop began"
        allowed = 16 + int(time.time() - began) + 2   # a burst of 16, then one a second
        assert 1 <= applied <= allowed, f"{applied} of {LOOP_SIGNALS} signals reached the store (at most {allowed} may)"
        _, took = passkeys.sign_in(server, [bob], allow=[bob])
        limit = max(3 * usual["get"], usual["get"] + 5)
        assert took <= limit, f"get() took {took:.1f} s after the loop, {usual['get']:.1f} s before (limit {limit:.1f} s)"
        print(f"{applied} of the loop's signals applied; get() then took {took:.2f} s ({usual['get']:.2f} s before)", flush=True)
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
