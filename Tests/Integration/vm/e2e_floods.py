#!/usr/bin/env python3
"""Hostile clients over uhid/hidraw, INSIDE the VM rig: the socket suite's floods (flood_support.py,
socket_floods.py) against the real `latchkey serve --transport uhid`, through the kernel's hidraw
and uhid. Each flood runs in a forked, niced process while a well-behaved python-fido2 client on
a handle of its own PINGs the key: its median round trip must stay within max(2 × baseline,
baseline + 12 ms: UhidTarget.floor_ms), every echo must be right, the flood's own answers must be the ones CTAPHID
defines, and the key's RSS (printed before and after each flood) may grow by less than 20 MB in all.

Usage: e2e_floods.py /dev/hidrawN KEY_PID [KEY_LOG]
Prints PASS/FAIL per check, then a summary table; exits 1 on any failure.

What uhid changes (the socket's floods assume the opposite):
- Every open handle of the node sees every input report the key sends (one device): each client
  here keeps only the reports of its own channels (HidrawLink, HidrawConnection), as a host
  driver does, and drains what it skipped so its 64-report hidraw buffer never fills.
- Channels belong to the device, not to a handle (all readers are connection 0), and closing a
  handle tells the key nothing — until the last one closes (UHID_CLOSE), which drops them all.
  So "1,000 connections" is 1,000 opens of the node; "vanishing mid-message" holds the device
  until CTAPHID's message timeout (ERR_MSG_TIMEOUT, 500 ms); an INIT flood evicts an idle
  handle's channel (plain LRU); there are no foreign channels to refuse.
- The kernel queues at most 32 events for the key (uhid's UHID_BUFSIZE), the good client's
  included, and drops the rest: a flood sends at most ~20 reports before it waits for an answer.
- hidraw hands writes of 2 to 4,096 bytes to the key as they are, report-ID byte included
  (shorter ones are EINVAL in hidraw; longer ones in uhid, or in hidraw past HID_MAX_BUFFER_SIZE);
  the key takes 65 bytes that start with the 0x00 report-ID byte, or exactly 64 (the report
  itself), and drops anything else (UHIDDevice.report(fromOutput:reportType:)). Which sizes the
  kernel refused is printed, not asserted: what is asserted is that the key answers none."""

import errno
import fcntl
import os
import resource
import select
import struct
import subprocess
import sys
import time
import traceback

from fido2.hid import CtapHidDevice
from fido2.hid.base import CtapHidConnection, HidDescriptor

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "support")))
from flood_support import (BROADCAST, CHANNEL_CAPACITY, CMD_INIT, CMD_PING, ERR_INVALID_CHANNEL, ERR_MSG_TIMEOUT,
                           RSS_BUDGET_MB, allocate_channels, busy_counted, cpu_seconds, error,
                           fd_count, flood_channels, flood_init, flood_interleaved, flood_random,
                           flood_wrong_sequence, fragments, init_packet, ping_raw, print_flood_table, read_message,
                           read_message_after_ping, rss_mb, run_flood, sync_and_collect)

BURST = 8                      # reports a flood sends before it waits for answers (uhid queues 32 events)
MESSAGE_TIMEOUT_MS = 500       # CTAPHIDConfiguration.messageTimeoutMilliseconds
HELD_SLACK_MS = 250            # how late (TCG) the key's ERR_MSG_TIMEOUT may come and the good client get in
FILL = 0xA5                    # wrong-size writes are all 0xA5: a misread one would be answered on CID A5A5A5A5
SIZES_CYCLED = (2, 7, 63, 65, 66, 100, 128, 1024, 4096, 4097)   # 65: report-ID byte 0xA5, not 0x00
SIZES_ONCE = (0, 1, 16385)     # refused by hidraw, which logs each one: written once, not flooded
KERNEL_WARNINGS = ("Output queue is full", "passed too short report", "passed too large report")


# --- hidraw handles that keep only their own reports ---------------------------------------------

class HidrawHandle:
    """One open handle of the node; `keeps(report)` says which reports are this client's."""

    def __init__(self, node, fd=None, timeout=10.0):
        self.fd = os.open(node, os.O_RDWR | os.O_NONBLOCK) if fd is None else fd
        self.timeout = timeout
        self.skipped = 0

    def next_report(self, timeout=None):
        """The next report for this client; TimeoutError after `timeout` (default self.timeout) seconds."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no report for this client in {self.timeout if timeout is None else timeout:.1f} s")
            if not poller.poll(remaining * 1000):
                continue
            try:
                report = os.read(self.fd, 64)
            except BlockingIOError:
                continue
            if self.keeps(report):
                return report
            self.skipped += 1

    def drain(self):
        """Reads away whatever is waiting (other clients' reports), so the handle's buffer has room."""
        while True:
            try:
                os.read(self.fd, 64)
            except BlockingIOError:
                return
            self.skipped += 1

    def close(self):
        os.close(self.fd)


class HidrawLink(HidrawHandle):
    """A flood's link (flood_support): `send` writes one report after the 0x00 report-ID byte;
    `recv` returns the next report on a channel it has written on (or `watch`es), or the INIT
    answer carrying one of its nonces on the broadcast channel. hidraw keeps 64 reports per handle
    and drops newer ones: a link left idle while others talk must `drain()` before it asks again."""

    def __init__(self, node, fd=None, timeout=10.0):
        super().__init__(node, fd, timeout)
        self.channels, self.nonces = set(), set()

    def send(self, report):
        assert len(report) == 64, len(report)
        cid = struct.unpack(">I", report[:4])[0]
        if cid != BROADCAST:
            self.channels.add(cid)
        elif report[4] == 0x80 | CMD_INIT:
            self.nonces.add(bytes(report[7:15]))
        written = os.write(self.fd, b"\0" + report)
        assert written == 65, f"hidraw took {written} of 65 bytes"

    def write_raw(self, data):
        return os.write(self.fd, data)

    def watch(self, cid):
        self.channels.add(cid)

    def keeps(self, report):
        cid = struct.unpack(">I", report[:4])[0]
        if cid in self.channels:
            return True
        if cid == BROADCAST and report[4] == 0x80 | CMD_INIT and bytes(report[7:15]) in self.nonces:
            self.nonces.discard(bytes(report[7:15]))
            self.channels.add(struct.unpack(">I", report[15:19])[0])
            return True
        return False

    def recv(self, size=64):
        return self.next_report()


class HidrawConnection(HidrawHandle, CtapHidConnection):
    """python-fido2's connection (it takes every report it reads as its own and fails on any other
    channel): keeps the reports on the channel it last wrote on, and on the broadcast channel only
    the INIT answer with its nonce; drains before each request."""

    def __init__(self, node, timeout=10.0):
        super().__init__(node, None, timeout)
        self.cid, self.nonce = BROADCAST, None

    def write_packet(self, data):
        if data[4] & 0x80:
            self.drain()
        self.cid = struct.unpack(">I", data[:4])[0]
        if self.cid == BROADCAST and data[4] == 0x80 | CMD_INIT:
            self.nonce = bytes(data[7:15])
        written = os.write(self.fd, b"\0" + bytes(data))
        assert written == 65, f"hidraw took {written} of 65 bytes"

    def keeps(self, report):
        if struct.unpack(">I", report[:4])[0] != self.cid:
            return False
        return self.cid != BROADCAST or (report[4] == 0x80 | CMD_INIT and bytes(report[7:15]) == self.nonce)

    def read_packet(self):
        return self.next_report()


class UhidTarget:
    """The key on its hidraw node as flood_support's floods see it: each link a handle of its own.

    floor_ms: the latency allowance's floor, max(2 × baseline, baseline + floor). The socket suite's
    2 ms floor is some 15 times its 0.13 ms PING (its INIT flood uses most of it: 1.5 ms); under
    TCG a PING over hidraw takes 2–4 ms, every process switch between the flood, the key and the
    good client costs a millisecond or so, and the good client also reads and skips every answer
    the key sends the flood (each handle sees every report). The same 2 ms would be a far harder
    bound here than on the socket; 12 ms (some 4 times the baseline) is still tighter. The INIT
    flood comes nearest: its median reached 9.5 ms once in the VM, 1.5 ms on the socket."""

    floor_ms = 12.0

    def __init__(self, node, pid):
        self.node, self.pid = node, pid

    def device(self):
        descriptor = HidDescriptor(self.node, 0x1209, 0x4C4B, 64, 64, "Latchkey", None)
        return CtapHidDevice(descriptor, HidrawConnection(self.node))

    def open_link(self, timeout=10.0):
        return HidrawLink(self.node, timeout=timeout)


# --- the uhid-only floods (each in a forked, niced process: flood_support.Flood) ------------------

def hidioc(number, size):
    """_IOC(_IOC_READ | _IOC_WRITE, 'H', number, size) of <linux/hidraw.h>."""
    return 3 << 30 | size << 16 | ord("H") << 8 | number


def feature_reports(fd):
    """HIDIOCSFEATURE, HIDIOCGFEATURE: the descriptor has none; the kernel asks the key
    (UHID_SET_REPORT / UHID_GET_REPORT) and waits up to 5 s for the answer, which must be EIO at once."""
    for number, name in ((0x06, "HIDIOCSFEATURE"), (0x07, "HIDIOCGFEATURE")):
        before = time.monotonic()
        try:
            fcntl.ioctl(fd, hidioc(number, 65), bytearray(65), True)
        except OSError as failure:
            elapsed = time.monotonic() - before
            assert failure.errno == errno.EIO, f"{name}: {failure}"
            assert elapsed < 1.0, f"{name} failed after {elapsed:.1f} s: the kernel's timeout, not the key's answer"
        else:
            raise AssertionError(f"{name} succeeded: the key has no feature reports")


def flood_wrong_sizes(target, control, burst=12):
    """Writes of every wrong size, `burst` at a time, each burst followed by a 64-byte write with no
    report-ID byte (a PING: the key takes it as the report itself) and a PING that syncs: the key
    answers nothing else. Once, writes hidraw refuses; now and then the feature-report ioctls."""
    link = target.open_link()
    cid = allocate_channels(link, 1)[0]
    link.watch(FILL << 24 | FILL << 16 | FILL << 8 | FILL)
    outcomes, delivered = {}, 0

    def write(size):
        try:
            written = link.write_raw(bytes([FILL]) * size)
        except OSError as failure:
            assert failure.errno == errno.EINVAL, f"a {size}-byte write: {failure}"
            outcome = "EINVAL"
        else:
            assert written == size, f"a {size}-byte write took {written}"
            outcome = "delivered"
        assert outcomes.setdefault(size, outcome) == outcome, f"{size}-byte writes: {outcomes[size]}, then {outcome}"
        return outcome == "delivered"

    for size in SIZES_ONCE:
        delivered += write(size)
    sent, features = 0, 0
    control.ready()
    while not control.stopped():
        for _ in range(burst):
            delivered += write(SIZES_CYCLED[sent % len(SIZES_CYCLED)])
            sent += 1
        token = os.urandom(8)
        assert link.write_raw(init_packet(cid, CMD_PING, 8, token)) == 64
        got = sync_and_collect(link, cid)
        assert got == [(cid, CMD_PING, token)], f"after {burst} wrong-size writes and a 64-byte PING: {got}"
        if features < 10:
            feature_reports(link.fd)
            features += 1
    link.close()
    by_outcome = {kind: sorted(size for size, outcome in outcomes.items() if outcome == kind)
                  for kind in ("delivered", "EINVAL")}
    return {"packets": sent + len(SIZES_ONCE), "delivered": delivered,
            "note": f"{sent + len(SIZES_ONCE)} writes of wrong sizes ({delivered} reached the key, of "
                    f"{by_outcome['delivered']} bytes; {by_outcome['EINVAL']} bytes: EINVAL), none answered; a "
                    f"64-byte PING with no report-ID byte echoed after each {burst}; {features * 2} feature-report "
                    f"ioctls, each EIO at once"}


def flood_vanishing(target, control, minimum=4):
    """Clients that open the node, allocate a channel, send part of a 1,000-byte PING (1 to 4 of its
    18 packets) and close: the key, which is not told, holds the device until the message
    timeout, then answers ERR_MSG_TIMEOUT on that channel (another handle, the observer, reads
    it). Every third client sends the whole PING and closes before the echo, which goes out at
    once. One client at a time, 100 ms apart, at least `minimum` of them."""
    observer = target.open_link()
    delays, echoed, rounds = [], 0, 0
    control.ready()
    while not control.stopped() or rounds < minimum:
        observer.drain()      # the good client's answers since the last round: room for this one's
        vanisher = target.open_link()
        cid = allocate_channels(vanisher, 1, burst=1)[0]
        observer.watch(cid)
        payload = os.urandom(1000)
        packets = fragments(cid, CMD_PING, payload)
        whole = rounds % 3 == 2
        for packet in packets if whole else packets[:1 + rounds % 4]:
            vanisher.send(packet)
        last_packet = time.monotonic()
        vanisher.close()
        message = read_message(observer)
        if whole:
            assert message == (cid, CMD_PING, payload), f"the vanished client's whole PING: {message[:2]}"
            echoed += 1
        else:
            delay = time.monotonic() - last_packet
            assert message == error(cid, ERR_MSG_TIMEOUT), f"the half message's end: {message}"
            assert MESSAGE_TIMEOUT_MS - 50 <= delay * 1000 <= MESSAGE_TIMEOUT_MS + HELD_SLACK_MS, \
                f"ERR_MSG_TIMEOUT {delay * 1000:.0f} ms after the last packet (timeout {MESSAGE_TIMEOUT_MS} ms)"
            delays.append(delay * 1000)
        rounds += 1
        time.sleep(0.1)
    observer.close()
    return {"packets": rounds * 4, "clients": rounds, "timeouts": len(delays),
            "note": f"{rounds} clients vanished: {len(delays)} mid-message, each ended by ERR_MSG_TIMEOUT "
                    f"{min(delays):.0f}–{max(delays):.0f} ms after its last packet; {echoed} after a whole PING, "
                    f"echoed at once"}


def flood_opens(target, control, count=1000):
    """`count` handles of the node held open (the key is told of none: only the first open and the
    last close reach it), then open-and-close churn; on '1' it holds; on 'S' it checks that every
    handle saw the key's reports and that three of them are served, and closes them all."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = count + 64
    if hard != resource.RLIM_INFINITY and hard < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, need))     # root may raise the hard limit
    elif soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    started = time.monotonic()
    handles = [os.open(target.node, os.O_RDWR | os.O_NONBLOCK) for _ in range(count)]
    opened = time.monotonic() - started
    control.ready()
    churn = 0
    while not control.stopped():
        os.close(os.open(target.node, os.O_RDWR | os.O_NONBLOCK))
        churn += 1
        time.sleep(0.002)
    if control.command() == b"1":
        control.command()   # holding idle until 'S'
    poller = select.poll()
    for fd in handles:
        poller.register(fd, select.POLLIN)
    readable = len(poller.poll(0))
    served = []
    for index in (0, count // 2, count - 1):
        link = HidrawLink(target.node, fd=handles[index])
        link.drain()
        cid = allocate_channels(link, 1, burst=1)[0]
        reply, payload = ping_raw(link, cid)
        assert reply == (cid, CMD_PING, payload), f"handle #{index}: {reply}"
        served.append(index)
    for fd in handles:
        os.close(fd)
    return {"packets": 0, "opened": len(handles), "readable": readable, "served": served, "churn": churn,
            "note": f"{count} handles opened in {opened:.2f} s, {churn} more opened and closed while they were held; "
                    f"{readable} of them had the key's reports waiting; handles {served} each got a channel and an echo"}


# --- the checks ----------------------------------------------------------------------------------

RESULTS = []


def run_check(name, function, *args):
    started = time.time()
    try:
        function(*args)
    except Exception as failure:  # noqa: BLE001 - every failure is reported, the checks go on
        RESULTS.append((name, False))
        print(f"FAIL  {name}: {type(failure).__name__}: {failure}", flush=True)
        traceback.print_exc(limit=4)
    else:
        RESULTS.append((name, True))
        print(f"PASS  {name} ({time.time() - started:.2f} s)", flush=True)


def log_lines(log_path, text):
    """How many lines of the key's log contain `text` (None without a log)."""
    if not log_path:
        return None
    with open(log_path, errors="replace") as handle:
        return sum(text in line for line in handle)


def kernel_warnings():
    """Counts of the kernel's hidraw/uhid warnings in dmesg (None if it cannot be read)."""
    try:
        text = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {warning: text.count(warning) for warning in KERNEL_WARNINGS}


def check_wrong_sizes(target, log_path):
    lines_before = log_lines(log_path, "dropped a ")
    figures, _ = run_flood(target, "wrong sizes", flood_wrong_sizes)
    assert figures["result"]["delivered"] > 0, "the kernel refused every wrong-size write: the key was not tested"
    if lines_before is not None:
        lines = log_lines(log_path, "dropped a ") - lines_before
        print(f"      [wrong sizes] {lines} 'dropped' log lines for {figures['result']['delivered']} dropped reports",
              flush=True)
        # The throttle writes at most 20 lines per 10 s; the flood may straddle two windows.
        assert 0 < lines <= 41, f"{lines} 'dropped' log lines for {figures['result']['delivered']} dropped reports"


def check_vanishing(target):
    figures, _ = run_flood(target, "vanishing mid-message", flood_vanishing, seconds=2.5,
                           held_ms=MESSAGE_TIMEOUT_MS + HELD_SLACK_MS)
    assert figures["result"]["timeouts"] >= 2, figures["result"]


def check_last_handle_frees(target):
    """No other handle open: the client's close is the device's UHID_CLOSE."""
    lone = target.open_link()
    cid = allocate_channels(lone, 1)[0]
    lone.send(fragments(cid, CMD_PING, os.urandom(1000))[0])
    lone.close()
    closed = time.monotonic()
    fresh = target.open_link()
    fresh.watch(cid)
    new = allocate_channels(fresh, 1)[0]
    reply, payload = ping_raw(fresh, new)
    served_ms = (time.monotonic() - closed) * 1000
    assert reply == (new, CMD_PING, payload), \
        f"a new client after the last handle closed mid-message got {reply} (is a handle of the node open elsewhere?)"
    assert read_message_after_ping(fresh, cid) == error(cid, ERR_INVALID_CHANNEL), "the closed client's channel is gone"
    try:
        late = fresh.next_report(timeout=max(0.1, (MESSAGE_TIMEOUT_MS + HELD_SLACK_MS) / 1000 - (time.monotonic() - closed)))
    except TimeoutError:
        late = None
    fresh.close()
    assert late is None, f"a report for the dropped half message: {late.hex()}"
    print(f"      [last handle] a new client served {served_ms:.1f} ms after the last handle closed mid-message; "
          f"the old channel answers ERR_INVALID_CHANNEL; no ERR_MSG_TIMEOUT", flush=True)


def check_opens(target, log_path):
    descriptors = fd_count(target.pid)
    events = ("client connected", "client disconnected")   # UHID_OPEN, UHID_CLOSE (KeyRunner, debug)
    logged_before = [log_lines(log_path, event) for event in events]
    measured = {}

    def during(flood):
        flood.command(b"1")            # stop churning, hold the handles
        time.sleep(0.3)
        measured["fds"] = fd_count(target.pid)
        cpu_before = cpu_seconds(target.pid)
        time.sleep(1.0)
        measured["idle_cpu"] = cpu_seconds(target.pid) - cpu_before
        flood.command(b"S")

    figures, _ = run_flood(target, "1,000 opens", flood_opens, during=during)
    result = figures["result"]
    print(f"      [1,000 opens] key CPU {measured['idle_cpu']:.3f} s in 1 s with 1,001 handles open; key descriptors "
          f"{descriptors} before, {measured['fds']} while held", flush=True)
    assert result["opened"] == 1000 and result["readable"] == 1000, result
    assert measured["fds"] == descriptors, f"the key's descriptors went from {descriptors} to {measured['fds']}"
    assert measured["idle_cpu"] < 0.15, f"the key used {measured['idle_cpu']:.2f} s of CPU in 1 s, idle"
    if log_path:
        # The good client's handle opened first and closed last: the key heard of that one only.
        deadline = time.monotonic() + 3
        while True:
            logged = [log_lines(log_path, event) - before for event, before in zip(events, logged_before)]
            if logged[1] >= 1 or time.monotonic() > deadline:   # the key logs the close as it reads it
                break
            time.sleep(0.05)
        print(f"      [1,000 opens] the key logged {logged[0]} open and {logged[1]} close of the device", flush=True)
        assert logged == [1, 1], f"{logged[0]} opens and {logged[1]} closes logged for 1,000 + churn handles"


def check_channel_table(target):
    """Plain LRU over the whole device: an idle handle's channel is as evictable as the flooder's.
    The table starts empty (every handle was closed: UHID_CLOSE)."""
    idle = target.open_link()
    idle_cid = allocate_channels(idle, 1)[0]
    hog = target.open_link()
    cids = allocate_channels(hog, CHANNEL_CAPACITY + 76, burst=BURST)
    # 1 + 1,100 channels in a 1,024-channel table: the idle one and cids[0..75] are evicted.
    idle.drain()              # the hog's 1,100 INIT answers filled its buffer
    assert read_message_after_ping(idle, idle_cid) == error(idle_cid, ERR_INVALID_CHANNEL), \
        "the idle handle's channel, the least recently used, is evicted (a handle of the node open elsewhere " \
        "keeps older channels in the table)"
    for index in (0, 75):
        assert read_message_after_ping(hog, cids[index]) == error(cids[index], ERR_INVALID_CHANNEL), \
            f"channel #{index} of {len(cids)} is evicted"
    for index in (76, len(cids) - 1):
        reply, payload = ping_raw(hog, cids[index])
        assert reply == (cids[index], CMD_PING, payload), f"channel #{index} of {len(cids)} answers: {reply}"
    idle.drain()
    fresh = allocate_channels(idle, 1)[0]
    reply, payload = ping_raw(idle, fresh)
    assert reply == (fresh, CMD_PING, payload), "the idle client, after a fresh INIT"
    hog.close()
    idle.close()


def main(node, pid, log_path=None):
    started = time.time()
    target = UhidTarget(node, pid)
    rss_start, descriptors, warnings_before = rss_mb(pid), fd_count(pid), kernel_warnings()
    print(f"uhid floods on {node}, key pid {pid}: RSS {rss_start:.2f} MB, {descriptors} descriptors", flush=True)
    checks = [
        ("flood: writes of the wrong size (0–16385 bytes) are dropped (hidraw refuses some with EINVAL), none is "
         "answered, 64 bytes without a report ID is a report, feature reports get EIO at once; the good client "
         "keeps its latency", check_wrong_sizes, target, log_path),
        ("flood: random 64-byte reports get ERR_INVALID_CHANNEL / ERR_INVALID_LEN / an adopting INIT answer, or "
         "nothing (continuations), exactly; the good client keeps its latency",
         lambda: run_flood(target, "random packets", flood_random, burst=16)),
        ("flood: wrong sequence numbers (first, repeated, skipped, INIT mid-message) are each one ERR_INVALID_SEQ; "
         "the good client keeps its latency", lambda: run_flood(target, "wrong sequence", flood_wrong_sequence, burst=4)),
        ("flood: interleaved channels of one handle (ERR_CHANNEL_BUSY for the second message, the first "
         "completes); the good client keeps its latency",
         lambda: run_flood(target, "interleaved channels", flood_interleaved, rounds_per_sync=2)),
        ("flood: clients vanishing mid-message hold the device until ERR_MSG_TIMEOUT (500 ms), no longer; a whole "
         "message is echoed at once; the good client keeps its latency when the device is free and gets in "
         "within the timeout when not", check_vanishing, target),
        ("the last handle closing mid-message (UHID_CLOSE) frees the device at once and drops its channels",
         check_last_handle_frees, target),
        ("flood: INIT on the broadcast channel (the table full, each INIT evicting one), read and unread: every "
         "read INIT answered with its nonce and a fresh channel; the good client keeps its latency",
         lambda: run_flood(target, "INIT flood", flood_init, reconnect=True, burst=BURST, fill_burst=BURST)),
        ("flood: 1,000 channels on one handle all answer on their own ID; the good client keeps its latency",
         lambda: run_flood(target, "1,000 channels", flood_channels, burst=BURST)),
        ("flood: 1,000 opens of the node: the key is told of none, stays idle, every handle sees its reports and "
         "any is served; the good client keeps its latency", check_opens, target, log_path),
        ("past the channel table's capacity (1,024) the least recently used channel of the device is evicted "
         "(an idle handle's too: ERR_INVALID_CHANNEL), the newest answer; a fresh INIT recovers",
         check_channel_table, target),
    ]
    with busy_counted():
        for name, function, *args in checks:
            run_check(name, function, *args)
            if not os.path.exists(f"/proc/{pid}"):
                break

    def aftermath():
        with open(f"/proc/{pid}/status") as handle:
            state = next(line for line in handle if line.startswith("State:"))
        assert "Z" not in state.split()[1], f"the key is a zombie: {state.strip()}"
        assert fd_count(pid) == descriptors, f"the key has {fd_count(pid)} descriptors, {descriptors} before"

    def memory():
        growth = rss_mb(pid) - rss_start
        print(f"      (RSS {rss_start:.2f} → {rss_mb(pid):.2f} MB over all floods, {growth:+.2f} MB)", flush=True)
        assert growth < RSS_BUDGET_MB, f"RSS grew by {growth:.2f} MB"

    run_check("floods: the key stays up with the descriptors it had", aftermath)
    run_check(f"floods: the key's memory stays bounded (RSS growth over all floods under {RSS_BUDGET_MB:.0f} MB)", memory)
    warnings_after = kernel_warnings()
    if warnings_before is not None and warnings_after is not None:
        print("      (kernel: " + ", ".join(f"{warnings_after[w] - warnings_before[w]} '{w}'" for w in KERNEL_WARNINGS)
              + "; 'Output queue is full' means uhid dropped client reports the key had not read yet)", flush=True)
    passed = sum(1 for _, ok in RESULTS if ok)
    failed = len(RESULTS) - passed
    print("flood summary (uhid/hidraw; PING ms of the good client, median):", flush=True)
    print_flood_table(indent="  ")
    for name, ok in RESULTS:
        if not ok:
            print(f"  failed: {name[:110]}", flush=True)
    print(f"floods: {passed} passed, {failed} failed in {time.time() - started:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.split("\n\n")[1])
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) == 4 else None))
