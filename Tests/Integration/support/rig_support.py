"""What the rig's Python checks share (socket_rig.py, e2e_rig.py, e2e_browser.py): PKCS#8 for
addCredential's privateKey, and starting and stopping a rig with its pid and output kept."""

import os

from cryptography.hazmat.primitives import serialization


def pkcs8(private_key):
    """A `cryptography` private key as PKCS#8 DER, as addCredential takes it."""
    return private_key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption())


def start_debug_rig(latchkey_rig, binary, control, root, pid_path, timeout):
    """`latchkey rig --control CONTROL --root ROOT --log-level debug` through the client module
    (`latchkey_rig.start_rig`, waiting up to `timeout` s for its control socket), with its pid
    written to `pid_path` (e2e_guest.sh stops a rig its script leaves behind). The RigProcess."""
    os.makedirs(root, mode=0o700, exist_ok=True)
    return latchkey_rig.start_rig(binary, control=control, root=root, extra_args=["--log-level", "debug"],
                                  timeout=timeout, pid_file=pid_path)


def stop_rig(process, connections, log_path, timeout=10.0):
    """Closes `connections` (those that are not None; ones already gone are fine), stops the rig
    (`latchkey_rig.RigProcess.stop`: SIGTERM, SIGKILL after `timeout` s) and writes what it
    printed to `log_path`. Its exit status, or None when it never started."""
    for connection in connections:
        if connection is not None:
            try:
                connection.close()
            except Exception:  # noqa: BLE001 - closing what may be gone
                pass
    if process is None:
        return None
    status = process.stop(timeout=timeout)
    try:
        with open(log_path, "w") as handle:
            handle.write(process.output())
    except OSError:
        pass
    return status
