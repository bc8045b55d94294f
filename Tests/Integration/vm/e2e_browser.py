#!/usr/bin/env python3
"""A headless browser calls navigator.credentials.create() and .get() on an http://localhost
page; the key behind it is Latchkey on uhid, run with built-in user verification (`--uv auto`).
`chromium`: Debian's chromium + chromedriver, driven through selenium. `firefox`: Debian's
firefox-esr, driven over Marionette by marionette.py beside this file (Debian 12 packages no
geckodriver). First a plain credential (no resident key, UV discouraged), then passkeys as
passkey sites ask for them: residentKey required with userVerification preferred, then
required, each signed in with an empty allowCredentials — no PIN, no dialog. The results are
checked by python-fido2's Fido2Server as a relying party, the UV flag included.
With `--rig LATCHKEY_BINARY` (Chromium only), credentials that a test fixture plants through the
rig's control API then sign in on the page: key web steps aside (SIGTERM to the pid in
WORK/key-web.pid: the browser asks every FIDO device it sees), `latchkey rig` adds one uhid key
with built-in UV, and addCredential plants a non-resident P-256 credential for localhost that get()
names in allowCredentials, then a passkey that get() finds with an empty allowCredentials, planted
with a large blob that the get() reads (WebAuthn largeBlob); a second get() writes another, which
the rig's getCredential must report. Fido2Server checks each sign-in against the public key the
test made; the rig's events and getCredential must show the counter the page saw.
With `--rig`, Chromium is also started through `latchkey rig webdriver` (a WebDriver intermediary
that starts chromedriver): every command above passes through it, and e2e_webdriver.py's suite
(WebDriver's virtual authenticators as rig keys) runs last in the same browser, its lines
("ok:", "FAIL:", "webdriver checks: …") read by e2e_guest.sh's WebDriver step.
With `--proxy REAL_NODE PROXY_PID_FILE` (Chromium, run in a mount namespace where /dev/null is
bound over REAL_NODE, key web's node, behind `latchkey proxy`), the same browser first runs the
flows through the proxy, the only FIDO device it can open; then the proxy stops, the bind goes
and key web starts again (a new node the browser sees at once) for the flows above: one browser
start for both (e2e_guest.sh's proxy step compares the two runs' steps and the proxy's trace).
Usage: e2e_browser.py WORK_DIR [chromium|firefox] (chromium when left out) |
       e2e_browser.py WORK_DIR chromium [--proxy REAL_NODE PROXY_PID_FILE] [--rig LATCHKEY_BINARY]
Exit 77: the browser did not come up or load the page in time, twice (the key was never asked)."""

import functools
import glob
import http.server
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from fido2.cose import ES256
from fido2.server import Fido2Server
from fido2.webauthn import (Aaguid, AttestationConveyancePreference, AttestedCredentialData, AuthenticationResponse,
                            PublicKeyCredentialDescriptor, PublicKeyCredentialParameters, PublicKeyCredentialType,
                            ResidentKeyRequirement,
                            UserVerificationRequirement)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.normpath(os.path.join(HERE, os.pardir, "support")))
sys.path.insert(2, os.path.normpath(os.path.join(HERE, os.pardir, os.pardir, os.pardir, "scripts", "python")))
def step_stamp():
    """'[step +12.3 s]': the time since the VM step began (E2E_STEP_STARTED_NS, set by e2e_guest.sh's
    step()), so a browser step's output shows where its minutes went; '' outside a step."""
    started = os.environ.get("E2E_STEP_STARTED_NS", "")
    return f" [step +{time.time() - int(started) / 1e9:.1f} s]" if started.isdigit() else ""


import marionette  # noqa: E402 - beside this file, standard library only
import latchkey_rig  # noqa: E402 - scripts/, found through the path just added; standard library only
from rig_support import pkcs8, start_debug_rig, stop_rig  # noqa: E402 - beside this file

PORT = 8765
ORIGIN = f"http://localhost:{PORT}"
PAGE = b"<!doctype html><html><head><title>Latchkey e2e</title></head><body>Latchkey e2e</body></html>"
OPERATION_TIMEOUT = 90   # s, each create() or get()
# The passkeys' user handle, the same in every browser's run: a passkey replaces the key's earlier
# one for the same RP and user handle, so however many browsers ran against the key (its store
# outlives a step), it holds one account for localhost. With one account and `--presence auto`
# the key reports it selected, and no browser shows an account chooser, which no WebDriver reaches.
PASSKEY_USER_ID = b"latchkey-e2e-pk1"
SECOND_USER_ID = b"latchkey-e2e-pk2"   # a second account at localhost: the key chooses between them

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
# --rig: the rig's key, its bounds, and what the test fixture plants on it.
RIG_KEY = "browser"   # authenticatorId: HID uniq latchkey:rig-browser
RIG_START = 20        # s for `latchkey rig` to answer on its control socket
RIG_STEP = 15         # s, one control request or one event
RIG_WAIT = 10         # s for a key to exit, a node to come or go, the rig to stop
PLANTED_USER_ID = b"latchkey-e2e-planted"   # the planted passkey's user handle
PLANTED_SIGN_COUNT = 41                     # where the planted credentials' counters start
PLANTED_BLOB = b"-----BEGIN SSH CERTIFICATE----- " + bytes(range(256)) * 3   # the planted passkey's large blob


class Page(http.server.BaseHTTPRequestHandler):
    page = PAGE   # what every GET gets (e2e_provider.py serves a sign-in form)

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

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
        began = time.time()
        self.driver.quit()
        print(f"chromium quit in {time.time() - began:.1f} s{step_stamp()}", flush=True)


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
        print(f"firefox quit in {time.time() - began:.1f} s{step_stamp()}", flush=True)


def open_chromium(work, attempt, extra_arguments=(), webdriver_url=None):
    """Starts headless Chromium with a fresh profile ({work}/chromium-profile-{attempt}) and loads
    the test page: (Chromium, None), or (None, "slow") after quitting it when the page does not
    load. Under TCG on these machines Chromium takes about 60 s to start and has taken 100–120 s
    to load even this one-line page; once in a while its network service crashes and the load
    never finishes, hence a second attempt. `extra_arguments`: more command-line switches
    (e2e_extension.py loads Latchkey's extension). `webdriver_url`: a remote WebDriver URL to
    start it through (`latchkey rig webdriver`, which starts chromedriver itself)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = "/usr/bin/chromium"
    # Under TCG Chromium's GPU process (there even with --disable-gpu: it composites in software)
    # now and then dies of SIGSEGV; after the sixth death Chromium gives up ("GPU process isn't
    # usable. Goodbye.") and the browser closes mid-flow. Without the limit it restarts it again.
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-gpu-process-crash-limit",
                     "--disable-dev-shm-usage",
                     "--no-first-run", f"--user-data-dir={work}/chromium-profile-{attempt}",
                     # Work an emulated machine need not do: updates, sync, crash reports (no network here).
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--no-default-browser-check", "--disable-breakpad",
                     # Chromium logs its FIDO decisions ("FIDO:" lines, from the device event log) at
                     # verbosity 1; kept in chromedriver.log. Only that file's: all of -v=1 was 24,000
                     # lines a start (histograms too), written while the emulator runs everything else.
                     "--enable-logging=stderr", "--vmodule=device_event_log_impl=1") + tuple(extra_arguments):
        options.add_argument(argument)
    started = time.time()
    try:
        if webdriver_url is not None:
            driver = webdriver.Remote(command_executor=webdriver_url, options=options)
        else:
            service = Service("/usr/bin/chromedriver", log_output=os.path.join(work, f"chromedriver-{attempt}.log"),
                              service_args=["--enable-chrome-logs"])
            driver = webdriver.Chrome(options=options, service=service)
    except Exception as error:  # noqa: BLE001 - "chrome not reachable": the browser did not come up, retried
        # Seen on a loaded machine: chromedriver gave up on Chromium's DevTools port before the
        # emulated browser opened it. Nothing has reached the key yet.
        print(f"chromium did not start after {time.time() - started:.1f} s: {type(error).__name__}", flush=True)
        return None, "slow"
    print(f"chromium {driver.capabilities.get('browserVersion')} up after {time.time() - started:.1f} s "
          f"(attempt {attempt}){step_stamp()}", flush=True)
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
    print(f"page loaded after {time.time() - started:.1f} s{step_stamp()}", flush=True)
    return Chromium(driver), None


def open_firefox(work, attempt, addon=None):
    """Starts headless Firefox ESR on a fresh profile (marionette.DEFAULT_PREFS: WebAuthn over
    USB/HID only, no first-run pages) and loads the test page: (Firefox, None), or (None, why)
    after quitting it — "slow" when it did not answer in time (the emulator: retried, then not
    run), "exited" when Firefox died, "failed" for another error (both count as failures).
    `addon`: an unpacked extension folder installed first, as a temporary add-on (Marionette's
    Addon:Install; e2e_extension.py loads Latchkey's extension)."""
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
    print(f"firefox {caps.get('browserVersion')} up after {time.time() - started:.1f} s (attempt {attempt}){step_stamp()}",
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
        if addon is not None:
            installed = ff.command("Addon:Install", {"path": addon, "temporary": True}, timeout=60)
            print(f"firefox installed the add-on {installed} from {addon}", flush=True)
        ff.navigate(ORIGIN + "/", timeout=FIREFOX_LOAD)
    except marionette.MarionetteError as error:
        return give_up("page did not load", error)
    except BaseException:
        ff.quit(timeout=20)
        raise
    print(f"page loaded after {time.time() - started:.1f} s{step_stamp()}", flush=True)
    return Firefox(ff), None


def browser_died(error):
    """Whether an AssertionError from `webauthn` was the browser process dying (chromedriver: the
    session is gone because the browser closed the connection), not an answer the test refused."""
    cause = error.__cause__
    text = f"{type(cause).__name__}: {cause}" if cause is not None else ""
    return "InvalidSessionIdException" in text or "browser has closed the connection" in text or "chrome not reachable" in text


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


def relying_party():
    """python-fido2's Fido2Server as the page's relying party: RP ID localhost, the page's origin only."""
    return Fido2Server({"id": "localhost", "name": "Latchkey e2e"}, attestation=AttestationConveyancePreference.NONE,
                       verify_origin=lambda origin: origin == ORIGIN)


def run_algorithm_flows(browser, algorithms):
    """For each (COSE alg, name): an RP that accepts only that algorithm (the browser passes
    pubKeyCredParams through); create() and get(), Fido2Server checking the key's type and the
    signature. Chromium is asked for RS256 only: it parses an EC2 credential key as P-256 only
    (device/fido/public_key.cc, ParseEcP256CoseKey) and drops any other curve's response as a
    CBOR error, so create() never settles (seen here with ES384); Firefox for ES384 and RS256."""
    for alg, name in algorithms:
        server = relying_party()
        server.allowed_algorithms = [PublicKeyCredentialParameters(type=PublicKeyCredentialType.PUBLIC_KEY, alg=alg)]
        user = {"id": os.urandom(16), "name": f"{name.lower()}-user", "displayName": f"{name} User"}
        creation, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.DISCOURAGED,
                                                user_verification=UserVerificationRequirement.DISCOURAGED)
        created, took = webauthn(browser, CREATE, dict(creation), f"{name} create()")
        credential = server.register_complete(state, created).credential_data
        assert credential.public_key[3] == alg, f"{name} create() made a key of alg {credential.public_key[3]}"
        print(f"{name} create() ok in {took:.1f} s: a {type(credential.public_key).__name__} key", flush=True)
        request, state = server.authenticate_begin([credential], user_verification=UserVerificationRequirement.DISCOURAGED)
        asserted, took = webauthn(browser, GET, dict(request), f"{name} get()")
        server.authenticate_complete(state, [credential], asserted)
        print(f"{name} get() ok in {took:.1f} s, verified by Fido2Server", flush=True)


def probe_mldsa(browser, label):
    """What the browser does with an ML-DSA credential, measured rather than assumed (the README
    reports it): an RP that accepts ML-DSA-44 only (COSE -48), a key that makes it. Made: get()
    too, both verified by Fido2Server (python-fido2 verifies ML-DSA through `cryptography`).
    Refused: the error the page got. No answer within the call's timeout: said so. Run last: a
    create() that never settles leaves the page's request pending. Returns the outcome's line."""
    server = relying_party()
    server.allowed_algorithms = [PublicKeyCredentialParameters(type=PublicKeyCredentialType.PUBLIC_KEY, alg=-48)]
    user = {"id": os.urandom(16), "name": "mldsa-user", "displayName": "ML-DSA User"}
    creation, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.DISCOURAGED,
                                            user_verification=UserVerificationRequirement.DISCOURAGED)
    began = time.time()
    try:
        result = browser.call(CREATE, dict(creation))
    except Exception as error:  # noqa: BLE001 - no answer in time (or the browser gone): the measurement
        outcome = f"{label}: ML-DSA-44 create() gave no answer in {time.time() - began:.0f} s ({type(error).__name__}); " \
                  f"{browser.what_it_saw()}"
    else:
        assert isinstance(result, dict), f"ML-DSA-44 create(): {result!r}"
        if "error" in result:
            outcome = f"{label}: ML-DSA-44 create() refused in {time.time() - began:.1f} s: {result['error']}"
        else:
            credential = server.register_complete(state, result["ok"]).credential_data
            assert credential.public_key[3] == -48 and credential.public_key[1] == 7, dict(credential.public_key)
            request, state = server.authenticate_begin([credential], user_verification=UserVerificationRequirement.DISCOURAGED)
            asserted, took = webauthn(browser, GET, dict(request), "ML-DSA-44 get()")
            server.authenticate_complete(state, [credential], asserted)
            outcome = f"{label}: ML-DSA-44 create() and get() work (an AKP key, a {len(asserted['response']['signature'])}-" \
                      f"character signature), verified by Fido2Server"
    print(f"MEASURED {outcome}", flush=True)
    return outcome


def run_flows(browser):
    server = relying_party()
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
    run_two_accounts(browser, server, passkey)


def run_two_accounts(browser, server, first):
    """Two accounts at localhost: an empty allowCredentials brings no account chooser (which no
    WebDriver can click), because the key, with automatic presence, picks one as a key with a
    display lets its user pick (userSelected): the one made last, then the one that signed last.
    Fido2Server checks each answer against both accounts' public keys and its user handle."""
    user = {"id": SECOND_USER_ID, "name": "second-user", "displayName": "Second User"}
    creation, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                            user_verification=UserVerificationRequirement.REQUIRED)
    created, took = webauthn(browser, CREATE, dict(creation), "second account create()")
    second = server.register_complete(state, created).credential_data
    accounts = [first, second]
    steps = [(None, second, SECOND_USER_ID, "the one made last"), ([first], first, PASSKEY_USER_ID, "by its ID"),
             (None, first, PASSKEY_USER_ID, "the one that signed last")]
    for allow, expected, handle, why in steps:
        request, state = server.authenticate_begin(allow, user_verification=UserVerificationRequirement.REQUIRED)
        what = f"two accounts: get() ({'empty allowCredentials' if allow is None else 'allowCredentials [first]'})"
        asserted, took = webauthn(browser, GET, dict(request), what)
        result = server.authenticate_complete(state, accounts, asserted)
        signed_by = AuthenticationResponse.from_dict(asserted).response.user_handle
        assert result.credential_id == expected.credential_id and signed_by == handle, \
            f"{what}: answered with {signed_by!r}, expected {handle!r} ({why})"
        print(f"{what} ok in {took:.1f} s: {handle.decode()} ({why}), verified by Fido2Server", flush=True)


# --- --rig: credentials planted through the rig's control API sign in on the page ----------------

def hidraw_nodes_of(uniq):
    """The /dev/hidrawN nodes of the HID devices whose uniq is `uniq` (sysfs HID_UNIQ, as
    guest_lib.sh's hidraw_for finds a key's node), those that exist in /dev."""
    nodes = []
    for uevent in sorted(glob.glob("/sys/class/hidraw/hidraw*/device/uevent")):
        node = "/dev/" + uevent.split(os.sep)[4]
        try:
            with open(uevent, errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue        # the device went away while we looked
        if f"HID_UNIQ={uniq}" in lines and os.path.exists(node):
            nodes.append(node)
    return nodes


def wait_until(done, seconds, failure):
    """Polls `done()` every 50 ms for up to `seconds`: the seconds it took, or an AssertionError
    with `failure()` (what was seen at the end)."""
    began = time.monotonic()
    while not done():
        if time.monotonic() - began > seconds:
            raise AssertionError(failure())
        time.sleep(0.05)
    return time.monotonic() - began


def running(pid):
    """Whether process `pid` exists and has not exited. An exited child of e2e_guest.sh's shell
    stays a zombie until that shell next waits: it counts as exited (its uhid device is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def serve_key_process(work, name):
    """The pid in WORK/key-NAME.pid (e2e_guest.sh's start_key writes it) and that process's
    command line, its arguments as bytes (none when it has gone)."""
    with open(os.path.join(work, f"key-{name}.pid")) as handle:
        pid = int(handle.read().split()[0])
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return pid, [argument for argument in handle.read().split(b"\0") if argument]
    except OSError:
        return pid, []


def stop_serve_key(work, name):
    """Stops `latchkey serve --name NAME`, started by e2e_guest.sh's start_key (its pid in
    WORK/key-NAME.pid): SIGTERM, then waits for it to exit and for its hidraw node (uniq
    latchkey:NAME) to go. Only a process that is that key is signalled, whatever the pid file
    says. The seconds it took."""
    pid, args = serve_key_process(work, name)
    assert running(pid) and b"serve" in args and (b"--name", name.encode()) in zip(args, args[1:]), \
        f"key {name} is not running as pid {pid} (its command line: {b' '.join(args).strip().decode(errors='replace') or 'none'})"
    uniq = f"latchkey:{name}"
    os.kill(pid, signal.SIGTERM)
    return wait_until(lambda: not running(pid) and not hidraw_nodes_of(uniq), RIG_WAIT,
                      lambda: f"key {name} (pid {pid}) after SIGTERM and {RIG_WAIT} s: "
                              f"{'still running' if running(pid) else 'exited'}, "
                              f"its hidraw nodes {hidraw_nodes_of(uniq) or 'gone'}")


class BrowserRig:
    """`latchkey rig` with the one key the browser signs in with: its control socket and the keys'
    stores under WORK (rig-browser.control, rig-browser-root/), its pid in WORK/rig-browser.pid
    (e2e_guest.sh stops a rig this script leaves behind) and what it printed in
    WORK/rig-browser.log once it stops."""

    def __init__(self, binary, work):
        self.binary = binary
        self.work = work
        self.control = os.path.join(work, "rig-browser.control")
        self.root = os.path.join(work, "rig-browser-root")
        self.process = None         # latchkey_rig.RigProcess
        self.client = None          # latchkey_rig.Rig
        self.events = None          # latchkey_rig.EventStream of the key
        self.key = None             # the Authenticator addAuthenticator answered, until removed

    def start(self):
        """Starts the rig and connects to it; the seconds it took to answer."""
        # A store left by an earlier run would hold more accounts for localhost.
        shutil.rmtree(self.root, ignore_errors=True)
        began = time.monotonic()
        self.process = start_debug_rig(latchkey_rig, self.binary, self.control, self.root,
                                       os.path.join(self.work, "rig-browser.pid"), timeout=RIG_START)
        self.client = latchkey_rig.Rig(self.control, timeout=RIG_STEP)
        return time.monotonic() - began

    def add_key(self, **transport):
        """addAuthenticator RIG_KEY as `latchkey serve --presence auto --uv auto` is: automatic
        presence, a consenting user, built-in UV that verifies without being asked (so Chromium
        takes a UV token, clientPIN 0x06, and shows no dialog); a uhid key unless `transport`
        says otherwise. Then subscribes to its events."""
        echoed = ("hasUserVerification", "isUserVerified", "automaticUserVerification", "automaticPresenceSimulation",
                  "isUserConsenting")     # what the Authenticator it answers says back
        key = self.client.add_authenticator(authenticatorId=RIG_KEY, hasResidentKey=True, **dict.fromkeys(echoed, True),
                                            **transport)
        self.key = key
        wrong = [member for member in echoed if key.get(member) is not True]
        assert key.get("authenticatorId") == RIG_KEY and not wrong, f"addAuthenticator answered {key} ({', '.join(wrong)})"
        assert transport or key.get("transport") == "usb", f"addAuthenticator answered {key}: not a uhid key"
        self.events = latchkey_rig.EventStream(self.control, authenticator_id=RIG_KEY, timeout=RIG_STEP)
        return key

    def node(self):
        """The key's hidraw node (by its uniq), waited for; the node and the seconds it took."""
        uniq = self.key["uniq"]
        took = wait_until(lambda: len(hidraw_nodes_of(uniq)) == 1, RIG_WAIT,
                          lambda: f"hidraw nodes with uniq {uniq} after {RIG_WAIT} s: {hidraw_nodes_of(uniq) or 'none'}")
        return hidraw_nodes_of(uniq)[0], took

    def remove_key(self):
        """removeAuthenticator, then waits for its hidraw node to go: later steps count FIDO
        devices or ask every one. The seconds it took."""
        uniq = self.key["uniq"]
        self.client.remove_authenticator(RIG_KEY)
        self.key = None
        return wait_until(lambda: not hidraw_nodes_of(uniq), RIG_WAIT,
                          lambda: f"{hidraw_nodes_of(uniq)} (uniq {uniq}) still there {RIG_WAIT} s after removeAuthenticator")

    def stop(self):
        """Closes the connections, stops the rig (SIGTERM; SIGKILL after RIG_WAIT s) and saves what
        it printed; its exit status, or None if it never ran."""
        connections, self.events, self.client = (self.events, self.client), None, None
        return stop_rig(self.process, connections, os.path.join(self.work, "rig-browser.log"), timeout=RIG_WAIT)


def plant_and_sign_in(rig, server, sign_in, what, user_id, user_name, by_id, user_verification, large_blob=None):
    """Plants a fresh P-256 credential for localhost on the rig's key (addCredential: PKCS#8,
    signCount PLANTED_SIGN_COUNT; non-resident, with no user, when `by_id`, else a passkey of
    `user_id`), then signs in with it on the page: get() with allowCredentials [its ID] when
    `by_id`, else empty. Fido2Server verifies the answer against the public key the
    test made (an AttestedCredentialData built from it, as an RP stores it at registration); the
    counter the page saw must be past the planted one, and the rig must report that very counter
    (a credentialAsserted event, getCredential). With `large_blob`, the passkey is planted with
    that blob and the get() asks for it (WebAuthn largeBlob read: the browser takes the
    largeBlobKey and reads the key's large-blob array), which must give it back.
    The credential ID, the counter and the seconds."""
    private_key = ec.generate_private_key(ec.SECP256R1())
    credential_id = os.urandom(32)
    planted = AttestedCredentialData.create(Aaguid.NONE, credential_id, ES256.from_cryptography_key(private_key.public_key()))
    # By ID: WebDriver's non-resident credential (no user); else a passkey with its user.
    credential = {"credentialId": credential_id, "isResidentCredential": not by_id, "rpId": "localhost",
                  "privateKey": pkcs8(private_key), "signCount": PLANTED_SIGN_COUNT}
    if not by_id:
        credential.update(userHandle=user_id, userName=user_name, userDisplayName=user_name.replace("-", " ").title())
    if large_blob is not None:
        credential["largeBlob"] = large_blob
    rig.client.add_credential(RIG_KEY, credential)
    rig.events.wait_for("credentialAdded", timeout=RIG_STEP, credentialId=credential_id)
    # One account on the key for localhost: with two, an empty allowCredentials brings Chromium's
    # account chooser, which no WebDriver reaches.
    held = [latchkey_rig.b64url_decode(entry["credentialId"]) for entry in rig.client.get_credentials(RIG_KEY)]
    assert held == [credential_id], f"the key holds {[c.hex()[:16] for c in held]}, expected the planted credential alone"

    request, state = server.authenticate_begin([planted] if by_id else None, user_verification=user_verification,
                                               extensions=None if large_blob is None else {"largeBlob": {"read": True}})
    allowed = [bytes(descriptor.id) for descriptor in request.public_key.allow_credentials or []]
    assert allowed == ([credential_id] if by_id else []), f"allowCredentials {[c.hex() for c in allowed]}"
    asserted, took = sign_in(dict(request), what)
    result = server.authenticate_complete(state, [planted], asserted)
    assert result.credential_id == credential_id, f"{what}: signed with {result.credential_id.hex()}"
    if large_blob is not None:
        outputs = asserted.get("clientExtensionResults", {}).get("largeBlob", {})
        assert "blob" in outputs, f"{what}: no largeBlob.blob in the client extension results: {outputs}"
        read = latchkey_rig.b64url_decode(outputs["blob"])
        assert read == large_blob, f"{what}: largeBlob read {len(read)} bytes, not the {len(large_blob)} planted"
    response = AuthenticationResponse.from_dict(asserted).response
    counter = response.authenticator_data.counter
    assert counter > PLANTED_SIGN_COUNT, f"{what}: counter {counter}, planted at {PLANTED_SIGN_COUNT}"
    if by_id:
        assert not response.user_handle, f"{what}: a non-resident credential's assertion named user {response.user_handle!r}"
    else:
        assert response.user_handle == user_id, f"{what}: userHandle {response.user_handle!r}, planted {user_id!r}"
    # The rig reports what the key signed, probes (up=false) included: the event for this counter.
    event = rig.events.wait_for("credentialAsserted", timeout=RIG_STEP, credentialId=credential_id, signCount=counter)
    assert event["params"].get("rpId") == "localhost", f"credentialAsserted for {event['params'].get('rpId')!r}: {event}"
    stored = rig.client.get_credential(RIG_KEY, credential_id).get("signCount")
    assert stored == counter, f"getCredential signCount {stored}, the page saw {counter}"
    return credential_id, counter, took


def write_large_blob(rig, server, sign_in, credential_id):
    """get() of the planted passkey with a largeBlob write (the browser takes a token with the
    lbw permission by the key's UV and rewrites the array): `written` true, and the rig's
    getCredential reports the page's blob for it. WebAuthn allows a write only with one
    credential in allowCredentials: the passkey's ID. The seconds."""
    blob = b"written by the page " + bytes(range(64))
    descriptor = PublicKeyCredentialDescriptor(type=PublicKeyCredentialType.PUBLIC_KEY, id=credential_id)
    request, _ = server.authenticate_begin([descriptor], user_verification=UserVerificationRequirement.REQUIRED,
                                           extensions={"largeBlob": {"write": latchkey_rig.b64url(blob)}})
    asserted, took = sign_in(dict(request), "get() with largeBlob write")
    outputs = asserted.get("clientExtensionResults", {}).get("largeBlob", {})
    assert outputs.get("written") is True, f"largeBlob write: client extension results {outputs}"
    stored = latchkey_rig.b64url_decode(rig.client.get_credential(RIG_KEY, credential_id).get("largeBlob", ""))
    assert stored == blob, f"getCredential largeBlob is {stored[:24]!r}…, not what the page wrote"
    return took


def run_rig_account_choice(rig, server, sign_in, first_id):
    """A second passkey for localhost planted beside the first: the rig's selectCredential names
    which one the next empty-allowCredentials get() answers with, by user handle and then by
    credential ID; Fido2Server verifies each against the key the test made (the first's public
    key comes from getCredential's private key)."""
    second_key = ec.generate_private_key(ec.SECP256R1())
    second_id = os.urandom(32)
    rig.client.add_credential(RIG_KEY, {"credentialId": second_id, "isResidentCredential": True, "rpId": "localhost",
                                        "privateKey": pkcs8(second_key), "userHandle": SECOND_USER_ID,
                                        "userName": "second-user", "userDisplayName": "Second User"})
    rig.events.wait_for("credentialAdded", timeout=RIG_STEP, credentialId=second_id)
    first_key = serialization.load_der_private_key(
        latchkey_rig.b64url_decode(rig.client.get_credential(RIG_KEY, first_id)["privateKey"]), password=None)
    accounts = {cid: AttestedCredentialData.create(Aaguid.NONE, cid, ES256.from_cryptography_key(key.public_key()))
                for cid, key in ((first_id, first_key), (second_id, second_key))}
    for select, expected, handle in (({"user_handle": SECOND_USER_ID}, second_id, SECOND_USER_ID),
                                     ({"credential_id": first_id}, first_id, PLANTED_USER_ID)):
        rig.client.select_credential(RIG_KEY, "localhost", **select)
        request, state = server.authenticate_begin(None, user_verification=UserVerificationRequirement.REQUIRED)
        what = f"two planted passkeys, selectCredential {next(iter(select))}: get() (empty allowCredentials)"
        asserted, took = sign_in(dict(request), what)
        result = server.authenticate_complete(state, list(accounts.values()), asserted)
        signed_by = AuthenticationResponse.from_dict(asserted).response.user_handle
        assert result.credential_id == expected and signed_by == handle, f"{what}: answered with {signed_by!r}, expected {handle!r}"
        print(f"{what} ok in {took:.1f} s: {handle.decode()}, verified by Fido2Server", flush=True)


def run_rig_flows(browser, work, binary):
    """Key web steps aside (Chromium asks every FIDO device it sees, and one without the
    credential would fail a get() by ID, or add its passkey to an empty allowCredentials), then
    `latchkey rig` with one uhid key: a non-resident credential the RP knows by its ID signs in, is removed,
    and a passkey (resident, user handle PLANTED_USER_ID) signs in with an empty allowCredentials
    and user verification required. A rig that exits other than 0 fails the flows."""
    took = stop_serve_key(work, "web")
    print(f"key web stepped aside in {took:.1f} s (exited, its hidraw node gone)", flush=True)
    rig = BrowserRig(binary, work)
    try:
        took = rig.start()
        key = rig.add_key()
        node, waited = rig.node()
        print(f"latchkey rig up in {took:.1f} s; key {RIG_KEY} (uniq {key['uniq']}) at {node} after {waited:.1f} s",
              flush=True)

        def sign_in(options, what):
            return webauthn(browser, GET, options, what)

        server = relying_party()
        what = "get() of a planted non-resident credential (allowCredentials [its ID])"
        credential_id, counter, took = plant_and_sign_in(rig, server, sign_in, what, b"latchkey-e2e-by-id",
                                                         "planted-by-id", True, UserVerificationRequirement.DISCOURAGED)
        print(f"{what} ok in {took:.1f} s: counter {counter} (planted at {PLANTED_SIGN_COUNT}), verified by "
              f"Fido2Server, credentialAsserted and getCredential agree", flush=True)
        rig.client.remove_credential(RIG_KEY, credential_id)
        rig.events.wait_for("credentialDeleted", timeout=RIG_STEP, credentialId=credential_id)

        what = "get() of a planted passkey with a large blob (empty allowCredentials, uv required, largeBlob read)"
        passkey_id, counter, took = plant_and_sign_in(rig, server, sign_in, what, PLANTED_USER_ID, "planted-passkey",
                                                      False, UserVerificationRequirement.REQUIRED, large_blob=PLANTED_BLOB)
        print(f"{what} ok in {took:.1f} s: userHandle {PLANTED_USER_ID.decode()}, counter {counter} (planted at "
              f"{PLANTED_SIGN_COUNT}), verified by Fido2Server (UV flag set), credentialAsserted and getCredential agree; "
              f"the page read the {len(PLANTED_BLOB)}-byte blob planted with it", flush=True)
        took = write_large_blob(rig, server, sign_in, passkey_id)
        print(f"get() with largeBlob write ok in {took:.1f} s: written, and getCredential reports the page's blob", flush=True)
        run_rig_account_choice(rig, server, sign_in, passkey_id)
        took = rig.remove_key()
        print(f"removeAuthenticator {RIG_KEY}: {node} gone after {took:.1f} s", flush=True)
    finally:
        status = rig.stop()
    assert status == 0, f"latchkey rig exited with status {status} (its output: {os.path.join(work, 'rig-browser.log')})"
    print("latchkey rig stopped (exit status 0)", flush=True)


# --- --proxy: the flows through `latchkey proxy` first, in the same browser ----------------------

PROXY_UNIQ = "latchkey-proxy:latchkey:web"
PROXY_MARK, DIRECT_MARK = "=== through latchkey proxy", "=== directly"


def restart_serve_key(work, name):
    """Stops `latchkey serve --name NAME` (stop_serve_key) and starts it again with the command
    line it ran with, as e2e_guest.sh's start_key did: its output appended to WORK/key-NAME.log,
    its pid in WORK/key-NAME.pid; waits for its hidraw node. The seconds it took."""
    _, arguments = serve_key_process(work, name)
    began = time.monotonic()
    stop_serve_key(work, name)   # checks that the process is that key
    with open(os.path.join(work, f"key-{name}.log"), "a") as log:
        process = subprocess.Popen(arguments, stdout=log, stderr=subprocess.STDOUT)
    with open(os.path.join(work, f"key-{name}.pid"), "w") as handle:
        handle.write(f"{process.pid}\n")
    wait_until(lambda: len(hidraw_nodes_of(f"latchkey:{name}")) == 1, RIG_WAIT,
               lambda: f"key {name} started again: no hidraw node after {RIG_WAIT} s (exit status {process.poll()})")
    return time.monotonic() - began


def run_through_proxy(browser, algorithms, work, real, proxy_pid_file):
    """The flows through the proxy, then the proxy stopped (its exit status is e2e_guest.sh's to
    collect), /dev/null unbound from the real node and key web started again. Prints 'through
    latchkey proxy: passed' or '…: FAIL why' (the proxy step checks it): a failure here does not
    stop the direct flows, which judge the key itself."""
    print(PROXY_MARK, flush=True)
    try:
        run_flows(browser)
        run_algorithm_flows(browser, algorithms)
        print(f"through latchkey proxy: passed{step_stamp()}", flush=True)
    except AssertionError as error:
        if browser_died(error):
            raise
        print(f"through latchkey proxy: FAIL {error}", flush=True)
    with open(proxy_pid_file) as handle:
        pid = int(handle.read().split()[0])
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not running(pid) and not hidraw_nodes_of(PROXY_UNIQ), RIG_WAIT,
               lambda: f"the proxy (pid {pid}) {RIG_WAIT} s after SIGTERM: "
                       f"{'running' if running(pid) else 'exited'}, its node {hidraw_nodes_of(PROXY_UNIQ) or 'gone'}")
    unbound = subprocess.run(["umount", real], capture_output=True, text=True, timeout=30)
    assert unbound.returncode == 0, f"umount {real}: {unbound.stderr.strip()}"
    took = restart_serve_key(work, "web")
    print(f"proxy stopped, {real} unbound, key web started again in {took:.1f} s", flush=True)
    print(DIRECT_MARK, flush=True)


def main(work, browser_name="chromium", rig_binary=None, proxy=None):
    openers = {"chromium": (open_chromium, "headless Chromium"), "firefox": (open_firefox, "headless Firefox ESR")}
    if browser_name not in openers:
        print(f"unknown browser {browser_name!r}: chromium or firefox", flush=True)
        return 2
    if (rig_binary is not None or proxy is not None) and browser_name != "chromium":
        print(f"--rig and --proxy run with chromium only (not {browser_name})", flush=True)
        return 2
    opener, label = openers[browser_name]
    # The step's `timeout` sends SIGTERM: exit through the finally below, which quits the browser.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"e2e_browser.py: Python and its imports ready{step_stamp()}", flush=True)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    browser, outcomes, intermediary, suite = None, [], None, None
    try:
        if rig_binary is not None:
            # With --rig, Chromium starts through `latchkey rig webdriver` (which starts chromedriver):
            # every command of the flows below passes through it, and its WebDriver suite
            # (e2e_webdriver.py) runs last in the same browser.
            import e2e_webdriver  # noqa: PLC0415 - beside this file; it imports this module
            intermediary, url = e2e_webdriver.start_intermediary(work, rig_binary)
            print(f"latchkey rig webdriver at {url}{step_stamp()}", flush=True)
            opener = functools.partial(open_chromium, webdriver_url=url)
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
        algorithms = [(-257, "RS256")] if browser_name == "chromium" else [(-35, "ES384"), (-257, "RS256")]
        try:
            if proxy is not None:
                run_through_proxy(browser, algorithms, work, *proxy)
            run_flows(browser)
            run_algorithm_flows(browser, algorithms)
            print(f"flows done{step_stamp()}", flush=True)
            if rig_binary is not None:
                run_rig_flows(browser, work, rig_binary)
                print(f"rig flows done{step_stamp()}", flush=True)
                suite = e2e_webdriver.Suite(browser.driver, url, False, os.path.join(work, "rig-webdriver.log"))
                suite.selenium_checks()
                suite.spec_checks()
                e2e_webdriver.latchkey_checks(suite)
        except AssertionError as error:
            if not browser_died(error):
                raise
            # The browser's own process went away mid-call (seen once in Chromium 156 under TCG, in the
            # rig's largeBlob write, right after the key answered getInfo; the same flow passed in the
            # runs before and after): not a wrong answer of the key's. Exit 77: reported as not run,
            # never as passed; the flows printed before it passed.
            print(f"NOT RUN: {label}'s browser process died mid-flow: {error}", flush=True)
            return 77
    finally:
        if browser is not None:
            browser.quit()
        if suite is not None:
            e2e_webdriver.finish(suite)
        if intermediary is not None:
            e2e_webdriver.stop_intermediary(intermediary)
        httpd.shutdown()
    return 0


def parse(arguments):
    """WORK [BROWSER] [--proxy REAL_NODE PROXY_PID_FILE] [--rig BINARY] → main's arguments, or None."""
    positional, options = [], {}
    while arguments:
        first, arguments = arguments[0], arguments[1:]
        counts = {"--proxy": 2, "--rig": 1}
        if first in counts:
            if first in options or len(arguments) < counts[first]:
                return None
            options[first], arguments = arguments[:counts[first]], arguments[counts[first]:]
        else:
            positional.append(first)
    if len(positional) not in (1, 2) or (options and len(positional) != 2):
        return None
    rig = os.path.abspath(options["--rig"][0]) if "--rig" in options else None
    return (*positional, *([None] if len(positional) == 1 else []), rig, options.get("--proxy"))


if __name__ == "__main__":
    parsed = parse(sys.argv[1:])
    if parsed is None:
        sys.exit("usage: " + " ".join(__doc__.split("Usage: ")[1].split("\nExit")[0].split()))
    work, browser_name, rig, proxy = parsed
    sys.exit(main(work, browser_name or "chromium", rig, proxy))
