"""Websites' signals through `latchkey native-host`, driven as a browser drives it (framed JSON on
stdin/stdout), against a running key whose store it changes: the key stops offering what a
signal hid. The browser side (the extension in this machine's Chromium and Firefox) is in
socket_browser_signals.py, run by socket_provider.py; the host's unit tests are in
Tests/SignalBridgeTests."""

import json
import os
import struct
import subprocess

from fido2.ctap2 import Ctap2

from socket_support import BINARY, WORK, Key, b64url, check, latchkey_cli, make_resident, offered_ids


CHROMIUM_CALLER = "chrome-extension://glcknlabcnogofidfcaeigbkbeieoaoj/"


def native_host(store, messages, raw=b"", caller=(CHROMIUM_CALLER,)):
    """Runs `latchkey native-host --store STORE` with `messages` framed (then `raw` bytes): its
    exit status and its replies, parsed. `caller`: the arguments a browser adds."""
    data = b"".join(struct.pack("=I", len(body)) + body for body in (json.dumps(m).encode() for m in messages)) + raw
    done = subprocess.run([BINARY, "native-host", "--store", store, *caller],
                          input=data, capture_output=True, timeout=60)
    replies, out = [], done.stdout
    while out:
        (length,) = struct.unpack("=I", out[:4])
        replies.append(json.loads(out[4:4 + length]))
        out = out[4 + length:]
    return done.returncode, replies, done.stderr.decode()


def signal(id_, method, options, origin="https://signal.example"):
    return {"id": id_, "type": "signal", "origin": origin, "method": method, "options": options}


@check("native-host (the browser's side simulated): unknown / all-accepted / current-user change the running key's "
       "store and what it offers, journaled with the origin; another RP's credential is NotFound, a foreign RP ID a "
       "SecurityError, a loop rate-limited, a garbage frame exits 1 having changed nothing; bridge status sees the contact")
def test_native_host():
    key = Key("bridge").start()
    try:
        ctap = Ctap2(key.device())
        rp = "signal.example"
        alice = make_resident(ctap, rp, b"alice-handle", "alice", "Alice")
        bob = make_resident(ctap, rp, b"bob-handle", "bob", "Bob")
        carol = make_resident(ctap, "elsewhere.example", b"carol-handle", "carol")
        assert offered_ids(ctap, rp) == {alice, bob}

        status, replies, log = native_host(key.store, [
            signal(1, "unknownCredential", {"rpId": rp, "credentialId": b64url(alice)}),
            signal(2, "unknownCredential", {"rpId": rp, "credentialId": b64url(carol)}, origin="https://login.signal.example"),
            signal(3, "unknownCredential", {"rpId": "elsewhere.example", "credentialId": b64url(carol)}),
            signal(4, "currentUserDetails", {"rpId": rp, "userId": b64url(b"bob-handle"), "name": "bob@new", "displayName": "Bob New"}),
            {"id": 5, "type": "publicSuffixes"},
        ])
        assert status == 0, f"exit {status}: {log}"
        assert [r["id"] for r in replies] == [1, 2, 3, 4, 5], replies
        assert replies[0] == {"id": 1, "ok": True, "hidden": [b64url(alice)], "unhidden": [], "renamed": []}, replies[0]
        assert (replies[1]["ok"], replies[1]["error"]) == (False, "NotFoundError"), replies[1]
        assert (replies[2]["ok"], replies[2]["error"]) == (False, "SecurityError"), replies[2]
        assert replies[3]["renamed"] == [b64url(bob)], replies[3]
        assert "co.uk" in replies[4]["rules"] and len(replies[4]["rules"]) > 5000, len(replies[4]["rules"])
        assert offered_ids(ctap, rp) == {bob}, "the running key no longer offers the hidden credential"
        assert offered_ids(ctap, "elsewhere.example") == {carol}

        status, replies, _ = native_host(key.store, [
            signal(6, "allAcceptedCredentials", {"rpId": rp, "userId": b64url(b"alice-handle"),
                                                  "allAcceptedCredentialIds": [b64url(alice)]})])
        assert replies[0]["unhidden"] == [b64url(alice)], replies
        assert offered_ids(ctap, rp) == {alice, bob}

        journal = json.loads(latchkey_cli("signal", "log", "--store", key.store, "--json").stdout)["entries"]
        assert [(e["source"], e["method"]) for e in journal] == [
            ("https://signal.example", "unknownCredential"), ("https://signal.example", "currentUserDetails"),
            ("https://signal.example", "allAcceptedCredentials")], journal
        shown = json.loads(latchkey_cli("credentials", "show", "--store", key.store, "--json", b64url(bob)).stdout)
        assert (shown["userName"], shown["userDisplayName"]) == ("bob@new", "Bob New"), shown

        # A page looping: the first 16 go through, the rest are refused at once; nothing waits.
        loop = [signal(100 + i, "currentUserDetails", {"rpId": rp, "userId": b64url(b"bob-handle"), "name": "bob@loop",
                                                         "displayName": "Bob"}) for i in range(1000)]
        status, replies, _ = native_host(key.store, loop)
        errors = [r.get("error", "ok") for r in replies]
        assert status == 0 and len(replies) == 1000, (status, len(replies))
        assert errors.count("ok") <= 20 and errors.count("QuotaExceededError") >= 980, {e: errors.count(e) for e in set(errors)}

        # A garbage frame: answered, nothing applied (the signal after it included), exit 1.
        before = latchkey_cli("signal", "log", "--store", key.store, "--json").stdout
        status, replies, _ = native_host(key.store, [], raw=struct.pack("=I", 9) + b"\x01garbage" + struct.pack("=I", 2) + b"{}")
        assert status == 1 and replies[0]["ok"] is False and replies[0]["id"] is None, (status, replies)
        status, replies, _ = native_host(key.store, [], raw=struct.pack("=I", 64 << 20) + b"{")
        assert status == 1 and len(replies) == 1 and "over the limit" in replies[0]["message"], (status, replies)
        assert latchkey_cli("signal", "log", "--store", key.store, "--json").stdout == before
        assert offered_ids(ctap, rp) == {alice, bob}

        # The bridge's wiring and the extension's last contact (recorded by the host).
        home = os.path.join(WORK, "bridge-home")
        env = dict(os.environ, HOME=home, XDG_CONFIG_HOME="", XDG_DATA_HOME="")
        installed = subprocess.run([BINARY, "bridge", "install", "--store", key.store], capture_output=True, text=True, env=env)
        assert installed.returncode == 0, installed.stderr
        status_text = subprocess.run([BINARY, "bridge", "status", "--store", key.store, "--json"], capture_output=True,
                                     text=True, env=env)
        wiring = json.loads(status_text.stdout)
        assert all(b["wired"] for b in wiring["browsers"]), wiring
        assert wiring["lastContact"]["caller"] == "chrome-extension://glcknlabcnogofidfcaeigbkbeieoaoj/", wiring
    finally:
        assert key.stop() == 0, key.log()


@check("native-host serves Latchkey's own extension only (Chromium's ID, Firefox's add-on ID) and takes origins only as "
       "browsers serialize them: each malformed one a SecurityError, nothing applied or journaled (issue 34)")
def test_native_host_callers_and_origins():
    key = Key("bridge-strict").start()
    try:
        ctap = Ctap2(key.device())
        rp = "strict.example"
        alice = make_resident(ctap, rp, b"alice-handle", "alice", "Alice")
        hide = {"rpId": rp, "credentialId": b64url(alice)}
        for caller in (("chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/",), ("/tmp/manifest.json", "evil@example"), ()):
            status, replies, log = native_host(key.store, [signal(1, "unknownCredential", hide, origin="https://strict.example")],
                                               caller=caller)
            assert status == 1, (caller, status, replies)
            assert replies == [{"id": None, "ok": False, "error": "SecurityError",
                                "message": "this native host serves Latchkey's own extension only"}], replies
            assert "is not Latchkey's extension" in log, log
        malformed = ["https://..strict.example", "https://.strict.example", "HTTPS://x.strict.example",
                     "https://x.strict.example:+443", "https://x.strict.example:0443", "https://x.strict.example:443",
                     "https://X.strict.example", "https://strict.example."]
        messages = [signal(index + 1, "unknownCredential", hide, origin=origin) for index, origin in enumerate(malformed)]
        status, replies, log = native_host(key.store, messages, caller=("/usr/lib/mozilla/manifest.json", "signal-bridge@latchkey"))
        assert status == 0, (status, log)
        assert [(r["id"], r["ok"], r["error"]) for r in replies] == [(i + 1, False, "SecurityError") for i in range(len(malformed))], replies
        assert offered_ids(ctap, rp) == {alice}, "a malformed origin changed what the key offers"
        journal = json.loads(latchkey_cli("signal", "log", "--store", key.store, "--json").stdout)["entries"]
        assert journal == [], journal
    finally:
        key.stop()
