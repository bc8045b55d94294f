#!/usr/bin/env python3
"""A stand-in fprintd on the system bus (net.reactivated.Fprint), so the real fprintd-verify, and through it
`latchkey serve --uv fprintd`, can be tested on a machine without a fingerprint reader. It serves the interfaces
fprintd itself installs (/usr/share/dbus-1/interfaces/net.reactivated.Fprint.{Manager,Device}.xml, read at start:
a call whose name or signature those files do not give is refused as fprintd's generated skeleton would refuse
it) and behaves as fprintd 1.94 does for one reader, /net/reactivated/Fprint/Device/0, with one finger enrolled
for every user: Claim and ListEnrolledFingers take the caller's own name or an empty one (another name needs
polkit's setusername, refused here); a claim is the claimant's alone and ends with Release or when its
connection goes; VerifyStart answers, then says VerifyFingerSelected, then the scripted VerifyStatus signals.

What the "reader" does is read from CONTROL (one word) at each request:
  match         VerifyStatus verify-match (done)
  no-match      VerifyStatus verify-no-match (done)
  retry         verify-retry-scan (not done), then verify-match (done)
  disconnected  verify-disconnected (done)
  no-device     no reader: GetDevices is empty, GetDefaultDevice fails with net.reactivated.Fprint.Error.NoSuchDevice
  no-enrolled   no finger enrolled: ListEnrolledFingers fails with net.reactivated.Fprint.Error.NoEnrolledPrints
Every method call to its objects, each claim (with the caller's uid), each signal it sends and each claimant that
went away is one JSON line in RECORD; its first line is {"ready": true}.
Usage: fake_fprintd.py CONTROL RECORD"""

import asyncio
import json
import os
import pwd
import sys
import time
import xml.etree.ElementTree as ElementTree

from dbus_next import BusType, Message, MessageType, Variant
from dbus_next.aio import MessageBus
from dbus_next.constants import NameFlag, RequestNameReply

SERVICE = "net.reactivated.Fprint"
MANAGER_PATH = "/net/reactivated/Fprint/Manager"
DEVICE_PATH = "/net/reactivated/Fprint/Device/0"
MANAGER = "net.reactivated.Fprint.Manager"
DEVICE = "net.reactivated.Fprint.Device"
PROPERTIES = "org.freedesktop.DBus.Properties"
INTROSPECTABLE = "org.freedesktop.DBus.Introspectable"
PEER = "org.freedesktop.DBus.Peer"
INTERFACE_FILES = "/usr/share/dbus-1/interfaces"
ERROR = "net.reactivated.Fprint.Error."
ENROLLED = "right-index-finger"
FINGERS = ("left-thumb", "left-index-finger", "left-middle-finger", "left-ring-finger", "left-little-finger",
           "right-thumb", "right-index-finger", "right-middle-finger", "right-ring-finger", "right-little-finger")
STATUSES = {"match": [("verify-match", True)], "no-match": [("verify-no-match", True)],
            "retry": [("verify-retry-scan", False), ("verify-match", True)],
            "disconnected": [("verify-disconnected", True)]}
FINGER_SECONDS = 0.05   # between VerifyStart and each status: a finger on the reader


class Refusal(Exception):
    """A D-Bus error reply: `name` (fprintd's own error names) and its text."""

    def __init__(self, name, text):
        super().__init__(text)
        self.name = name
        self.text = text


def load_interface(name):
    """The interface as fprintd installs it: methods (in and out signatures), signals, properties, and its
    introspection XML without the documentation elements."""
    root = ElementTree.parse(os.path.join(INTERFACE_FILES, name + ".xml")).getroot()
    interface = root.find(f"interface[@name='{name}']")
    for parent in interface.iter():
        for child in [child for child in parent if not isinstance(child.tag, str) or child.tag.startswith("{")]:
            parent.remove(child)
    methods = {}
    for element in interface.findall("method"):
        arguments = element.findall("arg")
        methods[element.get("name")] = ("".join(a.get("type") for a in arguments if a.get("direction", "in") == "in"),
                                        "".join(a.get("type") for a in arguments if a.get("direction") == "out"))
    signals = {e.get("name"): "".join(a.get("type") for a in e.findall("arg")) for e in interface.findall("signal")}
    properties = {e.get("name"): e.get("type") for e in interface.findall("property")}
    return {"methods": methods, "signals": signals, "properties": properties,
            "xml": ElementTree.tostring(interface, encoding="unicode")}


class StandIn:
    def __init__(self, bus, control, record):
        self.bus = bus
        self.control = control
        self.record_file = open(record, "a", buffering=1)
        self.interfaces = {MANAGER: load_interface(MANAGER), DEVICE: load_interface(DEVICE)}
        self.objects = {MANAGER_PATH: MANAGER, DEVICE_PATH: DEVICE}
        self.values = {MANAGER: {},
                       DEVICE: {"name": ("s", "Latchkey stand-in reader"), "num-enroll-stages": ("i", 5),
                                "scan-type": ("s", "press"), "finger-present": ("b", False),
                                "finger-needed": ("b", False)}}
        missing = set(self.interfaces[DEVICE]["properties"]) ^ set(self.values[DEVICE])
        assert not missing, f"fprintd's Device interface and the stand-in differ in properties: {missing}"
        self.claim = None        # (sender, username) while claimed
        self.verifying = None    # from VerifyStart to VerifyStop: the finger, the statuses and their task

    def record(self, **entry):
        entry["time"] = round(time.time(), 3)
        self.record_file.write(json.dumps(entry, default=repr) + "\n")

    def mode(self):
        try:
            with open(self.control) as handle:
                return handle.read().strip() or "match"
        except FileNotFoundError:
            return "match"

    # The bus

    def handle(self, message):
        """Every message the connection gets: our objects' method calls, and the bus's NameOwnerChanged."""
        if message.message_type == MessageType.SIGNAL:
            if message.member == "NameOwnerChanged" and message.sender == "org.freedesktop.DBus":
                name, _, new_owner = message.body
                if not new_owner and self.claim and self.claim[0] == name:
                    self.vanished(name)
            return False
        if message.message_type != MessageType.METHOD_CALL or message.path not in self.objects:
            return False
        self.record(call=message.member, interface=message.interface, path=message.path, sender=message.sender,
                    body=message.body)
        asyncio.ensure_future(self.answer(message))
        return True

    async def answer(self, message):
        try:
            signature, body = await self.dispatch(message)
            reply = Message.new_method_return(message, signature, body)
        except Refusal as refusal:
            self.record(refused=message.member, error=refusal.name, text=refusal.text)
            reply = Message.new_error(message, refusal.name, refusal.text)
        except Exception as error:  # noqa: BLE001 - an answer the caller can print, not a hang
            self.record(crashed=message.member, error=repr(error))
            reply = Message.new_error(message, ERROR + "Internal", f"stand-in failed: {error!r}")
        if not message.flags & 0x1:   # NO_REPLY_EXPECTED
            await self.bus.send(reply)
        if reply.message_type == MessageType.METHOD_RETURN and message.member == "VerifyStart":
            self.started_verification()

    async def dispatch(self, message):
        """(signature, body) of the reply, or a Refusal."""
        interface_name = self.objects[message.path]
        member, interface = message.member, message.interface
        if interface == INTROSPECTABLE and member == "Introspect":
            return "s", [self.introspection(interface_name)]
        if interface == PEER and member == "Ping":
            return "", []
        if interface == PROPERTIES:
            return self.properties(interface_name, member, message)
        if interface not in (None, interface_name) or member not in self.interfaces[interface_name]["methods"]:
            raise Refusal("org.freedesktop.DBus.Error.UnknownMethod",
                          f"No such interface “{interface}” on object at path {message.path}"
                          if interface not in (None, interface_name) else f"No such method “{member}”")
        expected, out = self.interfaces[interface_name]["methods"][member]
        if message.signature != expected:
            raise Refusal("org.freedesktop.DBus.Error.InvalidArgs",
                          f"Type of message, “({message.signature})”, does not match expected type “({expected})”")
        handler = getattr(self, member, None)
        if handler is None:
            raise Refusal(ERROR + "Internal", f"{member} is not part of the stand-in")
        return out, await handler(message, *message.body)

    def introspection(self, interface_name):
        standard = ('<interface name="org.freedesktop.DBus.Properties"><method name="Get"><arg type="s" direction="in"/>'
                    '<arg type="s" direction="in"/><arg type="v" direction="out"/></method><method name="GetAll">'
                    '<arg type="s" direction="in"/><arg type="a{sv}" direction="out"/></method><method name="Set">'
                    '<arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/></method>'
                    '<signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal>'
                    '</interface><interface name="org.freedesktop.DBus.Introspectable"><method name="Introspect">'
                    '<arg type="s" direction="out"/></method></interface><interface name="org.freedesktop.DBus.Peer">'
                    '<method name="Ping"/></interface>')
        return ('<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" '
                '"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">\n<node>'
                + standard + self.interfaces[interface_name]["xml"] + "</node>\n")

    def properties(self, interface_name, member, message):
        values = self.values[interface_name]
        if member == "GetAll" and message.signature == "s":
            if message.body[0] not in (interface_name, ""):
                return "a{sv}", [{}]
            return "a{sv}", [{name: Variant(kind, value) for name, (kind, value) in values.items()}]
        if member == "Get" and message.signature == "ss":
            if message.body[0] != interface_name or message.body[1] not in values:
                raise Refusal("org.freedesktop.DBus.Error.InvalidArgs",
                              f"No such property “{message.body[1]}”")
            kind, value = values[message.body[1]]
            return "v", [Variant(kind, value)]
        if member == "Set" and message.signature == "ssv":
            raise Refusal("org.freedesktop.DBus.Error.InvalidArgs", f"Property “{message.body[1]}” is not writable")
        raise Refusal("org.freedesktop.DBus.Error.UnknownMethod", f"No such method “{member}”")

    def change(self, **changes):
        """Device properties changed, with PropertiesChanged as GDBus's skeleton sends it."""
        for name, value in changes.items():
            self.values[DEVICE][name.replace("_", "-")] = ("b", value)
        self.bus.send(Message.new_signal(DEVICE_PATH, PROPERTIES, "PropertiesChanged", "sa{sv}as",
                                         [DEVICE, {n.replace("_", "-"): Variant("b", v) for n, v in changes.items()}, []]))

    def emit(self, member, signature, body):
        assert self.interfaces[DEVICE]["signals"][member] == signature
        self.record(signal=member, body=body)
        self.bus.send(Message.new_signal(DEVICE_PATH, DEVICE, member, signature, body))

    # What fprintd checks

    async def caller(self, message, username):
        """The user a Claim or ListEnrolledFingers is for, as fprintd's _fprint_device_check_for_username."""
        reply = await self.bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                            interface="org.freedesktop.DBus", member="GetConnectionUnixUser",
                                            signature="s", body=[message.sender]))
        if reply.message_type != MessageType.METHOD_RETURN:
            raise Refusal(ERROR + "Internal", f"Could not get connection unix user ID: {reply.body}")
        uid = reply.body[0]
        try:
            own = pwd.getpwuid(uid).pw_name
        except KeyError:
            raise Refusal(ERROR + "Internal", f"Failed to get information about user UID {uid}") from None
        if username in ("", own):
            return own, uid
        # fprintd asks polkit for net.reactivated.fprint.device.setusername here; no one is given it.
        raise Refusal(ERROR + "PermissionDenied", "Not Authorized: net.reactivated.fprint.device.setusername")

    def claimed_by(self, message):
        if self.claim is None:
            raise Refusal(ERROR + "ClaimDevice", "Device was not claimed before use")
        if self.claim[0] != message.sender:
            raise Refusal(ERROR + "AlreadyInUse", "Device already in use by another user")

    def enrolled(self, username):
        return [] if self.mode() == "no-enrolled" else [ENROLLED]

    # net.reactivated.Fprint.Manager

    async def GetDevices(self, message):
        return [[] if self.mode() == "no-device" else [DEVICE_PATH]]

    async def GetDefaultDevice(self, message):
        if self.mode() == "no-device":
            raise Refusal(ERROR + "NoSuchDevice", "No devices available")
        return [DEVICE_PATH]

    # net.reactivated.Fprint.Device

    async def Claim(self, message, username):
        if self.claim is not None:
            raise Refusal(ERROR + "AlreadyInUse", "Device was already claimed")
        user, uid = await self.caller(message, username)
        if self.claim is not None:
            raise Refusal(ERROR + "AlreadyInUse", "Device was already claimed")
        self.claim = (message.sender, user)
        self.record(claimed=user, asked=username, uid=uid, sender=message.sender)
        return []

    async def Release(self, message):
        self.claimed_by(message)
        self.stop_verification()
        self.claim = None
        self.record(released=message.sender)
        return []

    async def ListEnrolledFingers(self, message, username):
        user, _ = await self.caller(message, username)
        fingers = self.enrolled(user)
        if not fingers:
            raise Refusal(ERROR + "NoEnrolledPrints", "Failed to discover prints")
        return [fingers]

    async def VerifyStart(self, message, finger_name):
        self.claimed_by(message)
        if self.verifying is not None:
            raise Refusal(ERROR + "AlreadyInUse", "Verification already in progress")
        fingers = self.enrolled(self.claim[1])
        if finger_name in ("", "any") or finger_name not in FINGERS:
            if not fingers:
                raise Refusal(ERROR + "NoEnrolledPrints", "No fingerprints enrolled")
            finger = fingers[0]
        elif finger_name not in fingers:
            raise Refusal(ERROR + "NoEnrolledPrints", f"No such print {FINGERS.index(finger_name) + 1}")
        else:
            finger = finger_name
        # Verifying from here; the finger is named and the reader answers once the reply is out.
        self.verifying = {"finger": finger, "statuses": STATUSES.get(self.mode(), [("verify-unknown-error", True)]),
                          "task": None}
        return []

    def started_verification(self):
        """After VerifyStart's reply, as fprintd: the finger it chose, then the reader's statuses."""
        if self.verifying is not None and self.verifying["task"] is None:
            self.verifying["task"] = asyncio.ensure_future(self.scan(self.verifying["finger"],
                                                                     self.verifying["statuses"]))

    async def scan(self, finger, statuses):
        self.emit("VerifyFingerSelected", "s", [finger])
        self.change(finger_needed=True)
        for result, done in statuses:
            await asyncio.sleep(FINGER_SECONDS)
            self.emit("VerifyStatus", "sb", [result, done])
        self.change(finger_needed=False)

    async def VerifyStop(self, message):
        self.claimed_by(message)
        if self.verifying is None:
            raise Refusal(ERROR + "NoActionInProgress", "No verification in progress")
        self.stop_verification()
        return []

    def stop_verification(self):
        if self.verifying is not None:
            if self.verifying["task"] is not None:
                self.verifying["task"].cancel()
            self.verifying = None

    def vanished(self, sender):
        """The claimant's connection went without Release (fprintd-verify exits early on an error, or was
        interrupted): fprintd stops what it did and closes the device."""
        self.stop_verification()
        self.claim = None
        self.record(vanished=sender)


async def main(control, record):
    bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
    stand_in = StandIn(bus, control, record)
    bus.add_message_handler(stand_in.handle)
    await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                           interface="org.freedesktop.DBus", member="AddMatch", signature="s",
                           body=["type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                                 "member='NameOwnerChanged'"]))
    reply = await bus.request_name(SERVICE, NameFlag.DO_NOT_QUEUE)
    assert reply == RequestNameReply.PRIMARY_OWNER, reply
    stand_in.record(ready=True, pid=os.getpid())
    await bus.wait_for_disconnect()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
