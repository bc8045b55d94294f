#!/usr/bin/env python3
"""A headless browser calls navigator.credentials.create() and .get() on an http://localhost
page; the key behind it is Latchkey on uhid, run with built-in user verification (`--uv auto`).
`chromium`: Debian's chromium + chromedriver, driven through selenium. `firefox`: Debian's
firefox-esr, driven over Marionette by marionette.py beside this file (Debian 12 packages no
geckodriver). First a plain credential (no resident key, UV discouraged), then passkeys as
passkey sites ask for them: residentKey required with userVerification preferred, then
required, each signed in with an empty allowCredentials — no PIN, no dialog. The results are
checked by python-fido2's Fido2Server as a relying party, the UV flag included.
Usage: e2e_browser.py WORK_DIR [chromium|firefox]   (chromium when left out)
Exit 77: the browser did not come up or load the page in time, twice (the key was never asked)."""

import http.server
import os
import signal
import sys
import threading
import time

from fido2.server import Fido2Server
from fido2.webauthn import AttestationConveyancePreference, ResidentKeyRequirement, UserVerificationRequirement

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import marionette  # noqa: E402 - beside this file, standard library only

PORT = 8765
ORIGIN = f"http://localhost:{PORT}"
PAGE = b"<!doctype html><html><head><title>Latchkey e2e</title></head><body>Latchkey e2e</body></html>"
OPERATION_TIMEOUT = 90   # s, each create() or get()
# The passkeys' user handle, the same in every browser's run: a passkey replaces the key's earlier
# one for the same RP and user handle, so however many browsers ran against the key (its store
# outlives a step), it holds one account for localhost. With one account and `--presence auto`
# the key reports it selected, and no browser shows an account chooser, which no WebDriver reaches.
PASSKEY_USER_ID = b"latchkey-e2e-pk1"

# window.__latchkeyE2E records how far the call got, for a report when it never settles.
WEBAUTHN_SCRIPT = """
const [json, done] = arguments;
const seen = window.__latchkeyE2E = {call: 'CALL', state: 'parsing the options', since: Date.now()};
try {
  const publicKey = PublicKeyCredential.PARSE(json.publicKey);
  seen.state = 'waiting for navigator.credentials.CALL()';
  navigator.credentials.CALL({publicKey}).then(
    c => { seen.state = 'resolved'; done({ok: c.toJSON()}); },
    e => { seen.state = 'rejected: ' + e.name; done({error: e.name + ': ' + e.message}); });
} catch (e) { seen.state = 'threw: ' + e; done({error: 'script: ' + e}); }
"""
CREATE = WEBAUTHN_SCRIPT.replace("CALL", "create").replace("PARSE", "parseCreationOptionsFromJSON")
GET = WEBAUTHN_SCRIPT.replace("CALL", "get").replace("PARSE", "parseRequestOptionsFromJSON")
PAGE_STATE = """
const seen = window.__latchkeyE2E;
return {call: seen ? seen.call + '()' : null, state: seen ? seen.state : 'no call made',
        seconds: seen ? Math.round((Date.now() - seen.since) / 100) / 10 : null,
        focused: document.hasFocus(), visibility: document.visibilityState, url: location.href};
"""
# Firefox shows WebAuthn prompts as PopupNotifications ids "webauthn-prompt-…": "presence" (touch
# the key: informational, the key's auto presence answers it), "select-sign-result" (an account
# chooser), "register-direct" (attestation consent); a PIN prompt is a modal one (alert_text).
FIREFOX_PROMPTS = """
const win = Services.wm.getMostRecentWindow('navigator:browser');
if (!win) return 'no browser window';
return win.PopupNotifications._currentNotifications.map(n => n.id + ' (' + n.message + ')');
"""
FIREFOX_PREFS_SHOWN = ("security.webauth.webauthn", "security.webauth.webauthn_enable_usbtoken",
                       "security.webauth.webauthn_enable_softtoken", "security.webauthn.ctap2")
FIREFOX_START = 120   # s to Marionette's session: 30-70 s seen under TCG
FIREFOX_LOAD = 90     # s for the page


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


class Chromium:
    def __init__(self, driver):
        self.driver = driver

    def call(self, script, options):
        return self.driver.execute_async_script(script, options)

    def what_it_saw(self):
        return f"the page: {self.driver.execute_script(PAGE_STATE)}"

    def quit(self):
        self.driver.quit()


class Firefox:
    def __init__(self, ff):
        self.ff = ff

    def call(self, script, options):
        return self.ff.execute_async(script, [options], timeout=OPERATION_TIMEOUT)

    def what_it_saw(self):
        seen = []
        for what, ask in (("the page", lambda: self.ff.execute(PAGE_STATE, timeout=20)),
                          ("Firefox's prompts", lambda: self.ff.execute_chrome(FIREFOX_PROMPTS, timeout=20)),
                          ("a modal prompt", self.ff.alert_text)):
            try:
                seen.append(f"{what}: {ask()}")
            except marionette.MarionetteError as error:
                seen.append(f"{what}: (not read: {str(error).splitlines()[0]})")
        return "; ".join(seen)

    def quit(self):
        began = time.time()
        self.ff.quit()
        print(f"firefox quit in {time.time() - began:.1f} s", flush=True)


def open_chromium(work, attempt):
    """Starts headless Chromium with a fresh profile and loads the test page: (Chromium, None),
    or (None, "slow") after quitting it when the page does not load. Under TCG on these machines
    Chromium takes about 60 s to start and has taken 100–120 s to load even this one-line page;
    once in a while its network service crashes and the load never finishes, hence a second attempt."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", f"--user-data-dir={work}/chromium-profile-{attempt}",
                     # Chromium logs its FIDO decisions ("FIDO:" lines) at -v=1; kept in chromedriver.log.
                     "--enable-logging=stderr", "--v=1"):
        options.add_argument(argument)
    service = Service("/usr/bin/chromedriver", log_output=os.path.join(work, f"chromedriver-{attempt}.log"),
                      service_args=["--enable-chrome-logs"])
    started = time.time()
    try:
        driver = webdriver.Chrome(options=options, service=service)
    except Exception as error:  # noqa: BLE001 - "chrome not reachable": the browser did not come up, retried
        # Seen on a loaded machine: chromedriver gave up on Chromium's DevTools port before the
        # emulated browser opened it. Nothing has reached the key yet.
        print(f"chromium did not start after {time.time() - started:.1f} s: {type(error).__name__}", flush=True)
        return None, "slow"
    print(f"chromium {driver.capabilities.get('browserVersion')} up after {time.time() - started:.1f} s "
          f"(attempt {attempt})", flush=True)
    driver.command_executor.client_config.timeout = 180
    driver.set_script_timeout(OPERATION_TIMEOUT)
    driver.set_page_load_timeout(150)
    try:
        driver.get(ORIGIN + "/")
    except Exception as error:  # noqa: BLE001 - a page that does not load is reported, then retried
        print(f"page did not load after {time.time() - started:.1f} s: {type(error).__name__}", flush=True)
        driver.command_executor.client_config.timeout = 20   # a wedged browser must not hold the quit
        try:
            driver.quit()
        except Exception:  # noqa: BLE001 - the browser may be wedged; its process goes with the service
            pass
        return None, "slow"
    print(f"page loaded after {time.time() - started:.1f} s", flush=True)
    return Chromium(driver), None


def open_firefox(work, attempt):
    """Starts headless Firefox ESR on a fresh profile (marionette.DEFAULT_PREFS: WebAuthn over
    USB/HID only, no first-run pages) and loads the test page: (Firefox, None), or (None, why)
    after quitting it — "slow" when it did not answer in time (the emulator: retried, then not
    run), "exited" when Firefox died, "failed" for another error (both count as failures)."""
    ff = marionette.Marionette()
    started = time.time()

    def give_up(stage, error):
        why = ("exited" if isinstance(error, marionette.FirefoxExited) else
               "slow" if isinstance(error, marionette.NoAnswer) or error.error == "timeout" else "failed")
        print(f"firefox: {stage} after {time.time() - started:.1f} s ({why}): {type(error).__name__}: {error}",
              flush=True)
        ff.quit(timeout=20)
        return None, why

    # authenticator-rs (Firefox's CTAP client) logs what it sends and gets to firefox-N.log.
    env = dict(os.environ, RUST_LOG="authenticator=debug,authrs_bridge=debug")
    try:
        caps = ff.start("/usr/bin/firefox-esr", os.path.join(work, f"firefox-profile-{attempt}"), port=0,
                        timeout=FIREFOX_START, log_path=os.path.join(work, f"firefox-{attempt}.log"), env=env,
                        pid_file=os.path.join(work, "firefox.pid"))
    except marionette.MarionetteError as error:
        return give_up("did not start", error)
    except BaseException:
        ff.quit(timeout=20)   # SIGTERM (the step's timeout) or ^C during start-up
        raise
    print(f"firefox {caps.get('browserVersion')} up after {time.time() - started:.1f} s (attempt {attempt})",
          flush=True)
    try:
        try:   # what the profile gave WebAuthn (chrome context), shown; not needed for the check
            prefs = ff.execute_chrome("return arguments[0].map(n => n + '=' + Services.prefs.getBoolPref(n, null));",
                                      [list(FIREFOX_PREFS_SHOWN)], timeout=30)
            print(f"firefox prefs: {' '.join(prefs)}", flush=True)
        except marionette.MarionetteError as error:
            if isinstance(error, (marionette.FirefoxExited, marionette.NoAnswer)):
                raise
            print(f"firefox prefs not read: {str(error).splitlines()[0]}", flush=True)
        ff.navigate(ORIGIN + "/", timeout=FIREFOX_LOAD)
    except marionette.MarionetteError as error:
        return give_up("page did not load", error)
    except BaseException:
        ff.quit(timeout=20)
        raise
    print(f"page loaded after {time.time() - started:.1f} s", flush=True)
    return Firefox(ff), None


def webauthn(browser, script, options, what):
    """One create() or get() in the page: the credential's JSON and the seconds taken. A call
    that never settles (the browser's timeout) or a browser gone: what the page (and Firefox's
    prompts) showed, in the AssertionError."""
    began = time.time()
    try:
        result = browser.call(script, options)
    except Exception as error:  # noqa: BLE001 - a timeout or a dead browser: said with what was seen
        try:
            seen = browser.what_it_saw()
        except Exception as inner:  # noqa: BLE001 - the browser may be gone
            seen = f"(the page could not be asked: {type(inner).__name__})"
        raise AssertionError(f"{what}: no result after {time.time() - began:.1f} s "
                             f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}); "
                             f"{seen}") from error
    assert isinstance(result, dict) and "ok" in result, f"{what} failed: {result}"
    return result["ok"], time.time() - began


def run_flows(browser):
    server = Fido2Server({"id": "localhost", "name": "Latchkey e2e"},
                         attestation=AttestationConveyancePreference.NONE,
                         verify_origin=lambda origin: origin == ORIGIN)
    user = {"id": os.urandom(16), "name": "browser-user", "displayName": "Browser User"}
    creation, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.DISCOURAGED,
                                            user_verification=UserVerificationRequirement.DISCOURAGED)
    created, took = webauthn(browser, CREATE, dict(creation), "create()")
    credential = server.register_complete(state, created).credential_data
    print(f"create() ok in {took:.1f} s: credential {credential.credential_id.hex()[:16]}…", flush=True)

    request, state = server.authenticate_begin([credential], user_verification=UserVerificationRequirement.DISCOURAGED)
    asserted, took = webauthn(browser, GET, dict(request), "get()")
    server.authenticate_complete(state, [credential], asserted)
    print(f"get() ok in {took:.1f} s, verified by Fido2Server", flush=True)

    # Passkeys: the browser takes a token by the key's built-in UV (clientPIN 0x06), no dialog.
    # One account (the second passkey replaces the first: same user handle, PASSKEY_USER_ID), so
    # the key reports it selected and the browser shows no account chooser.
    for uv in (UserVerificationRequirement.PREFERRED, UserVerificationRequirement.REQUIRED):
        user = {"id": PASSKEY_USER_ID, "name": "passkey-user", "displayName": f"Passkey User ({uv.value})"}
        creation, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                                user_verification=uv)
        created, took = webauthn(browser, CREATE, dict(creation), f"passkey create() (uv {uv.value})")
        auth_data = server.register_complete(state, created)
        assert auth_data.is_user_verified(), f"passkey (uv {uv.value}) made without the UV flag"
        passkey = auth_data.credential_data
        print(f"passkey create() (rk required, uv {uv.value}) ok in {took:.1f} s, UV flag set", flush=True)
        request, state = server.authenticate_begin(None, user_verification=uv)
        assert not request.public_key.allow_credentials
        asserted, took = webauthn(browser, GET, dict(request), f"passkey get() (uv {uv.value})")
        assert asserted["response"]["userHandle"], "a passkey sign-in names its user"
        result = server.authenticate_complete(state, [passkey], asserted)
        assert result.credential_id == passkey.credential_id
        print(f"passkey get() (empty allowCredentials, uv {uv.value}) ok in {took:.1f} s, "
              f"verified by Fido2Server", flush=True)


def main(work, browser_name="chromium"):
    openers = {"chromium": (open_chromium, "headless Chromium"), "firefox": (open_firefox, "headless Firefox ESR")}
    if browser_name not in openers:
        print(f"unknown browser {browser_name!r}: chromium or firefox", flush=True)
        return 2
    opener, label = openers[browser_name]
    # The step's `timeout` sends SIGTERM: exit through the finally below, which quits the browser.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    browser, outcomes = None, []
    try:
        for attempt in (1, 2):
            browser, why = opener(work, attempt)
            if browser is not None:
                break
            outcomes.append(why)
        if browser is None:
            if all(why == "slow" for why in outcomes):
                # The browser could not start, or load a static page from 127.0.0.1, twice: the
                # emulator, not the key (nothing WebAuthn has happened). Exit 77: the suite reports
                # the check as not run, never as passed.
                print(f"NOT RUN: {label} did not start or load the test page in two attempts "
                      f"(the key was never asked)", flush=True)
                return 77
            print(f"FAIL: {label} did not start or load the test page ({', '.join(outcomes)}); "
                  f"its output is in {work}", flush=True)
            return 1
        run_flows(browser)
    finally:
        if browser is not None:
            browser.quit()
        httpd.shutdown()
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("Usage: ")[1].splitlines()[0])
    sys.exit(main(*sys.argv[1:]))
