"""Socket suite: hostile-client floods. Each flood runs in a process of its own (forked,
niced, so that neither the GIL nor the flood's own CPU use distorts the measurement) while a
well-behaved python-fido2 client, on a fresh connection, PINGs the key: its median round trip
during the flood must stay within 2× its baseline (or baseline + FLOOR_MS, for sub-millisecond
baselines), every answer it gets must be right, and the flood's own answers must be the errors
CTAPHID defines. ERR_CHANNEL_BUSY, which CTAPHID answers while another channel's message is under
way, is counted and retried after 1 ms; that pause is the client's, not counted as latency. The
key's RSS is read before and after every flood; over all of them it may grow by less than 20 MB.

Floods: packets of the wrong size, random 64-byte packets, wrong sequence numbers, interleaved
channels, clients vanishing mid-message, an INIT flood (with a reader and a non-reader), 1,000
channels on one connection, 1,000 connections; then, on a `--presence control` key, clients
vanishing while their request waits for presence. Last, what the channel table does past its
capacity (1,024, least recently used evicted)."""

import logging

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports
from socket_hostile import cpu_seconds

FLOOR_MS = 2.0                 # latency allowance floor: max(2 × baseline, baseline + FLOOR_MS)
FLOOD_SECONDS = 1.0            # how long the good client measures during each flood
PING_GAP_SECONDS = 0.002       # the good client's pause between PINGs: it uses the key, it does not
                               # race the flood for the CPU (the machine may have two cores)
RSS_BUDGET_MB = 20.0
CHANNEL_CAPACITY = 1024        # CTAPHIDConfiguration.maxChannels
CONNECTION_LIMIT = 256         # SocketTransport.defaultMaximumConnections
PRESENCE_POLL_MS = 10          # ControlPresence.pollMilliseconds: how soon a waiting request sees its cancel

BROADCAST = 0xFFFFFFFF
CMD_PING, CMD_MSG, CMD_INIT, CMD_CBOR, CMD_KEEPALIVE, CMD_ERROR = 0x01, 0x03, 0x06, 0x10, 0x3B, 0x3F
ERR_INVALID_LEN, ERR_INVALID_SEQ, ERR_CHANNEL_BUSY, ERR_INVALID_CHANNEL = 0x03, 0x04, 0x06, 0x0B

FLOOD_FIGURES = []             # one dict per flood, for the memory check and the summary


# --- raw CTAPHID over the socket ----------------------------------------------------------------

def init_packet(cid, cmd, length, data=b""):
    return (struct.pack(">IBH", cid, 0x80 | cmd, length) + data[:57]).ljust(64, b"\0")


def cont_packet(cid, seq, data=b""):
    return (struct.pack(">IB", cid, seq) + data[:59]).ljust(64, b"\0")


def fragments(cid, cmd, payload):
    packets, rest, seq = [init_packet(cid, cmd, len(payload), payload[:57])], payload[57:], 0
    while rest:
        packets.append(cont_packet(cid, seq, rest[:59]))
        rest, seq = rest[59:], seq + 1
    return packets


def read_message(sock):
    """The key's next whole message on sock: (cid, cmd, payload)."""
    first = sock.recv(65)
    assert first, "the key closed the connection"
    assert len(first) == 64, f"a {len(first)}-byte packet from the key"
    cid, kind, length = struct.unpack(">IBH", first[:7])
    assert kind & 0x80, f"a continuation packet where a message should start: {first.hex()}"
    data, seq = first[7:7 + length], 0
    while len(data) < length:
        packet = sock.recv(65)
        assert len(packet) == 64 and struct.unpack(">I", packet[:4])[0] == cid and packet[4] == seq, packet.hex()
        data += packet[5:5 + length - len(data)]
        seq += 1
    return cid, kind & 0x7F, bytes(data)


def connect(path, timeout=5.0):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.settimeout(timeout)
    sock.connect(path)
    return sock


def allocate_channels(sock, count, burst=50):
    """`count` channels by INIT on the broadcast channel, `burst` at a time; checks every answer."""
    cids = []
    while len(cids) < count:
        nonces = [os.urandom(8) for _ in range(min(burst, count - len(cids)))]
        for nonce in nonces:
            sock.send(init_packet(BROADCAST, CMD_INIT, 8, nonce))
        for nonce in nonces:
            cid, cmd, data = read_message(sock)
            assert (cid, cmd, data[:8]) == (BROADCAST, CMD_INIT, nonce), (hex(cid), cmd, data.hex())
            cids.append(struct.unpack(">I", data[8:12])[0])
    return cids


def ping_raw(sock, cid, payload=None):
    payload = os.urandom(20) if payload is None else payload
    for packet in fragments(cid, CMD_PING, payload):
        sock.send(packet)
    return read_message(sock), payload


def sync_and_collect(sock, cid):
    """PINGs on cid and returns every message the key sent before the echo (answers arrive in order)."""
    token = os.urandom(16)
    sock.send(init_packet(cid, CMD_PING, len(token), token))
    before = []
    while True:
        message = read_message(sock)
        if message == (cid, CMD_PING, token):
            return before
        before.append(message)


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


def fd_descriptions(pid):
    targets = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}").split("[")[0]
        except OSError:
            continue
        targets[target] = targets.get(target, 0) + 1
    return ", ".join(f"{count} {target}" for target, count in sorted(targets.items()))


def log_text(key):
    with open(key.log_path, errors="replace") as handle:
        return handle.read()


class BusyCounter(logging.Handler):
    """python-fido2 retries ERR_CHANNEL_BUSY (after QuickRetry's 1 ms) and logs a warning each time: count them."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        if "busy" in record.getMessage().lower():
            self.count += 1


BUSY = BusyCounter()


class QuickRetry:
    """The `event` python-fido2's call takes: never set, and its wait (python-fido2's back-off
    after ERR_CHANNEL_BUSY, 100 ms) lasts 1 ms and is timed (`slept`), so that the good client's
    latency is the time it waits for the key — a BUSY answer costs its round trip and a retry,
    not the client's own back-off. The BUSY answers are counted in BUSY."""

    def __init__(self):
        self.slept = 0.0

    def is_set(self):
        return False

    def wait(self, timeout=None):
        before = time.perf_counter()
        time.sleep(0.001)
        self.slept += time.perf_counter() - before
        return False


class GoodClient:
    """A well-behaved python-fido2 client on a fresh connection: PINGs of one report each way
    (57 bytes), 2 ms apart, every echo checked; ERR_CHANNEL_BUSY retried after 1 ms (QuickRetry)."""

    def __init__(self, key):
        self.device = key.device()

    def pings(self, count=50, seconds=0.0):
        times, started = [], time.perf_counter()
        while (len(times) < count or time.perf_counter() - started < seconds) and time.perf_counter() - started < 15:
            payload = os.urandom(57)
            retry = QuickRetry()
            before = time.perf_counter()
            echoed = self.device.call(CTAPHID.PING, payload, event=retry)
            times.append((time.perf_counter() - before - retry.slept) * 1000)
            assert echoed == payload, "the good client's PING came back wrong"
            time.sleep(PING_GAP_SECONDS)
        return times

    def check_info(self):
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
    """Forks `function(path, control, **args)`; its return value (a dict) comes back as JSON."""

    def __init__(self, function, key, **args):
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
                payload = json.dumps(function(key.socket_path, FloodControl(control_r, result_w), **args)).encode()
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


def flood_bad_sizes(path, control):
    """Packets of every wrong size (0 to 4096 bytes), 50 at a time, each burst followed by a PING
    on the same connection: the key drops them and the connection keeps working."""
    sock = connect(path)
    cid = allocate_channels(sock, 1)[0]
    sizes, sent, bursts = [0, 1, 7, 63, 65, 100, 128, 1024, 4096], 0, 0
    control.ready()
    while not control.stopped():
        for _ in range(50):
            sock.send(b"\xA5" * sizes[sent % len(sizes)])
            sent += 1
        (reply, payload) = ping_raw(sock, cid)
        assert reply == (cid, CMD_PING, payload), "PING after dropped packets"
        bursts += 1
    sock.close()
    return {"packets": sent, "note": f"{sent} packets of 0–4096 bytes, a PING after every 50"}


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


def flood_random(path, control):
    """Random 64-byte packets, 32 at a time; every answer is checked against what CTAPHID says."""
    sock = connect(path)
    own = allocate_channels(sock, 1)[0]
    sent = answered = adopted = invalid_length = 0
    control.ready()
    while not control.stopped():
        expected, burst = [], []
        while len(burst) < 32:
            packet = os.urandom(64)
            if struct.unpack(">I", packet[:4])[0] in (BROADCAST, own):
                continue
            burst.append(packet)
            expectation = random_expectation(packet)
            if expectation is not None:
                expected.append((packet, expectation))
        for packet in burst:
            sock.send(packet)
        got = sync_and_collect(sock, own)
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
        sent += len(burst)
        answered += len(got)
    sock.close()
    return {"packets": sent, "note": f"{sent} random packets, {answered} answers all as expected ({invalid_length} of them "
                                         f"ERR_INVALID_LEN for an INIT not 8 bytes long, {adopted} INITs adopted, the "
                                         f"rest ERR_INVALID_CHANNEL)"}


def flood_wrong_sequence(path, control):
    """Multi-packet PINGs broken four ways (a wrong first sequence number, a repeated one, a
    skipped one, an initialization packet mid-message): each is one ERR_INVALID_SEQ."""
    sock = connect(path)
    cid = allocate_channels(sock, 1)[0]
    rounds = 0
    control.ready()
    while not control.stopped():
        for variant in range(16):
            sock.send(init_packet(cid, CMD_PING, 200, os.urandom(57)))
            kind = variant % 4
            if kind == 0:
                sock.send(cont_packet(cid, 1 + variant * 7 % 127))
            elif kind == 1:
                sock.send(cont_packet(cid, 0))
                sock.send(cont_packet(cid, 0))
            elif kind == 2:
                sock.send(cont_packet(cid, 0))
                sock.send(cont_packet(cid, 2))
            else:
                sock.send(init_packet(cid, CMD_PING, 10, os.urandom(10)))
        got = sync_and_collect(sock, cid)
        assert got == [error(cid, ERR_INVALID_SEQ)] * 16, f"16 broken messages answered {got}"
        rounds += 16
    sock.close()
    return {"packets": rounds * 2, "note": f"{rounds} broken messages, each ERR_INVALID_SEQ"}


def flood_interleaved(path, control, good_cid):
    """Two channels of one connection interleave their messages' packets (the second gets
    ERR_CHANNEL_BUSY, its continuations are ignored, the first completes); and packets on the
    good client's channel, which this connection does not own (ERR_INVALID_CHANNEL / ignored)."""
    sock = connect(path)
    a, b = allocate_channels(sock, 2)
    rounds = 0
    control.ready()
    while not control.stopped():
        expected = []
        for _ in range(8):
            pa, pb = os.urandom(120), os.urandom(120)
            fa, fb = fragments(a, CMD_PING, pa), fragments(b, CMD_PING, pb)
            for packet_a, packet_b in zip(fa, fb):
                sock.send(packet_a)
                sock.send(packet_b)
            sock.send(init_packet(good_cid, CMD_PING, 10, os.urandom(10)))
            sock.send(cont_packet(good_cid, 0, os.urandom(59)))
            expected += [error(b, ERR_CHANNEL_BUSY), (a, CMD_PING, pa), error(good_cid, ERR_INVALID_CHANNEL)]
        got = sync_and_collect(sock, a)
        assert got == expected, f"interleaved messages answered {got[:4]}…, expected {expected[:4]}…"
        rounds += 8
    sock.close()
    return {"packets": rounds * 8, "note": f"{rounds} interleaved pairs: BUSY for the second, echo for the first, "
                                          "INVALID_CHANNEL on the good client's channel"}


def flood_vanishing(path, control):
    """Clients that connect, allocate a channel, send part of a 1,000-byte message and close."""
    rounds = 0
    control.ready()
    while not control.stopped():
        sock = connect(path)
        cid = allocate_channels(sock, 1)[0]
        payload = os.urandom(1000)
        for packet in fragments(cid, CMD_PING, payload)[:1 + rounds % 5]:
            sock.send(packet)
        sock.close()
        rounds += 1
    return {"packets": rounds * 4, "connections": rounds, "note": f"{rounds} clients vanished mid-message"}


def flood_init(path, control):
    """INITs on the broadcast channel, 32 at a time: on one connection every answer is read and
    checked (nonce, a fresh channel ID each time); a second connection never reads its answers."""
    reader, deaf = connect(path), connect(path)
    # Fill the channel table first: the measurement is of the steady state of any INIT flood
    # longer than a moment, where every INIT evicts a channel.
    seen = set(allocate_channels(reader, CHANNEL_CAPACITY + 100))
    sent, deaf_sent = len(seen), 0
    control.ready()
    while not control.stopped():
        for cid in allocate_channels(reader, 32, burst=32):
            assert cid not in seen and cid not in (0, BROADCAST), f"channel {cid:08x} handed out twice"
            seen.add(cid)
        sent += 32
        for _ in range(32):
            deaf.send(init_packet(BROADCAST, CMD_INIT, 8, os.urandom(8)))
        deaf_sent += 32
    reader.close()
    deaf.close()
    return {"packets": sent + deaf_sent, "note": f"{sent} INITs answered with {len(seen)} distinct channels; "
                                                 f"{deaf_sent} more on a connection that never reads"}


def flood_channels(path, control, count=1000):
    """1,000 channels on one connection (fewer than the table's 1,024), then PINGs across all of
    them, 50 at a time: every channel stays allocated and answers on its own ID."""
    sock = connect(path)
    cids = allocate_channels(sock, count)
    assert len(set(cids)) == count, "distinct channel IDs"
    pinged, cycles, index = 0, 0, 0
    control.ready()
    while not control.stopped() or index != 0:    # finish the cycle: every channel PINGed at least once
        batch = cids[index:index + 50]
        payloads = [os.urandom(8) for _ in batch]
        for cid, payload in zip(batch, payloads):
            sock.send(init_packet(cid, CMD_PING, 8, payload))
        for cid, payload in zip(batch, payloads):
            assert read_message(sock) == (cid, CMD_PING, payload), f"PING on channel {cid:08x}"
        pinged += len(batch)
        index = (index + 50) % count
        cycles += index == 0
    sock.close()
    return {"packets": count + pinged, "note": f"{count} channels allocated on one connection, {pinged} PINGs "
                                               f"across them ({cycles} full cycles), all answered"}


def flood_connections(path, control, count=1000):
    """1,000 connections held open (the key takes up to its limit and closes the rest at once),
    then connect-and-refused churn; on command '1' it stops churning and holds; on 'S' it ends."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 200)), hard))

    def open_one():
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.setblocking(False)
        deadline = time.time() + 3
        while True:
            try:
                sock.connect(path)
                return sock
            except BlockingIOError:
                assert time.time() < deadline, "connect still waits after 3 s"
                time.sleep(0.002)

    started = time.time()
    held = [open_one() for _ in range(count)]
    opened = time.time() - started
    # Refused connections see end of stream; accepted ones see nothing.
    refused, deadline = set(), time.time() + 2
    poller = select.poll()
    for index, sock in enumerate(held):
        poller.register(sock.fileno(), select.POLLIN | select.POLLHUP)
    by_fd = {sock.fileno(): index for index, sock in enumerate(held)}
    while time.time() < deadline:
        for fd, _ in poller.poll(100):
            refused.add(by_fd[fd])
            poller.unregister(fd)
        if len(refused) >= count - (CONNECTION_LIMIT - 1):
            deadline = min(deadline, time.time() + 0.3)   # all expected: a moment more for any extra
    for index in refused:
        assert held[index].recv(65) == b"", "a refused client reads end of stream, not data"
        held[index].close()
    accepted = [sock for index, sock in enumerate(held) if index not in refused]
    control.ready()
    churn, slowest = 0, 0.0
    while not control.stopped():
        sock = open_one()
        sock.setblocking(True)
        sock.settimeout(2)
        before = time.perf_counter()
        assert sock.recv(65) == b"", "a client past the limit sees end of stream"
        slowest = max(slowest, time.perf_counter() - before)
        sock.close()
        churn += 1
    phase = control.command()
    if phase == b"1":
        control.command()   # holding idle until 'S'
    for sock in accepted:
        sock.close()
    return {"packets": 0, "accepted": len(accepted), "refused": len(refused), "churn": churn,
            "note": f"{count} connections in {opened:.2f} s: {len(accepted)} accepted, {len(refused)} refused; "
                    f"{churn} more refused while held (slowest end of stream {slowest * 1000:.1f} ms)"}


# --- running one flood against the good client ----------------------------------------------------

def run_flood(key, label, function, during=None, good=None, reconnect=False, **args):
    """Baseline PINGs, the flood, PINGs during it, RSS before and after; prints and records the figures.
    reconnect: the good client measures during the flood on a connection it opens once the flood
    is under way (the INIT flood evicts an idle client's channel before that: see channel_table)."""
    pid = key.process.pid
    good = good or GoodClient(key)
    descriptors = fd_count(pid)   # the good client's connection included
    try:
        good.pings(5)
        baseline = median(good.pings(50))
        rss_before, cpu_before, busy_before = rss_mb(pid), cpu_seconds(pid), BUSY.count
        flood = Flood(function, key, **args)
        try:
            flood.wait_ready()
            if reconnect:
                good.close()
                good = GoodClient(key)
            times = good.pings(50, seconds=FLOOD_SECONDS)
            extra = during(flood) if during else None
        finally:
            result = flood.finish()
        busy = BUSY.count - busy_before
        wait_for(lambda: fd_count(pid) <= descriptors, seconds=10,
                 what=f"the flood's connections closed on the key's side ({descriptors} descriptors before, "
                      f"{fd_count(pid)} as the wait began)")
        good.check_info()
        after = median(good.pings(20))
        rss_after, cpu = rss_mb(pid), cpu_seconds(pid) - cpu_before
    finally:
        good.close()
    during_ms = median(times)
    allowed = max(2 * baseline, baseline + FLOOR_MS)
    figures = {"flood": label, "rss_before": rss_before, "rss_after": rss_after, "baseline": baseline,
               "during": during_ms, "allowed": allowed, "busy": busy, "pings": len(times), "cpu": cpu,
               "p90": percentile(times, 0.9), "max": max(times), "after": after, "result": result}
    FLOOD_FIGURES.append(figures)
    print(f"      [{label}] {result.get('note', '')}", flush=True)
    print(f"      [{label}] RSS {rss_before:.2f} → {rss_after:.2f} MB ({rss_after - rss_before:+.2f}); PING median "
          f"{baseline:.3f} ms baseline, {during_ms:.3f} ms during ({len(times)} PINGs, p90 {figures['p90']:.3f}, "
          f"max {figures['max']:.1f} ms, {busy} ERR_CHANNEL_BUSY answers, retried after 1 ms), {after:.3f} ms after; "
          f"allowed {allowed:.3f} ms = max(2× baseline, baseline + {FLOOR_MS:.0f} ms floor); key CPU {cpu:.2f} s",
          flush=True)
    assert during_ms <= allowed, f"PING median {during_ms:.3f} ms during the flood, over {allowed:.3f} ms"
    return figures, extra


def dropped_accounting(key):
    """(lines, packets they account for): each 'dropped a' line is one packet plus the '(N more
    like it were not logged)' it carries."""
    lines = [line for line in log_text(key).splitlines() if "dropped a " in line]
    total = 0
    for line in lines:
        total += 1
        if "more like it were not logged" in line:
            total += int(line.rsplit("(", 1)[1].split()[0])
    return lines, total


# --- the checks ---------------------------------------------------------------------------------

def test_floods():
    """Every flood on one auto-presence key, then the channel table past its capacity, then the
    presence-wait vanishing on a control key, then the memory check over all of them. Never
    raises: a failure outside the checks (a key that does not start) is one failed result."""
    fido_logger = logging.getLogger("fido2.hid")
    fido_logger.addHandler(BUSY)
    saved_propagate, fido_logger.propagate = fido_logger.propagate, False
    try:
        run_floods()
    except Exception as failure:  # noqa: BLE001 - the suite goes on
        RESULTS.append(("floods", False))
        print(f"FAIL  floods: {type(failure).__name__}: {failure}", flush=True)
        traceback.print_exc(limit=4)
    finally:
        fido_logger.removeHandler(BUSY)
        fido_logger.propagate = saved_propagate


def run_floods():
    FLOOD_FIGURES.clear()
    key = Key("floods").start()
    started = time.time()
    state = {"first_drop": None, "bad_packets": 0}
    try:
        key_rss_start = rss_mb(key.process.pid)
        descriptors_start = fd_count(key.process.pid)

        @check("flood: packets of the wrong size (0–4096 bytes) are dropped, the connection keeps working, "
               "the good client keeps its latency")
        def bad_sizes():
            state["first_drop"] = time.time()
            figures, _ = run_flood(key, "wrong sizes", flood_bad_sizes)
            state["bad_packets"] += figures["result"]["packets"]
            assert key.process.poll() is None, "the key is up"
            lines, accounted = dropped_accounting(key)
            assert len(lines) <= 21, f"{len(lines)} log lines for {state['bad_packets']} dropped packets"
            print(f"      [wrong sizes] {len(lines)} 'dropped' log lines for {state['bad_packets']} packets", flush=True)

        @check("flood: random 64-byte packets get ERR_INVALID_CHANNEL / ERR_INVALID_LEN / an adopting INIT "
               "answer, or nothing (continuations), exactly; the good client keeps its latency")
        def random_packets():
            run_flood(key, "random packets", flood_random)

        @check("flood: wrong sequence numbers (first, repeated, skipped, INIT mid-message) are each one "
               "ERR_INVALID_SEQ; the good client keeps its latency")
        def wrong_sequence():
            run_flood(key, "wrong sequence", flood_wrong_sequence)

        @check("flood: interleaved channels (ERR_CHANNEL_BUSY for the second message, the first completes) and "
               "packets on another connection's channel (ERR_INVALID_CHANNEL); the good client keeps its latency")
        def interleaved():
            good = GoodClient(key)
            good_cid = good.device._channel_id
            run_flood(key, "interleaved channels", flood_interleaved, good=good, good_cid=good_cid)
            # A multi-packet message of one connection is not disturbed by continuation packets
            # another connection sends on its channel.
            owner, intruder = connect(key.socket_path), connect(key.socket_path)
            cid = allocate_channels(owner, 1)[0]
            payload = os.urandom(100)
            first, second = fragments(cid, CMD_PING, payload)
            owner.send(first)
            time.sleep(0.02)
            intruder.send(cont_packet(cid, 0, b"\xEE" * 59))
            intruder.send(cont_packet(cid, 7, b"\xEE" * 59))
            time.sleep(0.02)
            owner.send(second)
            assert read_message(owner) == (cid, CMD_PING, payload), "the owner's message, untouched"
            intruder.send(init_packet(cid, CMD_PING, 4, b"spam"))
            assert read_message(intruder) == error(cid, ERR_INVALID_CHANNEL)
            owner.close()
            intruder.close()

        @check("flood: clients vanishing mid-message free the device at once; the good client keeps its latency")
        def vanishing():
            figures, _ = run_flood(key, "vanishing mid-message", flood_vanishing)
            assert figures["result"]["connections"] >= 20, figures["result"]

        @check("flood: INIT on the broadcast channel (the channel table full, each INIT evicting one), read and "
               "unread: every read INIT answered with its nonce and a fresh channel; the good client keeps its latency")
        def init_flood():
            figures, _ = run_flood(key, "INIT flood", flood_init, reconnect=True)
            assert figures["result"]["packets"] >= 1000, figures["result"]

        @check("flood: 1,000 channels on one connection all answer on their own ID; the good client keeps its latency")
        def thousand_channels():
            run_flood(key, "1,000 channels", flood_channels)

        @check("flood: 1,000 connections: the key takes 256 (its limit) and closes the rest at once, "
               "stays idle holding them, and the good client (connected before) keeps its latency")
        def thousand_connections():
            measured = {}

            def during(flood):
                flood.command(b"1")            # stop churning, hold the connections
                time.sleep(0.3)
                late = connect(key.socket_path, timeout=2)
                before = time.perf_counter()
                assert late.recv(65) == b"", "a new client while the key is full sees end of stream"
                measured["refusal_ms"] = (time.perf_counter() - before) * 1000
                late.close()
                time.sleep(0.2)
                cpu_before = cpu_seconds(key.process.pid)
                time.sleep(1.0)
                measured["idle_cpu"] = cpu_seconds(key.process.pid) - cpu_before
                flood.command(b"S")

            figures, _ = run_flood(key, "1,000 connections", flood_connections, during=during)
            result = figures["result"]
            assert result["accepted"] == CONNECTION_LIMIT - 1, \
                f"{result['accepted']} connections accepted besides the good client's (limit {CONNECTION_LIMIT})"
            assert result["refused"] == 1000 - result["accepted"], result
            refused_lines = log_text(key).count("refused a client")
            print(f"      [1,000 connections] a late client refused in {measured['refusal_ms']:.1f} ms; key CPU "
                  f"{measured['idle_cpu']:.3f} s in 1 s holding {CONNECTION_LIMIT} connections; "
                  f"{refused_lines} 'refused a client' log lines", flush=True)
            assert measured["refusal_ms"] < 500, measured
            assert measured["idle_cpu"] < 0.15, f"the key used {measured['idle_cpu']:.2f} s of CPU in 1 s, idle"
            assert 0 < refused_lines <= 45, f"{refused_lines} 'refused a client' lines"

        for flood_check in (bad_sizes, random_packets, wrong_sequence, interleaved, vanishing, init_flood,
                            thousand_channels, thousand_connections):
            flood_check()
            if key.process.poll() is not None:
                break

        @check("floods: the key stays up, closes every flood connection, and logs dropped packets throttled "
               "with an exact count of those left out")
        def aftermath():
            assert key.process.poll() is None, f"the key exited with {key.process.returncode}: {key.log()}"
            wait_for(lambda: fd_count(key.process.pid) <= descriptors_start, seconds=10,
                     what=f"the key's descriptors back to {descriptors_start} (it has {fd_descriptions(key.process.pid)})")
            # The throttle's window is 10 s; once it has passed, the next dropped packet's line says
            # how many were left out, and the lines account for every dropped packet.
            wait = state["first_drop"] + 10.3 - time.time() if state["first_drop"] else 0
            if wait > 0:
                time.sleep(wait)
            sock = connect(key.socket_path)
            cid = allocate_channels(sock, 1)[0]
            sock.send(b"\x00" * 65)
            state["bad_packets"] += 1
            reply, payload = ping_raw(sock, cid)
            assert reply == (cid, CMD_PING, payload)
            sock.close()
            lines, accounted = dropped_accounting(key)
            assert "more like it were not logged" in lines[-1], lines[-1]
            assert accounted == state["bad_packets"], \
                f"the log accounts for {accounted} dropped packets, {state['bad_packets']} were sent"
            print(f"      ({len(lines)} 'dropped' lines account for all {accounted} dropped packets: {lines[-1].split('] ', 1)[-1]})",
                  flush=True)

        aftermath()
        key_rss_end = rss_mb(key.process.pid) if key.process.poll() is None else None
        channel_table(key)
    finally:
        key.stop()

    presence = {}
    vanish_during_presence(presence)

    @check(f"floods: the keys' memory stays bounded (RSS growth over all floods under {RSS_BUDGET_MB:.0f} MB)")
    def memory():
        assert key_rss_end is not None and "growth" in presence, "a key was not up to the end of its floods"
        growth = key_rss_end - key_rss_start + presence["growth"]
        print(f"      (RSS of the flooded key {key_rss_start:.2f} → {key_rss_end:.2f} MB; of the presence key "
              f"{presence.get('before', 0):.2f} → {presence.get('after', 0):.2f} MB; growth {growth:+.2f} MB in all)",
              flush=True)
        print("      flood                     RSS before→after MB   PING baseline / during / allowed ms   busy", flush=True)
        for f in FLOOD_FIGURES:
            print(f"      {f['flood']:<25} {f['rss_before']:7.2f} → {f['rss_after']:7.2f}     "
                  f"{f['baseline']:7.3f} / {f['during']:7.3f} / {f['allowed']:7.3f}        {f['busy']}", flush=True)
        assert growth < RSS_BUDGET_MB, f"RSS grew by {growth:.2f} MB"

    memory()
    print(f"      (floods took {time.time() - started:.1f} s)", flush=True)


def channel_table(key):
    pid = key.process.pid
    descriptors = fd_count(pid)

    def all_closed():
        # A closed connection's channels are released when the key sees the hang-up.
        wait_for(lambda: fd_count(pid) <= descriptors, seconds=10, what="the key seeing the connections closed")

    @check("flood: past the channel table's capacity (1,024) the least recently used channel is evicted "
           "(ERR_INVALID_CHANNEL), the newest answers")
    def lru():
        hog = connect(key.socket_path)
        cids = allocate_channels(hog, CHANNEL_CAPACITY + 76)
        assert read_message_after_ping(hog, cids[0]) == error(cids[0], ERR_INVALID_CHANNEL), "the oldest channel is evicted"
        reply, payload = ping_raw(hog, cids[-1])
        assert reply == (cids[-1], CMD_PING, payload), "the newest channel answers"
        hog.close()
        all_closed()

    @check("flood: an idle client's channel survives another connection allocating more than 1,024 channels")
    def idle_client_survives():
        idle = connect(key.socket_path)
        idle_cid = allocate_channels(idle, 1)[0]
        hog = connect(key.socket_path)
        allocate_channels(hog, CHANNEL_CAPACITY + 76)
        reply, payload = ping_raw(idle, idle_cid)
        hog.close()
        idle.close()
        all_closed()
        assert reply == (idle_cid, CMD_PING, payload), \
            f"the idle client's PING after another connection's {CHANNEL_CAPACITY + 76} INITs: {reply}"

    lru()
    idle_client_survives()


def read_message_after_ping(sock, cid):
    token = os.urandom(8)
    sock.send(init_packet(cid, CMD_PING, 8, token))
    return read_message(sock)


def cancelled_count(key):
    import re
    return len(re.findall(r"request \d+ cancelled", log_text(key)))


def make_credential_payload(index):
    return bytes([0x01]) + cbor.encode({
        1: hashlib.sha256(b"vanish %d" % index).digest(),
        2: {"id": "vanish.example", "name": "Vanish"},
        3: {"id": b"vanish-%d" % index, "name": f"vanish{index}"},
        4: [{"type": "public-key", "alg": -7}],
    })


def vanish_during_presence(figures, rounds=12):
    @check("flood: clients vanishing while their makeCredential waits for presence: each request is cancelled "
           "(log), nothing stays pending, and the next client is served at once")
    def run():
        key = ControlKey("floods-presence").start()
        try:
            pid = key.process.pid
            good = GoodClient(key)
            ctap = Ctap2(good.device)
            ctap.get_info()

            def info_ms():
                before = time.perf_counter()
                assert "FIDO_2_0" in ctap.get_info().versions
                return (time.perf_counter() - before) * 1000

            baseline = median([info_ms() for _ in range(30)])
            ping_baseline = median(good.pings(30))
            figures["before"] = rss_mb(pid)
            after_vanish, ping_after = [], []
            for index in range(rounds):
                sock = connect(key.socket_path)
                cid = allocate_channels(sock, 1)[0]
                for packet in fragments(cid, CMD_CBOR, make_credential_payload(index)):
                    sock.send(packet)
                while True:   # KEEPALIVE PROCESSING, then UPNEEDED: the request waits for presence
                    got = read_message(sock)
                    assert got[:2] == (cid, CMD_KEEPALIVE), f"while waiting for presence: {got}"
                    if got[2] == b"\x02":
                        break
                cancelled = cancelled_count(key)
                sock.close()
                wait_for(lambda: cancelled_count(key) > cancelled, seconds=5,
                         what="the key logging the vanished client's request cancelled")
                ping_after.append(good.pings(1)[0])
                after_vanish.append(info_ms())
                wait_for(lambda: '"pending":' not in status_line(key) or '"pending":null' in status_line(key),
                         seconds=5, what="no presence request pending")
            # A real request still gets through presence after all that.
            answer_thread, answer = in_background(key.answer, "approve", "--rp", "after.example", "--timeout", "20")
            wait_for(lambda: '"waiting_answers":1' in status_line(key), what="the approve answer waiting")
            created = ctap.make_credential(hashlib.sha256(b"after").digest(), {"id": "after.example", "name": "After"},
                                           {"id": b"after", "name": "after"}, [{"type": "public-key", "alg": -7}])
            assert created.auth_data.is_user_present()
            answer_thread.join(timeout=20)
            assert answer["value"].returncode == 0, answer
            figures["after"] = rss_mb(pid)
            figures["growth"] = figures["after"] - figures["before"]
            good.close()
            allowed = max(2 * baseline, baseline + FLOOR_MS) + PRESENCE_POLL_MS
            ping_allowed = max(2 * ping_baseline, ping_baseline + FLOOR_MS)
            worst, ping_worst = max(after_vanish), max(ping_after)
            print(f"      [vanish mid-presence] {rounds} clients vanished while waiting for presence; RSS "
                  f"{figures['before']:.2f} → {figures['after']:.2f} MB ({figures['growth']:+.2f}); first PING after "
                  f"each: median {median(ping_after):.3f} ms (baseline {ping_baseline:.3f}, allowed {ping_allowed:.3f}), "
                  f"worst {ping_worst:.3f} ms (allowed baseline + 50 ms); "
                  f"first getInfo after each: median {median(after_vanish):.3f} ms (baseline {baseline:.3f}, "
                  f"allowed {allowed:.3f} = max(2×, +{FLOOR_MS:.0f} ms) + {PRESENCE_POLL_MS} ms, the presence wait's "
                  f"cancellation poll), worst {worst:.3f} ms (allowed baseline + 50 ms)", flush=True)
            assert median(ping_after) <= ping_allowed, f"PING median {median(ping_after):.3f} ms after a vanished client"
            assert ping_worst <= ping_baseline + 50, f"PING {ping_worst:.3f} ms after a vanished client"
            # The median is held to the bound; a single worst case only to one well short of any
            # timeout (scheduling on a shared machine adds a few ms now and then).
            assert median(after_vanish) <= allowed, f"getInfo median {median(after_vanish):.3f} ms after a vanished client"
            assert worst <= baseline + 50, f"getInfo {worst:.3f} ms after a vanished client"
            cancelled_lines = cancelled_count(key)
            assert cancelled_lines >= rounds, f"{cancelled_lines} 'cancelled' log lines for {rounds} vanished clients"
        finally:
            assert key.stop() == 0, key.log()

    run()
