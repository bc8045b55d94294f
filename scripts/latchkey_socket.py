"""python-fido2 connection over Latchkey's socket transport (docs/socket-transport.md):
a UNIX SOCK_SEQPACKET socket where every packet is exactly one 64-byte CTAPHID report."""

import socket

from fido2.hid import CtapHidDevice
from fido2.hid.base import CtapHidConnection, HidDescriptor

REPORT_SIZE = 64


class SocketHidConnection(CtapHidConnection):
    def __init__(self, path: str, timeout: float = 15.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(timeout)
        self.sock.connect(path)

    def read_packet(self) -> bytes:
        data = self.sock.recv(REPORT_SIZE + 1)
        if not data:
            raise OSError("the key closed the connection")
        if len(data) != REPORT_SIZE:
            raise OSError(f"packet of {len(data)} bytes, expected {REPORT_SIZE}")
        return data

    def write_packet(self, data: bytes) -> None:
        if len(data) != REPORT_SIZE:
            raise ValueError("CTAPHID reports are 64 bytes")
        self.sock.send(data)

    def close(self) -> None:
        self.sock.close()


def open_device(path: str, timeout: float = 15.0) -> CtapHidDevice:
    descriptor = HidDescriptor(path, 0x1209, 0x4C4B, REPORT_SIZE, REPORT_SIZE, "Latchkey", None)
    return CtapHidDevice(descriptor, SocketHidConnection(path, timeout))
