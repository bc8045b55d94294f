"""The attacks on the passkey provider that issue 43 measured on 1.1, each run as a page would run
it and shown refused (run by e2e_provider.py after its flows, in the same browser and key; in the
socket layer, socket_provider.py, all but the credProtect check, which the VM layer runs over the
uhid key's hidraw node):

- no oracle: conditional get()s naming alice's passkey, a stranger's, or none end the same way in
  the same time, and nothing is shown; modal get()s open the prompt in each case, and the page sees
  the same;
- no names in the page: while the prompt lists alice, bob and carol, the page's window.find() and
  text find none of them;
- a script's focus(), click() or key events on the field open nothing;
- a decoy: the page hides the hint (opacity 0) under its own button, and the person's real click
  on it only opens the prompt: nothing is signed until the person chooses there; a click where
  1.1's in-page offer had its "Save" button saves nothing;
- credProtect 3: a passkey made with credProtect 3 is not offered, also when allowCredentials
  names it;
- a flood: 200 modal get()s while the prompt is open are refused at once, and the running
  ceremony completes.
`flows` is the e2e_provider module (its constants and helpers); `hidraw`: the key is on uhid
(the credProtect check makes its passkey over hidraw)."""

import base64
import json
import os
import statistics
import time

from fido2.webauthn import UserVerificationRequirement

ORACLE_SCRIPT = """
const [lists, rounds, abortMs, mediation, done] = arguments;
const bytes = (id) => Uint8Array.from(atob(id.replace(/-/g, '+').replace(/_/g, '/')), c => c.charCodeAt(0));
(async () => {
  const out = lists.map(() => []);
  for (let r = 0; r < rounds; r++) for (let i = 0; i < lists.length; i++) {
    const publicKey = {challenge: crypto.getRandomValues(new Uint8Array(32)), rpId: 'localhost',
      allowCredentials: lists[i].map(id => ({type: 'public-key', id: bytes(id)})), userVerification: 'preferred'};
    const request = {publicKey, signal: AbortSignal.timeout(abortMs)};
    if (mediation) request.mediation = mediation;
    const began = performance.now();
    let name;
    try { await navigator.credentials.get(request); name = 'resolved'; } catch (e) { name = e.name; }
    out[i].push([name, performance.now() - began]);
  }
  done(out);
})();
"""
FLOOD_SCRIPT = """
const [count, done] = arguments;
const began = performance.now();
const calls = [];
for (let i = 0; i < count; i++) {
  calls.push(navigator.credentials.get({publicKey: {challenge: new Uint8Array(32), rpId: 'localhost'}})
    .then(() => 'resolved', e => e.name));
}
Promise.all(calls).then(names => done({names, ms: performance.now() - began}));
"""
FIND_NAMES = """window.getSelection().removeAllRanges();
const names = ['alice', 'Alice', 'bob', 'renamed', 'carol', 'Carol'];
const found = names.filter(n => window.find(n, false, false, true));
const text = document.documentElement.innerText;
return {found, inText: names.filter(n => text.includes(n))};"""


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def run(browser, key, rp, made, check, flows, hidraw=True):
    """The checks. On a uhid key (`hidraw`, the VM layer) only the one that needs the key's hidraw
    node runs: the others test the extension, which behaves the same whatever key the native host
    reaches, and run in the socket layer in this machine's browsers (socket_provider.py), where a
    browser starts in a second rather than a minute under emulation."""
    if hidraw:
        cred_protect_3(browser, key, rp, check, flows)
        return
    alice = b64(made["alice"].credential_id)
    stranger = b64(os.urandom(32))

    def no_oracle_conditional():
        flows.wait_for(lambda: not browser.prompt_open(), "no prompt open")
        browser.open_page(flows.ORIGIN, provider=True)
        lists = [[alice], [stranger], []]
        measured = browser.run_async(ORACLE_SCRIPT, lists, 8, 250, "conditional", timeout=120)
        names = [{name for name, _ in runs} for runs in measured]
        medians = [statistics.median(ms for _, ms in runs) for runs in measured]
        print(f"conditional get() aborted after 250 ms, 8 times each: naming alice {names[0]} median {medians[0]:.1f} ms, "
              f"a stranger {names[1]} {medians[1]:.1f} ms, none {names[2]} {medians[2]:.1f} ms", flush=True)
        assert names[0] == names[1] == names[2] and len(names[0]) == 1 and "resolved" not in names[0], names
        assert max(medians) - min(medians) < 40, f"the medians differ by {max(medians) - min(medians):.1f} ms"
        assert browser.ui() is None and not browser.prompt_open(), "something was shown without the person acting"
    check("no oracle: conditional get()s naming alice's passkey, a stranger's or none end alike, in the same time "
          "(medians within 40 ms), and show nothing", no_oracle_conditional)

    def no_oracle_modal():
        outcomes = []
        for listed in ([alice], [stranger]):
            began = time.time()
            browser.run(f"""window.__oracle = 'waiting';
              const bytes = (id) => Uint8Array.from(atob(id.replace(/-/g, '+').replace(/_/g, '/')), c => c.charCodeAt(0));
              navigator.credentials.get({{publicKey: {{challenge: new Uint8Array(32), rpId: 'localhost',
                allowCredentials: {json.dumps(listed)}.map(id => ({{type: 'public-key', id: bytes(id)}}))}},
                signal: AbortSignal.timeout(4000)}}).then(() => window.__oracle = 'resolved',
                e => window.__oracle = e.name); return 1;""")
            flows.wait_for(browser.prompt_open, "Latchkey's prompt", 30)
            flows.wait_for(lambda: browser.run("return window.__oracle;") != "waiting", "the aborted get()", 30)
            outcomes.append(browser.run("return window.__oracle;"))
            flows.wait_for(lambda: not browser.prompt_open(), "the prompt closed by the abort", 30)
            print(f"a modal get() naming {'alice' if listed == [alice] else 'a stranger'}: the prompt opened, "
                  f"the page saw {outcomes[-1]} after {time.time() - began:.1f} s", flush=True)
        assert outcomes[0] == outcomes[1] == "TimeoutError", outcomes
    check("no oracle: a modal get() opens Latchkey's prompt whether the key holds the passkey it names or not; "
          "the page's abort ends both alike and closes the prompt", no_oracle_modal)

    def names_not_in_page():
        browser.open_page(flows.ORIGIN, provider=True)
        flows.start_conditional_get(browser, rp)
        flows.open_prompt_from_field(browser)
        shown = browser.prompt()
        assert {"alice", "bob@renamed.example", "carol"} <= {a["name"] for a in shown["accounts"]}, shown
        seen = browser.run(FIND_NAMES)
        browser.close_prompt()
        assert seen == {"found": [], "inText": []}, f"the page reads {seen}"
        flows.wait_for(lambda: not browser.prompt_open(), "the prompt closed")
        assert browser.run(flows.POLL).get("state") == "waiting", "closing the prompt ended the conditional get()"
    check("no names in the page: while the prompt lists alice, bob and carol, window.find() and the page's text find none of them; "
          "closing the prompt leaves the conditional get() waiting", names_not_in_page)

    def script_focus_opens_nothing():
        browser.open_page(flows.ORIGIN, provider=True)
        flows.start_conditional_get(browser, rp)
        browser.run("""const f = document.getElementById('username'); f.focus(); f.click();
          for (const key of ['ArrowDown', 'Enter', 'a']) f.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true}));
          f.dispatchEvent(new PointerEvent('pointerdown', {bubbles: true})); return 1;""")
        time.sleep(2)
        assert browser.ui() is None and not browser.prompt_open(), "a script's focus() or events opened something"
        assert browser.run(flows.POLL).get("state") == "waiting"
    check("a script's focus(), click() and synthetic key and pointer events on the field open nothing", script_focus_opens_nothing)

    def decoy_over_hint():
        before = key.credentials()
        # The conditional get() of the previous check still waits: the person clicks the field.
        left, top, width, height = flows.FIELD
        browser.click(left + 10, top + height / 2)
        flows.wait_for(lambda: browser.ui() is not None, "the hint")
        browser.run("""const h = document.querySelector('[data-latchkey-provider]'); h.style.setProperty('opacity', '0', 'important');
          const d = document.createElement('div'); d.textContent = 'Continue to your prize';
          d.style.cssText = 'position:fixed;left:20px;top:52px;width:300px;height:40px;background:gold;pointer-events:none;z-index:2147483647';
          document.body.appendChild(d); return 1;""")
        browser.click(*flows.HINT)   # the person's real click on the decoy
        flows.wait_for(browser.prompt_open, "the prompt (the click reached the hidden hint)", 30)
        time.sleep(3)
        state = browser.run(flows.POLL)
        assert state.get("state") == "waiting", f"a click on the page signed in: {state}"
        browser.close_prompt()
        assert key.credentials() == before
    check("a decoy over the hidden hint: the person's click only opens Latchkey's prompt; nothing is signed", decoy_over_hint)

    def decoy_offer():
        before = key.credentials()
        browser.open_page(flows.ORIGIN, provider=True)
        creation, _ = flows.registration(rp, b"latchkey-provider-mallory", "mallory")
        browser.start("create", dict(creation)["publicKey"])
        shown = browser.prompt()
        assert "save" in shown["actions"], shown
        viewport = browser.run("""const d = document.createElement('button'); d.textContent = 'Save';
          d.style.cssText = 'position:fixed;left:calc(50% - 180px);top:80px;width:360px;height:200px;z-index:2147483647';
          document.body.appendChild(d); return window.innerWidth;""")
        browser.click(viewport / 2, flows.OLD_OFFER_SAVE_Y)
        time.sleep(3)
        assert browser.run(flows.POLL).get("state") == "waiting", "a click in the page answered the create()"
        assert key.credentials() == before, "a click in the page saved a passkey"
        browser.press_in_prompt("cancel")
        outcome = browser.outcome("the cancelled create()")
        assert outcome.get("error", "").startswith("NotAllowedError"), outcome
        assert key.credentials() == before, "the store changed"
    check("a modal create() with a decoy where 1.1's in-page \"Save\" was: the person's click there saves nothing; "
          "Cancel in the prompt is a NotAllowedError", decoy_offer)

    def flood():
        browser.open_page(flows.ORIGIN, provider=True)
        time.sleep(8)   # the origin's requests: a burst of 6, then one every 4 s
        request, state = rp.authenticate_begin([], user_verification=UserVerificationRequirement.PREFERRED)
        browser.start("get", dict(request)["publicKey"])
        flows.wait_for(browser.prompt_open, "Latchkey's prompt")
        flooded = browser.run_async(FLOOD_SCRIPT, 200, timeout=120)
        refused = sum(name == "NotAllowedError" for name in flooded["names"])
        print(f"200 modal get()s while the prompt was open: {refused} NotAllowedError in {flooded['ms']:.0f} ms", flush=True)
        assert refused == 200, flooded["names"][:5]
        browser.press_in_prompt("account", 0)
        outcome = flows.resolved(browser.outcome("the running get()"), "the get() under the flood")
        rp.authenticate_complete(state, [made["alice"], made["bob"]], outcome["json"])
    check("a flood of 200 modal get()s while the prompt is open is refused at once; the running ceremony completes",
          flood)


def cred_protect_3(browser, key, rp, check, flows):
    """A credProtect-3 passkey made over the key's hidraw node is never offered before UV."""
    def body():
        from fido2.ctap2 import Ctap2
        from fido2.hid import CtapHidDevice
        devices = list(CtapHidDevice.list_devices())
        assert len(devices) == 1, f"{len(devices)} FIDO devices in sight"
        made = Ctap2(devices[0]).make_credential(
            os.urandom(32), {"id": "localhost", "name": "Latchkey provider e2e"},
            {"id": b"latchkey-provider-protected", "name": "protected", "displayName": "Protected"},
            [{"type": "public-key", "alg": -7}], extensions={"credProtect": 3}, options={"rk": True, "uv": True})
        protected = b64(made.auth_data.credential_data.credential_id)
        assert protected in key.credentials(), "the key did not store the credProtect-3 passkey"
        try:
            for allow in ([], [protected]):
                request, _ = rp.authenticate_begin([], user_verification=UserVerificationRequirement.PREFERRED)
                options = dict(request)["publicKey"]
                options = dict(options, allowCredentials=[{"type": "public-key", "id": protected}] if allow else [])
                browser.start("get", options)
                shown = browser.prompt()
                browser.press_in_prompt("cancel")
                assert "protected" not in [a["name"] for a in shown["accounts"]], f"allowCredentials {allow}: {shown}"
                assert browser.outcome("the cancelled get()").get("error", "").startswith("NotAllowedError")
        finally:
            key.cli("credentials", "delete", protected, "--yes", "--json")
    check("a credProtect-3 passkey (made by python-fido2 over hidraw) is not offered before user verification, "
          "also when allowCredentials names it", body)


