#!/usr/bin/env python3
"""Seed corpora for the libFuzzer targets in Fuzz/Targets, made from the traces of real traffic.

What it does
------------
1. Runs the socket suite's protocol groups (Tests/Integration/socket, under pytest) with
   `--trace-dir`: every `latchkey serve` they start records its traffic with `--trace`. That is
   the project's broadest real session — python-fido2's own device suite, every CTAP 2.1/2.2
   command family with and without a PIN, U2F, raw CTAPHID abuse (bad sequence numbers,
   wrong-sized packets, abandoned messages, floods of channels), power cycles and resets, the
   CLI's own clients — and this script no longer drives a session of its own. `--traces DIR`
   takes traces made earlier instead (any `serve --trace` or `proxy --trace` files).
2. Takes each trace apart: the CTAP-level messages from `latchkey trace FILE --json` (each
   message's bytes are its `payload`: docs/trace-format.md), the CTAPHID-level seeds from the
   file's own 64-byte reports (the framing is the point of those targets), put together with the
   suites' one CTAPHID reassembler (Tests/Integration/support/ctaphid_frames.py). Secrets are
   zero in a trace (docs/trace-format.md, "What is blanked"), and so in every seed. It writes
   the seed formats each target reads (see Fuzz/Targets/*):

   FuzzCBOR                 CTAP2 request parameters and response bodies, one per file.
   FuzzMakeCredential, FuzzGetAssertion, FuzzClientPIN, FuzzCredentialManagement,
   FuzzLargeBlobs, FuzzConfigReset
                            FuzzScript: setup byte, then records op ‖ len(2, BE) ‖ body, where
                            op indexes the target's `commands` list (read from its .swift file)
                            and op | 0x80 asks the harness to authenticate the body.
   FuzzU2F                  setup byte 0x00, records 0x00 ‖ len ‖ APDU (and op 0x80 ‖ P1).
   FuzzCTAPHID              channel(4) ‖ cmd ‖ len(2) ‖ payload, then steps op ‖ n ‖ n bytes:
                            one connection's real reports (channel IDs renumbered to the ones the
                            harness's state machine allocates, 0x1000 upwards) with an op 5
                            "complete" step carrying the real response after each CBOR/MSG.
   FuzzUHIDEvent            4380-byte struct uhid_event: UHID_OUTPUT events carrying real
                            reports, and START / STOP / OPEN / CLOSE / GET_REPORT / SET_REPORT.
   FuzzTrace                trace files, prefixes and per-connection slices.
   FuzzControl              control-socket request lines (captured from the CLI, and variants).
   FuzzRig                  rig control API request lines (written here, from the README contract).
   FuzzImport               files for `latchkey import`/`restore`: CXF, Bitwarden, KeePassXC fixtures and
                            the CLI's own exports (plain, passphrase, HPKE) and a backup.
   FuzzSignalBridge         native-messaging streams to `latchkey native-host` (written here, from
                            the README contract: framed signals naming the target's credentials).
   FuzzDeflate              zlib's raw DEFLATE of sample blobs, and the blobs (written here).

   Every file is named by the SHA-1 of its content; each target keeps at most 100 files
   (LATCHKEY_CORPUS_MAX). With `--out DIR` the seeds go to DIR/<Target>/, to be merged into the
   committed corpus by `scripts/fuzz --merge-seeds DIR` (only seeds that reach new code join);
   without it the script replaces Fuzz/corpus/<Target>/ for exactly these targets and writes
   nothing else in the tree.

Run (from the repository root, with the binary built and the test venv made by scripts/test):

    .build/test-venv/bin/python Fuzz/make-corpus.py .build/debug/latchkey --out /tmp/seeds
    scripts/fuzz --merge-seeds /tmp/seeds
    .build/test-venv/bin/python Fuzz/make-corpus.py .build/debug/latchkey --traces DIR --out /tmp/seeds

The socket groups take about 30 seconds. Keys, signatures and ECDH shares are fresh each run,
so the file names change from run to run while the shape of the corpus does not.
LATCHKEY_CORPUS_KEEP=1 keeps the temporary directory (the traces) for a look afterwards.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import zlib

from fido2 import cbor

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
# The suites' CTAPHID framing and exchange fixtures, not copies of them.
sys.path.insert(0, os.path.join(ROOT, "Tests", "Integration", "support"))
import ctaphid_frames  # noqa: E402
from ctaphid_frames import BROADCAST  # noqa: E402
from exchange_fixtures import bitwarden_fixture, hand_written_cxf, keepassxc_fixture  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
TARGETS = os.path.join(HERE, "Targets")
MAX_FILES = int(os.environ.get("LATCHKEY_CORPUS_MAX", "100"))

# The socket suite's groups whose keys carry protocol traffic (pytest -k): not the floods (their
# traces are megabytes of one request), the browsers or the store's sealing.
SUITE_GROUPS = ("main_key or cancel_and_prompt or restart_and_lock or control_presence_and_trace"
                " or cli_device_credential_management or ctap21_pinned_key or accounts_chosen_on_key"
                " or builtin_uv or algorithms or ctap22 or replay or fido2_device_suite")

ODDITIES = []   # what went differently from what the script expected


class CTAPHID:
    """CTAPHID command codes (the suites' own constants), by the name `latchkey trace` gives them."""
    PING, MSG, INIT, CBOR, KEEPALIVE, ERROR = (ctaphid_frames.CMD_PING, ctaphid_frames.CMD_MSG, ctaphid_frames.CMD_INIT,
                                               ctaphid_frames.CMD_CBOR, ctaphid_frames.CMD_KEEPALIVE,
                                               ctaphid_frames.CMD_ERROR)
    BY_NAME = {"PING": PING, "MSG": MSG, "INIT": INIT, "CBOR": CBOR, "KEEPALIVE": KEEPALIVE, "ERROR": ERROR}

def note(text):
    ODDITIES.append(text)
    print("  ODD: " + text, flush=True)


def sha(text):
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).digest()


# Control socket requests, as the CLI writes them ----------------------------------------------

def capture_control_lines(binary, work):
    """Runs `latchkey approve/deny/presence status --control PATH` against a listener of ours
    and keeps the request line each writes (answering with a plausible response)."""
    path = os.path.join(work, "capture.control")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    listener.settimeout(10)
    lines = []
    replies = [b'{"operation":"register","result":"approved","rp_id":"fuzz.example","user":"ada"}\n',
               b'{"message":"no presence request came within 0 s","result":"none"}\n',
               b'{"pending":{"operation":"U2F register","waiting_ms":1200},"result":"status","waiting_answers":0}\n',
               b'{"result":"denied","operation":"authenticate","rp_id":"other.example"}\n']
    commands = [["approve"], ["deny", "--timeout", "0"], ["presence", "status"], ["deny", "--timeout", "5"],
                ["approve", "--timeout", "0"]]
    # Answers naming their target (ControlPresence.Target), where this binary has the options.
    usage = subprocess.run([binary, "approve", "--help"], capture_output=True, text=True, timeout=10).stdout
    if "--rp" in usage:
        commands += [["approve", "--rp", "fuzz.example"], ["deny", "--rp", "other.example", "--timeout", "5"]]
    if "--request" in usage:
        commands += [["approve", "--request", "3"], ["deny", "--request", "4"]]
    for index, args in enumerate(commands):
        process = subprocess.Popen([binary, *args, "--control", path], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            client, _ = listener.accept()
            client.settimeout(5)
            line = b""
            while not line.endswith(b"\n"):
                chunk = client.recv(4096)
                if not chunk:
                    break
                line += chunk
            lines.append(line)
            client.sendall(replies[index % len(replies)])
            client.close()
        except OSError as error:
            note(f"capturing `latchkey {' '.join(args)}`: {error}")
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    listener.close()
    return lines


# --- the traces -------------------------------------------------------------------------------

def record_traces(binary, directory):
    """The socket suite's protocol groups, each key traced into `directory`."""
    python = sys.executable
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(ROOT, "Tests", "Integration", "socket"),
               "--latchkey", binary, "--trace-dir", directory, "-k", SUITE_GROUPS]
    print("recording: " + " ".join(command[2:]), flush=True)
    result = subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    summary = [line for line in result.stdout.splitlines() if "passed" in line or "failed" in line][-2:]
    for line in summary:
        print("  " + line, flush=True)
    if result.returncode != 0:
        # A failing check does not make its traffic less real; say so and go on.
        note("the socket groups did not all pass (pytest exit status %d); their traffic is used anyway"
             % result.returncode)


def read_trace(path):
    """(the file's bytes, its header line, its records in time order, their lines in that order)."""
    with open(path, "rb") as handle:
        raw = handle.read()
    lines = raw.split(b"\n")
    records = [json.loads(line) for line in lines[1:] if line.strip()]
    order = sorted(range(len(records)), key=lambda index: (records[index]["t"], index))
    return raw, lines[0], [records[index] for index in order], [lines[1 + index] for index in order]


class Message:
    def __init__(self, direction, conn, channel, command, payload, reports=()):
        self.direction, self.conn, self.channel, self.command = direction, conn, channel, command
        self.payload, self.reports = payload, list(reports)   # reports: indices in the record list


def decoded_messages(binary, path):
    """The whole messages `latchkey trace FILE --json` decodes, in time order."""
    result = subprocess.run([binary, "trace", path, "--json"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                            timeout=300)
    if result.returncode != 0:
        note(f"latchkey trace {os.path.basename(path)} --json exited {result.returncode}: {result.stderr.strip()[:200]}")
        return []
    messages = []
    for line in result.stdout.splitlines():
        event = json.loads(line)
        if event.get("kind") != "message" or "payload" not in event:
            continue
        messages.append(Message(event["dir"], event["conn"], int(event["channel"], 16),
                                CTAPHID.BY_NAME.get(event.get("hid")), bytes.fromhex(event["payload"])))
    return messages


def framed_messages(records):
    """The file's reports put together into messages by the suites' reassembler, each with the
    indices of the reports that carried it, in the order they complete."""
    reassembler, carried, messages = ctaphid_frames.Reassembler(), {}, []
    for index, record_ in enumerate(records):
        if "report" not in record_:
            continue
        report = bytes.fromhex(record_["report"])
        channel, command, _ = ctaphid_frames.header(report)
        slot = (record_["dir"], record_["conn"])
        if command is not None:
            carried[(slot, channel)] = []
        elif (slot, channel) not in carried:
            continue
        carried[(slot, channel)].append(index)
        whole = reassembler.add(slot, report)
        if whole is not None:
            channel, command, payload = whole
            messages.append(Message(record_["dir"], record_["conn"], channel, command, payload,
                                    carried.pop((slot, channel))))
    return messages


def pair(messages):
    """(request, response) for CBOR and MSG requests: the next non-keepalive answer on the channel."""
    pairs, waiting = [], {}
    for message in messages:
        slot = (message.conn, message.channel)
        if message.direction == "in":
            if message.command in (CTAPHID.CBOR, CTAPHID.MSG):
                waiting[slot] = message
            continue
        if message.command == CTAPHID.KEEPALIVE or slot not in waiting:
            continue
        request = waiting.pop(slot)
        pairs.append((request, message if message.command == request.command else None))
    return pairs


# --- seeds ----------------------------------------------------------------------------------------

def record(op, body):
    return bytes([op]) + struct.pack(">H", len(body)) + body


def cap(items, limit=MAX_FILES):
    """Deduplicated, and at most `limit`: when there are more, taken round-robin over the
    groups (in order of first appearance) so every kind of seed keeps some."""
    groups, seen = {}, set()
    for group, data in items:
        if data in seen:
            continue
        seen.add(data)
        groups.setdefault(group, []).append(data)
    chosen = []
    queues = list(groups.values())
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    return chosen


COMMAND_BYTES = {"makeCredential": 0x01, "getAssertion": 0x02, "getInfo": 0x04, "clientPIN": 0x06, "reset": 0x07,
                 "getNextAssertion": 0x08, "bioEnrollment": 0x09, "credentialManagement": 0x0A, "selection": 0x0B,
                 "largeBlobs": 0x0C, "config": 0x0D, "credentialManagementPreview": 0x41}
FAMILY_TARGETS = ["FuzzMakeCredential", "FuzzGetAssertion", "FuzzClientPIN", "FuzzCredentialManagement",
                  "FuzzLargeBlobs", "FuzzConfigReset"]


def family_ops(target):
    """{CTAP command byte: op} from the target's `CommandFamily(commands: [...])`."""
    with open(os.path.join(TARGETS, target, f"{target}.swift")) as handle:
        source = handle.read()
    names = re.search(r"commands:\s*\[([^\]]*)\]", source).group(1)
    commands = [COMMAND_BYTES[name.strip().lstrip(".")] for name in names.split(",") if name.strip()]
    ops = {}
    for op, command in enumerate(commands):
        ops.setdefault(command, op)
    return ops


SETUPS = (0x00, 0x02 | 0x04, 0x17)


def family_seeds(target, requests):
    """requests: (command, parameters) of the real CTAP2 requests, in order."""
    ops = family_ops(target)
    mine = [(command, body) for command, body in requests if command in ops]
    items = []
    for command, body in mine:
        for setup in SETUPS:
            items.append((f"single {command:02x} {setup:02x}", bytes([setup]) + record(ops[command], body)))
    for start in range(0, len(mine), 60):
        chunk = mine[start:start + 60]
        for setup in (0x00, 0x17):
            items.append(("sequence", bytes([setup]) + b"".join(record(ops[c], b) for c, b in chunk)))
        # Authenticated: map bodies get op | 0x80 (the harness adds a real pinUvAuthParam).
        items.append(("authenticated", bytes([0x17]) + b"".join(
            record(ops[c] | (0x80 if is_map(b) else 0), b) for c, b in chunk)))
    for command, body in mine:
        if is_map(body):
            items.append(("authenticated single", bytes([0x17]) + record(ops[command] | 0x80, body)))
    # Control records the harness shares: power cycle (0xF3), clock (0xF0), presence (0xF2/0xF1),
    # channel (0xF4), around a real request.
    # The first request of each command; a reset (outside the window at the harness's one hour
    # of uptime) also after a power cycle, with the requests that followed it for real.
    firsts = {}
    for position, (command, body) in enumerate(mine):
        firsts.setdefault(command, (position, body))
    for command, (position, body) in firsts.items():
        op = ops[command]
        authenticated = op | (0x80 if is_map(body) else 0)
        items.append(("control", bytes([0x17]) + record(0xF3, b"") + record(op, body)
                      + b"".join(record(ops[c], b) for c, b in mine[position + 1:position + 5])))
        items.append(("control", bytes([0x06]) + record(0xF2, b"\x00") + record(op, body)
                      + record(0xF1, b"") + record(0xF0, b"\x28") + record(op, body)))
        items.append(("control", bytes([0x07]) + record(0xF4, b"") + record(authenticated, body)))
    return items


# FuzzKey (Fuzz/Targets/FuzzSupport/FuzzKey.swift) seeds its credentials on these RP IDs.
FUZZ_RPS = ("fuzz.example", "other.example")


def blanked(value):
    """True for a name the trace blanked (docs/trace-format.md): a string of zero bytes."""
    return isinstance(value, str) and value != "" and set(value) == {"\0"}


def retargeted(command, params):
    """The request with the names the trace blanked, and the RP ID hashes of the suite's own
    sites, put back as FuzzKey's RP IDs, so replaying it reaches the fuzz key's credentials: one
    variant per RP ID, none when there is nothing to put back."""
    if not is_whole_map(params):
        return []
    variants = []
    for rp_id in FUZZ_RPS:
        value, changed = cbor.decode(params), False
        if command == 0x01 and isinstance(value.get(2), dict) and blanked(value[2].get("id")):
            value[2] = dict(value[2], id=rp_id, name=rp_id)
            changed = True
        if command == 0x02 and blanked(value.get(1)):
            value[1], changed = rp_id, True
        if command == 0x06 and blanked(value.get(0x0A)):
            value[0x0A], changed = rp_id, True
        if command in (0x0A, 0x41) and value.get(1) == 4 and isinstance(value.get(2), dict) \
                and isinstance(value[2].get(1), bytes) and len(value[2][1]) == 32:
            value[2] = {1: sha(rp_id)}
            changed = True
        if changed:
            variants.append(cbor.encode(value))
    return variants


def is_map(body):
    return bool(body) and 0xA0 <= body[0] <= 0xBF


def is_whole_map(body):
    """True when body is one CBOR map and nothing after it (python-fido2's decoder says)."""
    try:
        value, rest = cbor.decode_from(body)
    except Exception:  # noqa: BLE001 - any decoding failure
        return False
    return isinstance(value, dict) and not rest


def u2f_seeds(apdus):
    items = [("single", b"\x00" + record(0x00, apdu)) for apdu in apdus]
    items.append(("sequence", b"\x00" + b"".join(record(0x00, apdu) for apdu in apdus[:30])))
    for p1 in (0x03, 0x07, 0x08):
        items.append(("known handle", b"\x00" + record(0x80, bytes([p1]))))
    items.append(("known handle", b"\x00" + record(0xF2, b"\x00") + record(0x80, b"\x03") + record(0xF1, b"")
                  + record(0x80, b"\x03" + sha("challenge"))))
    return items


def ctaphid_seeds(records, messages, pairs):
    responses = {id(request): response for request, response in pairs}
    init_answers = {}   # (conn, nonce) -> allocated channel, from the key's INIT answers
    for message in messages:
        if message.direction == "out" and message.command == CTAPHID.INIT and message.channel == BROADCAST:
            if len(message.payload) >= 12:
                init_answers.setdefault((message.conn, message.payload[:8]), message.payload[8:12])
    completes = {}      # index of a request's last report -> response payload
    for message in messages:
        if message.direction == "in" and id(message) in responses:
            response = responses[id(message)]
            completes[message.reports[-1]] = response.payload[:255] if response else b"\x01"
    first_part = {}     # conn -> its longest request (several reports, for the reassembly check)
    for message in messages:
        if message.direction == "in":
            if message.conn not in first_part or len(message.payload) > len(first_part[message.conn][2]):
                first_part[message.conn] = (message.channel, message.command, message.payload)

    def head(channel, command, payload):
        return struct.pack(">IBH", channel, command, len(payload)) + payload

    def steps_for(indices, op_of, limit=250):
        """Steps for the records at indices (one connection each mapped to op_of[conn])."""
        mapping, next_channel, steps, out = {}, 0x1000, 0, b""
        last = {}
        for index in indices:
            last[records[index]["conn"]] = index
        for index in indices:
            record_ = records[index]
            report = bytearray(bytes.fromhex(record_["report"]))
            channel, kind = struct.unpack(">IB", report[:5])
            if channel == BROADCAST and kind == 0x80 | CTAPHID.INIT:
                allocated = init_answers.get((record_["conn"], bytes(report[7:15])))
                if allocated is not None and allocated not in mapping:
                    mapping[allocated] = struct.pack(">I", next_channel)
                    next_channel += 1
            if bytes(report[:4]) in mapping:
                report[:4] = mapping[bytes(report[:4])]
            out += bytes([op_of[record_["conn"]], 64]) + bytes(report)
            steps += 1
            if index in completes:
                out += bytes([5, len(completes[index])]) + completes[index]
                steps += 1
            if last[record_["conn"]] == index and len(op_of) > 1:
                out += bytes([6, 1, op_of[record_["conn"]]])
                steps += 1
            if steps >= limit:
                break
        return out

    in_by_conn = {}
    for index, record_ in enumerate(records):
        if record_["dir"] == "in" and "report" in record_:
            in_by_conn.setdefault(record_["conn"], []).append(index)
    items = []
    for conn, indices in in_by_conn.items():
        channel, command, payload = first_part.get(conn, (BROADCAST, CTAPHID.PING, b""))
        prefix = head(channel, command, payload)
        # The whole connection (up to the harness's 256 steps), then later windows of it, each
        # beginning with the connection's first report (its INIT) so a channel exists.
        items.append(("connection", prefix + steps_for(indices, {conn: 0})))
        for start in range(100, len(indices), 100):
            items.append(("window", prefix + steps_for([indices[0]] + indices[start:start + 120], {conn: 0})))
    # Several connections at once: consecutive connections on ops 0..3, by time.
    conns = sorted(in_by_conn)
    for start in range(0, len(conns), 4):
        group = conns[start:start + 4]
        if len(group) < 2:
            continue
        indices = sorted(index for conn in group for index in in_by_conn[conn][:60])
        channel, command, payload = first_part.get(group[0], (BROADCAST, CTAPHID.PING, b""))
        items.append(("connections", head(channel, command, payload)
                      + steps_for(indices, {conn: op for op, conn in enumerate(group)})))
    # Fragment/reassembly checks alone: one real request per (command, number of reports).
    kinds = set()
    for message in messages:
        kind = (message.command, (len(message.payload) + 1) // 59)
        if message.direction == "in" and kind not in kinds:
            kinds.add(kind)
            items.append(("reassembly", head(message.channel, message.command, message.payload)))
    return items


def uhid_event(kind, fields=()):
    event = bytearray(4380)
    struct.pack_into("<I", event, 0, kind)
    for offset, fmt, value in fields:
        struct.pack_into(fmt, event, offset, value)
    return event


def uhid_output(report, report_type=1):
    event = uhid_event(6, [(4100, "<H", 65), (4102, "<B", report_type)])
    event[4] = 0x00                    # report ID
    event[5:5 + 64] = report
    return bytes(event)


def uhid_seeds(records, messages):
    """UHID_OUTPUT events carrying a trace's real reports: each request's first two."""
    items = []
    for message in messages:
        if message.direction == "in":
            for position, index in enumerate(message.reports[:2]):
                kind = "init" if position == 0 else "continuation"
                items.append((f"{kind} {message.command:02x}", uhid_output(bytes.fromhex(records[index]["report"]))))
    return items


def uhid_fixed_seeds():
    """The other events /dev/uhid delivers, and malformed ones."""
    first = ctaphid_frames.init_packet(BROADCAST, CTAPHID.INIT, 8, bytes.fromhex("c0ffee0000000001"))
    fixed = [
        ("events", bytes(uhid_event(2, [(4, "<Q", 0)]))),                                  # START
        ("events", bytes(uhid_event(2, [(4, "<Q", 0x7)]))),                                # START, all flags
        ("events", bytes(uhid_event(3))),                                                  # STOP
        ("events", bytes(uhid_event(4))),                                                  # OPEN
        ("events", bytes(uhid_event(5))),                                                  # CLOSE
        ("events", bytes(uhid_event(9, [(4, "<I", 1), (8, "<B", 0), (9, "<B", 0)]))),     # GET_REPORT feature
        ("events", bytes(uhid_event(9, [(4, "<I", 0x2A), (8, "<B", 0), (9, "<B", 2)]))),  # GET_REPORT input
        ("events", uhid_output(first, report_type=0)),                                     # OUTPUT as feature
        ("events", bytes(uhid_event(4))[:4]),                                              # OPEN, type only
        ("events", bytes(uhid_event(6, [(4100, "<H", 64), (4102, "<B", 1)]))[:4103]),      # OUTPUT, no ID byte
    ]
    set_report = uhid_event(13, [(4, "<I", 7), (8, "<B", 0), (9, "<B", 1), (10, "<H", 65)])
    set_report[12 + 1:12 + 65] = first
    fixed.append(("events", bytes(set_report)))
    set_feature = uhid_event(13, [(4, "<I", 8), (8, "<B", 0), (9, "<B", 0), (10, "<H", 0)])
    fixed.append(("events", bytes(set_feature)))
    return fixed


def trace_seeds(raw, header_line, sorted_lines, records):
    # A whole file only when it is small: libFuzzer cuts inputs at -max_len (scripts/fuzz: 8192).
    items = [("whole", raw)] if len(raw) <= 8192 else []
    for count in (0, 1, 4, 16, 64, 256):
        items.append(("prefix", header_line + b"\n" + b"".join(line + b"\n" for line in sorted_lines[:count])))
    conns = sorted({record["conn"] for record in records})
    for conn in conns:
        lines = [line for line, record in zip(sorted_lines, records) if record["conn"] == conn]
        items.append(("connection", header_line + b"\n" + b"".join(line + b"\n" for line in lines[:400])))
    # Records with redactions, notes and withheld bytes, each alone after the header.
    for line, record in zip(sorted_lines, records):
        if "redacted" in record or "note" in record or "withheld" in record:
            items.append(("special " + ",".join(sorted(k for k in ("redacted", "note", "withheld") if k in record)),
                          header_line + b"\n" + line + b"\n"))
    items.append(("no trailing newline", header_line + b"\n" + sorted_lines[0]))
    return items


def control_seeds(captured):
    """Sources/KeyService/ControlMessage.swift: ControlRequest / ControlCommand(line:)."""
    lines = list(captured) + [
        b'{"v":1,"action":"approve","timeout_ms":30000}\n',
        b'{"v":1,"action":"deny","timeout_ms":0}\n',
        b'{"v":1,"action":"status"}\n',
        b'{"v":1,"action":"approve"}\n',
        b'{"v":1,"action":"approve","rp_id":"fuzz.example","timeout_ms":30000}\n',
        b'{"action":"deny","rp_id":"other.example","timeout_ms":5000,"v":1}\n',
        b'{"v":1,"action":"deny","request":4}\n',
        b'{"action":"approve","request":3,"timeout_ms":30000,"v":1}\n',
        b'{"v":1,"action":"approve","rp_id":"fuzz.example","request":3}\n',
        b'{"v":1,"action":"approve","rp_id":""}\n',
        b'{"v":1,"action":"approve","rp_id":"' + b"a" * 254 + b'"}\n',
        b'{"v":1,"action":"deny","request":0}\n',
        b'{"v":1,"action":"deny","request":-4}\n',
        b'{"v":1,"action":"deny","request":"4"}\n',
        b'{"v":1,"action":"approve","rp_id":"fuzz.example","timeout_ms":3600001}\n',
        b'{"v":1,"action":"status","request":4,"rp_id":"fuzz.example"}\n',
        b'{"v":1,"action":"approve","timeout_ms":30000,"rp_id":"fuzz.example","user":"ada"}\n',
        b'{"v":1,"action":"deny","timeout_ms":5000,"request":{"operation":"register","rp_id":"fuzz.example"}}\n',
        b'{"v":1,"action":"status","pending":{"operation":"U2F register","waiting_ms":1200},"waiting_answers":0}\n',
        b'{"v":2,"action":"status"}\n',
        b'{"v":1,"action":"reboot"}\n',
        b'{"action":"approve","timeout_ms":1}\n',
        b'{"v":1,"action":"approve","timeout_ms":18446744073709551615}\n',
        b'{"v":1,"action":"approve","timeout_ms":-1}\n',
        b'{"v":1.0,"action":"status"}\n',
        b'[1,"status"]\n',
        b'{"v":1,"action":"st\\u0061tus"}\n',
        b'{"v":1,"action":"approve"}\n{"v":1,"action":"deny"}\n',
        b'{"v":1,"action":"approve"',
    ]
    return [("line", line) for line in lines]


def deflate_seeds():
    """FuzzDeflate: mode byte 0x00 ‖ zlib's raw DEFLATE (wbits -15, as python-fido2 and Chromium
    compress large blobs) of sample blobs at levels 0, 1, 6 and 9 with the default, fixed-code and
    Huffman-only strategies; mode 0x01 ‖ the blobs themselves."""
    pangram = b"the quick brown fox jumps over the lazy dog "
    blobs = [b"", b"a", b"abcabcabcabc" * 10, bytes(pangram[(i * i + i // 7) % 44] for i in range(2000)),
             bytes(range(256)) * 4, b"ssh-ed25519-cert-v01@openssh.com AAAA" + bytes(200)]
    seeds = []
    for blob in blobs:
        for level in (0, 1, 6, 9):
            for strategy in (zlib.Z_DEFAULT_STRATEGY, zlib.Z_FIXED, zlib.Z_HUFFMAN_ONLY):
                compressor = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strategy)
                seeds.append((f"zlib level {level}", b"\x00" + compressor.compress(blob) + compressor.flush()))
        seeds.append(("blob", b"\x01" + blob))
    return seeds


def rig_seeds():
    """Sources/KeyService/Rig*.swift: request lines of the rig control API (README contract), on the
    FuzzRig target's rig (one socket key k1 with one credential)."""
    credential = (b'{"credentialId":"AAECAwQFBgcICQoLDA0ODw","isResidentCredential":true,"rpId":"fuzz.example",'
                  b'"userHandle":"AQ","privateKey":"MC4CAQAwBQYDK2VwBCIEIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f",'
                  b'"signCount":7,"userName":"fuzz"}')
    lines = [
        b'{"v":1,"id":1,"method":"listAuthenticators"}',
        b'{"v":1,"id":2,"method":"getCredentials","params":{"authenticatorId":"k1"}}',
        b'{"v":1,"id":3,"method":"getCredential","params":{"authenticatorId":"k1","credentialId":"AAECAwQFBgcICQoLDA0ODw"}}',
        b'{"v":1,"id":4,"method":"addCredential","params":{"authenticatorId":"k1","credential":' + credential + b'}}',
        b'{"v":1,"id":5,"method":"removeCredential","params":{"authenticatorId":"k1","credentialId":"AAECAwQFBgcICQoLDA0ODw"}}',
        b'{"v":1,"id":6,"method":"removeAllCredentials","params":{"authenticatorId":"k1"}}',
        b'{"v":1,"id":7,"method":"setUserVerified","params":{"authenticatorId":"k1","isUserVerified":false}}',
        b'{"v":1,"id":8,"method":"setUserConsenting","params":{"authenticatorId":"k1","isUserConsenting":false}}',
        b'{"v":1,"id":9,"method":"setAutomaticPresenceSimulation","params":{"authenticatorId":"k1","enabled":false}}',
        b'{"v":1,"id":10,"method":"setAutomaticUserVerification","params":{"authenticatorId":"k1","enabled":true}}',
        b'{"v":1,"id":11,"method":"setResponseOverrideBits","params":{"authenticatorId":"k1","isBogusSignature":true,"isBadUV":true}}',
        b'{"v":1,"id":12,"method":"injectFault","params":{"authenticatorId":"k1","command":"makeCredential","fault":"status","status":40}}',
        b'{"v":1,"id":13,"method":"injectFault","params":{"authenticatorId":"k1","command":"any","fault":"keepaliveFlood","keepalives":5,"times":0}}',
        b'{"v":1,"id":14,"method":"clearFaults","params":{"authenticatorId":"k1"}}',
        b'{"v":1,"id":15,"method":"powerCycle","params":{"authenticatorId":"k1"}}',
        b'{"v":1,"id":16,"method":"addAuthenticator","params":{"protocol":"u2f","hasUserVerification":true}}',
        b'{"v":1,"id":17,"method":"addAuthenticator","params":{"authenticatorId":"x","seed":"","extensions":["credBlob"]}}',
        b'{"v":1,"id":18,"method":"addAuthenticator","params":{"protocol":"ctap2","transport":"usb","attestation":"installation"}}',
        b'{"v":1,"id":19,"method":"setCredentialProperties","params":{"authenticatorId":"k1","credentialId":"AA","backupState":true}}',
        b'{"v":1,"id":20,"method":"subscribe","params":{"authenticatorId":"k1"}}',
        b'{"v":1,"id":21,"method":"getCredentials","params":{"authenticatorId":7}}',
        b'{"v":1,"id":22,"method":"addCredential","params":{"authenticatorId":"k1","credential":{"credentialId":"a+b/","rpId":""}}}',
        b'{"v":2,"id":23,"method":"listAuthenticators"}',
        b'{"v":1,"method":"removeAuthenticator","params":{"authenticatorId":"nope"}}',
        b'{"v":1,"id":"x","method":"listAuthenticators"}',
        b'{"v":1,"id":18446744073709551616,"method":"listAuthenticators"}',
        b'[1,2,3]', b'not json', b'', b'{"v":1,"method":"frob","params":[]}',
    ]
    return [("rig line", line) for line in lines]


def signal_bridge_seeds():
    """Sources/SignalBridge: byte streams as a browser writes them to `latchkey native-host` (a
    native-endian 32-bit length, then JSON), naming the FuzzSignalBridge target's credentials
    (IDs AAAAAAAAAAAAAAAAAAAAAA and AQEBAQEBAQEBAQEBAQEBAQ at fuzz.example, user handles user1
    and user2; other.example's AgICAgICAgICAgICAgICAg)."""
    def frame(body):
        return struct.pack("=I", len(body)) + body
    origin = b'"origin":"https://login.fuzz.example"'
    messages = [
        b'{"id":1,"type":"signal",' + origin + b',"method":"unknownCredential","options":{"rpId":"fuzz.example","credentialId":"AAAAAAAAAAAAAAAAAAAAAA"}}',
        b'{"id":2,"type":"signal",' + origin + b',"method":"allAcceptedCredentials","options":{"rpId":"fuzz.example","userId":"dXNlcjE","allAcceptedCredentialIds":["AQEBAQEBAQEBAQEBAQEBAQ"]}}',
        b'{"id":3,"type":"signal",' + origin + b',"method":"allAcceptedCredentials","options":{"rpId":"fuzz.example","userId":"dXNlcjE","allAcceptedCredentialIds":["AAAAAAAAAAAAAAAAAAAAAA"]}}',
        b'{"id":4,"type":"signal",' + origin + b',"method":"currentUserDetails","options":{"rpId":"fuzz.example","userId":"dXNlcjI","name":"n\u00e9","displayName":"D"}}',
        b'{"id":5,"type":"signal","origin":"https://other.example","method":"unknownCredential","options":{"rpId":"other.example","credentialId":"AgICAgICAgICAgICAgICAg"}}',
        b'{"id":6,"type":"signal",' + origin + b',"method":"unknownCredential","options":{"rpId":"other.example","credentialId":"AgICAgICAgICAgICAgICAg"}}',
        b'{"id":7,"type":"signal","origin":"http://127.0.0.1:8080","method":"unknownCredential","options":{"rpId":"fuzz.example","credentialId":"AA"}}',
        b'{"id":8,"type":"signal","origin":"https://a.ck","method":"unknownCredential","options":{"rpId":"ck","credentialId":"AA"}}',
        b'{"id":9,"type":"publicSuffixes"}',
        b'{"id":10,"type":"signal",' + origin + b',"method":"unknownCredential","options":{"rpId":"fuzz.example","credentialId":"AA=="}}',
        b'{"id":true}', b'[1]', b'{}', b'not json', b'',
    ]
    seeds = [("signal", frame(m)) for m in messages]
    seeds.append(("stream", b"".join(frame(m) for m in messages[:6])))
    seeds.append(("oversize", struct.pack("=I", 0x7FFFFFFF) + b"{"))
    seeds.append(("truncated", frame(messages[0])[:-5]))
    return seeds


def import_seeds(binary, work):
    """FuzzImport: the files `latchkey import` and `restore` read — the hand-written CXF, Bitwarden
    and KeePassXC fixtures of the socket suite (Tests/Integration/support/exchange_fixtures.py), and what
    the real CLI writes from a store with one imported passkey: a plaintext CXF export, one
    encrypted with a passphrase (scrypt 2^10) and to an X25519 key, and a whole-key backup."""
    seeds = [(kind, json.dumps(document).encode()) for kind, document in
             (("cxf", hand_written_cxf()), ("bitwarden", bitwarden_fixture()), ("keepassxc", keepassxc_fixture()))]
    store = os.path.join(work, "import-store")
    fixture = os.path.join(work, "fixture.cxf.json")
    with open(fixture, "w") as handle:
        json.dump(hand_written_cxf(), handle)
    passphrase = os.path.join(work, "passphrase")
    with open(os.open(passphrase, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
        handle.write("a fuzz corpus passphrase\n")
    key = os.path.join(work, "receiver.key")

    def run(*args):
        subprocess.run([binary, *args], check=True, capture_output=True, stdin=subprocess.DEVNULL, start_new_session=True)

    run("import", fixture, "--store", store)
    run("import", "--new-key", key)
    outputs = []
    for name, extra in (("plain.json", ["--plaintext"]), ("passphrase.lkx", ["--passphrase-file", passphrase, "--scrypt-log-n", "10"]),
                        ("hpke.lkx", ["--to", key + ".pub"])):
        out = os.path.join(work, name)
        run("export", "--store", store, "--out", out, *extra)
        outputs.append(out)
    backup = os.path.join(work, "key.backup")
    run("backup", "--store", store, "--out", backup, "--passphrase-file", passphrase, "--scrypt-log-n", "10")
    for path in outputs:
        with open(path, "rb") as handle:
            seeds.append((os.path.basename(path), handle.read()))
    with open(backup, "rb") as handle:
        seeds.append(("backup", handle.read()[:8192]))   # the header and the start of its ciphertext (-max_len)
    return seeds


def write_corpus(target, items):
    directory = os.path.join(CORPUS, target)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    chosen = cap(items)
    for data in chosen:
        with open(os.path.join(directory, hashlib.sha1(data).hexdigest()), "wb") as handle:
            handle.write(data)
    size = sum(len(data) for data in chosen)
    print(f"{target:26} {len(chosen):4} files {size:9} bytes", flush=True)
    return size


def main():
    global CORPUS
    parser = argparse.ArgumentParser(description="Seed Fuzz/corpus from traces of the socket suite's traffic.")
    parser.add_argument("latchkey", help="the latchkey binary (.build/debug/latchkey)")
    parser.add_argument("--traces", metavar="DIR", help="make the seeds from the *.trace files in DIR instead of "
                                                         "recording the socket suite's")
    parser.add_argument("--out", metavar="DIR", default=CORPUS,
                        help="write TARGET/ directories under DIR (default: Fuzz/corpus, whose TARGET/ directories "
                             "are replaced; merge into a campaign's corpus with scripts/fuzz --merge-seeds DIR)")
    arguments = parser.parse_args()
    CORPUS = os.path.abspath(arguments.out)
    binary = os.path.abspath(arguments.latchkey)
    work = tempfile.mkdtemp(prefix="latchkey-corpus-")
    try:
        directory = arguments.traces
        if directory is None:
            directory = os.path.join(work, "traces")
            record_traces(binary, directory)
        paths = sorted(os.path.join(directory, name) for name in os.listdir(directory) if name.endswith(".trace"))
        if not paths:
            sys.exit(f"make-corpus: no *.trace file in {directory}: nothing to make seeds from")
        control_lines = capture_control_lines(binary, work)

        requests = []       # (CTAP command, parameters) in order
        cbor_items, apdus, ctaphid_items, uhid_items, trace_items = [], [], [], [], []
        total_records = total_pairs = 0
        for path in paths:
            raw, header_line, records, sorted_lines = read_trace(path)
            if not records:
                continue
            total_records += len(records)
            for request, response in pair(decoded_messages(binary, path)):
                total_pairs += 1
                if request.command == CTAPHID.CBOR and request.payload:
                    command, params = request.payload[0], request.payload[1:]
                    requests.append((command, params))
                    requests += [(command, variant) for variant in retargeted(command, params)]
                    if params:
                        # Parameters that are not one whole CBOR map (a hostile check's) get a group
                        # of their own, so the cap never drops them.
                        cbor_items.append((f"{'request' if is_whole_map(params) else 'malformed'} {command:02x}", params))
                    if response and len(response.payload) > 1 and response.payload[0] == 0:
                        cbor_items.append((f"response {command:02x}", response.payload[1:]))
                elif request.command == CTAPHID.MSG:
                    apdus.append(request.payload)
            framed = framed_messages(records)
            ctaphid_items += ctaphid_seeds(records, framed, pair(framed))
            uhid_items += uhid_seeds(records, framed)
            trace_items += trace_seeds(raw, header_line, sorted_lines, records)
        print(f"traces: {len(paths)} files, {total_records} records, {total_pairs} requests", flush=True)
        if not requests:
            sys.exit("make-corpus: the traces hold no CTAP2 request: nothing to make seeds from")

        total = write_corpus("FuzzCBOR", cbor_items)
        for target in FAMILY_TARGETS:
            total += write_corpus(target, family_seeds(target, requests))
        total += write_corpus("FuzzU2F", u2f_seeds(apdus))
        total += write_corpus("FuzzCTAPHID", ctaphid_items)
        total += write_corpus("FuzzUHIDEvent", uhid_fixed_seeds() + uhid_items)
        total += write_corpus("FuzzTrace", trace_items)
        total += write_corpus("FuzzControl", control_seeds(control_lines))
        total += write_corpus("FuzzRig", rig_seeds())
        total += write_corpus("FuzzSignalBridge", signal_bridge_seeds())
        total += write_corpus("FuzzDeflate", deflate_seeds())
        total += write_corpus("FuzzImport", import_seeds(binary, work))
        print(f"{'total':26}            {total:9} bytes")
        if ODDITIES:
            print(f"\n{len(ODDITIES)} unexpected outcomes:")
            for text in ODDITIES:
                print("  - " + text)
    finally:
        if os.environ.get("LATCHKEY_CORPUS_KEEP"):
            print(f"kept {work} (traces)")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
