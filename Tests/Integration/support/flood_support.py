"""What the hostile-client floods share, whatever the transport: socket_floods.py runs them over
the socket transport, e2e_floods.py over uhid/hidraw inside the VM rig.

A *target* is the key under test as the floods see it: `pid`, `device()` (a python-fido2
CtapHidDevice for the well-behaved client) and `open_link()` (a raw packet pipe for a flood). A
*link* has `send(report)`, one 64-byte CTAPHID report, and `recv(size)`, the next report for that
client: a SOCK_SEQPACKET socket is one; on hidraw, where every open handle sees every report the
key sends, e2e_floods.HidrawLink keeps only the reports of its own channels, as a host driver does.

Each flood runs in a forked, niced process (`Flood`) while the good client PINGs (`run_flood`):
its median round trip must stay within max(2 × baseline, baseline + FLOOR_MS), every echo must be
right, and the flood checks its own answers against what CTAPHID defines. The key's RSS is read
before and after every flood."""

import contextlib
import json
import logging
import os
import select
import signal
import struct
import time
import traceback

from fido2.ctap2 import Ctap2
from fido2.hid import CTAPHID

FLOOR_MS = 2.0                 # latency allowance floor: max(2 × baseline, baseline + FLOOR_MS)
FLOOD_SECONDS = 1.0            # how long the good client measures during each flood
PING_GAP_SECONDS = 0.002       # the good client's pause between PINGs: it uses the key, it does not
                               # race the flood for the CPU (the machine may have two cores)
RSS_BUDGET_MB = 20.0
CHANNEL_CAPACITY = 1024        # CTAPHIDConfiguration.maxChannels

from ctaphid_frames import (BROADCAST, CMD_CBOR, CMD_ERROR, CMD_INIT, CMD_KEEPALIVE, CMD_MSG, CMD_PING,  # noqa: F401 - the
                            cont_packet, fragments, init_packet)  # floods' vocabulary, re-exported to their callers
ERR_INVALID_LEN, ERR_INVALID_SEQ, ERR_MSG_TIMEOUT, ERR_CHANNEL_BUSY, ERR_INVALID_CHANNEL = 0x03, 0x04, 0x05, 0x06, 0x0B

FLOOD_FIGURES = []             # one dict per flood, for the memory check and the summary


# --- raw CTAPHID on a link ----------------------------------------------------------------------

def read_message(link):
    """The key's next whole message on link: (cid, cmd, payload)."""
    first = link.recv(65)
    assert first, "the key closed the connection"
    assert len(first) == 64, f"a {len(first)}-byte packet from the key"
    cid, kind, length = struct.unpack(">IBH", first[:7])
    assert kind & 0x80, f"a continuation packet where a message should start: {first.hex()}"
    data, seq = first[7:7 + length], 0
    while len(data) < length:
        packet = link.recv(65)
        assert len(packet) == 64 and struct.unpack(">I", packet[:4])[0] == cid and packet[4] == seq, packet.hex()
        data += packet[5:5 + length - len(data)]
        seq += 1
    return cid, kind & 0x7F, bytes(data)


def allocate_channels(link, count, burst=50):
    """`count` channels by INIT on the broadcast channel, `burst` at a time; checks every answer."""
    cids = []
    while len(cids) < count:
        nonces = [os.urandom(8) for _ in range(min(burst, count - len(cids)))]
        for nonce in nonces:
            link.send(init_packet(BROADCAST, CMD_INIT, 8, nonce))
        for nonce in nonces:
            cid, cmd, data = read_message(link)
            assert (cid, cmd, data[:8]) == (BROADCAST, CMD_INIT, nonce), (hex(cid), cmd, data.hex())
            cids.append(struct.unpack(">I", data[8:12])[0])
    return cids


def ping_raw(link, cid, payload=None):
    payload = os.urandom(20) if payload is None else payload
    for packet in fragments(cid, CMD_PING, payload):
        link.send(packet)
    return read_message(link), payload


def sync_and_collect(link, cid):
    """PINGs on cid and returns every message the key sent before the echo (answers arrive in order)."""
    token = os.urandom(16)
    link.send(init_packet(cid, CMD_PING, len(token), token))
    before = []
    while True:
        message = read_message(link)
        if message == (cid, CMD_PING, token):
            return before
        before.append(message)


def read_message_after_ping(link, cid):
    token = os.urandom(8)
    link.send(init_packet(cid, CMD_PING, 8, token))
    return read_message(link)


def error(cid, code):
    return (cid, CMD_ERROR, bytes([code]))


# --- the key from outside ------------------------------------------------------------------------

def rss_mb(pid):
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid):
    """utime + stime of a process, in seconds (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class BusyCounter(logging.Handler):
    """python-fido2 retries ERR_CHANNEL_BUSY (after QuickRetry's 1 ms) and logs a warning each time: count them."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        if "busy" in record.getMessage().lower():
            self.count += 1


BUSY = BusyCounter()


@contextlib.contextmanager
def busy_counted():
    """BUSY counts python-fido2's ERR_CHANNEL_BUSY retries meanwhile (and they are not printed)."""
    fido_logger = logging.getLogger("fido2.hid")
    fido_logger.addHandler(BUSY)
    saved_propagate, fido_logger.propagate = fido_logger.propagate, False
    try:
        yield
    finally:
        fido_logger.removeHandler(BUSY)
        fido_logger.propagate = saved_propagate


class QuickRetry:
    """The `event` python-fido2's call takes: never set, and its wait (python-fido2's back-off
    after ERR_CHANNEL_BUSY, 100 ms) lasts 1 ms and is timed (`slept`), so that the good client's
    latency is the time it waits for the key — a BUSY answer costs its round trip and a retry,
    not the client's own back-off. The BUSY answers are counted in BUSY, and here in `waits`."""

    def __init__(self):
        self.slept = 0.0
        self.waits = 0

    def is_set(self):
        return False

    def wait(self, timeout=None):
        before = time.perf_counter()
        time.sleep(0.001)
        self.slept += time.perf_counter() - before
        self.waits += 1
        return False


class GoodClient:
    """A well-behaved python-fido2 client (target.device(): a fresh connection or handle): PINGs of
    one report each way (57 bytes), 2 ms apart, every echo checked; ERR_CHANNEL_BUSY retried after
    1 ms (QuickRetry). A connection that also sees other clients' reports (hidraw) has `drain()`,
    called before each PING, outside its timing."""

    def __init__(self, target):
        self.device = target.device()
        self.drain = getattr(self.device._connection, "drain", lambda: None)
        self.met_busy = []     # per PING of the last `pings`: whether it was answered ERR_CHANNEL_BUSY first

    def pings(self, count=50, seconds=0.0):
        times, self.met_busy, started = [], [], time.perf_counter()
        while (len(times) < count or time.perf_counter() - started < seconds) and time.perf_counter() - started < 15:
            payload = os.urandom(57)
            retry = QuickRetry()
            self.drain()
            before = time.perf_counter()
            echoed = self.device.call(CTAPHID.PING, payload, event=retry)
            times.append((time.perf_counter() - before - retry.slept) * 1000)
            self.met_busy.append(retry.waits > 0)
            assert echoed == payload, "the good client's PING came back wrong"
            time.sleep(PING_GAP_SECONDS)
        return times

    def check_info(self):
        self.drain()
        info = Ctap2(self.device).get_info()
        assert "FIDO_2_0" in info.versions, info.versions

    def close(self):
        self.device.close()


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


# --- floods, each in a forked, niced process ------------------------------------------------------

class FloodControl:
    """The flood process's side: `ready()` once it floods, `stopped()` polled between bursts,
    `command()` for floods with phases."""

    def __init__(self, control_fd, result_fd):
        self.control_fd, self.result_fd = control_fd, result_fd

    def ready(self):
        os.write(self.result_fd, b"R")

    def stopped(self):
        return bool(select.select([self.control_fd], [], [], 0)[0])

    def command(self):
        return os.read(self.control_fd, 1)


class Flood:
    """Forks `function(target, control, **args)`; its return value (a dict) comes back as JSON."""

    def __init__(self, function, target, **args):
        control_r, self.control_w = os.pipe()
        self.result_r, result_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the flood process
            payload = b"{}"
            try:
                for name in os.listdir("/proc/self/fd"):
                    fd = int(name)
                    if fd > 2 and fd not in (control_r, result_w):
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                os.nice(10)
                payload = json.dumps(function(target, FloodControl(control_r, result_w), **args)).encode()
            except BaseException as failure:  # noqa: BLE001 - reported to the parent
                payload = json.dumps({"error": f"{type(failure).__name__}: {failure}\n{traceback.format_exc(limit=3)}"}).encode()
            finally:
                try:
                    os.write(result_w, payload)
                finally:
                    os._exit(0)
        os.close(control_r)
        os.close(result_w)
        self.result = None

    def wait_ready(self, seconds=20):
        ready, _, _ = select.select([self.result_r], [], [], seconds)
        assert ready, "the flood process did not start flooding"
        first = os.read(self.result_r, 1)
        if first != b"R":
            self.finish(already=first)

    def command(self, byte):
        os.write(self.control_w, byte)

    def finish(self, already=b"", seconds=60):
        if self.result is not None:
            return self.result
        try:
            os.write(self.control_w, b"S")
        except OSError:
            pass
        data, deadline = already, time.time() + seconds
        while True:
            ready, _, _ = select.select([self.result_r], [], [], max(0.0, deadline - time.time()))
            if not ready:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                raise AssertionError("the flood process did not finish")
            chunk = os.read(self.result_r, 65536)
            if not chunk:
                break
            data += chunk
        os.waitpid(self.pid, 0)
        os.close(self.result_r)
        os.close(self.control_w)
        self.result = json.loads(data or b"{}")
        assert "error" not in self.result, "flood process failed: " + self.result["error"]
        return self.result


# --- the floods both transports run --------------------------------------------------------------

def random_expectation(packet):
    """What the key answers to a random 64-byte packet on a random (unallocated) channel."""
    cid, kind, length = struct.unpack(">IBH", packet[:7])
    if not kind & 0x80:
        return None                                          # continuation, no message: ignored
    if kind & 0x7F == CMD_INIT and cid != 0:
        if length != 8:
            return error(cid, ERR_INVALID_LEN)
        return "adopt"                                       # INIT on an unknown channel adopts it
    return error(cid, ERR_INVALID_CHANNEL)                   # not allocated (or CID 0)


def flood_random(target, control, burst=32):
    """Random 64-byte packets, `burst` at a time; every answer is checked against what CTAPHID
    says. Channel IDs near the flood's own are left out: the key hands IDs out in sequence, so
    other clients' channels (the good client's) are there, and a random packet is not to hit one."""
    link = target.open_link()
    own = allocate_channels(link, 1)[0]
    sent = answered = adopted = invalid_length = 0
    control.ready()
    while not control.stopped():
        expected, burst_packets = [], []
        while len(burst_packets) < burst:
            packet = os.urandom(64)
            cid = struct.unpack(">I", packet[:4])[0]
            if cid == BROADCAST or abs(cid - own) < 1 << 20:
                continue
            burst_packets.append(packet)
            expectation = random_expectation(packet)
            if expectation is not None:
                expected.append((packet, expectation))
        for packet in burst_packets:
            link.send(packet)
        got = sync_and_collect(link, own)
        assert len(got) == len(expected), f"{len(got)} answers to {len(expected)} random initialization packets"
        for (packet, expectation), message in zip(expected, got):
            if expectation == "adopt":
                cid = struct.unpack(">I", packet[:4])[0]
                assert message[:2] == (cid, CMD_INIT) and message[2][:8] == packet[7:15] and \
                    struct.unpack(">I", message[2][8:12])[0] == cid, message
                adopted += 1
            else:
                assert message == expectation, f"random packet {packet[:8].hex()}: got {message}, expected {expectation}"
                invalid_length += message[2] == bytes([ERR_INVALID_LEN])
        sent += len(burst_packets)
        answered += len(got)
    link.close()
    return {"packets": sent, "note": f"{sent} random packets, {answered} answers all as expected ({invalid_length} of them "
                                         f"ERR_INVALID_LEN for an INIT not 8 bytes long, {adopted} INITs adopted, the "
                                         f"rest ERR_INVALID_CHANNEL)"}


def flood_wrong_sequence(target, control, burst=16):
    """Multi-packet PINGs broken four ways (a wrong first sequence number, a repeated one, a
    skipped one, an initialization packet mid-message), `burst` at a time: each is one ERR_INVALID_SEQ."""
    link = target.open_link()
    cid = allocate_channels(link, 1)[0]
    rounds = 0
    control.ready()
    while not control.stopped():
        for variant in range(burst):
            link.send(init_packet(cid, CMD_PING, 200, os.urandom(57)))
            kind = variant % 4
            if kind == 0:
                link.send(cont_packet(cid, 1 + variant * 7 % 127))
            elif kind == 1:
                link.send(cont_packet(cid, 0))
                link.send(cont_packet(cid, 0))
            elif kind == 2:
                link.send(cont_packet(cid, 0))
                link.send(cont_packet(cid, 2))
            else:
                link.send(init_packet(cid, CMD_PING, 10, os.urandom(10)))
        got = sync_and_collect(link, cid)
        assert got == [error(cid, ERR_INVALID_SEQ)] * burst, f"{burst} broken messages answered {got}"
        rounds += burst
    link.close()
    return {"packets": rounds * 2, "note": f"{rounds} broken messages, each ERR_INVALID_SEQ"}


def flood_interleaved(target, control, good_cid=None, rounds_per_sync=8):
    """Two channels of one client interleave their messages' packets (the second gets
    ERR_CHANNEL_BUSY, its continuations are ignored, the first completes); with good_cid, also
    packets on the good client's channel, which this connection does not own (ERR_INVALID_CHANNEL
    / ignored: the socket transport's channels belong to their connection)."""
    link = target.open_link()
    a, b = allocate_channels(link, 2)
    rounds = 0
    control.ready()
    while not control.stopped():
        expected = []
        for _ in range(rounds_per_sync):
            pa, pb = os.urandom(120), os.urandom(120)
            fa, fb = fragments(a, CMD_PING, pa), fragments(b, CMD_PING, pb)
            for packet_a, packet_b in zip(fa, fb):
                link.send(packet_a)
                link.send(packet_b)
            expected += [error(b, ERR_CHANNEL_BUSY), (a, CMD_PING, pa)]
            if good_cid is not None:
                link.send(init_packet(good_cid, CMD_PING, 10, os.urandom(10)))
                link.send(cont_packet(good_cid, 0, os.urandom(59)))
                expected.append(error(good_cid, ERR_INVALID_CHANNEL))
        got = sync_and_collect(link, a)
        assert got == expected, f"interleaved messages answered {got[:4]}…, expected {expected[:4]}…"
        rounds += rounds_per_sync
    link.close()
    foreign = ", INVALID_CHANNEL on the good client's channel" if good_cid is not None else ""
    return {"packets": rounds * 8, "note": f"{rounds} interleaved pairs: BUSY for the second, echo for the first{foreign}"}


def flood_init(target, control, burst=32, fill_burst=50):
    """INITs on the broadcast channel, `burst` at a time: on one link every answer is read and
    checked (nonce, a fresh channel ID each time); a second link never reads its answers."""
    reader, deaf = target.open_link(), target.open_link()
    # Fill the channel table first: the measurement is of the steady state of any INIT flood
    # longer than a moment, where every INIT evicts a channel.
    seen = set(allocate_channels(reader, CHANNEL_CAPACITY + 100, burst=fill_burst))
    sent, deaf_sent = len(seen), 0
    control.ready()
    while not control.stopped():
        for cid in allocate_channels(reader, burst, burst=burst):
            assert cid not in seen and cid not in (0, BROADCAST), f"channel {cid:08x} handed out twice"
            seen.add(cid)
        sent += burst
        for _ in range(burst):
            deaf.send(init_packet(BROADCAST, CMD_INIT, 8, os.urandom(8)))
        deaf_sent += burst
    reader.close()
    deaf.close()
    return {"packets": sent + deaf_sent, "note": f"{sent} INITs answered with {len(seen)} distinct channels; "
                                                 f"{deaf_sent} more on a connection that never reads"}


def flood_channels(target, control, count=1000, burst=50):
    """1,000 channels on one link (fewer than the table's 1,024), then PINGs across all of them,
    `burst` at a time: every channel stays allocated and answers on its own ID."""
    link = target.open_link()
    cids = allocate_channels(link, count, burst=burst)
    assert len(set(cids)) == count, "distinct channel IDs"
    pinged, cycles, index = 0, 0, 0
    control.ready()
    while not control.stopped() or index != 0:    # finish the cycle: every channel PINGed at least once
        batch = cids[index:index + burst]
        payloads = [os.urandom(8) for _ in batch]
        for cid, payload in zip(batch, payloads):
            link.send(init_packet(cid, CMD_PING, 8, payload))
        for cid, payload in zip(batch, payloads):
            assert read_message(link) == (cid, CMD_PING, payload), f"PING on channel {cid:08x}"
        pinged += len(batch)
        index = (index + burst) % count
        cycles += index == 0
    link.close()
    return {"packets": count + pinged, "note": f"{count} channels allocated on one connection, {pinged} PINGs "
                                               f"across them ({cycles} full cycles), all answered"}


# --- running one flood against the good client ----------------------------------------------------

def run_flood(target, label, function, during=None, good=None, reconnect=False, seconds=FLOOD_SECONDS,
              held_ms=None, **args):
    """Baseline PINGs, the flood, PINGs during it, RSS before and after; prints and records the figures.
    reconnect: the good client measures during the flood on a connection it opens once the flood
    is under way (the INIT flood evicts an idle client's channel before that).
    held_ms: the flood holds the device by design (a half message until CTAPHID's message
    timeout): the PINGs answered at once keep the latency bound, and the ones that met
    ERR_CHANNEL_BUSY must each end within held_ms + the allowance."""
    pid = target.pid
    good = good or GoodClient(target)
    descriptors = fd_count(pid)   # the good client's connection included
    try:
        good.pings(5)
        baseline = median(good.pings(50))
        rss_before, cpu_before, busy_before = rss_mb(pid), cpu_seconds(pid), BUSY.count
        flood = Flood(function, target, **args)
        try:
            flood.wait_ready()
            if reconnect:
                good.close()
                good = GoodClient(target)
            times = good.pings(50, seconds=seconds)
            met_busy = good.met_busy
            extra = during(flood) if during else None
        finally:
            result = flood.finish()
        busy = BUSY.count - busy_before
        deadline = time.time() + 10
        while fd_count(pid) > descriptors:
            assert time.time() < deadline, (f"the flood's connections closed on the key's side ({descriptors} "
                                            f"descriptors before, {fd_count(pid)} now)")
            time.sleep(0.02)
        good.check_info()
        after = median(good.pings(20))
        rss_after, cpu = rss_mb(pid), cpu_seconds(pid) - cpu_before
    finally:
        good.close()
    floor_ms = getattr(target, "floor_ms", FLOOR_MS)
    allowed = max(2 * baseline, baseline + floor_ms)
    answered_at_once = [t for t, held in zip(times, met_busy) if not held] if held_ms is not None else times
    held_times = [t for t, held in zip(times, met_busy) if held] if held_ms is not None else []
    during_ms = median(answered_at_once) if answered_at_once else float("inf")
    figures = {"flood": label, "rss_before": rss_before, "rss_after": rss_after, "baseline": baseline,
               "during": during_ms, "allowed": allowed, "busy": busy, "pings": len(times), "cpu": cpu,
               "p90": percentile(times, 0.9), "max": max(times), "after": after, "result": result}
    FLOOD_FIGURES.append(figures)
    print(f"      [{label}] {result.get('note', '')}", flush=True)
    print(f"      [{label}] RSS {rss_before:.2f} → {rss_after:.2f} MB ({rss_after - rss_before:+.2f}); PING median "
          f"{baseline:.3f} ms baseline, {during_ms:.3f} ms during ({len(times)} PINGs, p90 {figures['p90']:.3f}, "
          f"max {figures['max']:.1f} ms, {busy} ERR_CHANNEL_BUSY answers, retried after 1 ms), {after:.3f} ms after; "
          f"allowed {allowed:.3f} ms = max(2× baseline, baseline + {floor_ms:.0f} ms floor); key CPU {cpu:.2f} s",
          flush=True)
    if held_ms is not None:
        worst_held = max(held_times, default=0.0)
        print(f"      [{label}] {len(answered_at_once)} PINGs answered at once (their median is the 'during' "
              f"figure), {len(held_times)} met the held device, the slowest {worst_held:.1f} ms (allowed "
              f"{held_ms:.0f} + {allowed:.3f} ms)", flush=True)
        assert held_times, "no PING met the device held by a half message: the flood did not hold it"
        assert worst_held <= held_ms + allowed, f"a PING waited {worst_held:.1f} ms for the held device"
    assert during_ms <= allowed, f"PING median {during_ms:.3f} ms during the flood, over {allowed:.3f} ms"
    return figures, extra


def print_flood_table(indent="      "):
    """The summary of every flood run so far (FLOOD_FIGURES)."""
    print(f"{indent}flood                     RSS before→after MB   PING baseline / during / allowed ms   busy", flush=True)
    for f in FLOOD_FIGURES:
        print(f"{indent}{f['flood']:<25} {f['rss_before']:7.2f} → {f['rss_after']:7.2f}     "
              f"{f['baseline']:7.3f} / {f['during']:7.3f} / {f['allowed']:7.3f}        {f['busy']}", flush=True)
