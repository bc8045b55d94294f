#!/usr/bin/env python3
"""The extension installed for good by the Debian package, as a user (not root) meets it: Debian's
Chromium (started as a desktop starts it, /usr/bin/chromium) and Firefox ESR, each on a fresh
profile, started twice; both times Latchkey's page script is in an http://localhost page with no
flag, Developer mode or temporary add-on of ours. Then the system-wide native-messaging manifest
each browser reads starts /usr/lib/latchkey/native-host, which answers the extension's first
message (the public suffix rules) for the user.
Run by e2e_package.sh after `apt install`. Prints PASS/FAIL per check and
`package browsers: N passed, N failed`. Usage: e2e_package_browsers.py WORK
Exit 77: a browser never came up in two tries (not run)."""

import http.server
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, os.pardir, "support")))
import marionette  # noqa: E402
import websocket  # noqa: E402 - websocket-client, for Chromium's DevTools protocol

PORT = 8791
PAGE_URL = f"http://localhost:{PORT}/"
MARKER = "Object.prototype.hasOwnProperty.call(PublicKeyCredential, Symbol.for('latchkey.signalBridge'))"
START = 240     # s for a browser to start and show the page under TCG
results = []


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<!doctype html><title>Latchkey package check</title><p>ok"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def check(name, body):
    began = time.time()
    try:
        detail = body()
    except Exception as error:  # noqa: BLE001 - this check's FAIL; the run goes on
        results.append(False)
        print(f"FAIL  {name} ({time.time() - began:.1f} s): {type(error).__name__}: {error}", flush=True)
        return
    results.append(True)
    print(f"PASS  {name} ({time.time() - began:.1f} s){': ' + detail if detail else ''}", flush=True)


def chromium_marker(profile):
    """Starts /usr/bin/chromium (the Debian wrapper, as a desktop does) on `profile`, opens the page
    through DevTools and reads Latchkey's marker in it; quits. Returns (marker, the flag it got)."""
    port_file = os.path.join(profile, "DevToolsActivePort")
    if os.path.exists(port_file):
        os.remove(port_file)
    process = subprocess.Popen(["/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                                "--disable-gpu-process-crash-limit", "--no-first-run", f"--user-data-dir={profile}",
                                "--remote-debugging-port=0", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=open(profile + ".log", "ab"), start_new_session=True)
    try:
        deadline = time.time() + START
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            assert process.poll() is None, f"chromium exited ({process.returncode})"
            assert time.time() < deadline, "chromium's DevTools port never appeared"
            time.sleep(1)
        port = open(port_file).read().split()[0]
        request = urllib.request.Request(f"http://127.0.0.1:{port}/json/new?{PAGE_URL}", method="PUT")
        with urllib.request.urlopen(request, timeout=60) as answer:
            target = json.load(answer)
        socket = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        try:
            seen, ask = None, 0
            while time.time() < deadline:
                ask += 1
                socket.send(json.dumps({"id": ask, "method": "Runtime.evaluate",
                                        "params": {"expression": f"location.href === '{PAGE_URL}' && {MARKER}",
                                                   "returnByValue": True}}))
                while True:
                    message = json.loads(socket.recv())
                    if message.get("id") == ask:
                        break
                seen = message.get("result", {}).get("result", {}).get("value")
                if seen is True:
                    break
                time.sleep(2)
        finally:
            socket.close()
        with open(f"/proc/{process.pid}/cmdline", "rb") as cmdline:
            flags = [a.decode() for a in cmdline.read().split(b"\0") if a.startswith(b"--load-extension")]
        return seen is True, flags
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def firefox_marker(profile):
    """Starts firefox-esr on `profile` (Marionette, no add-on installed by us), loads the page and
    reads Latchkey's marker; quits. Returns (marker, what the add-on manager says of it)."""
    ff = marionette.Marionette()
    try:
        # Marionette's recommended automation prefs include extensions.enabledScopes 5 (profile
        # and application only), kept in the profile: a second start would drop every add-on of
        # the system scope — the test's doing, not a user's Firefox. Off, as a user has it.
        ff.start("/usr/bin/firefox-esr", profile, port=0, timeout=START, log_path=profile + ".log",
                 prefs={"remote.prefs.recommended": False})
        deadline = time.time() + 120
        seen = False
        while not seen and time.time() < deadline:
            ff.navigate(PAGE_URL, timeout=120)
            seen = ff.execute(f"return {MARKER};", timeout=30) is True
            if not seen:
                time.sleep(3)
        ff.set_context("chrome")
        try:
            addon = ff.execute_async("""const done = arguments[arguments.length - 1];
                const { AddonManager } = ChromeUtils.importESModule('resource://gre/modules/AddonManager.sys.mjs');
                AddonManager.getAddonByID('signal-bridge@latchkey').then(a => done(a ? {active: a.isActive,
                  scope: a.scope, temporary: a.temporarilyInstalled, signed: a.signedState} : null), e => done(String(e)));""",
                timeout=60)
        finally:
            ff.set_context("content")
        return seen, addon
    finally:
        ff.quit(timeout=30)


def native_host_answers(manifest, caller):
    """Starts the host `manifest` names, as the browser would, and sends the extension's first message."""
    with open(manifest) as source:
        path = json.load(source)["path"]
    message = json.dumps({"id": 1, "type": "publicSuffixes"}).encode()
    done = subprocess.run([path, manifest, caller] if "mozilla" in manifest else [path, caller],
                          input=struct.pack("<I", len(message)) + message, capture_output=True, timeout=120)
    length = struct.unpack("<I", done.stdout[:4])[0]
    reply = json.loads(done.stdout[4:4 + length])
    assert reply.get("ok") is True and len(reply.get("rules", [])) > 1000, f"{path}: {str(reply)[:200]} {done.stderr[-300:]}"
    return f"{path} answered with {len(reply['rules'])} public suffix rules"


def main(work):
    os.makedirs(work, exist_ok=True)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        for browser, opener in (("chromium", chromium_marker), ("firefox", firefox_marker)):
            profile = os.path.join(work, f"{browser}-profile")
            for start in (1, 2):
                def one(opener=opener, profile=profile):
                    seen, detail = opener(profile)
                    assert seen, f"Latchkey's script is not in the page ({detail})"
                    if browser == "firefox":
                        assert isinstance(detail, dict) and detail["active"] and not detail["temporary"], detail
                    return f"{detail}"
                check(f"{browser}, start {start} on a fresh profile as a user: Latchkey's extension is in the page "
                      "(installed by the package, no flag or temporary add-on of ours)", one)
        check("Chromium's system-wide host manifest starts the packaged launcher for the user",
              lambda: native_host_answers("/etc/chromium/native-messaging-hosts/org.latchkey.bridge.json",
                                          "chrome-extension://glcknlabcnogofidfcaeigbkbeieoaoj/"))
        check("Firefox's system-wide host manifest starts the packaged launcher for the user",
              lambda: native_host_answers("/usr/lib/mozilla/native-messaging-hosts/org.latchkey.bridge.json",
                                          "signal-bridge@latchkey"))
    finally:
        httpd.shutdown()
    passed = sum(results)
    print(f"package browsers: {passed} passed, {len(results) - passed} failed", flush=True)
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("Usage: ")[1].splitlines()[0])
    sys.exit(main(sys.argv[1]))
