#!/usr/bin/env python3
"""A headless browser with Latchkey's extension loaded (Chromium: --load-extension; Firefox
ESR: a temporary add-on through Marionette) and the native-messaging host wired by `latchkey
bridge install` for one key's store: what the extension's checks share. `main` opens the browser
(twice at most), serves the test pages and runs `checks(browser, key)`; `Key` reads the store
through the CLI as a user would; `Browser` runs scripts in the page and calls the Signal API;
`check` prints PASS/FAIL and counts it in `results`.
Used by e2e_provider.py (the passkey provider over the VM's uhid key) and by the socket layer's
socket_provider.py and socket_browser_signals.py (socket keys, this machine's browsers)."""

import base64
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_browser as web  # noqa: E402 - beside this file: the page, the browsers

STORE_WAIT = 30      # s for a signal to reach the store (page → extension → host → SQLite)

# Calls one signal method in the page: {ok: true} or {error: "Name: message"}.
SIGNAL_SCRIPT = """
const [method, options, done] = arguments;
try {
  PublicKeyCredential[method](options).then(() => done({ok: true}), e => done({error: e.name + ': ' + e.message}));
} catch (e) { done({error: 'threw ' + e.name + ': ' + e.message}); }
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


def main(work, browser_name, binary, store, extension, checks, label, pages=((web.PORT, web.Page),),
         browser_class=Browser):
    """One browser with Latchkey's extension and native host: `checks(browser, key)` on the
    pages served at `pages` (port, handler). Exit status as a step's: 0 all passed, 1 a failure,
    77 the browser did not come up or load the page in time, twice (nothing was asked of the key)."""
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

