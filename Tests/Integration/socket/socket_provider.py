#!/usr/bin/env python3
"""Latchkey as the browser's passkey provider, in the browsers of this machine against socket keys
(no uhid needed: the native host reaches a socket key through its store's `serving` record, and the
browser's own WebAuthn is not part of these flows). Headless Chromium and Firefox ESR each:

1. every flow and attack of Tests/Integration/vm/e2e_provider.py and e2e_provider_attacks.py
   against a key with built-in UV (`--uv auto`), alice's passkey made beforehand by python-fido2
   over the socket (the steps that need the browser's own WebAuthn only check the page's
   functions: the VM layer runs them over uhid);
2. prf through the provider: create() says prf enabled, get() gives results equal to what
   python-fido2 2.2.1's own client computes for the same credential and input; largeBlob: a
   blob written through the provider is the one python-fido2 reads from the key's array, and
   the other way round;
3. frames: a cross-origin frame its page grants publickey-credentials-get signs in with
   crossOrigin and topOrigin in clientDataJSON (Chromium; Firefox ESR, which tells an extension
   no permissions policy, answers frames itself — measured), one without the grant gets the
   browser's own answer;
4. a key with a PIN and no built-in UV (the desktop key's default): a sign-in that requires UV
   asks for the PIN in Latchkey's window (a wrong one says how many attempts are left), then
   signs in verified; saving a passkey asks for it too. The page never sees a PIN prompt;
5. websites' signals through the extension and native host, with provider mode off
   (socket_browser_signals.py: hiding, un-hiding, renaming, the refusals, the rate limit).
Every response is verified by python-fido2's Fido2Server.
Usage: socket_provider.py LATCHKEY_BINARY. Prints PASS/FAIL per check and
`passkey provider (socket keys): N passed, N failed`; exit 0 when all passed."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VM = os.path.normpath(os.path.join(HERE, os.pardir, "vm"))
sys.path.insert(0, VM)
import e2e_browser as web  # noqa: E402 - also puts support/ and scripts/ on the path
web.PORT = 9765     # not the VM suite's port: a VM run and this layer never share a page server
web.ORIGIN = f"http://localhost:{web.PORT}"
import e2e_provider as flows  # noqa: E402
import e2e_extension as signals  # noqa: E402 - the browser with the extension: main, Key, check
import socket_browser_signals  # noqa: E402
import latchkey_socket  # noqa: E402
from fido2.client import DefaultClientDataCollector, Fido2Client, UserInteraction  # noqa: E402
from fido2.ctap2 import Ctap2  # noqa: E402
from fido2.ctap2.blob import LargeBlobs  # noqa: E402
from fido2.ctap2.pin import ClientPin  # noqa: E402
from fido2.utils import websafe_decode  # noqa: E402
from fido2.webauthn import UserVerificationRequirement  # noqa: E402

PIN = "2468"
EXTENSION = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir, os.pardir, "extension"))


class Interaction(UserInteraction):
    def __init__(self, pin=None):
        self.pin = pin

    def prompt_up(self):
        pass

    def request_pin(self, permissions, rp_id):
        return self.pin

    def request_uv(self, permissions, rp_id):
        return True


def start_key(binary, work, name, *options):
    """A socket key on its own store; returns (process, store, socket path)."""
    store, path = os.path.join(work, f"store-{name}"), os.path.join(work, f"{name}.sock")
    process = subprocess.Popen([binary, "serve", "--transport", f"socket:{path}", "--store", store, "--name", name,
                                "--presence", "auto", *options],
                               stdout=open(os.path.join(work, f"key-{name}.log"), "w"), stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while not os.path.exists(path):
        assert process.poll() is None and time.time() < deadline, f"key {name} did not start"
        time.sleep(0.1)
    return process, store, path


def make_alice(path, rp, pin=None):
    device = latchkey_socket.open_device(path)
    try:
        creation, state = flows.registration(rp, flows.ALICE, "alice")
        client = Fido2Client(device, DefaultClientDataCollector(flows.ORIGIN), user_interaction=Interaction(pin))
        return rp.register_complete(state, client.make_credential(creation["publicKey"])).credential_data
    finally:
        device.close()


def make_protected(path, rp, pin):
    """carol's passkey with credProtect 3 (userVerificationRequired), made by python-fido2."""
    device = latchkey_socket.open_device(path)
    try:
        creation, state = flows.registration(rp, flows.CAROL, "carol")
        options = dict(dict(creation)["publicKey"])
        options["extensions"] = {"credentialProtectionPolicy": "userVerificationRequired", "enforceCredentialProtectionPolicy": True}
        client = Fido2Client(device, DefaultClientDataCollector(flows.ORIGIN), user_interaction=Interaction(pin))
        return rp.register_complete(state, client.make_credential(options)).credential_data
    finally:
        device.close()


def pin_checks(browser, key, made):
    """The key has a PIN and no built-in UV: the PIN is asked in Latchkey's window."""
    rp = flows.server()
    check = signals.check

    def sign_in_with_pin():
        browser.set_provider(True)
        browser.open_page(flows.ORIGIN, provider=True)
        request, state = rp.authenticate_begin([], user_verification=UserVerificationRequirement.REQUIRED)
        browser.start("get", dict(request)["publicKey"])
        shown = browser.prompt()
        assert [a["name"] for a in shown["accounts"]] == ["alice"], shown
        asked = browser.press_in_prompt("account", 0, until_pin=True)
        assert "Enter the PIN" in asked and "8 attempts left" in asked, f"the prompt says: {asked}"
        assert browser.run(flows.POLL).get("state") == "waiting", "the page was answered before the PIN"
        browser.prompt_type("1357")
        asked = browser.press_in_prompt("pin", until_pin=True)
        assert "Wrong PIN" in asked and "7 attempts left" in asked, f"after a wrong PIN the prompt says: {asked}"
        browser.prompt_type(PIN)
        browser.press_in_prompt("pin")
        outcome = flows.resolved(browser.outcome("the get() with the key's PIN"), "the get() with the key's PIN")
        rp.authenticate_complete(state, [made["alice"]], outcome["json"])   # REQUIRED: the UV flag is checked
    check("a key with a PIN and no built-in UV: a sign-in that requires UV asks for the PIN in Latchkey's window "
          "(8 attempts left; a wrong one: 7 left), then signs alice in verified (Fido2Server, UV required)", sign_in_with_pin)

    def save_with_pin():
        creation, state = flows.registration(rp, flows.BOB, "bob")
        browser.start("create", dict(creation)["publicKey"])
        browser.prompt()
        asked = browser.press_in_prompt("save", until_pin=True)
        assert "Enter the PIN" in asked and "8 attempts left" in asked, f"the prompt says: {asked}"
        browser.prompt_type(PIN)
        browser.press_in_prompt("pin")
        outcome = flows.resolved(browser.outcome("the create() with the key's PIN"), "the create() with the key's PIN")
        data = rp.register_complete(state, outcome["json"])   # python-fido2 2.x: the AuthenticatorData
        assert data.is_user_verified(), "the passkey was made without UV"
        assert signals.b64(data.credential_data.credential_id) in key.credentials()
    check("saving a passkey on that key asks for its PIN in Latchkey's window too; the passkey is made verified",
          save_with_pin)

    def protected_after_verifying():
        # carol's passkey, credProtect 3 (made by python-fido2 with the PIN): never listed before
        # the key verified the person in this ceremony; "Show all passkeys" asks for the PIN, then
        # lists her, and her sign-in is verified.
        request, state = rp.authenticate_begin([], user_verification=UserVerificationRequirement.DISCOURAGED)
        browser.start("get", dict(request)["publicKey"])
        shown = browser.prompt()
        assert "carol" not in [a["name"] for a in shown["accounts"]], shown
        asked = browser.press_in_prompt("verify", until_pin=True)
        assert "Enter the PIN" in asked, asked
        browser.prompt_type(PIN)
        browser.press_in_prompt("pin", until_ready=True)
        shown = browser.prompt()
        names = [a["name"] for a in shown["accounts"]]
        assert "carol" in names and "verify" not in shown["actions"], shown
        browser.press_in_prompt("account", names.index("carol"))
        outcome = flows.resolved(browser.outcome("carol's sign-in"), "carol's sign-in")
        data = rp.authenticate_complete(state, [made["carol"]], outcome["json"])
        assert outcome["json"]["id"] == signals.b64(made["carol"].credential_id)
    check("a credProtect-3 passkey is listed only after \"Show all passkeys\" had the key verify the person (its PIN, "
          "in the window); signing in with it then works", protected_after_verifying)


PRF_SCRIPT = """
const [kind, json, done] = arguments;
const publicKey = kind === 'get' ? PublicKeyCredential.parseRequestOptionsFromJSON(json)
                                 : PublicKeyCredential.parseCreationOptionsFromJSON(json);
navigator.credentials[kind]({publicKey}).then(c => {
  const results = c.getClientExtensionResults();
  const first = results.prf && results.prf.results && results.prf.results.first;
  // (Marionette runs this in a sandbox of its own, where instanceof sees another realm's ArrayBuffer.)
  const largeBlob = results.largeBlob;
  const blob = largeBlob && largeBlob.blob;
  done({json: c.toJSON(), enabled: results.prf && results.prf.enabled,
        firstIsBuffer: Object.prototype.toString.call(first) === '[object ArrayBuffer]', first: first ? Array.from(new Uint8Array(first)) : null,
        largeBlob: largeBlob ? {supported: largeBlob.supported, written: largeBlob.written, members: Object.keys(largeBlob).sort(),
                                blobIsBuffer: Object.prototype.toString.call(blob) === '[object ArrayBuffer]',
                                blob: blob ? Array.from(new Uint8Array(blob)) : null} : null});
}, e => done({error: e.name + ': ' + e.message}));
"""


def prf_checks(browser, key, path):
    """prf and largeBlob through the provider, compared with python-fido2's own client's."""
    rp = flows.server()
    check = signals.check
    salt = b"latchkey prf e2e salt"
    made = {}

    def run(kind, options, action, index=0):
        browser.run("window.__prf = null; return 1;")
        script = "const done = (v) => { window.__prf = v; };\n" + PRF_SCRIPT.replace("const [kind, json, done] = arguments;", "const [kind, json] = arguments;")
        if browser.name == "chromium":
            browser.opened.driver.execute_script(script, kind, options)
        else:
            browser.opened.ff.execute(script, [kind, options], timeout=30)
        browser.press_in_prompt(action, index)
        flows.wait_for(lambda: browser.run("return window.__prf;") is not None, f"the {kind}() with prf")
        outcome = browser.run("return window.__prf;")
        assert "error" not in outcome, outcome
        return outcome

    def create_with_prf():
        browser.set_provider(True)
        browser.open_page(flows.ORIGIN, provider=True)
        creation, state = flows.registration(rp, b"latchkey-provider-prf", "prf")
        options = dict(dict(creation)["publicKey"])
        options["extensions"] = {"prf": {}}
        outcome = run("create", options, "save")
        assert outcome["enabled"] is True, outcome
        made["prf"] = rp.register_complete(state, outcome["json"]).credential_data
    check("a create() asking for prf makes a passkey with hmac-secret through the provider: prf.enabled", create_with_prf)

    def get_with_prf():
        credential_id = made["prf"].credential_id
        request, state = rp.authenticate_begin([made["prf"]], user_verification=UserVerificationRequirement.PREFERRED)
        options = dict(dict(request)["publicKey"])
        options["extensions"] = {"prf": {"eval": {"first": signals.b64(salt)}}}
        outcome = run("get", options, "account")
        rp.authenticate_complete(state, [made["prf"]], outcome["json"])
        assert outcome["firstIsBuffer"] and len(outcome["first"]) == 32, outcome
        # python-fido2's own WebAuthn client, on the same key and credential, the same input.
        device = latchkey_socket.open_device(path)
        try:
            client = Fido2Client(device, DefaultClientDataCollector(flows.ORIGIN), user_interaction=Interaction())
            theirs = client.get_assertion({"challenge": os.urandom(32), "rpId": "localhost",
                                           "allowCredentials": [{"type": "public-key", "id": credential_id}],
                                           "extensions": {"prf": {"eval": {"first": salt}}}}).get_response(0)
        finally:
            device.close()
        theirs_first = theirs.client_extension_results["prf"]["results"]["first"]
        if isinstance(theirs_first, str):   # python-fido2 2.x gives the JSON form (base64url)
            theirs_first = websafe_decode(theirs_first)
        expected = list(theirs_first)
        assert outcome["first"] == expected, f"Latchkey's PRF output {bytes(outcome['first']).hex()} != python-fido2's {bytes(expected).hex()}"
    check("a get() with prf eval through the provider: getClientExtensionResults() gives an ArrayBuffer equal to what "
          "python-fido2 2.2.1's own client computes for the same credential and input", get_with_prf)

    def large_blob_key(credential_id):
        """The passkey's largeBlobKey, as python-fido2 reads it (getAssertion's member 0x07)."""
        device = latchkey_socket.open_device(path)
        try:
            ctap = Ctap2(device)
            response = ctap.get_assertion("localhost", os.urandom(32), [{"type": "public-key", "id": credential_id}],
                                          extensions={"largeBlobKey": True})
            return ctap, device, response.large_blob_key
        except Exception:
            device.close()
            raise

    def create_with_large_blob():
        creation, state = flows.registration(rp, b"latchkey-provider-blob", "blob")
        options = dict(dict(creation)["publicKey"])
        options["authenticatorSelection"] = {"residentKey": "required", "userVerification": "preferred"}
        options["extensions"] = {"largeBlob": {"support": "required"}}
        outcome = run("create", options, "save")
        assert outcome["largeBlob"] and outcome["largeBlob"]["supported"] is True, outcome
        made["blob"] = rp.register_complete(state, outcome["json"]).credential_data
    check("a create() with largeBlob support \"required\" through the provider: largeBlob.supported", create_with_large_blob)

    def get_with_large_blob(extension):
        request, state = rp.authenticate_begin([made["blob"]], user_verification=UserVerificationRequirement.PREFERRED)
        options = dict(dict(request)["publicKey"])
        options["extensions"] = {"largeBlob": extension}
        outcome = run("get", options, "account")
        rp.authenticate_complete(state, [made["blob"]], outcome["json"])
        return outcome["largeBlob"]

    written_by_page = b"a site's blob, written through Latchkey's provider " * 4

    def write_then_python_reads():
        result = get_with_large_blob({"write": signals.b64(written_by_page)})
        assert result and result["written"] is True, result
        ctap, device, blob_key = large_blob_key(made["blob"].credential_id)
        try:
            assert blob_key is not None, "the passkey has no largeBlobKey"
            theirs = LargeBlobs(ctap).get_blob(blob_key)
        finally:
            device.close()
        assert theirs == written_by_page, f"python-fido2 read {theirs!r} from the key's array"
    check("a get() with largeBlob write through the provider: written, and python-fido2 2.2.1 reads the same blob from "
          "the key's large-blob array with the passkey's largeBlobKey", write_then_python_reads)

    def python_writes_then_read():
        theirs = os.urandom(48) + b"written by python-fido2"
        ctap, device, blob_key = large_blob_key(made["blob"].credential_id)
        try:
            pin = ClientPin(ctap)
            token = pin.get_uv_token(ClientPin.PERMISSION.LARGE_BLOB_WRITE)
            LargeBlobs(ctap, pin.protocol, token).put_blob(blob_key, theirs)
        finally:
            device.close()
        result = get_with_large_blob({"read": True})
        assert result and result["blobIsBuffer"] and bytes(result["blob"]) == theirs, result
        assert result["members"] == ["blob"], result
    check("a blob python-fido2 2.2.1 wrote comes back from a get() with largeBlob read through the provider, as an "
          "ArrayBuffer, byte for byte", python_writes_then_read)


FRAME_TOP = """<!doctype html><html><head><title>Latchkey provider frames</title></head><body style="margin:0">
<iframe id="frame" src="{src}" {allow} style="position:absolute;left:0;top:200px;width:400px;height:300px;border:0"></iframe>
</body></html>"""
FRAME_CLICK = (350, 400)     # inside the frame, away from its form: the person's click there


class FramePage(flows.Page):
    """ORIGIN's pages: /granted and /denied embed ORIGIN2's sign-in page with and without
    `allow="publickey-credentials-get; publickey-credentials-create"`; the rest is the sign-in page."""

    def do_GET(self):
        if self.path in ("/granted", "/denied"):
            allow = 'allow="publickey-credentials-get *; publickey-credentials-create *"' if self.path == "/granted" else ""
            body = FRAME_TOP.format(src=flows.ORIGIN2 + "/", allow=allow).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()


class InFrame:
    """Runs the browser's page scripts inside the page's frame (`#frame`) while in a `with`."""

    def __init__(self, browser):
        self.browser = browser

    def __enter__(self):
        if self.browser.name == "chromium":
            driver = self.browser.opened.driver
            driver.switch_to.frame(driver.find_element("id", "frame"))
        else:
            ff = self.browser.opened.ff
            element = ff.command("WebDriver:FindElement", {"using": "css selector", "value": "#frame"})["value"]
            ff.command("WebDriver:SwitchToFrame", {"element": element.get("element-6066-11e4-a52f-4a4a4a4a4a4a", element)})
        return self.browser

    def __exit__(self, *exc):
        if self.browser.name == "chromium":
            self.browser.opened.driver.switch_to.default_content()
        else:
            self.browser.opened.ff.command("WebDriver:SwitchToParentFrame", {})
        return False


def frame_checks(browser, key, made):
    """Frames of another origin (WebAuthn L3 §5.1.3): served with crossOrigin and topOrigin where
    the embedder grants publickey-credentials-get, left to the browser where it does not — and in
    Firefox ESR, which does not tell an extension a frame's permissions policy, always left to it."""
    rp = flows.server()
    check = signals.check

    def open_framed(path):
        browser.navigate(flows.ORIGIN + path)
        deadline = time.time() + 120
        while True:
            with InFrame(browser):
                if browser.run("return document.readyState === 'complete';") and browser.run(flows.PROVIDER_PRESENT):
                    break
            if time.time() > deadline:
                raise AssertionError(f"the provider's script is not in {path}'s frame after 120 s")
            time.sleep(1)
            browser.navigate(flows.ORIGIN + path)
        browser.click(*FRAME_CLICK)   # the person clicks into the frame: it has the focus

    def policy_readable():
        with InFrame(browser):
            return browser.run("return !!(document.featurePolicy && document.featurePolicy.allowsFeature);")

    def modal_get(abort_after=None):
        request, state = rp.authenticate_begin([made["alice"]], user_verification=UserVerificationRequirement.PREFERRED)
        with InFrame(browser):
            browser.start("get", dict(dict(request)["publicKey"]), abort_after=abort_after)
        return state

    def frame_outcome(what):
        deadline = time.time() + flows.WAIT
        while True:
            with InFrame(browser):
                state = browser.run(flows.POLL)
            if state and state.get("state") != "waiting":
                return state
            assert time.time() < deadline, f"{what}: not settled (the frame: {state})"
            time.sleep(0.5)

    def granted_frame():
        browser.set_provider(True)
        open_framed("/granted")
        if browser.name == "firefox":
            # Measured: Firefox ESR exposes no permissions policy (document.featurePolicy is behind
            # dom.security.featurePolicy.webidl.enabled), so the frame goes to Firefox itself.
            assert not policy_readable(), "Firefox ESR now tells a frame's permissions policy: serve frames there too"
            modal_get(abort_after=3000)
            outcome = frame_outcome("the framed get()")
            assert not browser.prompt_open(), "Latchkey's prompt opened for a frame in Firefox"
            print(f"    Firefox ESR answered the granted frame's get() itself: {outcome}", flush=True)
            return
        assert policy_readable(), "Chromium no longer has document.featurePolicy"
        state = modal_get()
        site = browser.in_prompt("return document.getElementById('site').textContent;")
        assert site == f"{flows.ORIGIN2} (in a frame of {flows.ORIGIN})", f"the prompt names {site!r}"
        browser.press_in_prompt("account", 0)
        outcome = flows.resolved(frame_outcome("the framed sign-in"), "the framed sign-in")
        rp.authenticate_complete(state, [made["alice"]], outcome["json"])
        client_data = json.loads(websafe_decode(outcome["json"]["response"]["clientDataJSON"]))
        assert client_data["origin"] == flows.ORIGIN2 and client_data["crossOrigin"] is True \
            and client_data["topOrigin"] == flows.ORIGIN, client_data
    check("a cross-origin frame its page grants publickey-credentials-get: Chromium: Latchkey's window names the frame "
          "and its page, and the sign-in's clientDataJSON says crossOrigin and topOrigin (Fido2Server verifies it); "
          "Firefox ESR: measured to tell an extension no permissions policy, so Firefox answers the frame itself",
          granted_frame)

    def denied_frame():
        open_framed("/denied")
        modal_get(abort_after=5000)
        outcome = frame_outcome("the ungranted frame's get()")
        assert outcome.get("state") == "rejected", outcome
        assert not browser.prompt_open(), "Latchkey's prompt opened for a frame without the grant"
        if browser.name == "chromium":
            assert outcome["error"].startswith("NotAllowedError"), outcome   # Chromium's own refusal
    check("a cross-origin frame without the grant gets what the browser gives it (Chromium: NotAllowedError), "
          "never Latchkey's window", denied_frame)


def counted(code):
    """(passed, failed) of one browser run; a browser that did not come up is a failure here
    (no emulator to blame), as is a run that counted nothing."""
    passed = sum(signals.results)
    failed = len(signals.results) - passed + (1 if code != 0 and passed == len(signals.results) else 0)
    signals.results.clear()
    return passed, failed


def browser_run(binary, work, name, part, key_options, prepare, checks, pages=((web.PORT, flows.Page),)):
    """One part: a socket key of its own (`key_options`), `prepare(path)` on it (the passkeys made
    beforehand), then one browser run of `checks(browser, key, path, made)`; (passed, failed)."""
    os.makedirs(os.path.join(work, f"{name}-{part}"), exist_ok=True)
    process, store, path = start_key(binary, work, f"{part}-{name}", *key_options)
    try:
        made = prepare(path)
        return counted(signals.main(os.path.join(work, f"{name}-{part}"), name, binary, store, EXTENSION,
                                    lambda browser, key: checks(browser, key, path, made), f"provider {part}",
                                    pages=pages, browser_class=flows.Provider))
    finally:
        process.terminate()
        process.wait()


def with_pin(path):
    """The key's PIN set, then alice's passkey and carol's (credProtect 3), made with it."""
    device = latchkey_socket.open_device(path)
    try:
        ClientPin(Ctap2(device)).set_pin(PIN)
    finally:
        device.close()
    return {"alice": make_alice(path, flows.server(), PIN), "carol": make_protected(path, flows.server(), PIN)}


def run_browser(binary, work, name):
    """The five parts in one browser each; returns [(passed, failed), …]."""
    signals.results.clear()
    os.environ["HOME"] = os.path.join(work, "home")
    os.makedirs(os.environ["HOME"], exist_ok=True)
    return [
        # 1. The flows and attacks against a key with built-in UV.
        browser_run(binary, work, name, "flows", ("--uv", "auto"), lambda path: {"alice": make_alice(path, flows.server())},
                    lambda browser, key, path, made: flows.run_checks(browser, key, made),
                    pages=((web.PORT, flows.Page), (web.PORT + 1, flows.Page))),
        # 2. prf against python-fido2's own client.
        browser_run(binary, work, name, "prf", ("--uv", "auto"), lambda path: None,
                    lambda browser, key, path, made: prf_checks(browser, key, path)),
        # 3. Frames of another origin, with and without the page's grant.
        browser_run(binary, work, name, "frames", ("--uv", "auto"), lambda path: {"alice": make_alice(path, flows.server())},
                    lambda browser, key, path, made: frame_checks(browser, key, made),
                    pages=((web.PORT, FramePage), (web.PORT + 1, flows.Page))),
        # 4. A key with a PIN and no built-in UV.
        browser_run(binary, work, name, "PIN", (), with_pin,
                    lambda browser, key, path, made: pin_checks(browser, key, made)),
        # 5. Websites' signals through the extension and host (provider mode off, its default).
        browser_run(binary, work, name, "signals", socket_browser_signals.KEY_OPTIONS, lambda path: None,
                    lambda browser, key, path, made: socket_browser_signals.run_checks(browser, key, path, Interaction()),
                    pages=((web.PORT, web.Page),)),
    ]


def main(binary):
    work = tempfile.mkdtemp(prefix="latchkey-provider-")
    passed = failed = 0
    try:
        for name in ("chromium", "firefox"):
            for ok, bad in run_browser(binary, work, name):
                passed, failed = passed + ok, failed + bad
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"passkey provider (socket keys): {passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("Usage: ")[1].splitlines()[0])
    sys.exit(main(os.path.abspath(sys.argv[1])))
