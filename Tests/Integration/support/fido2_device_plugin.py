"""A pytest plugin that points python-fido2 2.2.1's own device suite (`tests/device` in its
sdist) at one Latchkey instead of a USB key a person touches.

The suite finds its key by listing HID devices and asking the user to touch one, and "reconnects"
by asking the user to unplug and replug it (a reset is only allowed just after power-up). Here:
- LATCHKEY_SUITE_SOCKET set: the key is `latchkey serve --transport socket:PATH --presence auto`;
  a reconnect is SIGHUP to LATCHKEY_SUITE_PID (the key's power cycle, docs/socket-transport.md).
- LATCHKEY_SUITE_HIDRAW set (the VM rig): the key is that hidraw node; a reconnect is SIGHUP too,
  after which the same node serves a powered-up key.
Nothing else in the suite is changed: its tests, options and assertions run as published.
"""

import os
import signal
import time

from fido2.ctap2 import Ctap2


def _open():
    path = os.environ.get("LATCHKEY_SUITE_SOCKET")
    if path:
        from latchkey_socket import open_device

        return open_device(path)
    from fido2.hid import open_device

    return open_device(os.environ["LATCHKEY_SUITE_HIDRAW"])


def _select(self):
    return _open()


def _reconnect(self):
    """Unplug and replug: the key drops its volatile state on SIGHUP and the reset window opens."""
    try:
        self._dev.close()
    except Exception:
        pass
    before = Ctap2(_open()).info
    os.kill(int(os.environ["LATCHKEY_SUITE_PID"]), signal.SIGHUP)
    deadline = time.time() + 10
    while True:
        time.sleep(0.2)
        try:
            device = _open()
            after = Ctap2(device).info
            break
        except Exception:
            if time.time() > deadline:
                raise
    # As the suite checks after a real replug: the same key came back.
    assert after.aaguid == before.aaguid
    return device


def pytest_plugin_registered(plugin, manager):
    manager_class = getattr(plugin, "DeviceManager", None)
    if manager_class is not None and getattr(plugin, "__name__", "").endswith("device.conftest"):
        manager_class._select = _select
        manager_class._reconnect_usb = _reconnect
