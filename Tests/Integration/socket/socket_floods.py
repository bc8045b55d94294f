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
capacity (1,024, least recently used evicted).

The packets, the good client, the flood processes and the floods the uhid suite runs as well
(e2e_floods.py) are in flood_support.py; the socket's own floods are here."""

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports (and ../support on the path)
import flood_support
from flood_support import *  # noqa: F401,F403 - packets, the good client, floods, run_flood

CONNECTION_LIMIT = 256         # SocketTransport.defaultMaximumConnections
PRESENCE_POLL_MS = 10          # ControlPresence.pollMilliseconds: how soon a waiting request sees its cancel


def connect(path, timeout=5.0):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.settimeout(timeout)
    sock.connect(path)
    return sock


class SocketTarget:
    """A socket key as flood_support's floods see it: each link a connection of its own."""

    def __init__(self, key):
        self.key, self.path, self.pid = key, key.socket_path, key.process.pid

    def device(self):
        return self.key.device()

    def open_link(self, timeout=5.0):
        return connect(self.path, timeout)


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


# --- the socket's own floods, each in a forked, niced process (flood_support.Flood) -------------

def flood_bad_sizes(target, control):
    """Packets of every wrong size (0 to 4096 bytes), 50 at a time, each burst followed by a PING
    on the same connection: the key drops them and the connection keeps working."""
    sock = target.open_link()
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


def flood_vanishing(target, control):
    """Clients that connect, allocate a channel, send part of a 1,000-byte message and close."""
    rounds = 0
    control.ready()
    while not control.stopped():
        sock = target.open_link()
        cid = allocate_channels(sock, 1)[0]
        payload = os.urandom(1000)
        for packet in fragments(cid, CMD_PING, payload)[:1 + rounds % 5]:
            sock.send(packet)
        sock.close()
        rounds += 1
    return {"packets": rounds * 4, "connections": rounds, "note": f"{rounds} clients vanished mid-message"}


def flood_connections(target, control, count=1000):
    """1,000 connections held open (the key takes up to its limit and closes the rest at once),
    then connect-and-refused churn; on command '1' it stops churning and holds; on 'S' it ends."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 200)), hard))

    started = time.time()
    held = [connect_nonblocking(target.path) for _ in range(count)]
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
        sock = connect_nonblocking(target.path)
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

def run_flood(key, label, function, **options):
    """flood_support.run_flood on a socket key (options as there)."""
    return flood_support.run_flood(SocketTarget(key), label, function, **options)


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
    with busy_counted():
        try:
            run_floods()
        except Exception as failure:  # noqa: BLE001 - the suite goes on
            RESULTS.append(("floods", False))
            print(f"FAIL  floods: {type(failure).__name__}: {failure}", flush=True)
            traceback.print_exc(limit=4)


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
        print_flood_table()
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
