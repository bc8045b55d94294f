"""CTAPHID framing for the Python suites, written once (CTAP 2.1 §11.2.4): 64-byte
initialization and continuation packets, a message cut into them, packets put back together.
Standard library only; the socket suite, the VM suite, the floods and Fuzz/make-corpus.py share
it. Hostile checks that build malformed packets on purpose still write their bytes by hand."""

import struct

REPORT = 64
INIT_DATA, CONT_DATA = 57, 59
BROADCAST = 0xFFFFFFFF
CMD_PING, CMD_MSG, CMD_LOCK, CMD_INIT, CMD_WINK, CMD_CBOR, CMD_CANCEL, CMD_KEEPALIVE, CMD_ERROR = (
    0x01, 0x03, 0x04, 0x06, 0x08, 0x10, 0x11, 0x3B, 0x3F)


def init_packet(cid, cmd, length, data=b""):
    """An initialization packet: CID, CMD | 0x80, BCNT (the whole message's length), data."""
    return (struct.pack(">IBH", cid, 0x80 | cmd, length) + data[:INIT_DATA]).ljust(REPORT, b"\0")


def cont_packet(cid, seq, data=b""):
    """A continuation packet: CID, SEQ (0–127), data."""
    return (struct.pack(">IB", cid, seq) + data[:CONT_DATA]).ljust(REPORT, b"\0")


def fragments(cid, cmd, payload):
    """The packets that carry one message."""
    packets, rest, seq = [init_packet(cid, cmd, len(payload), payload[:INIT_DATA])], payload[INIT_DATA:], 0
    while rest:
        packets.append(cont_packet(cid, seq, rest[:CONT_DATA]))
        rest, seq = rest[CONT_DATA:], seq + 1
    return packets


def header(packet):
    """(cid, cmd, length) of an initialization packet (cmd without 0x80), or (cid, None, seq) of a
    continuation packet."""
    cid, kind = struct.unpack(">IB", packet[:5])
    if kind & 0x80:
        return cid, kind & 0x7F, struct.unpack(">H", packet[5:7])[0]
    return cid, None, kind


class Reassembler:
    """Packets in, whole messages out, per slot (a direction, a connection, …: whatever keeps
    interleaved messages apart; the channel is always part of it). A continuation with no message
    started is dropped, as the key drops it."""

    def __init__(self):
        self.partial = {}

    def add(self, slot, packet):
        """Feeds one packet; returns (channel, command, payload) when it completes a message."""
        cid, command, length = header(packet)
        key = (slot, cid)
        if command is not None:
            self.partial[key] = [command, length, bytearray(packet[7:7 + length])]
        elif key in self.partial:
            entry = self.partial[key]
            entry[2] += packet[5:5 + entry[1] - len(entry[2])]
        else:
            return None
        command, length, data = self.partial[key]
        if len(data) < length:
            return None
        del self.partial[key]
        return cid, command, bytes(data)


def reassemble(packets):
    """[(slot, channel, command, payload)] from [(slot, packet)], in the order they complete."""
    reassembler, messages = Reassembler(), []
    for slot, packet in packets:
        message = reassembler.add(slot, packet)
        if message is not None:
            messages.append((slot,) + message)
    return messages
