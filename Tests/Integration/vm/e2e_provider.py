#!/usr/bin/env python3
"""Latchkey as the browser's passkey provider: a headless browser with Latchkey's extension
(Chromium: --load-extension; Firefox ESR: a temporary add-on) and the native host wired by
`latchkey bridge install`, against a uhid key with built-in UV (`--uv auto`), every response
verified by python-fido2's Fido2Server (RP ID localhost, origins http://localhost:8765 and :8766).
Every choice and consent is made in Latchkey's prompt, a window of the extension's own, which the
driver reaches as a window of its own (never through the page).

1. provider mode off (the default): navigator.credentials.get/create and
   isConditionalMediationAvailable are the browser's own functions, and create() makes alice's
   passkey through the browser (a real PublicKeyCredential, whose prototype getters work on it);
2. turned on in the extension's options page: a conditional get() shows nothing until the
   person acts; a click into the `autocomplete="username webauthn"` field shows the hint (no
   account in it); clicking it opens the prompt, which lists alice; choosing her signs her in;
3. a password sign-in as bob (a trusted click on the form's submit button, then the page the
   server redirects to) and right after it a conditional create() for bob makes his passkey with
   no dialog; after a sign-in as erin, a conditional create() for mallory is refused;
4. the prompt then lists alice and bob; choosing bob signs him in;
5. on another origin (:8766) without a password sign-in, a conditional create() is a
   NotAllowedError, with no UI, and the store is unchanged;
6. a page on http://127.0.0.1 naming rpId localhost gets a SecurityError for a conditional
   get() and a create(); the store is unchanged;
7. a modal get() opens the prompt (alice, bob); choosing alice signs her in; a modal create()
   opens it to save; saving makes carol's; a site's signalCurrentUserDetails renames bob's;
8. the attacks of issue 43 (e2e_provider_attacks.py), each with what the page can measure: no
   oracle (conditional and modal get() behave and take the same time whatever allowCredentials
   names), no names in the page (window.find), a script's focus() opens nothing, a decoy over the
   hint and a click where the old in-page offer was sign in and save nothing, a flood of requests
   is refused while the running ceremony completes — run against socket keys in this machine's
   browsers (socket_provider.py); on the VM's uhid key, a credProtect-3 passkey made over hidraw
   is not offered;
9. provider mode off again: the browser's own functions, and a get() the browser answers.
Over uhid (the VM) the refusals of 3 and 5, 6, and 7's modal get() — the extension's and the
host's own rules, the same whatever carries the key — are named (IN THE SOCKET LAYER), not run:
socket_provider.py runs every one in both browsers against socket keys.
Each check prints PASS/FAIL; the summary counts them; exit 0 when all passed.
Usage: e2e_provider.py WORK chromium|firefox LATCHKEY_BINARY STORE_DIR EXTENSION_DIR
Exit 77: the browser did not come up or load the page in time, twice."""

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_browser as web  # noqa: E402 - the browsers
import marionette  # noqa: E402 - Firefox's driver (Tests/Integration/support, on the path e2e_browser sets)
import e2e_extension as signals  # noqa: E402 - the browser with the extension: Key (the store through the CLI), Browser, check
import e2e_provider_attacks as attacks  # noqa: E402 - issue 43's attacks, each refused
import websocket  # noqa: E402 - websocket-client, selenium's own dependency: Chromium's DevTools protocol
from fido2.server import Fido2Server  # noqa: E402
from fido2.webauthn import (AttestationConveyancePreference, ResidentKeyRequirement,  # noqa: E402
                            UserVerificationRequirement)

class PromptClosed(AssertionError):
    """Latchkey's prompt window closed while the test talked to it."""


ORIGIN = web.ORIGIN                       # http://localhost:8765
ORIGIN2 = f"http://localhost:{web.PORT + 1}"
OTHER = f"http://127.0.0.1:{web.PORT}"
ALICE = b"latchkey-provider-alice"
BOB = b"latchkey-provider-bob"
CAROL = b"latchkey-provider-carol"
CHROMIUM_OPTIONS = "chrome-extension://glcknlabcnogofidfcaeigbkbeieoaoj/options.html"
WAIT = 60          # s for a prompt, a reply, a page
# Where things are on the page (PAGE), and the hint under the username field (extension/provider.js:
# HINT_HEIGHT, 2 px under the field): a driver cannot look into its closed shadow root.
FIELD = (20, 20, 300, 30)                 # the username field: left, top, width, height
PASSWORD = (20 + 150, 70 + 15)            # the centre of the password field
SUBMIT = (20 + 60, 120 + 15)              # the centre of the submit button
HINT = (20 + 100, 20 + 30 + 2 + 20)       # the centre of the hint under the username field
HINT_HEIGHT = 40
# Where 1.1's in-page offer put its "Save in Latchkey" button (a dialog 80 px from the top, a
# 56 px title, then 44 px rows), the spot a page would draw its decoy over.
OLD_OFFER_SAVE_Y = 80 + 56 + 44 / 2

PAGE = b"""<!doctype html><html><head><title>Latchkey provider e2e</title></head><body>
<form id="login" method="post" action="/login">
<input id="username" name="username" autocomplete="username webauthn" style="position:absolute;left:20px;top:20px;width:300px;height:30px;margin:0;box-sizing:border-box">
<input id="password" name="password" type="password" autocomplete="current-password" style="position:absolute;left:20px;top:70px;width:300px;height:30px;margin:0">
<button id="submit" type="submit" style="position:absolute;left:20px;top:120px;width:120px;height:30px;margin:0">Sign in</button>
</form></body></html>"""

# Starts create()/get() in the page and returns at once; POLL reads how it ended.
START = """
const [kind, json, mediation, abortAfter] = arguments;
window.__lk = {state: 'waiting'};
try {
  const publicKey = kind === 'get' ? PublicKeyCredential.parseRequestOptionsFromJSON(json)
                                   : PublicKeyCredential.parseCreationOptionsFromJSON(json);
  const request = mediation ? {publicKey, mediation} : {publicKey};
  if (abortAfter) request.signal = AbortSignal.timeout(abortAfter);
  navigator.credentials[kind](request).then(c => {
    let real = true;
    // The prototype's accessors work on the browser's own objects only (rawId is
    // PublicKeyCredential's own; id is inherited from Credential).
    try { Object.getOwnPropertyDescriptor(PublicKeyCredential.prototype, 'rawId').get.call(c); } catch (e) { real = false; }
    window.__lk = {state: 'resolved', json: c.toJSON(), real, isPKC: c instanceof PublicKeyCredential};
  }, e => { window.__lk = {state: 'rejected', error: e.name + ': ' + e.message}; });
} catch (e) { window.__lk = {state: 'threw', error: String(e)}; }
return 'started';
"""
POLL = "return window.__lk || null;"
PROVIDER_PRESENT = "return Object.prototype.hasOwnProperty.call(PublicKeyCredential, Symbol.for('latchkey.passkeyProvider'));"
NATIVE = """return [navigator.credentials.get, navigator.credentials.create, PublicKeyCredential.isConditionalMediationAvailable]
  .every(f => Function.prototype.toString.call(f).includes('[native code]'));"""
# What the page sees of conditional mediation (printed with provider mode off: the browser's own
# answers, measured; asserted with it on).
CAPABILITIES = """
const done = arguments[arguments.length - 1];
const conditional = PublicKeyCredential.isConditionalMediationAvailable
  ? PublicKeyCredential.isConditionalMediationAvailable() : Promise.resolve('no such method');
const capabilities = PublicKeyCredential.getClientCapabilities
  ? PublicKeyCredential.getClientCapabilities() : Promise.resolve('no such method');
Promise.all([conditional, capabilities]).then(([c, k]) => done({conditionalMediation: c, capabilities: k}),
                                              e => done({error: String(e)}));
"""
PROVIDER_UI = """const h = document.querySelector('[data-latchkey-provider]');
if (!h) return null; const r = h.getBoundingClientRect();
return {left: r.left, top: r.top, width: r.width, height: r.height, viewport: window.innerWidth};"""

results = signals.results
check = signals.check
b64 = signals.b64


class Page(web.Page):
    page = PAGE

    def do_POST(self):
        # The password sign-in: whatever was typed, then the redirect a real site sends.
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(303)
        self.send_header("Location", "/")
        self.send_header("Content-Length", "0")
        self.end_headers()



class Provider(signals.Browser):
    """The browser, with what the provider's checks need: trusted clicks and keys, the options
    page, and Latchkey's prompt window (found among the driver's windows, clicked as a person would)."""

    main_window = None

    def click(self, x, y):
        x, y = int(x), int(y)
        if self.name == "chromium":
            from selenium.webdriver.common.actions.action_builder import ActionBuilder
            actions = ActionBuilder(self.opened.driver)
            actions.pointer_action.move_to_location(x, y)
            actions.pointer_action.click()
            actions.perform()
        else:
            ff = self.opened.ff
            ff.command("WebDriver:PerformActions", {"actions": [{
                "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
                "actions": [{"type": "pointerMove", "x": x, "y": y, "origin": "viewport", "duration": 0},
                            {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0}]}]}, timeout=30)
            ff.command("WebDriver:ReleaseActions", {}, timeout=30)

    def type_text(self, text):
        """Types `text` into the focused element with WebDriver key actions (trusted input)."""
        if self.name == "chromium":
            from selenium.webdriver.common.action_chains import ActionChains
            ActionChains(self.opened.driver).send_keys(text).perform()
        else:
            keys = [step for c in text for step in ({"type": "keyDown", "value": c}, {"type": "keyUp", "value": c})]
            self.opened.ff.command("WebDriver:PerformActions",
                                   {"actions": [{"type": "key", "id": "keyboard", "actions": keys}]}, timeout=30)
            self.opened.ff.command("WebDriver:ReleaseActions", {}, timeout=30)

    # Latchkey's prompt, a window of the extension's own. Chromium's driver lists no window an
    # extension opens (chromedriver 156: neither windows.create's nor tabs.create's), so there it
    # is reached through the DevTools protocol (its Input events are trusted, as a person's are);
    # Firefox's Marionette lists it among its window handles.
    def current_window(self):
        if self.name == "chromium":
            return self.opened.driver.current_window_handle
        return self.opened.ff.command("WebDriver:GetWindowHandle", {}, timeout=30)["value"]

    def _devtools_targets(self):
        address = self.opened.driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
        with urllib.request.urlopen(f"http://{address}/json/list", timeout=10) as answer:
            return [t for t in json.load(answer) if t.get("type") == "page" and "/prompt.html#" in t.get("url", "")]

    def _devtools(self, method, params):
        targets = self._devtools_targets()
        assert targets, "Latchkey's prompt is not open"
        connection = None
        for target in reversed(targets):   # a prompt closed a moment ago may still be listed
            try:
                connection = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
                break
            except websocket.WebSocketException:
                continue
        assert connection is not None, "Latchkey's prompt closed"
        try:
            connection.send(json.dumps({"id": 1, "method": method, "params": params}))
            while True:
                message = json.loads(connection.recv())
                if message.get("id") == 1:
                    assert "error" not in message, f"DevTools {method}: {message['error']}"
                    return message.get("result", {})
        except websocket.WebSocketConnectionClosedException as error:
            # The window went away between the command and its answer: a click that made the
            # prompt answer closes it before Chromium replies to the click itself.
            raise PromptClosed("Latchkey's prompt closed") from error
        finally:
            connection.close()

    def _firefox_prompt_handle(self):
        ff = self.opened.ff
        found = None
        for handle in ff.command("WebDriver:GetWindowHandles", {}, timeout=30)["value"]:
            if handle == self.main_window:
                continue
            try:
                ff.command("WebDriver:SwitchToWindow", {"handle": handle, "focus": False}, timeout=30)
                if "/prompt.html" in ff.command("WebDriver:GetCurrentURL", {}, timeout=30)["value"]:
                    found = handle
                    break
            except marionette.MarionetteError as error:
                if not closed_window(error):
                    raise   # closed while being looked at: not the prompt any more
        ff.command("WebDriver:SwitchToWindow", {"handle": self.main_window, "focus": False}, timeout=30)
        return found

    @contextlib.contextmanager
    def _firefox_prompt(self, focus):
        """Marionette in the prompt window (which must be open), back in the page's window after."""
        ff = self.opened.ff
        handle = self._firefox_prompt_handle()
        assert handle is not None, "Latchkey's prompt is not open"
        try:
            ff.command("WebDriver:SwitchToWindow", {"handle": handle, "focus": focus}, timeout=30)
            yield ff
        finally:
            ff.command("WebDriver:SwitchToWindow", {"handle": self.main_window, "focus": False}, timeout=30)

    def prompt_open(self):
        """Whether Latchkey's prompt window is open."""
        if self.name == "chromium":
            return bool(self._devtools_targets())
        return self._firefox_prompt_handle() is not None

    def prompt_run(self, body):
        """Runs the function body `body` in the prompt window and returns its value."""
        if self.name == "chromium":
            result = self._devtools("Runtime.evaluate", {"expression": f"(() => {{ {body} }})()", "returnByValue": True})
            assert "exceptionDetails" not in result, f"in the prompt: {result['exceptionDetails']}"
            return result["result"].get("value")
        try:
            with self._firefox_prompt(focus=False) as ff:
                return ff.execute(body, timeout=30)
        except marionette.MarionetteError as error:
            if closed_window(error):
                raise AssertionError("Latchkey's prompt closed") from error
            raise

    def prompt_click(self, x, y):
        """A person's click in the prompt window at (x, y) of its viewport."""
        if self.name == "chromium":
            for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
                try:
                    self._devtools("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})
                except PromptClosed:
                    if kind != "mouseReleased":
                        raise
                    # the release made the prompt answer and close before Chromium acknowledged it
            return
        try:
            with self._firefox_prompt(focus=True) as ff:
                # Regaining the focus restarts the prompt's input delay: wait it out, as a person would.
                deadline = time.time() + 10
                while ff.execute("return document.body.dataset.state;", timeout=30) not in ("ready", "pin") \
                        and time.time() < deadline:
                    time.sleep(0.2)
                self.click(x, y)
        except marionette.MarionetteError as error:
            if not closed_window(error):
                raise   # the click closed the prompt (it answered) before the driver released it

    def prompt_type(self, text):
        """Types `text` into the prompt's focused field as a person would (trusted input)."""
        if self.name == "chromium":
            self._devtools("Input.insertText", {"text": text})
            return
        with self._firefox_prompt(focus=True):
            self.type_text(text)

    def in_prompt(self, body, seconds=WAIT, states=("ready",)):
        """Waits until Latchkey's prompt is open and ready for input (`states`: its body's
        data-state, "ready" or "pin"), then runs `body` there."""
        deadline = time.time() + seconds
        while True:
            try:
                if self.prompt_open() and self.prompt_run("return document.body && document.body.dataset.state;") in states:
                    return self.prompt_run(body)
            except AssertionError:
                pass   # closed meanwhile
            if time.time() > deadline:
                raise AssertionError(f"Latchkey's prompt: not open and ready after {seconds} s")
            time.sleep(0.5)

    def prompt(self):
        """What Latchkey's prompt shows: its title and the accounts' names and IDs, in order."""
        return self.in_prompt("""return {title: document.getElementById('title').textContent,
          status: document.getElementById('status').textContent,
          detail: document.getElementById('detail').textContent,
          accounts: Array.from(document.querySelectorAll('[data-action="account"]')).map(b =>
            ({name: b.querySelector('.user').textContent, id: b.dataset.credentialId})),
          actions: Array.from(document.querySelectorAll('button')).map(b => b.dataset.action)};""")

    def press_in_prompt(self, action, index=0, until_pin=False, until_ready=False):
        """Clicks the prompt's `action` button (the `index`-th of them: accounts) with a trusted
        click at its centre, then waits for the prompt to close (or says why it failed); with
        `until_pin`, until it asks for the key's PIN, and returns what it says then."""
        where = self.in_prompt(f"""const b = document.querySelectorAll('[data-action="{action}"]')[{index}];
          if (!b) return null; b.scrollIntoView({{block: 'center'}}); const r = b.getBoundingClientRect();
          return [r.left + r.width / 2, r.top + r.height / 2];""", states=("ready", "pin"))
        assert where is not None, f"the prompt has no {action} button {index}"
        if until_pin:   # the PIN form comes back in the same state: tell the new one from the old
            self.prompt_run("const f = document.getElementById('pin-form'); if (f) f.dataset.seen = '1'; return 1;")
        self.prompt_click(*where)
        deadline = time.time() + WAIT
        while time.time() < deadline:
            try:
                if until_ready and self.prompt_run("""return document.body.dataset.state === 'ready'
                    && !document.querySelector('[data-action="verify"]');"""):
                    return None
                if until_pin and self.prompt_run("""const f = document.getElementById('pin-form');
                    return document.body.dataset.state === 'pin' && !!f && !f.dataset.seen;"""):
                    return self.prompt_run("return document.getElementById('status').textContent;")
                if not self.prompt_open():
                    assert not until_pin, "the prompt closed instead of asking for the PIN"
                    return
                if self.prompt_run("return document.body.dataset.state;") == "failed":
                    raise AssertionError("the prompt says: " + str(self.prompt_run(
                        "return document.getElementById('status').textContent;")))
            except AssertionError as error:
                if "the prompt says" in str(error):
                    raise
            time.sleep(0.3)
        raise AssertionError(f"the prompt is still open {WAIT} s after {action} was pressed")

    def close_prompt(self):
        """Closes the prompt window as a person would (the window's own close)."""
        if self.name == "chromium":
            self._devtools("Page.close", {})
            return
        ff = self.opened.ff
        handle = self._firefox_prompt_handle()
        if handle is None:
            return
        ff.command("WebDriver:SwitchToWindow", {"handle": handle, "focus": True}, timeout=30)
        ff.command("WebDriver:CloseWindow", {}, timeout=30)
        ff.command("WebDriver:SwitchToWindow", {"handle": self.main_window, "focus": True}, timeout=30)

    def set_provider(self, enabled):
        """Ticks (or clears) "Offer Latchkey's passkeys…" in the extension's options page, as a user would."""
        if self.main_window is None:
            self.main_window = self.current_window()
        if self.name == "chromium":
            url = CHROMIUM_OPTIONS
        else:
            url = self.opened.ff.execute_chrome(
                "return WebExtensionPolicy.getByID('signal-bridge@latchkey').getURL('options.html');")
        self.navigate(url)
        wait_for(lambda: self.run("return document.body && document.body.dataset.loaded === 'true';"), "the options page")
        self.run(f"const box = document.getElementById('enabled'); if (box.checked !== {str(enabled).lower()}) box.click(); return 1;")
        wait_for(lambda: self.run("return document.getElementById('saved').textContent === 'Saved.' "
                                  f"|| document.getElementById('enabled').checked === {str(enabled).lower()};"), "the setting saved")

    def open_page(self, origin, provider):
        """Loads `origin`'s page until the provider's script is there (or, with `provider` False, gone)."""
        deadline = time.time() + 120
        while True:
            self.navigate(origin + "/")
            if self.run(PROVIDER_PRESENT) == provider:
                return
            if time.time() > deadline:
                raise AssertionError(f"the provider's script is {'not ' if provider else ''}in {origin} after 120 s")
            time.sleep(2)

    def start(self, kind, options, mediation=None, abort_after=None):
        if self.name == "chromium":
            started = self.opened.driver.execute_script(START, kind, options, mediation, abort_after)
        else:
            started = self.opened.ff.execute(START, [kind, options, mediation, abort_after], timeout=30)
        assert started == "started", f"{kind}() did not start: {started}"

    def outcome(self, what, seconds=WAIT):
        deadline = time.time() + seconds
        while True:
            state = self.run(POLL)
            if state and state.get("state") != "waiting":
                return state
            if time.time() > deadline:
                raise AssertionError(f"{what}: not settled after {seconds} s (the page: {state})")
            time.sleep(0.5)

    def ui(self):
        return self.run(PROVIDER_UI)

    def submit_form(self, fill, submit, what):
        """Runs the page script `fill` (it fills the form; it may submit it itself), then
        `submit()` (a person's action, or nothing), and waits for the page the server redirects to."""
        self.run(fill + " window.__beforeSubmit = 1; return 1;")
        submit()
        wait_for(lambda: self.run("return document.readyState === 'complete' && window.__beforeSubmit === undefined;"),
                 f"the page after {what}")


def closed_window(error):
    """Whether Marionette's error says the window went away (the prompt closed itself)."""
    return "no such window" in str(error) or "discarded" in str(error)


def start_conditional_get(browser, rp, abort_after=None):
    """A conditional get() with an empty allowCredentials (aborted after `abort_after` ms, if
    given); the RP's state for its response."""
    request, state = rp.authenticate_begin([], user_verification=UserVerificationRequirement.PREFERRED)
    browser.start("get", dict(request)["publicKey"], "conditional", abort_after)
    return state


def refused_upgrade(browser, key, rp, user_id, name):
    """A conditional create() for `name` that must be refused: NotAllowedError, no UI, store unchanged."""
    before = key.credentials()
    creation, _ = registration(rp, user_id, name)
    browser.start("create", dict(creation)["publicKey"], "conditional")
    outcome = browser.outcome(f"a conditional create() for {name}")
    assert outcome.get("error", "").startswith("NotAllowedError"), f"the page got {outcome}"
    assert browser.ui() is None and not browser.prompt_open(), "a prompt was shown"
    assert key.credentials() == before, "the store changed"


def wait_for(predicate, what, seconds=WAIT):
    deadline = time.time() + seconds
    while not predicate():
        if time.time() > deadline:
            raise AssertionError(f"{what}: not seen after {seconds} s")
        time.sleep(0.5)


def server():
    return Fido2Server({"id": "localhost", "name": "Latchkey provider e2e"}, attestation=AttestationConveyancePreference.NONE,
                       verify_origin=lambda origin: origin in (ORIGIN, ORIGIN2))


def registration(rp, user_id, name):
    return rp.register_begin({"id": user_id, "name": name, "displayName": name.capitalize()},
                             resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                             user_verification=UserVerificationRequirement.PREFERRED)


def resolved(state, what):
    assert state.get("state") == "resolved", f"{what}: {state}"
    return state


def open_prompt_from_field(browser):
    """The person clicks into the username field, then the hint under it: Latchkey's prompt opens."""
    left, top, width, height = FIELD
    browser.click(left + 10, top + height / 2)
    wait_for(lambda: browser.ui() is not None, "Latchkey's hint under the username field")
    hint = browser.ui()
    assert round(hint["height"]) == HINT_HEIGHT, f"the hint is {hint}"
    browser.click(*HINT)


def pick_account(browser, key, names, index):
    """In the open prompt of a discoverable sign-in: the accounts listed are `names` less those a
    site protected (credProtect 2 or 3: Chromium asks for 2 on its own), which "Show all passkeys"
    adds once the key verified the person; then the `index`-th of `names` is chosen."""
    levels = {c.get("userName"): c.get("credProtect") or 1 for c in key.credentials().values()}
    unprotected = [name for name in names if levels.get(name, 1) == 1]
    shown = browser.prompt()
    assert [a["name"] for a in shown["accounts"]] == unprotected, f"the prompt lists {shown} (levels {levels})"
    if unprotected != names:
        browser.press_in_prompt("verify", until_ready=True)
        shown = browser.prompt()
        assert [a["name"] for a in shown["accounts"]] == names, f"after verifying, the prompt lists {shown}"
    browser.press_in_prompt("account", index)


def choose_in_menu(browser, rp, passkeys, index, names, key):
    """A conditional get(); the field's hint; the prompt lists `names`; choosing `index`: verified."""
    state = start_conditional_get(browser, rp)
    open_prompt_from_field(browser)
    pick_account(browser, key, names, index)
    outcome = resolved(browser.outcome("the conditional get()"), "the conditional get()")
    assert not outcome["real"] and outcome["isPKC"], f"the provider's credential: {outcome}"
    return b64(rp.authenticate_complete(state, passkeys, outcome["json"]).credential_id)


def password_sign_in(browser, user_name):
    """The person types a password and clicks submit on a form whose user name is `user_name`."""
    def sign_in():
        browser.click(*PASSWORD)          # the user clicks into the password field and types
        browser.type_text("hunter2")
        assert browser.run("return document.getElementById('password').value;") == "hunter2", "the typing did not arrive"
        browser.click(*SUBMIT)   # a trusted click: the form's submit event, then the redirect's page load
    browser.submit_form(f"document.getElementById('username').value = {json.dumps(user_name)};", sign_in,
                        "the password sign-in")


def run_checks(browser, key, made=None):
    """`made`: alice's passkey made beforehand (a run against a socket key, which the browser
    itself cannot reach: the steps that need the browser's own WebAuthn then only check that
    the page has the browser's functions)."""
    rp = server()
    browser_reaches_key = made is None
    made = made if made is not None else {}

    def extension_only(name, body):
        """A check of the extension's and the host's own rules, whatever carries the key: run
        against socket keys (socket_provider.py, both browsers); over uhid only named."""
        if browser_reaches_key:
            print(f"IN THE SOCKET LAYER  {name} (socket_provider.py)", flush=True)
        else:
            check(name, body)

    def provider_off():
        browser.open_page(ORIGIN, provider=False)
        assert browser.run(NATIVE), "with provider mode off, the page's WebAuthn functions are not the browser's"
        own = browser.run_async(CAPABILITIES)
        capabilities = own.get("capabilities")
        if isinstance(capabilities, dict):
            capabilities = {k: v for k, v in capabilities.items() if k in ("conditionalGet", "conditionalCreate")}
        print(f"{browser.name} on its own: isConditionalMediationAvailable() {own.get('conditionalMediation')}, "
              f"getClientCapabilities() {capabilities}", flush=True)
        if not browser_reaches_key:
            return
        creation, state = registration(rp, ALICE, "alice")
        browser.start("create", dict(creation)["publicKey"])
        outcome = resolved(browser.outcome("the browser's create()", 120), "the browser's create()")
        assert outcome["real"], "with provider mode off, create() gave something that is not the browser's credential"
        made["alice"] = rp.register_complete(state, outcome["json"]).credential_data
        # Measured, not asserted: what the browser does on its own with a conditional create()
        # and a security key (it has no password manager of its own here); aborted after 15 s.
        probe, _ = registration(rp, b"latchkey-provider-probe", "probe")
        before = set(key.credentials())
        browser.start("create", dict(probe)["publicKey"], "conditional", 15000)
        outcome = browser.outcome("the browser's own conditional create()", 60)
        made_now = set(key.credentials()) - before
        for credential_id in made_now:   # out of the way of the menu's account count
            key.cli("credentials", "delete", credential_id, "--yes", "--json")
        print(f"{browser.name} on its own, a conditional create(): {outcome.get('error') or outcome.get('state')}"
              f" ({'it made a passkey on the key, with no password sign-in' if made_now else 'nothing made on the key'})",
              flush=True)
    check("provider mode off: the browser's own create() and get() (native functions); alice's passkey made by the browser",
          provider_off)

    def conditional_get():
        browser.set_provider(True)
        browser.open_page(ORIGIN, provider=True)
        seen = browser.run_async(CAPABILITIES)
        assert seen.get("conditionalMediation") is True and isinstance(seen.get("capabilities"), dict) \
            and seen["capabilities"].get("conditionalGet") is True and seen["capabilities"].get("conditionalCreate") is True, \
            f"with provider mode on the page sees {seen}"
        # Nothing shows before the person acts.
        start_conditional_get(browser, rp, 3000)
        outcome = browser.outcome("a conditional get() nobody acts on")
        assert outcome.get("error", "").startswith("TimeoutError") and browser.ui() is None and not browser.prompt_open(), \
            f"a conditional get() nobody acted on: {outcome}, hint {browser.ui()}, prompt open {browser.prompt_open()}"
        used = choose_in_menu(browser, rp, [made["alice"]], 0, ["alice"], key)
        assert used == b64(made["alice"].credential_id), "signed in with another passkey"
    check("provider mode on: isConditionalMediationAvailable() and getClientCapabilities() say conditional get and create; "
          "a conditional get() shows nothing until the person clicks the field; the hint opens Latchkey's prompt, "
          "which lists alice; choosing her signs her in",
          conditional_get)

    def upgrade():
        password_sign_in(browser, "bob")
        creation, state = registration(rp, BOB, "bob")
        browser.start("create", dict(creation)["publicKey"], "conditional")
        outcome = resolved(browser.outcome("the conditional create()"), "the conditional create() after a password sign-in")
        assert browser.ui() is None and not browser.prompt_open(), "a prompt was shown"
        made["bob"] = rp.register_complete(state, outcome["json"]).credential_data
        assert b64(made["bob"].credential_id) in key.credentials(), "the store does not hold bob's passkey"
    check("a conditional create() for bob right after bob's password sign-in makes his passkey with no dialog "
          "(Fido2Server verifies it)", upgrade)

    def upgrade_other_user():
        password_sign_in(browser, "erin")
        refused_upgrade(browser, key, rp, b"latchkey-provider-mallory", "mallory")
    extension_only("after erin's password sign-in, a conditional create() for mallory is a NotAllowedError with no UI; "
          "the store is unchanged", upgrade_other_user)

    def second_account():
        used = choose_in_menu(browser, rp, [made["alice"], made["bob"]], 1, ["alice", "bob"], key)
        assert used == b64(made["bob"].credential_id), "signed in with another passkey than bob's"
    check("the prompt lists alice and bob; choosing bob signs him in with the passkey the upgrade made", second_account)

    def no_recent_sign_in():
        browser.open_page(ORIGIN2, provider=True)
        # A page's own script submitting the password form (no person's click) is no sign-in.
        fill = "document.getElementById('username').value = 'dave'; document.getElementById('password').value = 'x';"
        browser.submit_form(fill + " document.getElementById('login').requestSubmit();", lambda: None, "the scripted submission")
        # Nor is a password a script put in the field, submitted by the user's real click.
        browser.submit_form(fill, lambda: browser.click(*SUBMIT), "the click on submit")
        refused_upgrade(browser, key, rp, b"latchkey-provider-dave", "dave")
    extension_only(f"on {ORIGIN2}, with no password sign-in there (a script's requestSubmit(), or a password a script filled in "
          "and the user's click submitted, is none), a conditional create() "
          "is a NotAllowedError with no UI; the store is unchanged",
          no_recent_sign_in)

    def other_origin():
        before = key.credentials()
        browser.open_page(OTHER, provider=True)
        start_conditional_get(browser, rp)
        outcome = browser.outcome("a conditional get() naming localhost")
        assert outcome.get("error", "").startswith("SecurityError"), f"the page's conditional get() got {outcome}"
        creation, _ = registration(rp, b"latchkey-provider-mallory", "mallory")
        browser.start("create", dict(creation)["publicKey"])
        outcome = browser.outcome("a create() naming localhost")
        assert outcome.get("error", "").startswith("SecurityError"), f"the page's create() got {outcome}"
        assert key.credentials() == before, "the store changed"
    extension_only(f"a page on {OTHER} naming rpId localhost: SecurityError for a conditional get() and a create(); the store is unchanged",
          other_origin)

    def modal_get():
        browser.open_page(ORIGIN, provider=True)
        request, state = rp.authenticate_begin([], user_verification=UserVerificationRequirement.PREFERRED)
        browser.start("get", dict(request)["publicKey"])
        shown = browser.prompt()
        assert "browser" in shown["actions"] and shown["title"] == "Sign in to localhost", shown
        pick_account(browser, key, ["alice", "bob"], 0)
        outcome = resolved(browser.outcome("the modal get()"), "the modal get()")
        used = b64(rp.authenticate_complete(state, [made["alice"], made["bob"]], outcome["json"]).credential_id)
        assert used == b64(made["alice"].credential_id), "signed in with another passkey than alice's"
    extension_only("a modal get() opens Latchkey's prompt at once (alice, bob, and the browser's dialog); choosing alice signs her in",
          modal_get)

    def modal_create():
        browser.open_page(ORIGIN, provider=True)   # where modal_get left it, also when it ran elsewhere
        creation, state = registration(rp, CAROL, "carol")
        browser.start("create", dict(creation)["publicKey"])
        shown = browser.prompt()
        assert shown["title"] == "Save a passkey in Latchkey?" \
            and shown["detail"] == "Site: localhostAccount: carolShown as: Carol", shown
        browser.press_in_prompt("save")
        outcome = resolved(browser.outcome("the modal create()"), "the modal create()")
        made["carol"] = rp.register_complete(state, outcome["json"]).credential_data
        assert b64(made["carol"].credential_id) in key.credentials(), "the store does not hold carol's passkey"
    check("a modal create() opens Latchkey's prompt to save; \"Save in Latchkey\" makes carol's", modal_create)

    def signal_renames():
        outcome = browser.signal("signalCurrentUserDetails", {"rpId": "localhost", "userId": b64(BOB),
                                                              "name": "bob@renamed.example", "displayName": "Bob Renamed"})
        assert outcome == {"ok": True}, f"the page got {outcome}"
        bob_id = b64(made["bob"].credential_id)
        key.wait_until("bob's provider-made passkey renamed", lambda c: c[bob_id]["userName"] == "bob@renamed.example")
        listed = subprocess.run([key.binary, "credentials", "list", "--store", key.store, "--rp", "localhost", "--json"],
                                capture_output=True, text=True, timeout=60)
        entries = {e["credentialId"]: e for e in json.loads(listed.stdout)["credentials"]}
        assert all(e["autofill"] for e in entries.values()) and bob_id in entries, entries
    check("websites' signals reach provider-made passkeys: signalCurrentUserDetails renames bob's; "
          "`credentials list` marks them AUTOFILL", signal_renames)

    attacks.run(browser, key, rp, made, check, sys.modules[__name__], hidraw=browser_reaches_key)

    def off_again():
        browser.set_provider(False)
        browser.open_page(ORIGIN, provider=False)
        assert browser.run(NATIVE), "the page's functions are not the browser's after turning provider mode off"
        if not browser_reaches_key:
            return
        request, state = rp.authenticate_begin([made["alice"]], user_verification=UserVerificationRequirement.PREFERRED)
        browser.start("get", dict(request)["publicKey"])
        outcome = resolved(browser.outcome("the browser's get()", 120), "the browser's get()")
        assert outcome["real"], "get() gave something that is not the browser's credential"
        rp.authenticate_complete(state, [made["alice"]], outcome["json"])
    check("provider mode off again: the browser's own functions, and a get() the browser answers", off_again)


def main(work, browser_name, binary, store, extension):
    return signals.main(work, browser_name, binary, store, extension, run_checks, "provider",
                        pages=((web.PORT, Page), (web.PORT + 1, Page)), browser_class=Provider)


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__.split("Usage: ")[1].splitlines()[0])
    sys.exit(main(sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3]), os.path.abspath(sys.argv[4]),
                  os.path.abspath(sys.argv[5])))
