#!/usr/bin/env python3
"""A small Marionette client, standard library only: drives Firefox (Debian's firefox-esr) without
geckodriver, which Debian 12 does not package.

Firefox started with `--marionette` listens on 127.0.0.1 (port from the `marionette.port` pref; 0:
a free one, written to MARIONETTE_PORT_FILE in the profile). Each message either way is
`LENGTH:JSON` (LENGTH: the JSON's byte count, in decimal). The server first sends a hello object
({"applicationType": "gecko", "marionetteProtocol": 3}); then commands `[0, id, name, params]`
and responses `[1, id, error, result]`, error being null or {"error", "message", "stacktrace"}.
Every wait here is bounded; an error from a Firefox that has exited says so, with the tail of its
output (stdout and stderr, kept in a log file beside the profile).

    ff = Marionette()
    ff.start("/usr/bin/firefox-esr", "/tmp/profile", port=0, prefs={"some.pref": True})
    ff.navigate("http://localhost:8000/")
    result = ff.execute_async("const [x, done] = arguments; done(x + 1);", [41], timeout=30)
    ff.quit()

Run as a script it checks itself against a local page: python3 marionette.py [FIREFOX_BINARY]."""

import json
import os
import signal
import socket
import subprocess
import time

MARIONETTE_PORT_FILE = "MarionetteActivePort"

# A test profile's user.js (checked against Debian's firefox-esr 153: each name below is read by
# that build, in libxul's static prefs or its omni.ja; Marionette also applies its own
# "recommended" prefs once it runs, but only after start-up, too late for first-run pages).
DEFAULT_PREFS = {
    # WebAuthn on: the Web API, USB/HID tokens (authenticator-rs over hidraw), and no software
    # token that could answer instead of the key under test (these are the defaults; set anyway).
    "security.webauth.webauthn": True,
    "security.webauth.webauthn_enable_usbtoken": True,
    "security.webauth.webauthn_enable_softtoken": False,
    "security.webauthn.ctap2": True,
    # PublicKeyCredential.parseCreationOptionsFromJSON / .toJSON() (on by default since 119).
    "security.webauthn.enable_json_serialization_methods": True,
    # A page asking for "direct" attestation otherwise waits in a consent prompt.
    "security.webauthn.always_allow_direct_attestation": True,
    # No first-run, default-browser or what's-new pages, no data-submission notice.
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.startup.page": 0,
    "browser.aboutwelcome.enabled": False,
    "startup.homepage_welcome_url": "about:blank",
    "startup.homepage_welcome_url.additional": "",
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.policy.firstRunURL": "",
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    # No update checks. Debian's vendor.js already locks `app.update.enabled` to false (nothing
    # in Firefox 153 reads that name any more), so it is not set here; this is the switch the
    # update service does read (Marionette sets it too, later).
    "app.update.disabledForTesting": True,
    # No session restore or safe-mode offer after an unclean stop (a killed earlier run).
    "browser.sessionstore.resume_from_crash": False,
    "toolkit.startup.max_resumed_crashes": -1,
    # Straight to the network: no proxy from the environment between Firefox and localhost.
    "network.proxy.type": 0,
}


class MarionetteError(Exception):
    """A command failed: `error` is Marionette's error code (e.g. "javascript error"), or ours."""

    def __init__(self, message, error="client error", stacktrace=None):
        super().__init__(message)
        self.error = error
        self.stacktrace = stacktrace


class ScriptTimeout(MarionetteError):
    """Firefox ended a script at the session's script timeout ("script timeout")."""


class NoAnswer(MarionetteError):
    """Firefox did not answer within this client's bound (it may be wedged or just slow)."""


class FirefoxExited(MarionetteError):
    """Firefox exited, or closed the connection, before it answered."""


def free_port():
    """A TCP port free on 127.0.0.1 now (another process may take it before Firefox does:
    prefer port 0, which lets Firefox choose)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def user_js(prefs):
    """The text of a user.js setting each pref (str, bool, int)."""
    lines = []
    for name, value in prefs.items():
        if not isinstance(value, (str, bool, int)):
            raise TypeError(f"pref {name}: {value!r} is not a str, bool or int")
        lines.append(f"user_pref({json.dumps(name)}, {json.dumps(value)});")
    return "\n".join(lines) + "\n"


class Marionette:
    def __init__(self):
        self.process = None
        self.log_path = None
        self.sock = None
        self.capabilities = {}
        self.session_id = None
        self._buffer = b""
        self._next_id = 1
        self._timeouts = {}
        self._log = None

    # --- start and stop ---------------------------------------------------------------------

    def start(self, binary, profile_dir, port=0, prefs=None, timeout=120.0, log_path=None,
              extra_args=(), env=None, capabilities=None, system_access=True, pid_file=None):
        """Starts `binary --headless --marionette` on a profile (created if missing, its user.js
        written: DEFAULT_PREFS, then `prefs`, then marionette.port), connects and opens a
        WebDriver session; all within `timeout` seconds. `port` 0: Firefox picks a free one.
        `system_access`: allow the chrome context (Firefox 138+ wants -remote-allow-system-access).
        `pid_file`: written with Firefox's pid (also its process group) as soon as it runs."""
        if self.process is not None:
            raise MarionetteError("already started")
        deadline = time.monotonic() + timeout
        os.makedirs(profile_dir, exist_ok=True)
        all_prefs = dict(DEFAULT_PREFS)
        all_prefs.update(prefs or {})
        all_prefs["marionette.port"] = int(port)
        with open(os.path.join(profile_dir, "user.js"), "w") as out:
            out.write(user_js(all_prefs))
        port_file = os.path.join(profile_dir, MARIONETTE_PORT_FILE)
        if os.path.exists(port_file):
            os.remove(port_file)   # a stale one (a killed run) would name a dead port
        self.log_path = log_path or profile_dir.rstrip("/") + ".log"
        self._log = open(self.log_path, "ab")
        environment = dict(os.environ if env is None else env)
        environment.update({"MOZ_HEADLESS": "1", "MOZ_CRASHREPORTER_DISABLE": "1",
                            "MOZ_DISABLE_AUTO_SAFE_MODE": "1"})
        argv = [binary, "--headless", "--marionette", "--no-remote", "--profile", profile_dir]
        if system_access:
            argv.append("--remote-allow-system-access")
        argv += list(extra_args)
        try:
            # A session of its own: quit() can end Firefox's content processes with it (its group).
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                            stderr=subprocess.STDOUT, env=environment, start_new_session=True)
        except OSError as error:
            self._close_log()
            raise MarionetteError(f"cannot run {binary}: {error}") from error
        if pid_file:
            with open(pid_file, "w") as out:
                out.write(f"{self.process.pid}\n")

        self._connect(port, port_file, deadline)
        hello = self._receive(deadline, "the hello")
        if not isinstance(hello, dict) or hello.get("marionetteProtocol") != 3:
            raise MarionetteError(f"unexpected hello from Marionette: {hello!r}")
        caps = {"timeouts": {"implicit": 0, "pageLoad": 120_000, "script": 30_000},
                "pageLoadStrategy": "normal",
                # A prompt (say a PIN prompt) stays up for diagnostics instead of being dismissed.
                "unhandledPromptBehavior": "ignore"}
        caps.update(capabilities or {})
        result = self.command("WebDriver:NewSession", caps, timeout=max(1.0, deadline - time.monotonic()))
        self.session_id = result.get("sessionId")
        self.capabilities = result.get("capabilities", {})
        self._timeouts = dict(self.capabilities.get("timeouts", caps["timeouts"]))
        return self.capabilities

    def _connect(self, port, port_file, deadline):
        while True:
            self._check_alive("start-up")
            if time.monotonic() > deadline:
                raise NoAnswer(f"Marionette did not listen within the start-up bound; {self._tail_text()}",
                               error="timeout")
            actual = port
            if not port:
                try:
                    with open(port_file) as f:
                        actual = int(f.read().strip() or 0)
                except (OSError, ValueError):
                    actual = 0
            if actual:
                try:
                    self.sock = socket.create_connection(("127.0.0.1", actual), timeout=5)
                    return
                except OSError:
                    pass
            time.sleep(0.25)

    def quit(self, timeout=30.0):
        """Marionette:Quit, then waits for Firefox to exit (its process group is killed after
        `timeout` s). Safe to call more than once, or after a failed start."""
        if self.process is None:
            self._close_socket()
            self._close_log()
            return
        if self.sock is not None and self.session_id is not None and self.process.poll() is None:
            try:
                self.command("Marionette:Quit", {"flags": ["eForceQuit"]}, timeout=timeout)
            except MarionetteError:
                pass   # the connection closes as Firefox goes; a wedged one is killed below
            self.session_id = None
        self._close_socket()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill_group(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._kill_group(signal.SIGKILL)
                self.process.wait(timeout=10)
        # Content processes of a Firefox killed hard may linger in its group.
        self._kill_group(signal.SIGKILL)
        self.process = None
        self._close_log()

    def delete_session(self, timeout=20.0):
        self.command("WebDriver:DeleteSession", {}, timeout=timeout)
        self.session_id = None

    def _kill_group(self, sig):
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _close_socket(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def _close_log(self):
        if self._log is not None:
            self._log.close()
            self._log = None

    # --- commands ---------------------------------------------------------------------------

    def command(self, name, params=None, timeout=30.0):
        """Sends one command and returns its result (a dict); raises MarionetteError (its
        subclasses for timeouts and a Firefox that exited) when there is none."""
        if self.sock is None:
            raise FirefoxExited(f"{name}: not connected; {self._tail_text()}")
        msg_id = self._next_id
        self._next_id += 1
        data = json.dumps([0, msg_id, name, params or {}]).encode()
        try:
            self.sock.sendall(str(len(data)).encode() + b":" + data)
        except OSError as error:
            raise FirefoxExited(f"{name}: sending failed ({error}); {self._tail_text()}") from error
        deadline = time.monotonic() + timeout
        while True:
            packet = self._receive(deadline, name)
            # A late answer to an earlier command this client stopped waiting for is skipped.
            if isinstance(packet, list) and len(packet) == 4 and packet[0] == 1 and packet[1] == msg_id:
                break
        _, _, error, result = packet
        if error:
            code = error.get("error", "unknown error")
            kind = ScriptTimeout if code == "script timeout" else MarionetteError
            raise kind(f"{name}: {code}: {error.get('message', '')}", error=code,
                       stacktrace=error.get("stacktrace"))
        return result if isinstance(result, dict) else {"value": result}

    def set_timeouts(self, script=None, page_load=None):
        """Session timeouts in seconds (sent only when changed)."""
        wanted = {}
        if script is not None and self._timeouts.get("script") != int(script * 1000):
            wanted["script"] = int(script * 1000)
        if page_load is not None and self._timeouts.get("pageLoad") != int(page_load * 1000):
            wanted["pageLoad"] = int(page_load * 1000)
        if wanted:
            self.command("WebDriver:SetTimeouts", wanted)
            self._timeouts.update(wanted)

    def navigate(self, url, timeout=120.0):
        """Loads `url` in the current tab; Firefox gives up after `timeout` s ("timeout")."""
        self.set_timeouts(page_load=timeout)
        self.command("WebDriver:Navigate", {"url": url}, timeout=timeout + 15)

    def execute(self, script, args=(), timeout=30.0):
        """Runs `script` as a function body (`arguments` holds args); returns what it returns."""
        self.set_timeouts(script=timeout)
        result = self.command("WebDriver:ExecuteScript", {"script": script, "args": list(args)},
                              timeout=timeout + 15)
        return result.get("value")

    def execute_async(self, script, args=(), timeout=90.0):
        """Runs `script` with `arguments` = args + a resolve callback; returns the value passed to
        the callback. Firefox ends the script after `timeout` s (ScriptTimeout)."""
        self.set_timeouts(script=timeout)
        result = self.command("WebDriver:ExecuteAsyncScript", {"script": script, "args": list(args)},
                              timeout=timeout + 15)
        return result.get("value")

    def set_context(self, context):
        """"content" (the page) or "chrome" (the browser window, privileged)."""
        self.command("Marionette:SetContext", {"value": context})

    def execute_chrome(self, script, args=(), timeout=30.0):
        """execute() in the chrome context (Services, the browser window's PopupNotifications…)."""
        self.set_context("chrome")
        try:
            return self.execute(script, args, timeout)
        finally:
            self.set_context("content")

    def alert_text(self):
        """The text of an open modal prompt (an alert, a PIN prompt), or None."""
        try:
            return self.command("WebDriver:GetAlertText", {}, timeout=15).get("value")
        except MarionetteError as error:
            if error.error == "no such alert":
                return None
            raise

    # --- transport --------------------------------------------------------------------------

    def _receive(self, deadline, what):
        """One `LENGTH:JSON` packet, parsed."""
        while True:
            packet = self._take_packet()
            if packet is not None:
                return packet
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise NoAnswer(f"{what}: no answer from Firefox in time; {self._tail_text(alive_too=True)}",
                               error="timeout")
            self.sock.settimeout(min(1.0, remaining))
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                self._check_alive(what)
                continue
            except OSError as error:
                self._close_socket()
                self._wait_briefly()
                raise FirefoxExited(f"{what}: connection lost ({error}); {self._tail_text()}") from error
            if not chunk:
                self._close_socket()
                self._wait_briefly()
                raise FirefoxExited(f"{what}: Firefox closed the connection; {self._tail_text()}")
            self._buffer += chunk

    def _take_packet(self):
        colon = self._buffer.find(b":")
        if colon < 0:
            if len(self._buffer) > 20:
                raise MarionetteError(f"bad packet header: {self._buffer[:40]!r}")
            return None
        header = self._buffer[:colon]
        if not header.isdigit():
            raise MarionetteError(f"bad packet header: {self._buffer[:40]!r}")
        length = int(header)
        if len(self._buffer) < colon + 1 + length:
            return None
        body = self._buffer[colon + 1:colon + 1 + length]
        self._buffer = self._buffer[colon + 1 + length:]
        return json.loads(body)

    def _check_alive(self, what):
        if self.process is not None and self.process.poll() is not None:
            raise FirefoxExited(f"{what}: {self._tail_text()}")

    def _wait_briefly(self):
        if self.process is not None:
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                pass

    def log_tail(self, lines=25):
        """The last lines Firefox printed (stdout and stderr)."""
        if not self.log_path:
            return ""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 16384))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _tail_text(self, alive_too=False):
        state = ""
        if self.process is not None:
            code = self.process.poll()
            if code is not None:
                state = f"Firefox exited with status {code}; "
            elif alive_too:
                state = "Firefox is still running; "
        tail = self.log_tail()
        return state + (f"its output ({self.log_path}) ends:\n{tail}" if tail else "it printed nothing")


# --- self-check against a local page (no security key needed) --------------------------------

PAGE_CHECK = """
return {secure: window.isSecureContext, title: document.title,
        publicKeyCredential: typeof PublicKeyCredential,
        create: typeof (navigator.credentials && navigator.credentials.create),
        get: typeof (navigator.credentials && navigator.credentials.get),
        parseCreationOptionsFromJSON: typeof PublicKeyCredential.parseCreationOptionsFromJSON,
        parseRequestOptionsFromJSON: typeof PublicKeyCredential.parseRequestOptionsFromJSON,
        userAgent: navigator.userAgent};
"""
PREFS_CHECK = """
const names = arguments[0], out = {};
for (const n of names) {
  const t = Services.prefs.getPrefType(n);
  out[n] = t == Services.prefs.PREF_BOOL ? Services.prefs.getBoolPref(n)
         : t == Services.prefs.PREF_INT ? Services.prefs.getIntPref(n)
         : t == Services.prefs.PREF_STRING ? Services.prefs.getStringPref(n) : "(not set)";
}
return out;
"""


def self_check(binary):
    import http.server
    import tempfile
    import threading

    page = b"<!doctype html><title>marionette self-check</title><body>ok</body>"

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://localhost:{httpd.server_address[1]}/"
    work = tempfile.mkdtemp(prefix="marionette-check-")
    ff = Marionette()
    failures = []

    def check(what, ok, detail=None):
        print(f"{'ok  ' if ok else 'FAIL'} {what}{'' if detail is None else ': ' + str(detail)}", flush=True)
        if not ok:
            failures.append(what)

    started = time.time()
    try:
        caps = ff.start(binary, os.path.join(work, "profile"), port=0, timeout=120)
        check("start", True, f"{caps.get('browserName')} {caps.get('browserVersion')} in {time.time() - started:.1f} s")
        ff.navigate(url, timeout=60)
        info = ff.execute(PAGE_CHECK)
        check("page is a secure context", info["secure"] is True, info["title"])
        for name in ("publicKeyCredential", "create", "get", "parseCreationOptionsFromJSON",
                     "parseRequestOptionsFromJSON"):
            check(f"{name} exists", info[name] == "function", info[name])
        value = ff.execute_async("const [a, b, done] = arguments; setTimeout(() => done({sum: a + b}), 200);",
                                 [20, 22], timeout=10)
        check("execute_async resolves", value == {"sum": 42}, value)
        try:
            ff.execute_async("const done = arguments[0]; null.boom;", [], timeout=10)
            check("a script error is reported", False, "no error")
        except MarionetteError as error:
            check("a script error is reported", error.error == "javascript error", str(error).splitlines()[0])
        began = time.time()
        try:
            ff.execute_async("const done = arguments[0]; /* never resolves */", [], timeout=2)
            check("a script timeout is reported", False, "no error")
        except ScriptTimeout as error:
            check("a script timeout is reported", True, f"after {time.time() - began:.1f} s: {error}")
        seen = ff.execute_async("const done = arguments[0]; done(document.title);", [], timeout=10)
        check("the session still works after a timeout", seen == "marionette self-check", seen)
        prefs = ff.execute_chrome(PREFS_CHECK, [sorted(DEFAULT_PREFS) + ["marionette.port"]])
        wrong = {n: v for n, v in prefs.items() if n in DEFAULT_PREFS and v != DEFAULT_PREFS[n]}
        check("the profile's prefs are in effect", not wrong, wrong or f"{len(prefs)} prefs read, marionette.port={prefs['marionette.port']}")
        prompts = ff.execute_chrome("const w = Services.wm.getMostRecentWindow('navigator:browser');"
                                    "return w.PopupNotifications._currentNotifications.map(n => n.id);")
        check("chrome context reads the browser's prompts", isinstance(prompts, list), prompts)
        check("no modal prompt is open", ff.alert_text() is None)
    except MarionetteError as error:
        check("marionette", False, error)
    finally:
        began = time.time()
        ff.quit()
        print(f"quit in {time.time() - began:.1f} s", flush=True)
        httpd.shutdown()
    print(f"marionette self-check: {len(failures)} failed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    import sys
    sys.exit(self_check(sys.argv[1] if len(sys.argv) > 1 else "/usr/bin/firefox-esr"))
