"""A client that reads a long reply late, INSIDE the VM rig: hidraw keeps 64 input reports per
open handle, so a 129-report reply sent in one burst loses its tail when the reader pauses; the
key paces replies longer than 32 reports (as a USB key's 1 ms polling does) so it arrives whole.
Usage: e2e_slow_reader.py /dev/hidrawN"""
import os
import select
import sys
import time

node = sys.argv[1]
fd = os.open(node, os.O_RDWR)


def write(report):
    assert len(report) == 64
    os.write(fd, b"\x00" + report)   # report ID 0, then the report


def read(timeout=5.0):
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        raise SystemExit("timed out waiting for a report")
    return os.read(fd, 64)


def pad(data):
    return data + bytes(64 - len(data))


nonce = os.urandom(8)
write(pad(b"\xff\xff\xff\xff" + bytes([0x86, 0, 8]) + nonce))
while True:
    reply = read()
    if reply[4] == 0x86 and reply[7:15] == nonce:
        break
channel = reply[15:19]

message = bytes((i * 7) & 0xFF for i in range(7609))
reports = [pad(channel + bytes([0x81, len(message) >> 8, len(message) & 0xFF]) + message[:57])]
offset, sequence = 57, 0
while offset < len(message):
    reports.append(pad(channel + bytes([sequence]) + message[offset:offset + 59]))
    offset += 59
    sequence += 1
for report in reports:
    write(report)
    time.sleep(0.001)   # paced like a USB host, so the request side is not what is tested

time.sleep(0.02)   # the reader is busy elsewhere for 20 ms while the reply arrives
first = read()
assert first[:4] == channel and first[4] == 0x81, f"reply starts {first[:8].hex()}"
length = first[5] << 8 | first[6]
echoed = first[7:64]
expected_sequence = 0
while len(echoed) < length:
    report = read()
    assert report[:4] == channel, f"report for another channel: {report[:8].hex()}"
    assert report[4] == expected_sequence, f"continuation {report[4]} where {expected_sequence} was due: reports were lost"
    echoed += report[5:64]
    expected_sequence += 1
assert echoed[:length] == message, "the echo differs"
print(f"7609-byte PING reply read 20 ms late: all {1 + expected_sequence} reports arrived in order")
