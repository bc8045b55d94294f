#!/usr/bin/env python3
"""A stand-in desktop notification server on the session bus (org.freedesktop.Notifications),
so the real notify-send and the real D-Bus path of `latchkey serve --presence notify` can be
tested without a desktop. Every notification is logged to LOG; shortly after it appears, the
"user" clicks Deny if the text mentions "deny-me", else Approve.
With --no-actions it is a server that shows no buttons (GetCapabilities without "actions").
Usage: fake_notification_daemon.py LOG [--no-actions]"""

import asyncio
import sys

from dbus_next import Variant
from dbus_next.aio import MessageBus
from dbus_next.service import ServiceInterface, method, signal


class Notifications(ServiceInterface):
    def __init__(self, log_path):
        super().__init__("org.freedesktop.Notifications")
        self.log_path = log_path
        self.next_id = 1

    @method()
    def GetCapabilities(self) -> "as":
        return ["body"] if "--no-actions" in sys.argv else ["actions", "body"]

    @method()
    def GetServerInformation(self) -> "ssss":
        return ["latchkey-test", "latchkey", "1.0", "1.2"]

    @method()
    def Notify(self, app_name: "s", replaces_id: "u", app_icon: "s", summary: "s", body: "s",
               actions: "as", hints: "a{sv}", expire_timeout: "i") -> "u":
        notification = self.next_id
        self.next_id += 1
        with open(self.log_path, "a") as log:
            log.write(f"{notification}\t{app_name}\t{summary}\t{body}\t{','.join(actions)}\n")
        choice = "deny" if "deny-me" in body else "approve"
        asyncio.get_running_loop().call_later(0.3, self.click, notification, choice)
        return notification

    @method()
    def CloseNotification(self, notification: "u"):
        self.NotificationClosed(notification, 3)

    def click(self, notification, choice):
        self.ActionInvoked(notification, choice)
        self.NotificationClosed(notification, 2)

    @signal()
    def ActionInvoked(self, notification: "u", action: "s") -> "us":
        return [notification, action]

    @signal()
    def NotificationClosed(self, notification: "u", reason: "u") -> "uu":
        return [notification, reason]


async def main(log_path):
    bus = await MessageBus().connect()
    bus.export("/org/freedesktop/Notifications", Notifications(log_path))
    await bus.request_name("org.freedesktop.Notifications")
    with open(log_path, "a") as log:
        log.write("ready\n")
    await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
