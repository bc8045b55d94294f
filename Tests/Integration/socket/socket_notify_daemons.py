"""Socket suite: --presence notify against a second real notification server, GNOME's
notification-daemon (Debian's notification-daemon 3.20), on Xvfb and a private D-Bus session,
answered as a person answers it: xdotool clicks on its bubble, found on the screen (xwd).

Why this daemon: it runs headless under Xvfb with nothing but a session bus, and it does what
the key relies on — a click on the bubble invokes the "default" action (Approve) and the
"default" action is not shown as a button of its own. xfce4-notifyd 0.7.3 (Debian 12) does
neither: a click on its bubble closes it without an action (the key denies) and it shows
"default" as a second Approve button."""

import re
import shutil

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports
from socket_presence import desktop_session

NOTIFICATION_DAEMON = "/usr/lib/notification-daemon/notification-daemon"
# Each tool and the Debian package that has it.
TOOLS = {"Xvfb": "xvfb", "xdpyinfo": "x11-utils", "xwd": "x11-apps", "xdotool": "xdotool", "dbus-run-session": "dbus",
         "dbus-send": "dbus", "dbus-monitor": "dbus", "notify-send": "libnotify-bin"}


def require_tools():
    missing = [f"{tool} (Debian: {package})" for tool, package in TOOLS.items() if not shutil.which(tool)]
    if not os.access(NOTIFICATION_DAEMON, os.X_OK):
        missing.append(f"{NOTIFICATION_DAEMON} (Debian: notification-daemon)")
    assert not missing, "not installed: " + ", ".join(missing) + " (scripts/test installs them)"


class BusLog:
    """`dbus-monitor` on the private bus, watching org.freedesktop.Notifications: each message as
    (header, member, arguments), the arguments being its top-level strings and uint32s."""

    def __init__(self, address, path):
        self.path = path
        self.process = subprocess.Popen(["dbus-monitor", "--address", address, "interface='org.freedesktop.Notifications'"],
                                        stdin=subprocess.DEVNULL, stdout=open(path, "w"), stderr=subprocess.STDOUT)
        # dbus-monitor prints its own NameLost once it has become a monitor.
        wait_for(lambda: "member=NameLost" in open(path, errors="replace").read() or self.process.poll() is not None,
                 seconds=10, what="dbus-monitor to start")
        assert self.process.poll() is None, open(path, errors="replace").read()

    def messages(self):
        messages = []
        for line in open(self.path, errors="replace").read().splitlines():
            if line and not line.startswith(" "):
                member = re.search(r"member=(\w+)", line)
                messages.append((line, member.group(1) if member else "", []))
            elif messages and line.startswith("   ") and not line.startswith("    "):
                text = line.strip()
                if text.startswith('string "') and text.endswith('"'):
                    messages[-1][2].append(text[len('string "'):-1])
                elif text.startswith("uint32 "):
                    messages[-1][2].append(int(text.split()[1]))
        return [message for message in messages if message[1] not in ("NameAcquired", "NameLost")]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=5)


class Screen:
    """The Xvfb display: notification-daemon's bubble (the window named "Notification"), its pixels
    (xwd) and clicks on it (xdotool)."""

    def __init__(self, display):
        self.env = {**os.environ, "DISPLAY": display}

    def xdotool(self, *args):
        return subprocess.run(["xdotool", *args], env=self.env, capture_output=True, text=True, timeout=10)

    def bubbles(self):
        return self.xdotool("search", "--onlyvisible", "--name", "^Notification$").stdout.split()

    def geometry(self, window):
        shell = dict(line.split("=", 1) for line in self.xdotool("getwindowgeometry", "--shell", window).stdout.split())
        return int(shell["X"]), int(shell["Y"]), int(shell["WIDTH"]), int(shell["HEIGHT"])

    def luminance(self, left, top, width, height):
        """Rows of the screen's grey levels (0-255) in that rectangle, from `xwd -root`."""
        data = subprocess.run(["xwd", "-root", "-silent"], env=self.env, capture_output=True, timeout=10, check=True).stdout
        header = struct.unpack(">25I", data[:100])
        header_size, pixmap_format, bits_per_pixel, bytes_per_line = header[0], header[2], header[11], header[12]
        assert pixmap_format == 2 and bits_per_pixel in (24, 32), f"xwd: format {pixmap_format}, {bits_per_pixel} bits per pixel"
        order = "little" if header[7] == 0 else "big"
        masks = header[14:17]
        shifts = [(mask & -mask).bit_length() - 1 for mask in masks]
        step = bits_per_pixel // 8
        start = header_size + 12 * header[19]
        rows = []
        for y in range(top, top + height):
            line = data[start + y * bytes_per_line:start + (y + 1) * bytes_per_line]
            row = []
            for x in range(left, left + width):
                value = int.from_bytes(line[x * step:(x + 1) * step], order)
                row.append(sum(((value & mask) >> shift) * 255 // (mask >> shift) for mask, shift in zip(masks, shifts)) // 3)
            rows.append(row)
        return rows

    def layout(self, window):
        """Where to click on the bubble `window`, in screen coordinates: its body (the default
        action), its last button (Deny) and its close button; None while it is not drawn as
        expected (a title line with the close button at its right, the body, and exactly two
        buttons, Approve and Deny, on the last line of text)."""
        left, top, width, height = self.geometry(window)
        grey = self.luminance(left, top, width, height)
        margin, text_left = 12, width // 3   # clear of the rounded corners, and of the icon on the left

        def dark(y, x):
            return grey[y][x] < 128
        rows = [y for y in range(margin, height - margin) if any(dark(y, x) for x in range(text_left, width - margin))]
        lines = []
        for y in rows:
            if lines and y - lines[-1][-1] <= 2:
                lines[-1].append(y)
            else:
                lines.append([y])

        def words(line, gap=8):
            columns = [x for x in range(text_left, width - margin) if any(dark(y, x) for y in line)]
            groups = []
            for x in columns:
                if groups and x - groups[-1][-1] <= gap:
                    groups[-1].append(x)
                else:
                    groups.append([x])
            return [(group[0] + group[-1]) // 2 for group in groups]

        if len(lines) < 3:
            return None
        buttons, title = words(lines[-1]), words(lines[0])
        if len(buttons) != 2 or title[-1] < width - 50:
            return None
        middle = lambda line: (line[0] + line[-1]) // 2  # noqa: E731
        body = lines[-2]
        body_columns = words(body, gap=40)
        return {"body": (left + body_columns[0], top + middle(body)), "deny": (left + buttons[-1], top + middle(lines[-1])),
                "close": (left + title[-1], top + middle(lines[0]))}

    def click(self, point):
        assert self.xdotool("mousemove", "--sync", str(point[0]), str(point[1]), "click", "1").returncode == 0
        # Off the bubbles again, so the next one is not drawn hovered.
        self.xdotool("mousemove", "--sync", "1", "1")


def key_in_session(name, bus, display):
    """A `Key` with --presence notify whose notify-send talks to the private bus."""
    key = Key(name, presence="notify")
    saved = {variable: os.environ.get(variable) for variable in ("DBUS_SESSION_BUS_ADDRESS", "DISPLAY")}
    os.environ.update(DBUS_SESSION_BUS_ADDRESS=bus, DISPLAY=display)
    try:
        return key.start()
    finally:
        for variable, value in saved.items():
            if value is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = value


@check("presence notify with GNOME's notification-daemon 3.20 on Xvfb (xdotool clicks): each notification's body names "
       "the operation and RP ID; a click on the bubble (its default action) approves a Fido2Client registration that "
       "Fido2Server verifies; its Deny button (ActionInvoked deny) and its close button (closed without an action) each "
       "deny at once with CTAP2_ERR_OPERATION_DENIED")
def test_notify_second_daemon():
    require_tools()
    work = tempfile.mkdtemp(prefix="nd-", dir=WORK)
    ready = os.path.join(work, "ready")
    script = f"""
unset WAYLAND_DISPLAY
export NO_AT_BRIDGE=1
Xvfb -displayfd 3 -screen 0 800x600x24 -nolisten tcp 3>{work}/display >{work}/xvfb.log 2>&1 &
for i in $(seq 100); do [ -s {work}/display ] && break; sleep 0.1; done
export DISPLAY=:$(cat {work}/display)
for i in $(seq 100); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
{NOTIFICATION_DAEMON} >{work}/daemon.log 2>&1 &
# NameHasOwner, not a call to the name: that would start another server by D-Bus activation (dunst).
for i in $(seq 100); do
    dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner \
        string:org.freedesktop.Notifications 2>/dev/null | grep -q true && break
    sleep 0.1
done
printf '%s\\n%s\\n' "$DBUS_SESSION_BUS_ADDRESS" "$DISPLAY" >{ready}.tmp && mv {ready}.tmp {ready}
wait
"""
    session = desktop_session(work, script)
    monitor = key = None
    stopped = 0
    try:
        wait_for(lambda: os.path.exists(ready) or session.poll() is not None, seconds=15, what="Xvfb and notification-daemon")
        assert os.path.exists(ready), "the session ended: " + "".join(
            open(os.path.join(work, log), errors="replace").read()[-800:] for log in ("xvfb.log", "daemon.log")
            if os.path.exists(os.path.join(work, log)))
        bus, display = open(ready).read().split()
        served = subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.Notifications",
                                 "/org/freedesktop/Notifications", "org.freedesktop.Notifications.GetServerInformation"],
                                env={**os.environ, "DBUS_SESSION_BUS_ADDRESS": bus}, capture_output=True, text=True, timeout=10)
        assert '"Notification Daemon"' in served.stdout and '"3.20' in served.stdout, served.stdout + served.stderr
        monitor = BusLog(bus, os.path.join(work, "bus.log"))
        screen = Screen(display)
        key = key_in_session("notification-daemon", bus, display)

        def answer(request, expected_body, where):
            """Runs `request` while the bubble shows `expected_body`, clicks `where` on it; returns
            the request's outcome and the notification bus messages that the click caused."""
            before = len(monitor.messages())
            thread, outcome = in_background(request)
            layout = {}

            def shown():
                bubbles = screen.bubbles()
                layout["points"] = screen.layout(bubbles[0]) if len(bubbles) == 1 else None
                return layout["points"] is not None
            wait_for(shown, seconds=10, what=f"notification-daemon's bubble for {expected_body!r} with Approve and Deny")
            notified = [arguments for _, member, arguments in monitor.messages()[before:] if member == "Notify"]
            assert len(notified) == 1 and notified[0][3:5] == ["Latchkey", expected_body], notified
            clicked = time.time()
            screen.click(layout["points"][where])
            thread.join(timeout=10)
            assert not thread.is_alive() and time.time() - clicked < 5, f"a click on the {where} answered at once"
            wait_for(lambda: not screen.bubbles(), seconds=5, what="the bubble to go")

            def caused():
                return [(member, arguments) for _, member, arguments in monitor.messages()[before:]
                        if member in ("ActionInvoked", "NotificationClosed")]
            wait_for(lambda: any(member == "NotificationClosed" for member, _ in caused()), seconds=5,
                     what="NotificationClosed on the bus")
            return outcome, caused()

        # Approve: a WebAuthn registration, clicked on the bubble's body, verified as the relying party would.
        rp_id = "nd-approve.example"
        server = server_for(rp_id)
        user = {"id": os.urandom(16), "name": "nadia", "displayName": "Nadia"}
        options, state = server.register_begin(user, resident_key_requirement=ResidentKeyRequirement.DISCOURAGED,
                                               user_verification=UserVerificationRequirement.DISCOURAGED)
        client = client_for(key.device(), origin=f"https://{rp_id}")
        outcome, caused = answer(lambda: client.make_credential(options.public_key), f"register at {rp_id} for nadia", "body")
        assert "value" in outcome, f"the registration failed: {outcome.get('error')!r}"
        auth_data = server.register_complete(state, outcome["value"])
        assert auth_data.is_user_present() and auth_data.rp_id_hash == hashlib.sha256(rp_id.encode()).digest()
        assert [member for member, _ in caused] == ["ActionInvoked", "NotificationClosed"] and caused[0][1][1] == "default", caused
        credential_id = auth_data.credential_data.credential_id

        # Deny: signing in with that credential, the Deny button clicked.
        ctap = Ctap2(key.device())
        outcome, caused = answer(lambda: ctap.get_assertion(rp_id, hashlib.sha256(b"nd-deny").digest(),
                                                            [{"type": "public-key", "id": credential_id}]),
                                 f"sign in at {rp_id}", "deny")
        assert isinstance(outcome.get("error"), CtapError) and outcome["error"].code == CtapError.ERR.OPERATION_DENIED, outcome
        assert [member for member, _ in caused] == ["ActionInvoked", "NotificationClosed"] and caused[0][1][1] == "deny", caused

        # Closed: a registration at another RP, the bubble's close button clicked (no action at all).
        close_rp = "nd-close.example"
        outcome, caused = answer(lambda: ctap.make_credential(hashlib.sha256(b"nd-close").digest(), {"id": close_rp},
                                                              {"id": b"nd-c", "name": "cora"}, [{"type": "public-key", "alg": -7}]),
                                 f"register at {close_rp} for cora", "close")
        assert isinstance(outcome.get("error"), CtapError) and outcome["error"].code == CtapError.ERR.OPERATION_DENIED, outcome
        assert [member for member, _ in caused] == ["NotificationClosed"] and caused[0][1][1] == 2, caused

        log = open(key.log_path, errors="replace").read()
        assert log.count("presence approved in the notification") == 1, log[-2000:]
        assert log.count("presence denied in the notification") == 2, log[-2000:]
    finally:
        if key is not None:
            stopped = key.stop()
        if monitor is not None:
            monitor.stop()
        os.killpg(session.pid, signal.SIGTERM)
        session.wait(timeout=10)
    assert stopped == 0, f"the key exited with {stopped}: {key.log()}"
