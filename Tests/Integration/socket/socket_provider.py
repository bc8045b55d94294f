#!/usr/bin/env python3
"""Latchkey as the browser's passkey provider, in the browsers of this machine against socket keys
(no uhid needed: the native host reaches a socket key through its store's `serving` record, and the
browser's own WebAuthn is not part of these flows). Headless Chromium and Firefox ESR each:

1. every flow and attack of Tests/Integration/vm/e2e_provider.py and e2e_provider_attacks.py
   against a key with built-in UV (`--uv auto`), alice's passkey made beforehand by python-fido2
   over the socket (the steps that need the browser's own WebAuthn only check the page's
   functions: the VM layer runs them over uhid);
2. a key with a PIN and no built-in UV (the desktop key's default): a sign-in that requires UV
   asks for the PIN in Latchkey's window (a wrong one says how many attempts are left), then
   signs in verified; saving a passkey asks for it too. The page never sees a PIN prompt.
Every response is verified by python-fido2's Fido2Server.
Usage: socket_provider.py LATCHKEY_BINARY. Prints PASS/FAIL per check and
`passkey provider (socket keys): N passed, N failed`; exit 0 when all passed."""

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
import e2e_signals as signals  # noqa: E402
import latchkey_socket  # noqa: E402
from fido2.client import DefaultClientDataCollector, Fido2Client, UserInteraction  # noqa: E402
from fido2.ctap2 import Ctap2  # noqa: E402
from fido2.ctap2.pin import ClientPin  # noqa: E402
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


def counted(code):
    """(passed, failed) of one browser run; a browser that did not come up is a failure here
    (no emulator to blame), as is a run that counted nothing."""
    passed = sum(signals.results)
    failed = len(signals.results) - passed + (1 if code != 0 and passed == len(signals.results) else 0)
    signals.results.clear()
    return passed, failed


def run_browser(binary, work, name):
    """Both parts in one browser each; returns [(passed, failed), …]."""
    signals.results.clear()
    os.environ["HOME"] = os.path.join(work, "home")
    os.makedirs(os.environ["HOME"], exist_ok=True)
    codes = []
    for part in ("flows", "pin"):
        os.makedirs(os.path.join(work, f"{name}-{part}"), exist_ok=True)
    # 1. The flows and attacks against a key with built-in UV.
    process, store, path = start_key(binary, work, f"uv-{name}", "--uv", "auto")
    try:
        made = {"alice": make_alice(path, flows.server())}
        codes.append(counted(signals.main(os.path.join(work, f"{name}-flows"), name, binary, store, EXTENSION,
                                          label="provider flows", pages=((web.PORT, flows.Page), (web.PORT + 1, flows.Page)),
                                          browser_class=flows.Provider,
                                          checks=lambda browser, key: flows.run_checks(browser, key, made))))
    finally:
        process.terminate()
        process.wait()
    # 2. A key with a PIN and no built-in UV.
    process, store, path = start_key(binary, work, f"pin-{name}")
    try:
        device = latchkey_socket.open_device(path)
        try:
            ClientPin(Ctap2(device)).set_pin(PIN)
        finally:
            device.close()
        made = {"alice": make_alice(path, flows.server(), PIN)}
        codes.append(counted(signals.main(os.path.join(work, f"{name}-pin"), name, binary, store, EXTENSION,
                                          label="provider PIN", pages=((web.PORT, flows.Page),), browser_class=flows.Provider,
                                          checks=lambda browser, key: pin_checks(browser, key, made))))
    finally:
        process.terminate()
        process.wait()
    return codes


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
