#!/usr/bin/env python3
"""A WebAuthn suite written against WebDriver's virtual authenticators, run unchanged on
`latchkey rig webdriver`: the suite only points its remote WebDriver URL at the intermediary,
whose virtual authenticators are rig keys on uhid that headless Chromium finds as it finds any
security key (its own WebAuthn code, HID stack and CTAP client). Two parts:
- through Selenium's API (add_virtual_authenticator, add_credential, get_credentials,
  remove_credential, remove_all_credentials, set_user_verified, remove_virtual_authenticator),
  with checks written from WebAuthn Level 3 §11's text and its examples (Selenium's sdist on
  PyPI carries no tests of its own);
- against the extension's HTTP endpoints alone (urllib, the spec's URI templates and JSON), no
  Selenium or rig vocabulary: add authenticator, create, get, add a credential from PKCS#8, get
  credentials with sign counts, set user verified → the UV flag, remove.
Every create() and get() is checked by python-fido2's Fido2Server as the relying party.
`--direct`: the same checks against chromedriver's own (in-browser) virtual authenticator, for
the side-by-side comparison; what differs is printed as DIFFERS lines, not failures.
Usage: e2e_webdriver.py WORK_DIR LATCHKEY_BINARY | e2e_webdriver.py WORK_DIR --direct
Exit 0: every check passed; 1: one failed; 77: Chromium did not start or load the page, twice."""

import base64
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from fido2.cose import ES256
from fido2.webauthn import (Aaguid, AttestedCredentialData, AuthenticatorData, ResidentKeyRequirement,
                            UserVerificationRequirement)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_browser as eb  # noqa: E402 - beside this file: the page, its WebAuthn scripts, the relying party

START = 60          # s for `latchkey rig webdriver` to print its URL (it starts chromedriver)
ABORT_MS = 12_000   # ms: a get() that must fail is aborted by the page after this (see Suite.get_fails)
GET_ABORTED = """
const [json, done] = arguments;
const controller = new AbortController();
setTimeout(() => controller.abort(), %d);
try {
  const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(json.publicKey);
  navigator.credentials.get({publicKey, signal: controller.signal}).then(
    c => done({ok: c.toJSON()}), e => done({error: e.name + ': ' + e.message}));
} catch (e) { done({error: 'script: ' + e}); }
""" % ABORT_MS


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_p256():
    """A fresh P-256 key: its PKCS#8 DER and its COSE public key."""
    private = ec.generate_private_key(ec.SECP256R1())
    der = private.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return der, ES256.from_cryptography_key(private.public_key())


def attested(credential_id, public_key):
    """The credential as Fido2Server checks assertions against it."""
    return AttestedCredentialData.create(Aaguid.NONE, credential_id, public_key)


def sign_count(asserted):
    return AuthenticatorData(b64url_decode(asserted["response"]["authenticatorData"])).counter


def uv_flag(asserted):
    return AuthenticatorData(b64url_decode(asserted["response"]["authenticatorData"])).is_user_verified()


class Suite:
    """The checks; each records (name, passed, what it saw)."""

    def __init__(self, driver, url, direct, log_path):
        self.driver = driver
        self.log_path = log_path
        self.browser = eb.Chromium(driver)
        self.url = url.rstrip("/")
        self.direct = direct
        self.results = []
        self.differences = []

    def check(self, name, body):
        began = time.time()
        try:
            seen = body()
        except Exception as error:  # noqa: BLE001 - a failed check is reported with what it met
            self.results.append((name, False, f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"))
            print(f"FAIL: {name} ({time.time() - began:.1f} s): {type(error).__name__}: {error}{eb.step_stamp()}", flush=True)
            return False
        self.results.append((name, True, seen or ""))
        print(f"ok: {name} ({time.time() - began:.1f} s){': ' + seen if seen else ''}{eb.step_stamp()}", flush=True)
        return True

    def check_in_order(self, checks):
        """Each (name, body) in turn, until one fails: the later ones build on it."""
        for name, body in checks:
            if not self.check(name, body):
                break

    def differs(self, what):
        self.differences.append(what)
        print(f"DIFFERS: {what}", flush=True)

    def register(self, user_id, resident, uv, what):
        """A create() on the page, checked by Fido2Server: (its authenticator data, seconds)."""
        server = eb.relying_party()
        user = {"id": user_id, "name": user_id.decode(), "displayName": f"User {user_id.decode()}"}
        rk = ResidentKeyRequirement.REQUIRED if resident else ResidentKeyRequirement.DISCOURAGED
        creation, state = server.register_begin(user, resident_key_requirement=rk, user_verification=uv)
        created, took = eb.webauthn(self.browser, eb.CREATE, dict(creation), what)
        return server.register_complete(state, created), took

    def sign_in(self, credentials, uv, what, discoverable=False):
        """A get() on the page naming `credentials` (none when `discoverable`), checked by
        Fido2Server against them: (the assertion's JSON, seconds)."""
        server = eb.relying_party()
        request, state = server.authenticate_begin(None if discoverable else credentials, user_verification=uv)
        asserted, took = eb.webauthn(self.browser, eb.GET, dict(request), what)
        server.authenticate_complete(state, credentials, asserted)
        return asserted, took

    def get_fails(self, allow, key_answer, user_verification=UserVerificationRequirement.DISCOURAGED):
        """A get() that must be refused: its error's name. Chromium's virtual authenticator
        rejects at once (NotAllowedError); on a real key Chromium shows the person why (this key
        is not registered, verification failed) and waits for them, so the page aborts the call
        after ABORT_MS (AbortError), and the key's own answer — `key_answer`, a status its log
        must show for this call — is what refused it."""
        server = eb.relying_party()
        request, _ = server.authenticate_begin(allow, user_verification=user_verification)
        before = self.key_log()
        result = self.browser.call(GET_ABORTED, dict(request))
        assert isinstance(result, dict) and "error" in result, f"get() was answered: {result}"
        error = result["error"].split(":")[0]
        if self.log_path is not None:
            answered = [line for line in self.key_log()[len(before):] if key_answer in line]
            assert answered, f"the key's log shows no {key_answer} for this get() ({error})"
            assert error in ("AbortError", "NotAllowedError"), result["error"]
            return f"{error}; the key answered {key_answer}"
        assert error == "NotAllowedError", result["error"]
        self.differs(f"a refused get(): Chromium's virtual authenticator rejects at once (NotAllowedError); on a real "
                     f"key Chromium shows the person its reason and waits, so the suite aborts the call (AbortError) "
                     f"and the key's log shows its refusal ({key_answer})")
        return error

    def key_log(self):
        """The intermediary's log lines so far (its keys log each CTAP command's status at debug)."""
        if self.log_path is None:
            return []
        with open(self.log_path, errors="replace") as handle:
            return handle.read().splitlines()

    # --- Selenium's API ------------------------------------------------------------------------

    def selenium_checks(self):
        from selenium.common.exceptions import InvalidArgumentException, WebDriverException
        from selenium.webdriver.common.virtual_authenticator import Credential, VirtualAuthenticatorOptions

        driver = self.driver
        state = {}

        def add_authenticator():
            options = VirtualAuthenticatorOptions()
            options.protocol = VirtualAuthenticatorOptions.Protocol.CTAP2
            options.transport = VirtualAuthenticatorOptions.Transport.USB
            options.has_resident_key = True
            options.has_user_verification = True
            options.is_user_verified = True
            driver.add_virtual_authenticator(options)
            assert isinstance(driver.virtual_authenticator_id, str) and driver.virtual_authenticator_id
            return f"authenticatorId {driver.virtual_authenticator_id!r}"

        def create_passkey():
            auth_data, took = self.register(b"webdriver-user-1", True, UserVerificationRequirement.REQUIRED, "passkey create()")
            assert auth_data.is_user_verified(), "made without the UV flag"
            state["passkey"] = auth_data.credential_data
            _, took2 = self.sign_in([state["passkey"]], UserVerificationRequirement.REQUIRED, "passkey get()", discoverable=True)
            return f"create() {took:.1f} s, get() with an empty allowCredentials {took2:.1f} s, both UV"

        def passkey_listed():
            credentials = driver.get_credentials()
            made = b64url(state["passkey"].credential_id)
            listed = [c for c in credentials if c.id.rstrip("=") == made]
            assert listed, f"the passkey made by create() is not among {len(credentials)} credential(s)"
            assert listed[0].is_resident_credential and listed[0].private_key and listed[0].sign_count >= 1, \
                f"listed as resident={listed[0].is_resident_credential}, signCount={listed[0].sign_count}"
            return f"resident, signCount {listed[0].sign_count}, a {len(listed[0].private_key)}-byte PKCS#8 key"

        def page_non_resident_listed():
            discouraged = UserVerificationRequirement.DISCOURAGED
            made = self.register(b"webdriver-user-nr", False, discouraged, "non-resident create()")[0].credential_data
            asserted, _ = self.sign_in([made], discouraged, "non-resident get()")
            listed = [c for c in driver.get_credentials() if c.id.rstrip("=") == b64url(made.credential_id)]
            assert listed and not listed[0].is_resident_credential and listed[0].sign_count == sign_count(asserted), \
                f"get_credentials: {[(c.id, c.is_resident_credential, c.sign_count) for c in listed]}, get() signed {sign_count(asserted)}"
            return f"non-resident, signCount {listed[0].sign_count} as the page's get() signed"

        def add_non_resident():
            der, public = new_p256()
            credential_id = os.urandom(16)
            driver.add_credential(Credential.create_non_resident_credential(credential_id, "localhost", der, 5))
            asserted, took = self.sign_in([attested(credential_id, public)], UserVerificationRequirement.DISCOURAGED,
                                          "get() of the added credential")
            assert sign_count(asserted) == 6, f"signCount 5 then one assertion signed {sign_count(asserted)}"
            state["non_resident"] = credential_id
            return f"signed in {took:.1f} s, counter 6 after 5"

        def remove_all_then_resident():
            driver.remove_all_credentials()
            assert driver.get_credentials() == [], "credentials left after remove_all_credentials"
            der, public = new_p256()
            credential_id, handle = os.urandom(16), b"webdriver-user-2"
            driver.add_credential(Credential.create_resident_credential(credential_id, "localhost", handle, der, 41))
            asserted, took = self.sign_in([attested(credential_id, public)], UserVerificationRequirement.PREFERRED,
                                          "discoverable get() of the added passkey", discoverable=True)
            assert b64url_decode(asserted["response"]["userHandle"]) == handle
            listed = driver.get_credentials()
            assert len(listed) == 1 and listed[0].sign_count == 42, \
                f"get_credentials: {[(c.id, c.sign_count) for c in listed]}, expected one at signCount 42"
            state["resident"] = (credential_id, public)
            return f"signed in {took:.1f} s as its user; get_credentials: signCount 42"

        def remove_credential():
            credential_id, public = state["resident"]
            # By its ID as base64url without padding: Selenium pads bytes it is given, which
            # chromedriver refuses in the URL ("credentialId must be a base64url encoded string").
            driver.remove_credential(b64url(credential_id))
            assert driver.get_credentials() == []
            return f"get() naming it: {self.get_fails([attested(credential_id, public)], 'CTAP2_ERR_NO_CREDENTIALS')}"

        def resident_on_u2f_refused():
            driver.remove_virtual_authenticator()
            options = VirtualAuthenticatorOptions()
            options.protocol = VirtualAuthenticatorOptions.Protocol.U2F
            options.has_resident_key = True
            driver.add_virtual_authenticator(options)
            der, _ = new_p256()
            try:
                driver.add_credential(Credential.create_resident_credential(os.urandom(16), "localhost", b"u", der, 0))
            except InvalidArgumentException:
                pass
            else:
                raise AssertionError("a resident credential was added to a ctap1/u2f authenticator")
            der, public = new_p256()
            credential_id = os.urandom(32)
            driver.add_credential(Credential.create_non_resident_credential(credential_id, "localhost", der, 0))
            _, took = self.sign_in([attested(credential_id, public)], UserVerificationRequirement.DISCOURAGED,
                                   "U2F get() of the added credential")
            driver.remove_virtual_authenticator()
            return f"InvalidArgumentException for a resident one; a non-resident one signed in over U2F in {took:.1f} s"

        def nfc_refused():
            options = VirtualAuthenticatorOptions()
            options.transport = VirtualAuthenticatorOptions.Transport.NFC
            try:
                driver.add_virtual_authenticator(options)
            except WebDriverException as error:
                assert "unsupported operation" in str(error) or "nfc" in str(error), str(error)
                return "unsupported operation"
            if self.direct:
                driver.remove_virtual_authenticator()
                self.differs("transport nfc: chromedriver adds it (its virtual authenticator has no HID to be); "
                             "Latchkey answers unsupported operation")
                return "accepted by chromedriver"
            raise AssertionError("an nfc authenticator was added")

        self.check_in_order((("Selenium: add_virtual_authenticator (ctap2, usb, resident keys, UV)", add_authenticator),
                            ("Selenium: a passkey made and used by the page, UV flag set", create_passkey),
                            ("Selenium: get_credentials lists it with its counter and key", passkey_listed),
                            ("Selenium: a non-resident credential the page made is listed too, with its counter", page_non_resident_listed),
                            ("Selenium: add_credential (non-resident, PKCS#8 P-256, signCount 5) signs in", add_non_resident),
                            ("Selenium: remove_all_credentials, then a resident credential added signs in", remove_all_then_resident),
                            ("Selenium: remove_credential, then get() naming it is refused", remove_credential),
                            ("Selenium: ctap1/u2f refuses a resident credential, signs with a non-resident one", resident_on_u2f_refused),
                            ("Selenium: transport nfc", nfc_refused)))

    # --- The spec's endpoints alone ------------------------------------------------------------

    def http(self, method, path, body=None):
        """One command on the WebDriver URL: (status, value)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}/session/{self.driver.session_id}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json; charset=utf-8"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())["value"]
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())["value"]

    def spec_checks(self):
        state = {}
        # One authenticator at a time: a browser asks every one, and one without the credential
        # ends a get() (as a real key that does not hold it does).
        if self.driver.virtual_authenticator_id is not None:
            self.driver.remove_virtual_authenticator()

        def add():
            status, value = self.http("POST", "/webauthn/authenticator", {
                "protocol": "ctap2_1", "transport": "usb", "hasResidentKey": True, "hasUserVerification": True,
                "isUserVerified": True})
            assert status == 200 and isinstance(value, str), (status, value)
            state["id"] = value
            status, error = self.http("POST", "/webauthn/authenticator", {"protocol": "ctap2_1"})
            assert status == 400 and error["error"] == "invalid argument", (status, error)
            return f"{value!r}; without transport: 400 invalid argument"

        def create_get():
            required = UserVerificationRequirement.REQUIRED
            credential = self.register(b"spec-user", True, required, "create()")[0].credential_data
            asserted, _ = self.sign_in([credential], required, "get()")
            state["made"] = (b64url(credential.credential_id), sign_count(asserted))
            return f"signCount {sign_count(asserted)}"

        def add_credential_and_count():
            der, public = new_p256()
            credential_id = os.urandom(20)
            status, value = self.http("POST", f"/webauthn/authenticator/{state['id']}/credential", {
                "credentialId": b64url(credential_id), "isResidentCredential": True, "rpId": "localhost",
                "privateKey": b64url(der), "userHandle": b64url(b"spec-user-2"), "signCount": 100})
            assert status == 200 and value in (None, {}), (status, value)
            if value is not None:
                self.differs(f"Add Credential's value: chromedriver {json.dumps(value)}, Latchkey null (the spec: success with no data)")
            self.sign_in([attested(credential_id, public)], UserVerificationRequirement.DISCOURAGED, "get() of the added credential")
            status, credentials = self.http("GET", f"/webauthn/authenticator/{state['id']}/credentials")
            assert status == 200, (status, credentials)
            counts = {c["credentialId"]: c["signCount"] for c in credentials}
            assert counts.get(b64url(credential_id)) == 101, counts
            made, made_count = state["made"]
            assert counts.get(made) == made_count, f"the browser's passkey: {counts.get(made)} (its get() signed {made_count})"
            state["added"] = (credential_id, public)
            return f"{len(credentials)} credentials, counters {sorted(counts.values())}"

        def user_verified():
            credential_id, public = state["added"]
            status, value = self.http("POST", f"/webauthn/authenticator/{state['id']}/uv", {"isUserVerified": True})
            assert status == 200 and value in (None, {}), (status, value)
            asserted, _ = self.sign_in([attested(credential_id, public)], UserVerificationRequirement.REQUIRED,
                                       "get() with UV required")
            assert uv_flag(asserted), "no UV flag"
            status, value = self.http("POST", f"/webauthn/authenticator/{state['id']}/uv", {"isUserVerified": False})
            assert status == 200, (status, value)
            error = self.get_fails([attested(credential_id, public)], "CTAP2_ERR_UV_INVALID", UserVerificationRequirement.REQUIRED)
            return f"UV flag set while verified; refused once not: {error}"

        def remove():
            credential_id, public = state["added"]
            status, _ = self.http("DELETE", f"/webauthn/authenticator/{state['id']}/credentials/{b64url(credential_id)}")
            assert status == 200
            status, error = self.http("DELETE", f"/webauthn/authenticator/{state['id']}/credentials/{b64url(credential_id)}")
            assert status == 400 and error["error"] == "invalid argument", (status, error)
            status, _ = self.http("DELETE", f"/webauthn/authenticator/{state['id']}")
            assert status == 200
            status, error = self.http("GET", f"/webauthn/authenticator/{state['id']}/credentials")
            assert status == 400 and error["error"] == "invalid argument", (status, error)
            return "removed; the authenticator's credentials then: 400 invalid argument"

        self.check_in_order((("spec: Add Virtual Authenticator (POST …/webauthn/authenticator)", add),
                            ("spec: create() and get() on it", create_get),
                            ("spec: Add Credential from PKCS#8, Get Credentials with sign counts", add_credential_and_count),
                            ("spec: Set User Verified → the UV flag, then a refused get()", user_verified),
                            ("spec: Remove Credential, Remove Virtual Authenticator", remove)))


def latchkey_checks(suite):
    """Latchkey's vendor command (POST /session/{id}/latchkey/rig), which chromedriver has not:
    with two passkeys at the site, the rig's selectCredential names the one a discoverable get()
    answers with, the older one, so no account chooser opens (none can be clicked headless)."""
    if suite.direct:
        return

    def pick_account():
        status, key = suite.http("POST", "/webauthn/authenticator", {
            "protocol": "ctap2_1", "transport": "usb", "hasResidentKey": True, "hasUserVerification": True,
            "isUserVerified": True})
        assert status == 200, (status, key)
        accounts = []
        for handle in (b"older-account", b"newer-account"):
            der, public = new_p256()
            credential_id = os.urandom(16)
            status, value = suite.http("POST", f"/webauthn/authenticator/{key}/credential", {
                "credentialId": b64url(credential_id), "isResidentCredential": True, "rpId": "localhost",
                "privateKey": b64url(der), "userHandle": b64url(handle), "signCount": 0})
            assert status == 200, (status, value)
            accounts.append((handle, attested(credential_id, public)))
        status, value = suite.http("POST", "/latchkey/rig", {"method": "selectCredential", "params": {
            "authenticatorId": key, "rpId": "localhost", "userHandle": b64url(accounts[0][0])}})
        assert status == 200, (status, value)
        asserted, took = suite.sign_in([credential for _, credential in accounts], UserVerificationRequirement.PREFERRED,
                                       "discoverable get() with two accounts", discoverable=True)
        signed_by = b64url_decode(asserted["response"]["userHandle"])
        assert signed_by == accounts[0][0], f"answered as {signed_by!r}, not the account the rig named"
        status, _ = suite.http("DELETE", f"/webauthn/authenticator/{key}")
        assert status == 200
        return f"{took:.1f} s, signed as {signed_by.decode()} (the newer one would be the key's own pick)"

    suite.check("Latchkey: POST …/latchkey/rig selectCredential picks the account of a discoverable get()", pick_account)


def start_intermediary(work, binary):
    """`latchkey rig webdriver --port 0`, chromedriver's log in WORK: (process, URL)."""
    log = open(os.path.join(work, "rig-webdriver.log"), "wb")
    process = subprocess.Popen([binary, "rig", "webdriver", "--port", "0", "--log-level", "debug",
                                "--driver-log", os.path.join(work, "chromedriver-webdriver.log")],
                               stdout=subprocess.PIPE, stderr=log)
    with open(os.path.join(work, "rig-webdriver.pid"), "w") as handle:   # e2e_guest.sh stops one left behind
        handle.write(str(process.pid))
    line = process.stdout.readline().decode().strip()
    assert line.startswith("http://127.0.0.1:"), f"`latchkey rig webdriver` printed {line!r} (its log: {work}/rig-webdriver.log)"
    return process, line


def rig_nodes():
    """The hidraw nodes of rig keys (uniq latchkey:rig-…)."""
    nodes = []
    for uevent in sorted(os.listdir("/sys/class/hidraw")):
        try:
            with open(f"/sys/class/hidraw/{uevent}/device/uevent", errors="replace") as handle:
                if any(line.startswith("HID_UNIQ=latchkey:rig-") for line in handle.read().splitlines()):
                    nodes.append(uevent)
        except OSError:
            continue
    return nodes


def finish(suite):
    """After the browser quit: (through the intermediary) the session's keys are gone; then the
    summary line. Whether every check passed."""
    if not suite.direct:
        def keys_gone():
            left = rig_nodes()
            assert not left, f"rig keys left: {left}"
            return "no rig key's hidraw node left"
        suite.check("Delete Session (quit) removes the session's keys", keys_gone)
    failed = [name for name, passed, _ in suite.results if not passed]
    print(f"webdriver checks: {len(suite.results) - len(failed)} passed, {len(failed)} failed"
          f"{' (chromedriver direct)' if suite.direct else ''}", flush=True)
    return not failed


def stop_intermediary(process):
    """SIGTERM, and its exit status must be 0 (printed)."""
    process.send_signal(signal.SIGTERM)
    try:
        status = process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        status = process.wait()
    print(f"latchkey rig webdriver exited with status {status}", flush=True)
    return status


def main(work, binary):
    direct = binary is None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", eb.PORT), eb.Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    process, service, driver, suite = None, None, None, None
    try:
        if direct:
            service = subprocess.Popen(["/usr/bin/chromedriver", "--port=9516"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
            url = "http://127.0.0.1:9516"
            time.sleep(2)
        else:
            process, url = start_intermediary(work, binary)
        for attempt in (1, 2):
            browser, _ = eb.open_chromium(work, attempt, webdriver_url=url)
            if browser is not None:
                driver = browser.driver
                break
        if driver is None:
            print("NOT RUN: Chromium did not start or load the test page in two attempts", flush=True)
            return 77
        suite = Suite(driver, url, direct, None if direct else os.path.join(work, "rig-webdriver.log"))
        suite.selenium_checks()
        suite.spec_checks()
        latchkey_checks(suite)
    finally:
        if driver is not None:
            try:
                driver.quit()
            except Exception:  # noqa: BLE001 - the browser may be gone
                pass
        passed = suite is not None and finish(suite)
        if process is not None and stop_intermediary(process) != 0:
            passed = False
        if service is not None:
            service.terminate()
        httpd.shutdown()
    return 0 if passed else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: e2e_webdriver.py WORK_DIR LATCHKEY_BINARY | e2e_webdriver.py WORK_DIR --direct")
    sys.exit(main(sys.argv[1], None if sys.argv[2] == "--direct" else os.path.abspath(sys.argv[2])))
