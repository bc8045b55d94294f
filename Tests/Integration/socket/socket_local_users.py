"""Issue 34: another local user can neither capture nor steer anything through Latchkey's sockets,
no answer from a socket reaches the terminal raw, and a socket path appears only once it accepts.

The second user is `nobody` (65534), through setpriv: so these checks need root (as CI has).
"""

import http.client
import http.server
import json
import os
import shutil
import threading
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

from socket_support import BINARY, RESULTS, check, latchkey_cli, wait_for
from latchkey_socket import open_device

NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
HOSTILE = "\u001b]52;c;cHduZWQ=\u0007\u001b[2K\rapproved: login at bank.example"

# A listener run as `nobody` that records every byte it is sent and answers each connection with
# one hostile line: what a squatter in a shared directory would run.
SQUATTER = textwrap.dedent("""
    import json, os, socket, sys, threading
    directory, answer = sys.argv[1], sys.argv[2]
    def serve(name):
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(os.path.join(directory, name))
        os.chmod(os.path.join(directory, name), 0o777)
        listener.listen(8)
        while True:
            connection, _ = listener.accept()
            connection.settimeout(2)
            received = b""
            try:
                connection.sendall(answer.encode() + b"\\n")
                while True:
                    chunk = connection.recv(65536)
                    if not chunk:
                        break
                    received += chunk
            except OSError:
                pass
            with open(os.path.join(directory, name + ".heard"), "ab") as heard:
                heard.write(received)
            connection.close()
    for name in ("rig.control", "default.control"):
        threading.Thread(target=serve, args=(name,), daemon=True).start()
    open(os.path.join(directory, "ready"), "w").close()
    threading.Event().wait()
""")


def nobody_directory(parent, name, mode=0o700):
    path = os.path.join(parent, name)
    os.mkdir(path)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, mode)
    return path


def heard(directory, name):
    path = os.path.join(directory, name + ".heard")
    return open(path, "rb").read() if os.path.exists(path) else b""


def start_squatter(directory, answer):
    process = subprocess.Popen(AS_NOBODY + [sys.executable, "-c", SQUATTER, directory, answer],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(lambda: os.path.exists(os.path.join(directory, "ready")) or process.poll() is not None, 10, "the squatter")
    assert process.poll() is None, process.stderr.read().decode()
    return process


@check("a control socket another user put in the way hears nothing: rig call, approve, python Rig (issue 34)")
def check_squatted_sockets(base):
    # A directory `nobody` made (mode 0777, as the review's /tmp/latchkey-0) with live sockets.
    squat = nobody_directory(base, "squat", 0o777)
    squatter = start_squatter(squat, '{"result":"approved","operation":"login","rp_id":"' + HOSTILE.replace("\u001b", "\\u001b")
                              .replace("\u0007", "\\u0007").replace("\r", "\\r") + '"}')
    try:
        secret = "c2VjcmV0LXByaXZhdGUta2V5LWJ5dGVzLXRoYXQtbXVzdC1ub3QtbGVhaw"
        run = latchkey_cli("rig", "call", "addCredential", '{"authenticatorId":"k","rpId":"a.example","privateKey":"%s"}' % secret,
                           "--control", os.path.join(squat, "rig.control"), "--timeout", "5")
        assert run.returncode == 1, (run.returncode, run.stdout, run.stderr)
        assert "served by uid 65534" in run.stderr and "nothing was sent" in run.stderr, run.stderr
        run = latchkey_cli("approve", "--control", os.path.join(squat, "default.control"), "--timeout", "1")
        assert run.returncode == 1 and "served by uid 65534" in run.stderr, (run.returncode, run.stdout, run.stderr)
        assert "approved" not in run.stdout, run.stdout
        from latchkey_rig import Rig
        try:
            Rig(os.path.join(squat, "rig.control"), timeout=5)
            raise AssertionError("the python client talked to another user's rig")
        except PermissionError as error:
            assert "uid 65534" in str(error), error
        time.sleep(0.5)
        assert heard(squat, "rig.control") == b"" and heard(squat, "default.control") == b"", \
            (heard(squat, "rig.control"), heard(squat, "default.control"))

        # The default path: XDG_RUNTIME_DIR/latchkey made by `nobody`. The client refuses the
        # directory before connecting, and a key refuses to listen in it.
        runtime = tempfile.mkdtemp(prefix="runtime-", dir=base)
        os.chmod(runtime, 0o777)
        os.symlink(squat, os.path.join(runtime, "latchkey"))
        environment = dict(os.environ, XDG_RUNTIME_DIR=runtime)
        run = subprocess.run([BINARY, "approve", "--timeout", "1"], capture_output=True, text=True, env=environment,
                             stdin=subprocess.DEVNULL, timeout=30)
        assert run.returncode == 1 and "must be a directory owned by you with mode 0700" in run.stderr, (run.returncode, run.stderr)
        os.unlink(os.path.join(runtime, "latchkey"))
        os.rename(squat, os.path.join(runtime, "latchkey"))
        run = subprocess.run([BINARY, "presence", "status"], capture_output=True, text=True, env=environment,
                             stdin=subprocess.DEVNULL, timeout=30)
        assert run.returncode == 1 and "owned by uid 65534" in run.stderr, (run.returncode, run.stderr)
        run = subprocess.run([BINARY, "rig", "call", "listAuthenticators"], capture_output=True, text=True, env=environment,
                             stdin=subprocess.DEVNULL, timeout=30)
        assert run.returncode == 1 and "owned by uid 65534" in run.stderr, (run.returncode, run.stderr)
        assert heard(os.path.join(runtime, "latchkey"), "rig.control") == b""
        assert heard(os.path.join(runtime, "latchkey"), "default.control") == b""
    finally:
        squatter.kill()
        squatter.wait()

    # Without XDG_RUNTIME_DIR the default is under the user's home, not /tmp.
    home = tempfile.mkdtemp(prefix="home-", dir=base)
    run = subprocess.run([BINARY, "approve", "--timeout", "1"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         env={"PATH": os.environ["PATH"], "HOME": home}, timeout=30)
    assert run.returncode == 1 and f"{home}/.cache/latchkey/run-" in run.stderr and "/tmp/latchkey-0" not in run.stderr, run.stderr


@check("a key run by another user: its clients refuse it; it turns away a third user even when the socket's mode "
       "lets them in, serves root (as ssh-agent does) and keeps serving its own (issue 34)")
def check_foreign_client(base):
    home = nobody_directory(base, "nobody-home", 0o711)
    control = os.path.join(home, "k.control")
    transport = os.path.join(home, "k.sock")
    log_path = os.path.join(base, "nobody-key.log")
    log = open(log_path, "wb")
    key = subprocess.Popen(AS_NOBODY + ["env", f"HOME={home}", BINARY, "serve", "--transport", f"socket:{transport}",
                                        "--presence", "control", "--control", control, "--store", os.path.join(home, "store"),
                                        "--name", "nobody", "--log-level", "debug"],
                           stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        wait_for(lambda: os.path.exists(control) and os.path.exists(transport) or key.poll() is not None, 20, "nobody's key")
        assert key.poll() is None, open(log_path).read()
        # root's clients refuse a key of another user before sending anything (it could be a squatter).
        run = latchkey_cli("presence", "status", "--control", control)
        assert run.returncode == 1 and "served by uid 65534" in run.stderr, (run.returncode, run.stderr)
        try:
            open_device(transport)
            raise AssertionError("python-fido2 talked to another user's key")
        except PermissionError as error:
            assert "uid 65534" in str(error), error
        # The key itself serves root (who can read its memory anyway) ...
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(control)
            sock.sendall(b'{"v":1,"action":"status"}\n')
            answer = sock.recv(4096).decode()
        assert '"result":"status"' in answer, answer
        # ... and no third user, even where the file's mode would let them in (a filesystem that
        # does not keep modes): uid 65533 gets an error naming both users, on both sockets.
        os.chmod(control, 0o666)
        os.chmod(transport, 0o666)
        third = ["setpriv", "--reuid=65533", "--regid=65533", "--clear-groups"]
        probe = textwrap.dedent("""
            import socket, sys
            control, transport = sys.argv[1], sys.argv[2]
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(5)
                sock.connect(control)
                try:
                    sock.sendall(b'{"v":1,"action":"approve","timeout_ms":100}\\n')
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the key refuses as it accepts, and may have closed before this line came
                print(sock.recv(4096).decode().strip())
            raw = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            raw.settimeout(5)
            raw.connect(transport)
            try:
                raw.send(b"\\xff\\xff\\xff\\xff\\x86\\x00\\x08" + bytes(57))
                print("transport answered", len(raw.recv(64)), "bytes")
            except OSError as error:
                print("transport closed:", type(error).__name__)
        """)
        run = subprocess.run(third + [sys.executable, "-c", probe, control, transport], capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        assert "belongs to uid 65534 (nobody)" in lines[0] and "uid 65533" in lines[0] and "may not use it" in lines[0], lines
        assert lines[1] in ("transport answered 0 bytes", "transport closed: ConnectionResetError",
                            "transport closed: BrokenPipeError"), lines
        # Its own user is still served.
        run = subprocess.run(AS_NOBODY + [BINARY, "presence", "status", "--control", control], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=30)
        assert run.returncode == 0 and "no presence request pending" in run.stdout, (run.returncode, run.stdout, run.stderr)
        assert key.poll() is None
        text = open(log_path, errors="replace").read()
        assert "refused a connection from uid 65533" in text, text[-2000:]
    finally:
        key.send_signal(signal.SIGTERM)
        key.wait(timeout=10)


@check("an answer on the control socket reaches the terminal escaped, never raw (issue 34)")
def check_hostile_answer(base):
    directory = tempfile.mkdtemp(prefix="fake-", dir=base)
    path = os.path.join(directory, "default.control")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    answers = [
        '{"result":"none","message":"%s"}' % HOSTILE.replace("\u001b", "\\u001b").replace("\u0007", "\\u0007").replace("\r", "\\r"),
        '{"result":"approved","operation":"login","rp_id":"bank.example\\u202e\\u001b[31m","user":"a\\u0007"}',
        '{"result":"status","pending":{"id":3,"operation":"login","rp_id":"x\\u001b]0;t\\u0007"},"waiting_answers":0}',
    ]

    def serve():
        for answer in answers:
            connection, _ = listener.accept()
            connection.recv(4096)
            connection.sendall(answer.encode() + b"\n")
            connection.close()
    import threading
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    outputs = []
    for command in (["approve", "--timeout", "1"], ["deny", "--request", "1"], ["presence", "status"]):
        run = subprocess.run([BINARY, *command, "--control", path], capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
        outputs.append(run.stdout + run.stderr)
    thread.join(5)
    listener.close()
    for output in outputs:
        assert not any(byte in output for byte in b"\x1b\x07\r\x9b"), output
        assert "\u202e".encode() not in output, output
    assert b"\\x1B]52;c;" in outputs[0] and b"\\x0Dapproved" in outputs[0], outputs[0]
    assert b"bank.example\\u{202E}\\x1B[31m" in outputs[1], outputs[1]
    assert b"x\\x1B]0;t\\x07" in outputs[2], outputs[2]


@check("a socket path appears only once the key accepts: 25 restarts after kill -9, a client at each appearance (issue 34)")
def check_published_when_ready(base):
    directory = tempfile.mkdtemp(prefix="restart-", dir=base)
    path = os.path.join(directory, "k.sock")
    store = os.path.join(directory, "store")
    refused = []
    for round_number in range(25):
        key = subprocess.Popen([BINARY, "serve", "--transport", f"socket:{path}", "--presence", "auto", "--store", store,
                                "--name", "restart", "--log-level", "error"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # The previous key's socket is stale (kill -9 left it); wait until a new file is there.
            deadline = time.time() + 20
            while True:
                assert time.time() < deadline and key.poll() is None, f"round {round_number}: no socket"
                try:
                    status = os.lstat(path)
                except FileNotFoundError:
                    time.sleep(0.0005)
                    continue
                if round_number and status.st_ino == previous:
                    time.sleep(0.0005)
                    continue
                break
            previous = status.st_ino
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            sock.settimeout(10)
            try:
                sock.connect(path)
                sock.send(b"\xff\xff\xff\xff\x86\x00\x08" + bytes(range(8)) + bytes(49))
                reply = sock.recv(64)
                assert reply[:5] == b"\xff\xff\xff\xff\x86", reply[:8].hex()
            except ConnectionRefusedError:
                refused.append(round_number)
            finally:
                sock.close()
        finally:
            key.kill()
            key.wait()
    assert not refused, f"refused right after the path appeared in rounds {refused}"


class StandInDriver(http.server.BaseHTTPRequestHandler):
    """chromedriver's place: New Session answers a session, anything else null; every request is kept."""
    seen = []

    def do_POST(self):
        self.answer()

    def do_GET(self):
        self.answer()

    def do_DELETE(self):
        self.answer()

    def answer(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        StandInDriver.seen.append((self.command, self.path, self.headers.get("Host"), body))
        value = {"sessionId": "s1", "capabilities": {"browserName": "chrome"}} if self.path == "/session" else None
        data = json.dumps({"value": value}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


# What another user runs against the intermediary's port: one request, and what came back.
FOREIGN_CLIENT = textwrap.dedent("""
    import socket, sys
    connection = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
    connection.sendall(b"GET /session/s1/webauthn/authenticator/k1/credentials HTTP/1.1\\r\\nHost: 127.0.0.1:" + sys.argv[1].encode()
                       + b"\\r\\n\\r\\n")
    answer = b""
    try:
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    except ConnectionResetError:
        # Refused at accept: the close can reach the client before it reads the refusal (its request unread).
        answer += b"(connection reset)"
    sys.stdout.write(answer.decode(errors="replace"))
""")


@check("latchkey rig webdriver (issue 46): another user's connection is answered a refusal and closed, nothing reaching "
       "the driver or the keys; a web page's request (an Origin, a rebound Host) gets 403; the owner's commands pass on "
       "to the driver, a virtual authenticator is a real key on its socket, and SIGTERM exits 0 with the key gone")
def check_webdriver_intermediary(base):
    keys = os.path.join(base, "webdriver-keys")
    os.mkdir(keys, 0o700)
    StandInDriver.seen = []
    driver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StandInDriver)
    threading.Thread(target=driver.serve_forever, daemon=True).start()
    log_path = os.path.join(base, "webdriver.log")
    process = subprocess.Popen([BINARY, "rig", "webdriver", "--port", "0", "--driver-url", f"http://127.0.0.1:{driver.server_port}",
                                "--socket-keys", keys, "--log-level", "debug"],
                               stdout=subprocess.PIPE, stderr=open(log_path, "wb"), stdin=subprocess.DEVNULL)
    try:
        url = process.stdout.readline().decode().strip()
        assert url.startswith("http://127.0.0.1:"), f"printed {url!r}: {open(log_path, errors='replace').read()[-400:]}"
        port = int(url.rsplit(":", 1)[1])

        def send(method, path, body=None, headers=None):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            data = None if body is None else json.dumps(body).encode()
            connection.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
            response = connection.getresponse()
            payload = response.read()
            connection.close()
            return response.status, payload

        status, payload = send("POST", "/session", {"capabilities": {}})
        assert status == 200 and json.loads(payload)["value"]["sessionId"] == "s1", (status, payload)
        assert StandInDriver.seen[-1][2] == f"127.0.0.1:{driver.server_port}", StandInDriver.seen[-1]
        status, payload = send("POST", "/session/s1/webauthn/authenticator", {"protocol": "ctap2_1", "transport": "usb"})
        assert status == 200 and json.loads(payload)["value"] == "k1", (status, payload)
        sockets = [name for name in os.listdir(keys) if name.endswith(".sock")]
        assert len(sockets) == 1, sockets
        device = open_device(os.path.join(keys, sockets[0]), timeout=10)
        try:
            from fido2.ctap2 import Ctap2
            versions = Ctap2(device).info.versions
        finally:
            device.close()
        assert "FIDO_2_1" in versions, versions
        seen = len(StandInDriver.seen)

        for headers, why in (({"Origin": "http://localhost:8765"}, "an Origin"),
                             ({"Host": f"attacker.example:{port}"}, "a rebound Host"),
                             ({"Sec-Fetch-Mode": "no-cors"}, "Sec-Fetch")):
            status, payload = send("POST", "/session", {"capabilities": {}}, headers)
            assert status == 403, f"{why}: {status} {payload[:200]!r}"

        run = subprocess.run(AS_NOBODY + [sys.executable, "-c", FOREIGN_CLIENT, str(port)], capture_output=True, text=True,
                             timeout=30)
        assert run.returncode == 0 and ("may not use it" in run.stdout or run.stdout == "(connection reset)") \
            and "credentialId" not in run.stdout, f"nobody got: {run.stdout[:300]!r} {run.stderr[-300:]!r}"
        assert len(StandInDriver.seen) == seen, f"the driver heard from a refused request: {StandInDriver.seen[seen:]}"
        wait_for(lambda: "refused a connection from uid 65534" in open(log_path, errors="replace").read(), 5,
                 "the refusal in the intermediary's log")

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0, "exit status"
        assert not [name for name in os.listdir(keys) if name.endswith(".sock")], os.listdir(keys)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        driver.shutdown()


def test_local_users():
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        print("SKIP  local users: needs root and setpriv (a second user, nobody); not counted", flush=True)
        return
    base = tempfile.mkdtemp(prefix="latchkey-users-")
    os.chmod(base, 0o711)   # nobody reaches its own directories inside, and lists nothing
    try:
        check_squatted_sockets(base)
        check_foreign_client(base)
        check_hostile_answer(base)
        check_published_when_ready(base)
        check_webdriver_intermediary(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
