"""python-fido2 connection over Latchkey's socket transport (docs/socket-transport.md):
a UNIX SOCK_SEQPACKET socket where every packet is exactly one 64-byte CTAPHID report."""

import os
import socket
import struct

from fido2.hid import CtapHidDevice
from fido2.hid.base import CtapHidConnection, HidDescriptor

REPORT_SIZE = 64


def check_peer(sock, path, peer_uid=None):
    """Refuses a socket served by another user (SO_PEERCRED), before anything is sent: whoever
    can write in its directory could otherwise listen there for PINs and salts. Served by you or
    by root is fine; `peer_uid` names one more uid to accept (a harness driving another user's key)."""
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid not in (os.getuid(), 0, peer_uid):
        raise PermissionError(f"{path} is served by uid {uid}, not by you (uid {os.getuid()}); refusing to talk to it")


class SocketHidConnection(CtapHidConnection):
    def __init__(self, path: str, timeout: float = 15.0, peer_uid=None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
            check_peer(self.sock, path, peer_uid)
        except BaseException:
            self.sock.close()
            raise

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


def open_device(path: str, timeout: float = 15.0, peer_uid=None) -> CtapHidDevice:
    """The key on the socket at `path`, which must be served by you or root (or `peer_uid`)."""
    descriptor = HidDescriptor(path, 0x1209, 0x4C4B, REPORT_SIZE, REPORT_SIZE, "Latchkey", None)
    return CtapHidDevice(descriptor, SocketHidConnection(path, timeout, peer_uid))
