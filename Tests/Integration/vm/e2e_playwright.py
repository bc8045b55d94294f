#!/usr/bin/env python3
"""docs/ci.md's Playwright example, run: Playwright for Python (PyPI `playwright`, its own
driver, no browser download) launches Debian's headless Chromium, which registers a passkey
(residentKey required, userVerification required) on an http://localhost page and signs in with
it with an empty allowCredentials. The key behind it is Latchkey on uhid with built-in user
verification (`--uv auto`), as in e2e_browser.py, whose page server, relying party and passkey
user handle this script shares: python-fido2's Fido2Server checks both results, the UV flag
included.
Usage: e2e_playwright.py WORK_DIR
Exit 77: Chromium did not come up or load the page in time, twice (the key was never asked)."""

import http.server
import os
import signal
import sys
import threading
import time

from fido2.webauthn import ResidentKeyRequirement, UserVerificationRequirement

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_browser import ORIGIN, PASSKEY_USER_ID, PORT, Page, relying_party  # noqa: E402 - beside this file

START_TIMEOUT = 150    # s for Chromium to come up under TCG (about 60 s seen)
LOAD_TIMEOUT = 150     # s for the page (100-120 s seen once in a while)
OPERATION_TIMEOUT = 90  # s, each create() or get()

# One WebAuthn call in the page. Chromium stretches a short WebAuthn timeout and may wait on
# past it, so the page gives up by its own timer too: a call that never settles is an error
# result, not a hung step.
WEBAUTHN = """
async ([call, options, timeout]) => {
  const publicKey = call === 'create' ? PublicKeyCredential.parseCreationOptionsFromJSON(options.publicKey)
                                      : PublicKeyCredential.parseRequestOptionsFromJSON(options.publicKey);
  publicKey.timeout = timeout;
  const gaveUp = new Promise(resolve => setTimeout(
      () => resolve({error: 'no result after ' + timeout / 1000 + ' s'}), timeout));
  const settled = navigator.credentials[call]({publicKey}).then(
      credential => ({ok: credential.toJSON()}), e => ({error: e.name + ': ' + e.message}));
  return await Promise.race([settled, gaveUp]);
}
"""


def open_browser(playwright, work, attempt):
    """Headless Chromium through Playwright with the test page loaded: (browser, page), or
    (None, None) when it did not start or load in time (then closed)."""
    started = time.time()
    try:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, timeout=START_TIMEOUT * 1000,
            args=["--no-sandbox", "--disable-gpu", "--disable-gpu-process-crash-limit",
                  "--disable-dev-shm-usage", "--no-first-run"])
    except Exception as error:  # noqa: BLE001 - a browser that never came up is retried, then not run
        print(f"chromium did not start after {time.time() - started:.1f} s: {type(error).__name__}: "
              f"{str(error).splitlines()[0] if str(error) else ''}", flush=True)
        return None, None
    print(f"chromium {browser.version} up through Playwright after {time.time() - started:.1f} s (attempt {attempt})",
          flush=True)
    try:
        page = browser.new_context().new_page()
        page.goto(ORIGIN + "/", timeout=LOAD_TIMEOUT * 1000)
    except Exception as error:  # noqa: BLE001 - a page that does not load is reported, then retried
        print(f"page did not load after {time.time() - started:.1f} s: {type(error).__name__}", flush=True)
        browser.close()
        return None, None
    print(f"page loaded after {time.time() - started:.1f} s", flush=True)
    return browser, page


def webauthn(page, call, options, what):
    began = time.time()
    result = page.evaluate(WEBAUTHN, [call, dict(options), OPERATION_TIMEOUT * 1000])
    assert isinstance(result, dict) and "ok" in result, f"{what} failed after {time.time() - began:.1f} s: {result}"
    return result["ok"], time.time() - began


def run_flows(page):
    server = relying_party()
    user = {"id": PASSKEY_USER_ID, "name": "passkey-user", "displayName": "Passkey User (playwright)"}
    creation, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                            user_verification=UserVerificationRequirement.REQUIRED)
    created, took = webauthn(page, "create", creation, "passkey create()")
    auth_data = server.register_complete(state, created)
    assert auth_data.is_user_verified(), "passkey made without the UV flag"
    passkey = auth_data.credential_data
    print(f"passkey create() (rk required, uv required) ok in {took:.1f} s, UV flag set", flush=True)
    request, state = server.authenticate_begin(None, user_verification=UserVerificationRequirement.REQUIRED)
    asserted, took = webauthn(page, "get", request, "passkey get()")
    assert asserted["response"]["userHandle"], "a passkey sign-in names its user"
    result = server.authenticate_complete(state, [passkey], asserted)
    assert result.credential_id == passkey.credential_id
    print(f"passkey get() (empty allowCredentials, uv required) ok in {took:.1f} s, verified by Fido2Server", flush=True)


def main(work):
    from playwright.sync_api import sync_playwright

    # The step's `timeout` sends SIGTERM: exit through the finally blocks, which close Chromium.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as playwright:
            browser = page = None
            for attempt in (1, 2):
                browser, page = open_browser(playwright, work, attempt)
                if browser is not None:
                    break
            if browser is None:
                print("NOT RUN: headless Chromium (Playwright) did not start or load the test page in two attempts "
                      "(the key was never asked)", flush=True)
                return 77
            try:
                run_flows(page)
            finally:
                browser.close()
    finally:
        httpd.shutdown()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("Usage: ")[1].splitlines()[0])
    sys.exit(main(sys.argv[1]))
