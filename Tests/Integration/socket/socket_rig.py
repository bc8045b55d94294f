"""Socket suite: `latchkey rig` — keys added and removed through its control socket
(scripts/python/latchkey_rig.py, the client users import), each on the socket transport and driven by
python-fido2: authenticator options and defaults, built-in UV on and off, credentials made by a
client and seeded by the rig (P-256 and Ed25519, with their counters), the events, consent and
presence answered through the rig, powerCycle, protocol errors, a U2F (CTAP1-only) key, response
overrides (bad UV, bad UP, bogus signatures), injected faults (a status, a delay, a dropped or
truncated response, a KEEPALIVE flood: seen by python-fido2 and by a raw CTAPHID client),
`latchkey rig call`, and a clean stop that leaves no socket and (without --root) no store behind."""

import hashlib
import json
import os
import socket
import stat
import struct
import subprocess
import sys
import threading
import time

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, mldsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from fido2 import cbor
from fido2.ctap import CtapError
from fido2.ctap1 import ApduError, Ctap1
from fido2.ctap2 import Ctap2
from fido2.ctap2.blob import LargeBlobs
from fido2.hid import CAPABILITY, CTAPHID

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir, "scripts", "python")))
import latchkey_rig  # noqa: E402 - found through the path just added
from latchkey_rig import RigError, b64url_decode  # noqa: E402
from rig_support import pkcs8  # noqa: E402 - beside this file

__all__ = ["test_rig"]

STEP = 5            # seconds: the bound on every blocking step (a request, an event, a CTAP exchange)
ES256 = [{"type": "public-key", "alg": -7}]


class RigSession:
    """The rig under test and what the checks learn from it, in order."""

    def __init__(self):
        self.control = os.path.join(WORK, "rig.control")
        self.root = os.path.join(WORK, "rig-root")
        self.process = None         # latchkey_rig.RigProcess
        self.client = None          # latchkey_rig.Rig
        self.events = None          # latchkey_rig.EventStream, subscribed to every key
        self.arrivals = []          # every event the subscription delivered, in the order it came
        self.keys = {}              # authenticatorId -> the Authenticator addAuthenticator answered
        self.devices = []
        self.state = {}

    def rig(self):
        assert self.client is not None, "the rig is not running (see the first rig check)"
        return self.client

    def socket_for(self, name):
        return os.path.join(WORK, f"rig-{name}.sock")

    def ctap(self, authenticator_id):
        """A python-fido2 Ctap2 on the key's socket (closed when the rig checks end)."""
        assert authenticator_id in self.keys, f"no key {authenticator_id} was added (see the addAuthenticator checks)"
        device = open_device(self.keys[authenticator_id]["socketPath"], timeout=STEP)
        self.devices.append(device)
        return Ctap2(device)

    def wait(self, name, **match):
        assert self.events is not None, "no event subscription (see the first rig check)"
        skipped = len(self.events.seen)
        try:
            event = self.events.wait_for(name, timeout=STEP, **match)
        finally:
            self.arrivals.extend(self.events.seen[skipped:])
        self.arrivals.append(event)
        return event

    def drain(self, quiet=0.3):
        """Takes every event already sent (until none comes for `quiet` seconds), so that a later
        wait can only match an event that comes after this point."""
        assert self.events is not None, "no event subscription (see the first rig check)"
        while True:
            try:
                event = self.events.next(timeout=quiet)
            except TimeoutError:
                return
            self.events.seen.append(event)
            self.arrivals.append(event)

    def close(self):
        close_quietly(self.devices)
        self.devices = []
        for connection in (self.events, self.client):
            if connection is not None:
                connection.close()
        if self.process is not None:
            self.process.stop()


def expect_rig_error(codes, function, *args, **kwargs):
    """The RigError `function` raises, whose code must be one of `codes` (a string or a tuple)."""
    codes = (codes,) if isinstance(codes, str) else tuple(codes)
    try:
        result = function(*args, **kwargs)
    except RigError as error:
        assert error.code in codes, f"expected error {' or '.join(codes)}, got {error.code}: {error.message}"
        return error
    raise AssertionError(f"expected error {' or '.join(codes)}, got the result {result!r}")


def public_key_is(public_key, cose):
    """Whether a cryptography public key is the COSE key python-fido2 read from the attested credential data."""
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        numbers = public_key.public_numbers()
        return (cose.get(1) == 2 and cose.get(-1) == 1 and bytes(cose.get(-2, b"")) == numbers.x.to_bytes(32, "big")
                and bytes(cose.get(-3, b"")) == numbers.y.to_bytes(32, "big"))
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return cose.get(1) == 1 and cose.get(-1) == 6 and bytes(cose.get(-2, b"")) == raw
    raise AssertionError(f"unexpected key type {type(public_key).__name__}")


def verify_signature(public_key, assertion, client_data_hash):
    """Raises (cryptography's InvalidSignature) unless the assertion signs authData ‖ clientDataHash."""
    message = bytes(assertion.auth_data) + client_data_hash
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        public_key.verify(assertion.signature, message, ec.ECDSA(hashes.SHA256()))
    else:
        public_key.verify(assertion.signature, message)


def seeded_credential(private_key, rp_id, credential_id, user_handle, sign_count, user_name, resident=True):
    return {"credentialId": latchkey_rig.b64url(credential_id), "isResidentCredential": resident, "rpId": rp_id,
            "privateKey": latchkey_rig.b64url(pkcs8(private_key)), "userHandle": latchkey_rig.b64url(user_handle),
            "signCount": sign_count, "userName": user_name}


def ids_of(authenticators):
    return [entry["authenticatorId"] for entry in authenticators]


class RawControl:
    """A control-socket connection that sends lines as given and reads the answers, line by line."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(STEP)
        self.sock.connect(path)
        self.buffer = b""

    def exchange(self, line):
        self.sock.sendall(line)
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            assert chunk, f"the rig closed the connection after {line[:60]!r}"
            self.buffer += chunk
        answer, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(answer)

    def close(self):
        self.sock.close()


# --- starting, adding keys --------------------------------------------------------------------

@check("rig: `latchkey rig --control --root` starts; its control socket is mode 0600; subscribe is answered on a connection of its own")
def check_rig_starts(session):
    os.makedirs(session.root, mode=0o700, exist_ok=True)
    session.process = latchkey_rig.start_rig(BINARY, control=session.control, root=session.root,
                                             extra_args=["--log-level", "debug"], timeout=20)
    mode = stat.S_IMODE(os.stat(session.control).st_mode)
    assert mode == 0o600, f"control socket mode {oct(mode)}"
    session.client = latchkey_rig.Rig(session.control, timeout=STEP)
    session.events = latchkey_rig.EventStream(session.control, timeout=STEP)


@check("rig: addAuthenticator (transport socket, no name) twice: k1 then k2, with the contract's defaults (ctap2_1, "
       "no UV, not verified, consenting, automatic presence, store ROOT/<id>, uniq and hidName), the socket listening when it answers")
def check_add_default_keys(session):
    for expected in ("k1", "k2"):
        path = session.socket_for(expected)
        key = session.rig().add_authenticator(transport="socket", socketPath=path)
        assert key.get("authenticatorId") == expected, key
        session.keys[expected] = key
        assert key.get("protocol") == "ctap2_1" and key.get("transport") == "socket", key
        assert os.path.normpath(key.get("socketPath", "")) == path, key
        for member, default in (("hasUserVerification", False), ("isUserVerified", False), ("isUserConsenting", True),
                                ("automaticPresenceSimulation", True)):
            assert key.get(member) is default, f"{member}: {key.get(member)!r}, expected {default} ({key})"
        assert isinstance(key.get("uniq"), str) and isinstance(key.get("hidName"), str), key
        store = key.get("storeDirectory", "")
        assert os.path.realpath(store) == os.path.realpath(os.path.join(session.root, expected)), (store, session.root)
        assert os.path.isdir(store), f"no store directory {store}"
        assert stat.S_ISSOCK(os.stat(path).st_mode), f"{path} is not a socket when addAuthenticator answers"
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            probe.settimeout(STEP)
            probe.connect(path)
        finally:
            probe.close()


@check("rig: addAuthenticator authenticatorId rig-uv (hasUserVerification, isUserVerified): the name is kept, "
       "the options reported; listAuthenticators lists k1, k2, rig-uv")
def check_add_named_key(session):
    key = session.rig().add_authenticator(authenticatorId="rig-uv", transport="socket", socketPath=session.socket_for("rig-uv"),
                                          hasUserVerification=True, isUserVerified=True)
    assert key.get("authenticatorId") == "rig-uv", key
    session.keys["rig-uv"] = key
    assert key.get("hasUserVerification") is True and key.get("isUserVerified") is True, key
    listed = session.rig().list_authenticators()
    assert sorted(ids_of(listed)) == ["k1", "k2", "rig-uv"], ids_of(listed)
    assert [entry for entry in listed if entry["authenticatorId"] == "rig-uv"][0]["hasUserVerification"] is True, listed


@check("rig: addAuthenticator with an authenticatorId already in use (rig-uv) is an error (invalidParams or failed) and adds nothing")
def check_duplicate_name(session):
    expect_rig_error(("invalidParams", "failed"), session.rig().add_authenticator, authenticatorId="rig-uv",
                     transport="socket", socketPath=session.socket_for("rig-uv-again"))
    assert sorted(ids_of(session.rig().list_authenticators())) == ["k1", "k2", "rig-uv"]


# --- user verification ------------------------------------------------------------------------

@check("rig: k1 (hasUserVerification false): python-fido2 getInfo over its socket has no uv option")
def check_no_uv_option(session):
    info = session.ctap("k1").info
    assert "uv" not in info.options, info.options
    assert info.options.get("rk") is True, info.options


@check("rig: rig-uv (hasUserVerification, isUserVerified true): getInfo uv true; makeCredential rk + uv gives authData with UV (0x04)")
def check_uv_verified(session):
    ctap = session.ctap("rig-uv")
    assert ctap.info.options.get("uv") is True, ctap.info.options
    created = ctap.make_credential(os.urandom(32), {"id": "uv.rig.example", "name": "UV"},
                                   {"id": b"uma-handle", "name": "uma"}, ES256, options={"rk": True, "uv": True})
    flags = created.auth_data.flags
    assert flags & 0x04, f"authData flags 0x{flags:02x} without UV"
    assert flags & 0x01, f"authData flags 0x{flags:02x} without UP"


@check("rig: uvRequested event for that makeCredential: authenticatorId rig-uv, purpose register")
def check_uv_requested_event(session):
    event = session.wait("uvRequested", authenticatorId="rig-uv")
    assert event["params"].get("purpose") == "register", event
    assert event["params"].get("rpId", "uv.rig.example") == "uv.rig.example", event


@check("rig: setUserVerified false on rig-uv: listed so, and a makeCredential with uv fails with a CTAP error")
def check_uv_refused(session):
    assert session.rig().call("setUserVerified", authenticatorId="rig-uv", isUserVerified=False) == {}
    listed = [entry for entry in session.rig().list_authenticators() if entry["authenticatorId"] == "rig-uv"]
    assert listed and listed[0]["isUserVerified"] is False, listed
    ctap = session.ctap("rig-uv")
    try:
        created = ctap.make_credential(os.urandom(32), {"id": "uv.rig.example", "name": "UV"},
                                       {"id": b"ulf-handle", "name": "ulf"}, ES256, options={"rk": True, "uv": True})
    except CtapError as error:
        print(f"      (refused with {error.code!r})", flush=True)
        return
    raise AssertionError(f"a uv makeCredential succeeded with isUserVerified false (flags 0x{created.auth_data.flags:02x})")


# --- credentials made by a client -------------------------------------------------------------

@check("rig: a resident makeCredential on k1 is a credentialAdded event: authenticatorId k1, rpId, credentialId, userHandle, resident")
def check_made_credential_event(session):
    handle = os.urandom(16)
    created = session.ctap("k1").make_credential(os.urandom(32), {"id": "events.rig.example", "name": "Events"},
                                                 {"id": handle, "name": "alice", "displayName": "Alice"}, ES256,
                                                 options={"rk": True})
    credential_id = bytes(created.auth_data.credential_data.credential_id)
    session.state["made"] = (credential_id, handle, created.auth_data.credential_data.public_key)
    session.state.setdefault("k1 resident", set()).add(credential_id)
    event = session.wait("credentialAdded", rpId="events.rig.example")
    params = event["params"]
    assert event.get("authenticatorId") == "k1", event
    assert b64url_decode(params["credentialId"]) == credential_id, (params, credential_id.hex())
    assert b64url_decode(params["userHandle"]) == handle, params
    assert params.get("isResidentCredential") is True, params
    assert isinstance(event.get("seq"), int), event


@check("rig: getCredentials k1: the made credential, resident, with rpId, userHandle, userName and a PKCS#8 privateKey "
       "(cryptography loads it) whose public key is the attested one")
def check_made_credential_listed(session):
    credential_id, handle, cose = session.state["made"]
    listed = session.rig().get_credentials("k1")
    matching = [entry for entry in listed if b64url_decode(entry["credentialId"]) == credential_id]
    assert len(matching) == 1, [entry.get("credentialId") for entry in listed]
    entry = matching[0]
    assert entry.get("isResidentCredential") is True and entry.get("rpId") == "events.rig.example", entry
    assert b64url_decode(entry["userHandle"]) == handle and entry.get("userName") == "alice", entry
    private_key = serialization.load_der_private_key(b64url_decode(entry["privateKey"]), password=None)
    assert public_key_is(private_key.public_key(), cose), "the privateKey's public key is not the attested credential public key"


# --- credentials seeded by the rig ------------------------------------------------------------

@check("rig: addCredential P-256 (rig.example, 16-byte ID, signCount 41, userName carol): getAssertion with allowList "
       "signs counter 42, the signature verifies over authData ‖ clientDataHash")
def check_seeded_p256(session):
    private_key = ec.generate_private_key(ec.SECP256R1())
    credential_id, handle = os.urandom(16), b"carol-handle"
    session.state["p256"] = (private_key, credential_id, handle)
    result = session.rig().call("addCredential", authenticatorId="k1",
                                credential=seeded_credential(private_key, "rig.example", credential_id, handle, 41, "carol"))
    assert result == {}, result
    session.state.setdefault("k1 resident", set()).add(credential_id)
    client_data_hash = os.urandom(32)
    assertion = session.ctap("k1").get_assertion("rig.example", client_data_hash,
                                                 [{"type": "public-key", "id": credential_id}])
    assert bytes(assertion.credential["id"]) == credential_id
    assert assertion.auth_data.counter == 42, assertion.auth_data.counter
    assert assertion.auth_data.rp_id_hash == hashlib.sha256(b"rig.example").digest()
    verify_signature(private_key.public_key(), assertion, client_data_hash)


@check("rig: credentialAsserted event for the seeded P-256 credential: authenticatorId k1, rpId rig.example, signCount 42")
def check_seeded_asserted_event(session):
    _, credential_id, _ = session.state["p256"]
    event = session.wait("credentialAsserted", credentialId=credential_id)
    assert event.get("authenticatorId") == "k1" and event["params"].get("rpId") == "rig.example", event
    assert event["params"].get("signCount") == 42, event


@check("rig: getCredential on the seeded credential: signCount 42, userName carol, rpId, userHandle, the same private key")
def check_seeded_get_credential(session):
    private_key, credential_id, handle = session.state["p256"]
    entry = session.rig().get_credential("k1", credential_id)
    assert entry.get("signCount") == 42 and entry.get("userName") == "carol", entry
    assert entry.get("rpId") == "rig.example" and b64url_decode(entry["userHandle"]) == handle, entry
    assert entry.get("isResidentCredential") is True, entry
    returned = serialization.load_der_private_key(b64url_decode(entry["privateKey"]), password=None)
    assert returned.private_numbers() == private_key.private_numbers(), "getCredential gave another private key"


@check("rig: a discoverable getAssertion (no allowList) for rig.example finds the seeded credential: its user handle, counter 43, verified")
def check_seeded_discoverable(session):
    private_key, credential_id, handle = session.state["p256"]
    client_data_hash = os.urandom(32)
    assertion = session.ctap("k1").get_assertion("rig.example", client_data_hash)
    assert bytes(assertion.credential["id"]) == credential_id, bytes(assertion.credential["id"]).hex()
    assert (assertion.number_of_credentials or 1) == 1, assertion.number_of_credentials
    assert assertion.user and bytes(assertion.user["id"]) == handle, assertion.user
    assert assertion.auth_data.counter == 43, assertion.auth_data.counter
    verify_signature(private_key.public_key(), assertion, client_data_hash)


@check("rig: two accounts at rig.example: the key picks one itself (userSelected, no numberOfCredentials) — the one "
       "used last, then the one selectCredential names by user handle or credential ID, each signature verified; "
       "an account the key does not hold is invalidParams")
def check_select_credential(session):
    first_key, first_id, first_handle = session.state["p256"]
    second_key, second_id, second_handle = ec.generate_private_key(ec.SECP256R1()), os.urandom(32), b"erin-handle"
    session.rig().add_credential("k1", seeded_credential(second_key, "rig.example", second_id, second_handle, 0, "erin"))
    try:
        def sign_in():
            client_data_hash = os.urandom(32)
            assertion = session.ctap("k1").get_assertion("rig.example", client_data_hash)
            assert assertion.user_selected is True and assertion.number_of_credentials is None, assertion
            return assertion, client_data_hash
        assertion, digest = sign_in()
        assert bytes(assertion.user["id"]) == first_handle, "not the account used last"
        verify_signature(first_key.public_key(), assertion, digest)
        session.rig().select_credential("k1", "rig.example", user_handle=second_handle)
        assertion, digest = sign_in()
        assert bytes(assertion.user["id"]) == second_handle, assertion.user
        verify_signature(second_key.public_key(), assertion, digest)
        session.rig().select_credential("k1", "rig.example", credential_id=first_id)
        assertion, digest = sign_in()
        assert bytes(assertion.credential["id"]) == first_id
        verify_signature(first_key.public_key(), assertion, digest)
        expect_rig_error("invalidParams", session.rig().select_credential, "k1", "rig.example", user_handle=b"nobody")
        expect_rig_error("invalidParams", session.rig().call, "selectCredential", authenticatorId="k1", rpId="rig.example")
    finally:
        session.rig().remove_credential("k1", second_id)


@check("rig: addCredential Ed25519 (signCount 7): getAssertion with allowList signs counter 8 with an EdDSA signature that verifies")
def check_seeded_ed25519(session):
    private_key = ed25519.Ed25519PrivateKey.generate()
    credential_id, handle = os.urandom(32), b"dave-handle"
    session.rig().add_credential("k1", seeded_credential(private_key, "ed25519.rig.example", credential_id, handle, 7, "dave"))
    session.state.setdefault("k1 resident", set()).add(credential_id)
    client_data_hash = os.urandom(32)
    assertion = session.ctap("k1").get_assertion("ed25519.rig.example", client_data_hash,
                                                 [{"type": "public-key", "id": credential_id}])
    assert bytes(assertion.credential["id"]) == credential_id
    assert assertion.auth_data.counter == 8, assertion.auth_data.counter
    assert len(assertion.signature) == 64, len(assertion.signature)
    verify_signature(private_key.public_key(), assertion, client_data_hash)
    event = session.wait("credentialAsserted", credentialId=credential_id)
    assert event["params"].get("signCount") == 8, event


@check("rig: addCredential with isResidentCredential false (WebDriver's non-resident credential, no userHandle): getAssertion "
       "with its ID in the allowList signs (no user in the response, counter signCount + 1, verified); without an allowList "
       "it is NO_CREDENTIALS; getCredential says isResidentCredential false, no userHandle; with a userHandle → invalidParams")
def check_seeded_non_resident(session):
    private_key = ec.generate_private_key(ec.SECP256R1())
    credential_id = os.urandom(24)
    credential = seeded_credential(private_key, "nr.rig.example", credential_id, b"nr", 5, "nr", resident=False)
    expect_rig_error("invalidParams", session.rig().call, "addCredential", authenticatorId="k1", credential=credential)
    del credential["userHandle"], credential["userName"]
    assert session.rig().call("addCredential", authenticatorId="k1", credential=credential) == {}
    session.state.setdefault("k1 resident", set()).add(credential_id)
    added = session.wait("credentialAdded", credentialId=credential_id)
    assert added["params"].get("isResidentCredential") is False and "userHandle" not in added["params"], added
    client_data_hash = os.urandom(32)
    assertion = session.ctap("k1").get_assertion("nr.rig.example", client_data_hash,
                                                 [{"type": "public-key", "id": credential_id}])
    assert bytes(assertion.credential["id"]) == credential_id
    assert not assertion.user, f"a non-resident credential's assertion names a user: {assertion.user}"
    assert assertion.auth_data.counter == 6, assertion.auth_data.counter
    verify_signature(private_key.public_key(), assertion, client_data_hash)
    try:
        session.ctap("k1").get_assertion("nr.rig.example", os.urandom(32))
        raise AssertionError("a discoverable getAssertion found the non-resident credential")
    except CtapError as error:
        assert error.code == CtapError.ERR.NO_CREDENTIALS, error
    entry = session.rig().get_credential("k1", credential_id)
    assert entry.get("isResidentCredential") is False and entry.get("userHandle") is None, entry
    assert entry.get("signCount") == 6, entry


@check("rig: addCredential with a privateKey that is not PKCS#8 → invalidParams")
def check_seeded_bad_key(session):
    credential = seeded_credential(ec.generate_private_key(ec.SECP256R1()), "rig.example", os.urandom(16), b"bad", 0, "bad")
    credential["privateKey"] = latchkey_rig.b64url(b"\x30\x03\x02\x01\x00 not a key")
    expect_rig_error("invalidParams", session.rig().call, "addCredential", authenticatorId="k1", credential=credential)


@check("rig: addCredential for an authenticator that does not exist (k99) → noSuchAuthenticator")
def check_seeded_no_such_key(session):
    credential = seeded_credential(ec.generate_private_key(ec.SECP256R1()), "rig.example", os.urandom(16), b"x", 0, "x")
    expect_rig_error("noSuchAuthenticator", session.rig().call, "addCredential", authenticatorId="k99", credential=credential)


# --- removing credentials ---------------------------------------------------------------------

@check("rig: removeCredential (the seeded P-256): {}, a credentialDeleted event, then getAssertion with its allowList is NO_CREDENTIALS")
def check_remove_credential(session):
    _, credential_id, _ = session.state["p256"]
    assert session.rig().call("removeCredential", authenticatorId="k1", credentialId=latchkey_rig.b64url(credential_id)) == {}
    session.state.setdefault("k1 resident", set()).discard(credential_id)
    event = session.wait("credentialDeleted", credentialId=credential_id)
    assert event.get("authenticatorId") == "k1", event
    expect_ctap_error(CtapError.ERR.NO_CREDENTIALS, session.ctap("k1").get_assertion, "rig.example", os.urandom(32),
                      [{"type": "public-key", "id": credential_id}])
    expect_rig_error("noSuchCredential", session.rig().get_credential, "k1", credential_id)


@check("rig: removeAllCredentials k1: {\"removed\": N} for its N resident credentials, a credentialDeleted for each, none left")
def check_remove_all(session):
    expected = session.state.get("k1 resident", set())
    before = {b64url_decode(entry["credentialId"]) for entry in session.rig().get_credentials("k1")}
    assert before == expected, f"k1 holds {len(before)} credentials, the checks made {len(expected)}"
    result = session.rig().call("removeAllCredentials", authenticatorId="k1")
    assert result == {"removed": len(expected)}, (result, len(expected))
    pending = set(expected)
    while pending:
        event = session.wait("credentialDeleted", authenticatorId="k1")
        pending.discard(b64url_decode(event["params"]["credentialId"]))
    assert session.rig().get_credentials("k1") == []
    assert session.rig().call("removeAllCredentials", authenticatorId="k1") == {"removed": 0}
    session.state["k1 resident"] = set()


# --- consent and presence ---------------------------------------------------------------------

@check("rig: setUserConsenting false: makeCredential is OPERATION_DENIED (0x27); true again: it works")
def check_consent(session):
    rp = {"id": "consent.rig.example", "name": "Consent"}
    assert session.rig().call("setUserConsenting", authenticatorId="k1", isUserConsenting=False) == {}
    try:
        expect_ctap_error(CtapError.ERR.OPERATION_DENIED, session.ctap("k1").make_credential, os.urandom(32), rp,
                          {"id": b"no", "name": "no"}, ES256)
    finally:
        session.rig().set_user_consenting("k1", True)
    created = session.ctap("k1").make_credential(os.urandom(32), rp, {"id": b"yes", "name": "yes"}, ES256)
    assert created.auth_data.is_user_present()


@check("rig: setAutomaticPresenceSimulation false: makeCredential waits, a presenceRequested event (register) comes, "
       "answerPresence approve → approved, and the makeCredential succeeds")
def check_presence_answered(session):
    ctap = session.ctap("k1")
    rp_id = "presence.rig.example"
    cancel = threading.Event()
    session.drain()
    assert session.rig().call("setAutomaticPresenceSimulation", authenticatorId="k1", enabled=False) == {}
    thread = None
    try:
        thread, outcome = in_background(ctap.make_credential, os.urandom(32), {"id": rp_id, "name": "Presence"},
                                        {"id": b"pat", "name": "pat"}, ES256, event=cancel)
        event = session.wait("presenceRequested", authenticatorId="k1")
        assert event["params"].get("operation") == "register", event
        assert event["params"].get("rpId", rp_id) == rp_id, event
        time.sleep(0.3)
        assert thread.is_alive() and not outcome, f"makeCredential did not wait for the answer: {outcome}"
        answer = session.rig().answer_presence("k1", True, rp_id=rp_id, timeout_ms=STEP * 1000)
        assert answer.get("result") == "approved", answer
        assert answer.get("operation") == "register" and answer.get("rpId") == rp_id, answer
        thread.join(STEP)
        assert not thread.is_alive(), "makeCredential still waits after answerPresence approve"
        assert "error" not in outcome, f"makeCredential failed: {outcome.get('error')!r}"
        assert outcome["value"].auth_data.is_user_present()
    finally:
        if thread is not None and thread.is_alive():
            cancel.set()
            thread.join(STEP)
        session.rig().set_automatic_presence_simulation("k1", True)


@check("rig: answerPresence with nothing pending (automatic presence off, timeoutMs 200): result none, within 3 s")
def check_presence_none(session):
    session.rig().set_automatic_presence_simulation("k1", False)
    try:
        started = time.monotonic()
        answer = session.rig().answer_presence("k1", True, timeout_ms=200)
        elapsed = time.monotonic() - started
        assert answer.get("result") == "none", answer
        assert elapsed < 3, f"answerPresence took {elapsed:.2f} s for timeoutMs 200"
    finally:
        session.rig().set_automatic_presence_simulation("k1", True)


@check("rig: automaticUserVerification false (the rig decides per request): a uv makeCredential waits, a uvRequested event "
       "comes, answerUserVerification verified → the credential has UV; verified false → the attempt fails; an answer "
       "with nothing pending (timeoutMs 200) → none")
def check_uv_control(session):
    key = add_socket_key(session, "rig-uvctl", hasUserVerification=True, automaticUserVerification=False)
    assert key.get("automaticUserVerification") is False, key
    ctap = session.ctap("rig-uvctl")
    rp_id = "uvctl.rig.example"
    session.drain()

    def make(user):
        return in_background(ctap.make_credential, os.urandom(32), {"id": rp_id, "name": "UV control"},
                             {"id": user, "name": "uvc"}, ES256, options={"rk": True, "uv": True}, event=threading.Event())

    thread, outcome = make(b"uvc1")
    event = session.wait("uvRequested", authenticatorId="rig-uvctl")
    assert event["params"].get("purpose") == "register", event
    time.sleep(0.3)
    assert thread.is_alive() and not outcome, f"makeCredential did not wait for the rig: {outcome}"
    answer = session.rig().call("answerUserVerification", authenticatorId="rig-uvctl", verified=True, rpId=rp_id,
                                timeoutMs=STEP * 1000)
    assert answer.get("result") == "verified" and answer.get("rpId") == rp_id, answer
    thread.join(STEP)
    assert "error" not in outcome, f"makeCredential failed: {outcome.get('error')!r}"
    assert outcome["value"].auth_data.is_user_verified(), "no UV flag after a verified answer"

    thread, outcome = make(b"uvc2")
    session.wait("uvRequested", authenticatorId="rig-uvctl")
    answer = session.rig().call("answerUserVerification", authenticatorId="rig-uvctl", verified=False, timeoutMs=STEP * 1000)
    assert answer.get("result") == "notVerified", answer
    thread.join(STEP)
    assert isinstance(outcome.get("error"), CtapError), f"a failed verification gave {outcome}"

    started = time.monotonic()
    answer = session.rig().call("answerUserVerification", authenticatorId="rig-uvctl", verified=True, timeoutMs=200)
    assert answer.get("result") == "none" and time.monotonic() - started < 3, answer
    expect_rig_error("invalidParams", session.rig().call, "addAuthenticator", transport="socket",
                     socketPath=session.socket_for("uvctl-bad"), automaticUserVerification=False)


MLDSA_CLASSES = {-48: mldsa.MLDSA44PrivateKey, -49: mldsa.MLDSA65PrivateKey, -50: mldsa.MLDSA87PrivateKey}


@check("rig: addAuthenticator rig-pq with algorithms ES256, ML-DSA-44, -65, -87: for each, addCredential of an ML-DSA key "
       "the `cryptography` package made from a seed (RFC 9881 PKCS#8) → getAssertion signs authData ‖ clientDataHash with "
       "a signature cryptography verifies under its own public key of that seed; getCredential gives back its PKCS#8 "
       "byte for byte; a credential the key makes has an AKP key (kty 7) cryptography verifies")
def check_mldsa_keys(session):
    key = add_socket_key(session, "rig-pq", algorithms=["ES256", "ML-DSA-44", "ML-DSA-65", "ML-DSA-87"])
    assert key.get("algorithms") in (None, ["ES256", "ML-DSA-44", "ML-DSA-65", "ML-DSA-87"]), key
    ctap = session.ctap("rig-pq")
    assert [entry["alg"] for entry in ctap.info.algorithms] == [-7, -48, -49, -50], ctap.info.algorithms
    for alg, private_class in MLDSA_CLASSES.items():
        seed = hashlib.sha256(b"rig-pq %d" % alg).digest()
        private_key = private_class.from_seed_bytes(seed)
        der = private_key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption())
        credential_id, rp_id = os.urandom(32), f"mldsa{-alg}.rig.example"
        session.rig().add_credential("rig-pq", {"credentialId": latchkey_rig.b64url(credential_id), "isResidentCredential": True,
                                                "rpId": rp_id, "privateKey": latchkey_rig.b64url(der),
                                                "userHandle": latchkey_rig.b64url(b"pq-user"), "signCount": 0,
                                                "userName": "pq"})
        client_data_hash = os.urandom(32)
        assertion = ctap.get_assertion(rp_id, client_data_hash, [{"type": "public-key", "id": credential_id}])
        private_key.public_key().verify(assertion.signature, bytes(assertion.auth_data) + client_data_hash)
        listed = session.rig().get_credential("rig-pq", credential_id)
        assert latchkey_rig.b64url_decode(listed["privateKey"]) == der, "PKCS#8 changed on the way through the key"
        made = ctap.make_credential(client_data_hash, {"id": rp_id, "name": "PQ"}, {"id": b"made", "name": "made"},
                                    [{"type": "public-key", "alg": alg}])
        cose = made.auth_data.credential_data.public_key
        assert cose[1] == 7 and cose[3] == alg, dict(cose)
        public_key = {-48: mldsa.MLDSA44PublicKey, -49: mldsa.MLDSA65PublicKey, -50: mldsa.MLDSA87PublicKey}[alg]
        made_id = made.auth_data.credential_data.credential_id
        assert len(made_id) == 64, len(made_id)
        second = ctap.get_assertion(rp_id, client_data_hash, [{"type": "public-key", "id": made_id}])
        public_key.from_public_bytes(cose[-1]).verify(second.signature, bytes(second.auth_data) + client_data_hash)


@check("rig: seed (deterministic mode): two keys with the same seed make the same credential ID and public key from the "
       "same makeCredential; another seed, others; an empty seed → invalidParams")
def check_seeded_keys(session):
    made = {}
    for name, seed in (("rig-seed-a", "fixture-seed"), ("rig-seed-b", "fixture-seed"), ("rig-seed-c", "another-seed")):
        add_socket_key(session, name, seed=seed)
        result = session.ctap(name).make_credential(b"\x01" * 32, {"id": "seed.example", "name": "Seed"},
                                                    {"id": b"seeded", "name": "seeded"}, ES256, options={"rk": True})
        data = result.auth_data.credential_data
        made[name] = (bytes(data.credential_id), dict(data.public_key))
    assert made["rig-seed-a"] == made["rig-seed-b"], "same seed, different credentials"
    assert made["rig-seed-a"][0] != made["rig-seed-c"][0] and made["rig-seed-a"][1] != made["rig-seed-c"][1], \
        "another seed gave the same credential"
    expect_rig_error("invalidParams", session.rig().call, "addAuthenticator", transport="socket",
                     socketPath=session.socket_for("seed-bad"), seed="")


@check("rig: powerCycle k1: {}, and the key still answers getInfo (and PING) on a new connection")
def check_power_cycle(session):
    assert session.rig().call("powerCycle", authenticatorId="k1") == {}
    ctap = session.ctap("k1")
    assert "FIDO_2_1" in ctap.info.versions or "FIDO_2_0" in ctap.info.versions, ctap.info.versions
    assert ctap.device.ping(b"after powerCycle") == b"after powerCycle"


# --- protocol errors --------------------------------------------------------------------------

def expect_refused_add(session, code, **options):
    """addAuthenticator with `options` is error `code` and adds no key (one added anyway is removed)."""
    before = set(ids_of(session.rig().list_authenticators()))
    try:
        return expect_rig_error(code, session.rig().call, "addAuthenticator", transport="socket",
                                socketPath=session.socket_for("refused"), **options)
    finally:
        added = set(ids_of(session.rig().list_authenticators())) - before
        for name in added:
            session.rig().remove_authenticator(name)
        assert not added, f"a refused addAuthenticator added {sorted(added)}"


@check("rig: addAuthenticator protocol ctap2 is a CTAP 2.0 key to python-fido2: versions U2F_V2 and FIDO_2_0, PIN/UV auth "
       "protocol 1 only, no credMgmt; credentialManagement is INVALID_COMMAND; a resident makeCredential and its "
       "getAssertion work")
def check_protocol_ctap2(session):
    key = add_socket_key(session, "rig-ctap20", protocol="ctap2")
    assert key.get("protocol") == "ctap2", key
    ctap = session.ctap("rig-ctap20")
    info = ctap.info
    assert list(info.versions) == ["U2F_V2", "FIDO_2_0"], info.versions
    assert list(info.pin_uv_protocols) == [1], info.pin_uv_protocols
    assert "credMgmt" not in info.options and "pinUvAuthToken" not in info.options, info.options
    expect_ctap_error(CtapError.ERR.INVALID_COMMAND, ctap.send_cbor, 0x0A, {1: 1})
    client_data_hash = os.urandom(32)
    made = ctap.make_credential(client_data_hash, {"id": "ctap20.example", "name": "CTAP 2.0"},
                                {"id": b"u20", "name": "twenty"}, [{"type": "public-key", "alg": -7}], options={"rk": True})
    assertion = ctap.get_assertion("ctap20.example", client_data_hash)
    assert assertion.credential["id"] == made.auth_data.credential_data.credential_id, assertion.credential


@check("rig: addAuthenticator rig-nork with hasResidentKey false: listed so; getInfo option rk false; a makeCredential "
       "with rk → UNSUPPORTED_OPTION, without it the credential signs by ID and nothing is stored; addCredential of a "
       "resident credential → invalidParams")
def check_no_resident_key(session):
    key = add_socket_key(session, "rig-nork", hasResidentKey=False)
    assert key.get("hasResidentKey") is False, key
    ctap = session.ctap("rig-nork")
    assert ctap.get_info().options.get("rk") is False, ctap.get_info().options
    rp, user = {"id": "nork.rig.example", "name": "No rk"}, {"id": b"nork", "name": "nork"}
    try:
        ctap.make_credential(os.urandom(32), rp, user, ES256, options={"rk": True})
        raise AssertionError("a key without resident keys made a discoverable credential")
    except CtapError as error:
        assert error.code == CtapError.ERR.UNSUPPORTED_OPTION, error
    created = ctap.make_credential(os.urandom(32), rp, user, ES256)
    credential_id = bytes(created.auth_data.credential_data.credential_id)
    client_data_hash = os.urandom(32)
    assertion = ctap.get_assertion("nork.rig.example", client_data_hash, [{"type": "public-key", "id": credential_id}])
    created.auth_data.credential_data.public_key.verify(bytes(assertion.auth_data) + client_data_hash, assertion.signature)
    assert session.rig().get_credentials("rig-nork") == [], "a key without resident keys stored a credential"
    credential = seeded_credential(ec.generate_private_key(ec.SECP256R1()), "nork.rig.example", os.urandom(16), b"nr", 0, "nr")
    expect_rig_error("invalidParams", session.rig().call, "addCredential", authenticatorId="rig-nork", credential=credential)


@check("rig: addAuthenticator hasUserVerification given as a string → invalidParams, the message naming hasUserVerification")
def check_bad_param_type(session):
    error = expect_refused_add(session, "invalidParams", hasUserVerification="yes")
    assert "hasUserVerification" in error.message, error.message


@check("rig: an unknown method → unknownMethod")
def check_unknown_method(session):
    expect_rig_error("unknownMethod", session.rig().call, "addAuthenticatorz")


@check("rig: a request with v 2 → an error response, not a result")
def check_version_2(session):
    raw = RawControl(session.control)
    try:
        answer = raw.exchange(b'{"v":2,"id":77,"method":"listAuthenticators","params":{}}\n')
        assert "error" in answer and "result" not in answer, answer
        assert isinstance(answer["error"].get("code"), str) and answer["error"].get("message"), answer
        assert answer.get("id") in (77, None), answer
    finally:
        raw.close()


@check("rig: a line that is not JSON → parseError, and the same connection answers the next request")
def check_parse_error(session):
    raw = RawControl(session.control)
    try:
        answer = raw.exchange(b"this is not json\n")
        assert answer.get("error", {}).get("code") == "parseError", answer
        answer = raw.exchange(b'{"v":1,"id":9,"method":"listAuthenticators"}\n')
        assert answer.get("id") == 9 and "authenticators" in answer.get("result", {}), answer
    finally:
        raw.close()


# --- a U2F (CTAP1-only) key -------------------------------------------------------------------

def add_socket_key(session, name, **options):
    """addAuthenticator `name` on the socket transport (recorded in session.keys); the Authenticator."""
    key = session.rig().add_authenticator(authenticatorId=name, transport="socket", socketPath=session.socket_for(name),
                                          **options)
    assert key.get("authenticatorId") == name, key
    session.keys[name] = key
    return key


def u2f_device(session):
    """A python-fido2 CtapHidDevice on the u2f key's socket (closed when the rig checks end)."""
    assert "rig-u2f" in session.keys, "no key rig-u2f was added (see the protocol u2f check)"
    device = open_device(session.keys["rig-u2f"]["socketPath"], timeout=STEP)
    session.devices.append(device)
    return device


@check("rig: addAuthenticator rig-u2f with protocol u2f (socket): reported protocol u2f; python-fido2's CtapHidDevice over its "
       "socket reports capabilities without CBOR (and without NMSG)")
def check_u2f_capabilities(session):
    key = add_socket_key(session, "rig-u2f", protocol="u2f")
    assert key.get("protocol") == "u2f" and key.get("transport") == "socket", key
    device = u2f_device(session)
    capabilities = device.capabilities
    print(f"      (capabilities 0x{capabilities:02x})", flush=True)
    assert capabilities & CAPABILITY.CBOR == 0, f"capabilities 0x{capabilities:02x} include CBOR"
    assert capabilities & CAPABILITY.NMSG == 0, f"capabilities 0x{capabilities:02x} include NMSG (no CTAPHID_MSG)"


@check("rig: rig-u2f: CTAPHID_CBOR (authenticatorGetInfo, 0x04) → CtapError INVALID_COMMAND (ERR_INVALID_CMD)")
def check_u2f_no_cbor(session):
    expect_ctap_error(CtapError.ERR.INVALID_COMMAND, u2f_device(session).call, CTAPHID.CBOR, b"\x04")


@check("rig: rig-u2f: Ctap1 get_version is U2F_V2")
def check_u2f_version(session):
    version = Ctap1(u2f_device(session)).get_version()
    assert version == "U2F_V2", version


@check("rig: rig-u2f: U2F register (attestation signature verifies with its certificate; a credentialAdded event with its key handle), then authenticate (a credentialAsserted event with its counter): user presence, "
       "counter ≥ 1, and the signature verifies (cryptography) with the registration's public key")
def check_u2f_round_trip(session):
    ctap1 = Ctap1(u2f_device(session))
    app_param = hashlib.sha256(b"https://u2f.rig.example").digest()
    client_param = os.urandom(32)
    registration = ctap1.register(client_param, app_param)
    registration.verify(app_param, client_param)
    public_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), bytes(registration.public_key))
    challenge = os.urandom(32)
    signed = ctap1.authenticate(challenge, app_param, bytes(registration.key_handle))
    assert signed.user_presence & 0x01, f"user presence byte 0x{signed.user_presence:02x}"
    assert signed.counter >= 1, signed.counter
    public_key.verify(bytes(signed.signature), app_param + bytes(signed)[:5] + challenge, ec.ECDSA(hashes.SHA256()))
    key_handle = bytes(registration.key_handle)
    added = session.wait("credentialAdded", authenticatorId="rig-u2f", credentialId=key_handle)
    assert added["params"].get("isResidentCredential") is False, added
    asserted = session.wait("credentialAsserted", authenticatorId="rig-u2f", credentialId=key_handle)
    assert asserted["params"].get("signCount") == signed.counter, (asserted, signed.counter)


@check("rig: addAuthenticator protocol u2f with hasUserVerification true → invalidParams, nothing added")
def check_u2f_no_uv(session):
    expect_refused_add(session, "invalidParams", protocol="u2f", hasUserVerification=True)


@check("rig: addAuthenticator protocol u2f with hasResidentKey true (given explicitly) → invalidParams, nothing added")
def check_u2f_no_resident_key(session):
    expect_refused_add(session, "invalidParams", protocol="u2f", hasResidentKey=True)


@check("rig: addCredential on rig-u2f: a resident P-256 credential or an Ed25519 one → invalidParams; a non-resident "
       "P-256 one is listed, and U2F authenticate with its key handle (application SHA-256 of its RP ID, as a browser "
       "sends it) signs at its counter + 1, the signature verified with its public key")
def check_u2f_add_credential(session):
    credential = seeded_credential(ec.generate_private_key(ec.SECP256R1()), "u2f.rig.example", os.urandom(16), b"u2f", 0, "u2f")
    expect_rig_error("invalidParams", session.rig().call, "addCredential", authenticatorId="rig-u2f", credential=credential)
    edwards = {"credentialId": latchkey_rig.b64url(os.urandom(16)), "isResidentCredential": False, "rpId": "u2f.rig.example",
               "privateKey": latchkey_rig.b64url(pkcs8(ed25519.Ed25519PrivateKey.generate())), "signCount": 0}
    expect_rig_error("invalidParams", session.rig().call, "addCredential", authenticatorId="rig-u2f", credential=edwards)
    assert session.rig().get_credentials("rig-u2f") == [], "rig-u2f holds a refused credential"
    private_key = ec.generate_private_key(ec.SECP256R1())
    key_handle = os.urandom(32)
    session.rig().call("addCredential", authenticatorId="rig-u2f", credential={
        "credentialId": latchkey_rig.b64url(key_handle), "isResidentCredential": False, "rpId": "u2f.rig.example",
        "privateKey": latchkey_rig.b64url(pkcs8(private_key)), "signCount": 7})
    listed = session.rig().get_credentials("rig-u2f")
    assert [entry["credentialId"] for entry in listed] == [latchkey_rig.b64url(key_handle)], listed
    app_param = hashlib.sha256(b"u2f.rig.example").digest()
    challenge = os.urandom(32)
    signed = Ctap1(u2f_device(session)).authenticate(challenge, app_param, key_handle)
    assert signed.counter == 8, f"counter {signed.counter} after signCount 7"
    private_key.public_key().verify(bytes(signed.signature), app_param + bytes(signed)[:5] + challenge, ec.ECDSA(hashes.SHA256()))
    expect_ctap1_wrong_data = None
    try:
        Ctap1(u2f_device(session)).authenticate(challenge, hashlib.sha256(b"other.example").digest(), key_handle)
    except ApduError as error:
        expect_ctap1_wrong_data = error.code
    assert expect_ctap1_wrong_data == 0x6A80, f"another application's authenticate: {expect_ctap1_wrong_data}"
    session.rig().call("removeCredential", authenticatorId="rig-u2f", credentialId=latchkey_rig.b64url(key_handle))


# --- response overrides (setResponseOverrideBits) ---------------------------------------------

def override_assertion(session):
    """A getAssertion with uv on rig-ov for its credential: (assertion, clientDataHash)."""
    credential_id, _ = session.state["ov"]
    client_data_hash = os.urandom(32)
    assertion = session.ctap("rig-ov").get_assertion("ov.rig.example", client_data_hash,
                                                     [{"type": "public-key", "id": credential_id}], options={"uv": True})
    assert bytes(assertion.credential["id"]) == credential_id
    return assertion, client_data_hash


def override_make_credential(session):
    """A makeCredential with uv on rig-ov: (attestation object, clientDataHash)."""
    client_data_hash = os.urandom(32)
    created = session.ctap("rig-ov").make_credential(client_data_hash, {"id": "ov.rig.example", "name": "Overrides"},
                                                     {"id": os.urandom(8), "name": "ovm"}, ES256, options={"uv": True})
    return created, client_data_hash


def set_override_bits(session, **bits):
    assert session.rig().call("setResponseOverrideBits", authenticatorId="rig-ov", **bits) == {}


@check("rig: setResponseOverrideBits isBadUV on rig-ov (hasUserVerification, isUserVerified): {}; a getAssertion with uv "
       "gives authData without UV (UP still set) under a signature that verifies")
def check_override_bad_uv(session):
    add_socket_key(session, "rig-ov", hasUserVerification=True, isUserVerified=True)
    created = session.ctap("rig-ov").make_credential(os.urandom(32), {"id": "ov.rig.example", "name": "Overrides"},
                                                     {"id": b"ov-handle", "name": "ov"}, ES256, options={"rk": True, "uv": True})
    assert created.auth_data.flags & 0x05 == 0x05, f"before any override: flags 0x{created.auth_data.flags:02x}"
    session.state["ov"] = (bytes(created.auth_data.credential_data.credential_id), created.auth_data.credential_data.public_key)
    set_override_bits(session, isBadUV=True)
    assertion, client_data_hash = override_assertion(session)
    flags = assertion.auth_data.flags
    assert not flags & 0x04, f"flags 0x{flags:02x} with UV under isBadUV"
    assert flags & 0x01, f"flags 0x{flags:02x} without UP (only isBadUV is set)"
    session.state["ov"][1].verify(bytes(assertion.auth_data) + client_data_hash, assertion.signature)


@check("rig: setResponseOverrideBits isBadUP (isBadUV not given, so false): a getAssertion with uv gives authData without UP, "
       "with UV, under a signature that verifies")
def check_override_bad_up(session):
    set_override_bits(session, isBadUP=True)
    assertion, client_data_hash = override_assertion(session)
    flags = assertion.auth_data.flags
    assert not flags & 0x01, f"flags 0x{flags:02x} with UP under isBadUP"
    assert flags & 0x04, f"flags 0x{flags:02x} without UV (isBadUV was set back to false)"
    session.state["ov"][1].verify(bytes(assertion.auth_data) + client_data_hash, assertion.signature)


@check("rig: setResponseOverrideBits isBogusSignature: the assertion signature (UV and UP set) is well-formed DER "
       "(decode_dss_signature) but does not verify, and verifies with its last bit flipped back; a makeCredential's packed "
       "attestation signature (x5c) does not verify with the certificate's key either")
def check_override_bogus_signature(session):
    set_override_bits(session, isBogusSignature=True)
    assertion, client_data_hash = override_assertion(session)
    flags = assertion.auth_data.flags
    assert flags & 0x05 == 0x05, f"flags 0x{flags:02x}: isBogusSignature alone must leave UV and UP"
    signature = bytes(assertion.signature)
    decode_dss_signature(signature)
    message = bytes(assertion.auth_data) + client_data_hash
    public_key = session.state["ov"][1]
    expect_invalid_signature(public_key.verify, message, signature, what="the bogus assertion signature")
    public_key.verify(message, signature[:-1] + bytes([signature[-1] ^ 0x01]))
    created, client_data_hash = override_make_credential(session)
    assert created.fmt == "packed" and created.att_stmt.get("x5c"), (created.fmt, sorted(created.att_stmt))
    attestation_signature = bytes(created.att_stmt["sig"])
    decode_dss_signature(attestation_signature)
    certificate = x509.load_der_x509_certificate(bytes(created.att_stmt["x5c"][0]))
    expect_invalid_signature(certificate.public_key().verify, attestation_signature, bytes(created.auth_data) + client_data_hash,
                             ec.ECDSA(hashes.SHA256()), what="the bogus packed attestation signature")


@check("rig: setResponseOverrideBits all false: a getAssertion with uv has UV and UP and verifies; a makeCredential's packed "
       "attestation verifies")
def check_override_cleared(session):
    set_override_bits(session, isBogusSignature=False, isBadUV=False, isBadUP=False)
    assertion, client_data_hash = override_assertion(session)
    flags = assertion.auth_data.flags
    assert flags & 0x05 == 0x05, f"flags 0x{flags:02x}"
    session.state["ov"][1].verify(bytes(assertion.auth_data) + client_data_hash, assertion.signature)
    created, client_data_hash = override_make_credential(session)
    verify_packed_attestation(created, client_data_hash)


def expect_invalid_signature(verify, *args, what):
    try:
        verify(*args)
    except InvalidSignature:
        return
    raise AssertionError(f"{what} verifies")


# --- backup flags (defaultBackupEligibility/State, setCredentialProperties) -------------------

@check("rig: addAuthenticator rig-be with defaultBackupEligibility and defaultBackupState: listed so; a resident "
       "makeCredential's authData has BE and BS (0x18), getCredential says so, and an assertion carries both under a "
       "signature that verifies")
def check_backup_defaults(session):
    key = add_socket_key(session, "rig-be", defaultBackupEligibility=True, defaultBackupState=True,
                         hasUserVerification=True, isUserVerified=True)
    assert key.get("defaultBackupEligibility") is True and key.get("defaultBackupState") is True, key
    created = session.ctap("rig-be").make_credential(os.urandom(32), {"id": "be.rig.example", "name": "Backup"},
                                                     {"id": b"be-handle", "name": "be"}, ES256, options={"rk": True, "uv": True})
    assert created.auth_data.flags & 0x18 == 0x18, f"makeCredential flags 0x{created.auth_data.flags:02x}"
    credential_id = bytes(created.auth_data.credential_data.credential_id)
    session.state["be"] = (credential_id, created.auth_data.credential_data.public_key)
    entry = session.rig().get_credential("rig-be", credential_id)
    assert entry.get("backupEligibility") is True and entry.get("backupState") is True, entry
    client_data_hash = os.urandom(32)
    assertion = session.ctap("rig-be").get_assertion("be.rig.example", client_data_hash,
                                                     [{"type": "public-key", "id": credential_id}])
    assert assertion.auth_data.flags & 0x18 == 0x18, f"assertion flags 0x{assertion.auth_data.flags:02x}"
    session.state["be"][1].verify(bytes(assertion.auth_data) + client_data_hash, assertion.signature)


@check("rig: setCredentialProperties backupState false: {}, a credentialUpdated event (backupEligibility true, backupState "
       "false, rpId), getCredential says so, and the next assertion has BE without BS")
def check_backup_set_properties(session):
    credential_id, public_key = session.state["be"]
    session.rig().set_credential_properties("rig-be", credential_id, backup_state=False)
    event = session.wait("credentialUpdated", credentialId=credential_id)
    params = event["params"]
    assert params.get("backupEligibility") is True and params.get("backupState") is False, event
    assert params.get("rpId") == "be.rig.example" and event.get("authenticatorId") == "rig-be", event
    entry = session.rig().get_credential("rig-be", credential_id)
    assert entry.get("backupEligibility") is True and entry.get("backupState") is False, entry
    client_data_hash = os.urandom(32)
    assertion = session.ctap("rig-be").get_assertion("be.rig.example", client_data_hash,
                                                     [{"type": "public-key", "id": credential_id}])
    assert assertion.auth_data.flags & 0x18 == 0x08, f"assertion flags 0x{assertion.auth_data.flags:02x}"
    public_key.verify(bytes(assertion.auth_data) + client_data_hash, assertion.signature)


@check("rig: setCredentialProperties for an ID the key does not hold → noSuchCredential; backupState given as a string → invalidParams")
def check_backup_set_properties_refused(session):
    expect_rig_error("noSuchCredential", session.rig().set_credential_properties, "rig-be", os.urandom(16), backup_state=True)
    credential_id, _ = session.state["be"]
    expect_rig_error("invalidParams", session.rig().call, "setCredentialProperties", authenticatorId="rig-be",
                     credentialId=latchkey_rig.b64url(credential_id), backupState="yes")


@check("rig: credential management's updateUserInformation (a UV token from the key's built-in UV) on rig-be: a "
       "credentialUpdated event with the new name and display name")
def check_update_user_event(session):
    from fido2.ctap2 import ClientPin, CredentialManagement
    credential_id, _ = session.state["be"]
    ctap = session.ctap("rig-be")
    client_pin = ClientPin(ctap)
    token = client_pin.get_uv_token(ClientPin.PERMISSION.CREDENTIAL_MGMT)
    manager = CredentialManagement(ctap, client_pin.protocol, token)
    manager.update_user_info({"type": "public-key", "id": credential_id},
                             {"id": b"be-handle", "name": "be-renamed", "displayName": "Be Renamed"})
    event = session.wait("credentialUpdated", credentialId=credential_id, userName="be-renamed")
    assert event["params"].get("userDisplayName") == "Be Renamed", event
    assert session.rig().get_credential("rig-be", credential_id).get("userName") == "be-renamed"


@check("rig: addAuthenticator protocol u2f with defaultBackupEligibility → invalidParams, nothing added")
def check_backup_u2f_refused(session):
    expect_refused_add(session, "invalidParams", protocol="u2f", defaultBackupEligibility=True)


# --- extensions ------------------------------------------------------------------------------

@check("rig: addAuthenticator rig-ext with extensions [credBlob]: python-fido2 get_info lists credBlob alone and no "
       "largeBlobs option (authenticatorLargeBlobs → INVALID_COMMAND); a makeCredential asking credProtect 3 and credBlob answers credBlob only, and the credential "
       "signs in without UV (credProtect was ignored, as CTAP 2.1 §9 has it)")
def check_extensions_narrowed(session):
    key = add_socket_key(session, "rig-ext", extensions=["credBlob"])
    assert key.get("extensions") == ["credBlob"], key
    ctap = session.ctap("rig-ext")
    info = ctap.get_info()
    assert list(info.extensions) == ["credBlob"], info.extensions
    assert "largeBlobs" not in info.options, info.options
    try:
        ctap.large_blobs(0, get=17)
        raise AssertionError("authenticatorLargeBlobs answered on a key without largeBlobKey")
    except CtapError as error:
        assert error.code == CtapError.ERR.INVALID_COMMAND, error
    created = ctap.make_credential(os.urandom(32), {"id": "ext.rig.example", "name": "Extensions"},
                                   {"id": b"ext-handle", "name": "ext"}, ES256, options={"rk": True},
                                   extensions={"credProtect": 3, "credBlob": b"blob"})
    outputs = created.auth_data.extensions or {}
    assert set(outputs) == {"credBlob"} and outputs["credBlob"] is True, outputs
    credential_id = bytes(created.auth_data.credential_data.credential_id)
    assertion = ctap.get_assertion("ext.rig.example", os.urandom(32), extensions={"credBlob": True})
    assert bytes(assertion.credential["id"]) == credential_id, "a discoverable sign-in without UV found it: level 1"
    assert (assertion.auth_data.extensions or {}).get("credBlob") == b"blob", assertion.auth_data.extensions


@check("rig: addAuthenticator with extensions naming one that does not exist (teleport) → invalidParams, nothing added")
def check_extensions_unknown(session):
    expect_refused_add(session, "invalidParams", extensions=["teleport"])


# --- large blobs (addCredential / getCredential largeBlob) -----------------------------------

@check("rig: addCredential with largeBlob (3 KiB, resident): python-fido2's LargeBlobs.get_blob, with the largeBlobKey "
       "its getAssertion returns, reads the planted blob back (zlib inflates what the rig compressed); getCredential "
       "returns it")
def check_large_blob_planted(session):
    add_socket_key(session, "rig-blob")
    private_key = ec.generate_private_key(ec.SECP256R1())
    credential_id = os.urandom(32)
    blob = b"ssh-cert " + bytes(range(256)) * 12
    credential = seeded_credential(private_key, "blob.rig.example", credential_id, b"blob-handle", 0, "blobby")
    session.rig().add_credential("rig-blob", dict(credential, largeBlob=latchkey_rig.b64url(blob)))
    ctap = session.ctap("rig-blob")
    assertion = ctap.get_assertion("blob.rig.example", os.urandom(32), allow_list=[{"type": "public-key", "id": credential_id}],
                                   extensions={"largeBlobKey": True})
    key = assertion.large_blob_key
    assert key and len(key) == 32, f"largeBlobKey {key!r}"
    assert LargeBlobs(ctap).get_blob(key) == blob, "python-fido2 did not read the planted blob"
    entry = session.rig().get_credential("rig-blob", credential_id)
    assert b64url_decode(entry.get("largeBlob", "")) == blob, entry.get("largeBlob", "")[:40]
    session.state["blob"] = credential_id


@check("rig: a blob python-fido2 writes (LargeBlobs.put_blob, zlib's DEFLATE) under a credential made with largeBlobKey is "
       "getCredentials' largeBlob for it; the planted one beside it is kept, and a credential without a blob has none")
def check_large_blob_written_by_client(session):
    ctap = session.ctap("rig-blob")
    created = ctap.make_credential(os.urandom(32), {"id": "blob.rig.example", "name": "Blobs"},
                                   {"id": b"written-handle", "name": "writer"}, ES256, options={"rk": True},
                                   extensions={"largeBlobKey": True})
    key = created.large_blob_key
    assert key and len(key) == 32, f"largeBlobKey {key!r}"
    written = b"written by python-fido2 " * 40
    LargeBlobs(ctap).put_blob(key, written)
    plain = ctap.make_credential(os.urandom(32), {"id": "blob.rig.example", "name": "Blobs"},
                                 {"id": b"plain-handle", "name": "plain"}, ES256, options={"rk": True})
    by_id = {b64url_decode(entry["credentialId"]): entry for entry in session.rig().get_credentials("rig-blob")}
    made = bytes(created.auth_data.credential_data.credential_id)
    assert b64url_decode(by_id[made].get("largeBlob", "")) == written, by_id[made]
    assert b64url_decode(by_id[session.state["blob"]].get("largeBlob", "")).startswith(b"ssh-cert "), "the planted blob went"
    assert "largeBlob" not in by_id[bytes(plain.auth_data.credential_data.credential_id)], "a blob for a credential without one"


@check("rig: addCredential largeBlob refused (invalidParams, nothing added): with isResidentCredential false; on a key without "
       "largeBlob (extensions [credBlob]); a blob that does not fit in maxSerializedLargeBlobArray (4096)")
def check_large_blob_refused(session):
    def refused(key_id, credential, what):
        expect_rig_error("invalidParams", session.rig().add_credential, key_id, credential)
        ids = {entry["credentialId"] for entry in session.rig().get_credentials(key_id)}
        assert credential["credentialId"] not in ids, f"{what}: the credential was added anyway"

    blob = latchkey_rig.b64url(b"x" * 100)
    private_key = ec.generate_private_key(ec.SECP256R1())
    non_resident = seeded_credential(private_key, "blob.rig.example", os.urandom(32), b"h", 0, None, resident=False)
    del non_resident["userHandle"], non_resident["userName"]
    refused("rig-blob", dict(non_resident, largeBlob=blob), "non-resident")
    refused("rig-ext", dict(seeded_credential(private_key, "ext.rig.example", os.urandom(32), b"h", 0, "e"), largeBlob=blob),
            "a key without largeBlob")
    too_big = latchkey_rig.b64url(os.urandom(5000))
    refused("rig-blob", dict(seeded_credential(private_key, "blob.rig.example", os.urandom(32), b"h", 0, "b"), largeBlob=too_big),
            "too big")


# --- injected faults (injectFault, clearFaults) -----------------------------------------------

CTAPHID_INIT, CTAPHID_CBOR, CTAPHID_KEEPALIVE = 0x86, 0x90, 0xBB
BROADCAST = 0xFFFFFFFF


class RawCtaphid:
    """A CTAPHID client of its own on a key's socket: 64-byte packets, a channel allocated by INIT."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(STEP)
        self.sock.connect(path)
        try:
            nonce = os.urandom(8)
            self.send(BROADCAST, 0x06, nonce)
            while True:
                packet = self.receive(STEP)
                assert packet is not None, "no answer to CTAPHID_INIT"
                channel, command, length = struct.unpack(">IBH", packet[:7])
                if channel == BROADCAST and command == CTAPHID_INIT and packet[7:15] == nonce:
                    assert length >= 17, f"INIT response of {length} bytes"
                    self.channel = struct.unpack(">I", packet[15:19])[0]
                    return
        except BaseException:
            self.sock.close()
            raise

    def send(self, channel, command, payload):
        for packet in ctaphid_frames.fragments(channel, command, payload):
            self.sock.send(packet)

    def receive(self, timeout):
        """The next 64-byte packet, or None if none comes in `timeout` seconds."""
        self.sock.settimeout(timeout)
        try:
            packet = self.sock.recv(65)
        except socket.timeout:
            return None
        assert packet, "the key closed the connection"
        assert len(packet) == 64, f"a packet of {len(packet)} bytes"
        return packet

    def get_info(self):
        """Sends authenticatorGetInfo (CTAPHID_CBOR 0x04) on this connection's channel."""
        self.send(self.channel, 0x10, b"\x04")

    def read_response(self, timeout=STEP):
        """(KEEPALIVE packets before it, command, payload) of the next response on the channel."""
        keepalives = 0
        while True:
            packet = self.receive(timeout)
            assert packet is not None, f"no response in {timeout} s (after {keepalives} KEEPALIVEs)"
            channel, command, length = struct.unpack(">IBH", packet[:7])
            assert channel == self.channel, f"a packet on channel {channel:08x}, not {self.channel:08x}"
            if command == CTAPHID_KEEPALIVE:
                keepalives += 1
                continue
            assert command & 0x80, f"a continuation packet (seq {command}) where an initialization packet belongs"
            payload, sequence = bytearray(packet[7:7 + length]), 0
            while len(payload) < length:
                packet = self.receive(timeout)
                assert packet is not None, f"the response stopped at {len(payload)} of {length} bytes"
                assert packet[4] == sequence, f"continuation seq {packet[4]}, expected {sequence}"
                payload += packet[5:5 + length - len(payload)]
                sequence += 1
            return keepalives, command, bytes(payload)

    def close(self):
        self.sock.close()


def expect_get_info_answered(path):
    """A fresh connection and channel on `path` gets a getInfo response: status 0, versions with FIDO_2_1."""
    raw = RawCtaphid(path)
    try:
        raw.get_info()
        keepalives, command, payload = raw.read_response()
        assert command == CTAPHID_CBOR, f"command 0x{command:02x}"
        assert payload[:1] == b"\x00", f"status 0x{payload[0]:02x}"
        assert "FIDO_2_1" in cbor.decode(payload[1:])[1], payload.hex()
    finally:
        raw.close()


def fault_key(session):
    assert "rig-fault" in session.keys, "no key rig-fault was added (see the first injectFault check)"
    return session.keys["rig-fault"]["socketPath"]


def make_on_fault_key(ctap, name):
    return ctap.make_credential(os.urandom(32), {"id": "fault.rig.example", "name": "Faults"}, {"id": name.encode(), "name": name},
                                ES256)


@check("rig: injectFault status 0x28 (KEY_STORE_FULL) on makeCredential (rig-fault): {\"faultId\": N}; python-fido2 makeCredential "
       "raises CtapError 0x28; the next makeCredential works (times 1 used up: clearFaults then 0)")
def check_fault_status(session):
    add_socket_key(session, "rig-fault")
    ctap = session.ctap("rig-fault")
    result = session.rig().call("injectFault", authenticatorId="rig-fault", command="makeCredential", fault="status", status=0x28)
    assert set(result) == {"faultId"} and isinstance(result["faultId"], int), result
    try:
        expect_ctap_error(CtapError.ERR.KEY_STORE_FULL, make_on_fault_key, ctap, "full")
        assert make_on_fault_key(ctap, "after").auth_data.is_user_present()
        assert session.rig().clear_faults("rig-fault") == 0, "the times-1 fault was not used up"
    finally:
        session.rig().clear_faults("rig-fault")


@check("rig: injectFault status 0x28 on makeCredential with times 0: two makeCredentials in a row fail with 0x28; clearFaults → "
       "{\"cleared\": 1}; then makeCredential works")
def check_fault_until_cleared(session):
    ctap = session.ctap("rig-fault")
    session.rig().inject_fault("rig-fault", "makeCredential", "status", status=0x28, times=0)
    try:
        expect_ctap_error(CtapError.ERR.KEY_STORE_FULL, make_on_fault_key, ctap, "one")
        expect_ctap_error(CtapError.ERR.KEY_STORE_FULL, make_on_fault_key, ctap, "two")
        assert session.rig().call("clearFaults", authenticatorId="rig-fault") == {"cleared": 1}
    finally:
        session.rig().clear_faults("rig-fault")
    assert make_on_fault_key(ctap, "three").auth_data.is_user_present()


@check("rig: injectFault delay 800 ms on getInfo: python-fido2 get_info takes ≥ 0.8 s (< 4 s) and succeeds")
def check_fault_delay(session):
    ctap = session.ctap("rig-fault")
    session.rig().inject_fault("rig-fault", "getInfo", "delay", delay_ms=800)
    try:
        started = time.monotonic()
        info = ctap.get_info()
        elapsed = time.monotonic() - started
    finally:
        session.rig().clear_faults("rig-fault")
    print(f"      (get_info took {elapsed:.2f} s)", flush=True)
    assert elapsed >= 0.8, f"get_info took {elapsed:.3f} s under an 800 ms delay"
    assert elapsed < 4, f"get_info took {elapsed:.2f} s"
    assert "FIDO_2_1" in info.versions, info.versions


@check("rig: injectFault drop on getInfo: a raw CTAPHID getInfo on an INIT-allocated channel gets nothing (not even a packet) "
       "in 1.5 s; a fresh connection and channel then gets its getInfo answered")
def check_fault_drop(session):
    path = fault_key(session)
    raw = RawCtaphid(path)
    try:
        session.rig().inject_fault("rig-fault", "getInfo", "drop")
        raw.get_info()
        packet = raw.receive(1.5)
        assert packet is None, f"a packet for the dropped request: {packet.hex()}"
    finally:
        raw.close()
        session.rig().clear_faults("rig-fault")
    expect_get_info_answered(path)


@check("rig: injectFault truncate on getInfo: the raw client receives exactly one packet, the initialization packet (CBOR, "
       "BCNT larger than the 57 bytes it carries), then nothing in 1 s; a fresh connection then gets getInfo answered")
def check_fault_truncate(session):
    path = fault_key(session)
    raw = RawCtaphid(path)
    try:
        session.rig().inject_fault("rig-fault", "getInfo", "truncate")
        raw.get_info()
        packet = raw.receive(STEP)
        assert packet is not None, "no packet at all"
        channel, command, length = struct.unpack(">IBH", packet[:7])
        assert channel == raw.channel and command == CTAPHID_CBOR, f"first packet {packet[:7].hex()}"
        assert length > 57, f"BCNT {length}: the whole response fits in one packet, nothing to truncate"
        assert packet[7] == 0x00, f"status 0x{packet[7]:02x}"
        more = raw.receive(1.0)
        assert more is None, f"a second packet: {more.hex()}"
    finally:
        raw.close()
        session.rig().clear_faults("rig-fault")
    expect_get_info_answered(path)


@check("rig: injectFault keepaliveFlood (keepalives 500) on getInfo: the raw client receives ≥ 500 KEEPALIVE packets (0xBB) "
       "then the whole getInfo response (status 0)")
def check_fault_keepalive_flood(session):
    raw = RawCtaphid(fault_key(session))
    try:
        session.rig().inject_fault("rig-fault", "getInfo", "keepaliveFlood", keepalives=500)
        raw.get_info()
        keepalives, command, payload = raw.read_response()
    finally:
        raw.close()
        session.rig().clear_faults("rig-fault")
    print(f"      ({keepalives} KEEPALIVEs)", flush=True)
    assert keepalives >= 500, f"{keepalives} KEEPALIVE packets"
    assert command == CTAPHID_CBOR and payload[:1] == b"\x00", (hex(command), payload[:1].hex())
    assert "FIDO_2_1" in cbor.decode(payload[1:])[1], payload.hex()


@check("rig: injectFault status 27013 (0x6985) on u2fRegister (rig-u2f): Ctap1 register raises ApduError 0x6985; the next register works")
def check_fault_u2f_status(session):
    ctap1 = Ctap1(u2f_device(session))
    session.rig().inject_fault("rig-u2f", "u2fRegister", "status", status=27013)
    try:
        try:
            ctap1.register(os.urandom(32), os.urandom(32))
        except ApduError as error:
            assert error.code == 0x6985, f"ApduError 0x{error.code:04x}"
        else:
            raise AssertionError("register succeeded under a status 0x6985 fault")
        ctap1.register(os.urandom(32), os.urandom(32))
    finally:
        session.rig().clear_faults("rig-u2f")


def expect_refused_fault(session, **params):
    """injectFault on rig-fault with `params` is invalidParams, and adds no fault (clearFaults then 0)."""
    session.rig().clear_faults("rig-fault")
    expect_rig_error("invalidParams", session.rig().call, "injectFault", authenticatorId="rig-fault", **params)
    assert session.rig().clear_faults("rig-fault") == 0, "a refused injectFault added a fault"


@check("rig: injectFault with an unknown command name (makeCredentialz) → invalidParams, no fault added")
def check_fault_unknown_command(session):
    expect_refused_fault(session, command="makeCredentialz", fault="drop")


@check("rig: injectFault with an unknown fault name (explode) → invalidParams, no fault added")
def check_fault_unknown_fault(session):
    expect_refused_fault(session, command="getInfo", fault="explode")


@check("rig: injectFault status with command any → invalidParams, no fault added")
def check_fault_status_any(session):
    expect_refused_fault(session, command="any", fault="status", status=0x28)


@check("rig: injectFault delay without delayMs → invalidParams, no fault added")
def check_fault_delay_no_ms(session):
    expect_refused_fault(session, command="getInfo", fault="delay")


# --- the CLI, removing keys, stopping ---------------------------------------------------------

@check("rig: `latchkey rig call listAuthenticators --control PATH`: exit 0, prints JSON whose authenticators are the keys added "
       "(k1, k2, rig-uv, rig-u2f, rig-ov, rig-fault), rig-u2f with protocol u2f")
def check_cli_call(session):
    run = subprocess.run([BINARY, "rig", "call", "listAuthenticators", "--control", session.control],
                         capture_output=True, text=True, timeout=15, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stdout + run.stderr
    printed = json.loads(run.stdout)
    assert sorted(ids_of(printed["authenticators"])) == sorted(session.keys), (sorted(session.keys), printed)
    protocols = {entry["authenticatorId"]: entry.get("protocol") for entry in printed["authenticators"]}
    assert protocols.get("rig-u2f", "u2f") == "u2f", protocols


@check("rig: removeAuthenticator k2: {}; its socket file and its store directory (ROOT/k2) are gone; no longer listed; "
       "k2 is then noSuchAuthenticator")
def check_remove_authenticator(session):
    key = session.keys["k2"]
    assert session.rig().call("removeAuthenticator", authenticatorId="k2") == {}
    del session.keys["k2"]
    assert not os.path.exists(key["socketPath"]), f"{key['socketPath']} still exists"
    assert not os.path.exists(key["storeDirectory"]), f"{key['storeDirectory']} still exists"
    assert not os.path.exists(os.path.join(session.root, "k2")), "ROOT/k2 still exists"
    assert "k2" not in ids_of(session.rig().list_authenticators())
    expect_rig_error("noSuchAuthenticator", session.rig().get_credentials, "k2")


@check("rig: events on a subscription to every key made before the first key: seq 1, 2, 3, … in the order they came, none missing")
def check_event_sequence(session):
    session.drain(quiet=0.5)
    seqs = [event.get("seq") for event in session.arrivals]
    assert seqs and seqs == list(range(1, len(seqs) + 1)), seqs


@check("rig: SIGTERM (connections still open): exit status 0; the control socket and every key's socket are removed")
def check_sigterm(session):
    assert session.process is not None, "the rig is not running"
    sockets = [key["socketPath"] for key in session.keys.values()]
    status = session.process.stop()
    assert status == 0, f"exit status {status}: {session.process.output()[-2000:]}"
    assert not os.path.exists(session.control), f"{session.control} still exists"
    left = [path for path in sockets if os.path.exists(path)]
    assert not left, f"key sockets left behind: {left}"


@check("rig: without --root: the key's store is in a fresh private (0700) directory, which is gone when the rig stops (SIGTERM, exit 0)")
def check_default_root():
    process = latchkey_rig.start_rig(BINARY, control=os.path.join(WORK, "rig2.control"), timeout=20)
    try:
        with latchkey_rig.Rig(process.control, timeout=STEP) as client:
            key = client.add_authenticator(transport="socket", socketPath=os.path.join(WORK, "rig2-k1.sock"))
        store = os.path.normpath(key["storeDirectory"])
        private = os.path.dirname(store)
        assert os.path.basename(store) == key["authenticatorId"] == "k1", key
        assert os.path.isdir(store), f"no store directory {store}"
        assert not os.path.realpath(store).startswith(os.path.realpath(WORK) + os.sep), f"store {store} under the work dir"
        mode = stat.S_IMODE(os.stat(private).st_mode)
        assert mode & 0o077 == 0, f"{private} has mode {oct(mode)}"
        Ctap2(open_device(key["socketPath"], timeout=STEP)).device.close()
    finally:
        status = process.stop()
    assert status == 0, f"exit status {status}: {process.output()[-2000:]}"
    assert not os.path.exists(store), f"{store} is still there after the rig stopped"
    assert not os.path.exists(private), f"{private} is still there after the rig stopped"


@check("rig: start_rig with pid_file writes the pid as the process starts: one that never answers on its control socket "
       "(a script that sleeps) has its pid in the file when start_rig gives up after 1 s with RigStartError, and is stopped")
def check_start_pid_file():
    script, pid_file = os.path.join(WORK, "never-answers.sh"), os.path.join(WORK, "never-answers.pid")
    with open(script, "w") as handle:
        handle.write("#!/bin/sh\nexec sleep 30\n")
    os.chmod(script, 0o700)
    try:
        latchkey_rig.start_rig(script, control=os.path.join(WORK, "never.control"), timeout=1, pid_file=pid_file)
        raise AssertionError("start_rig returned for a process with no control socket")
    except latchkey_rig.RigStartError as error:
        assert "no control socket" in str(error), error
    with open(pid_file) as handle:
        pid = int(handle.read().strip())
    try:
        os.kill(pid, 0)
        raise AssertionError(f"process {pid} is still running after start_rig gave up")
    except ProcessLookupError:
        pass


RIG_CHECKS = (check_rig_starts, check_add_default_keys, check_add_named_key, check_duplicate_name,
              check_no_uv_option, check_uv_verified, check_uv_requested_event, check_uv_refused,
              check_made_credential_event, check_made_credential_listed,
              check_seeded_p256, check_seeded_asserted_event, check_seeded_get_credential, check_seeded_discoverable,
              check_select_credential,
              check_seeded_ed25519, check_seeded_non_resident, check_seeded_bad_key, check_seeded_no_such_key,
              check_remove_credential, check_remove_all, check_consent, check_presence_answered, check_presence_none, check_uv_control, check_seeded_keys, check_mldsa_keys,
              check_power_cycle, check_protocol_ctap2, check_no_resident_key, check_bad_param_type, check_unknown_method,
              check_version_2, check_parse_error,
              check_u2f_capabilities, check_u2f_no_cbor, check_u2f_version, check_u2f_round_trip, check_u2f_no_uv,
              check_u2f_no_resident_key, check_u2f_add_credential,
              check_override_bad_uv, check_override_bad_up, check_override_bogus_signature, check_override_cleared,
              check_backup_defaults, check_backup_set_properties, check_backup_set_properties_refused,
              check_update_user_event, check_backup_u2f_refused, check_extensions_narrowed, check_extensions_unknown,
              check_large_blob_planted, check_large_blob_written_by_client, check_large_blob_refused,
              check_fault_status, check_fault_until_cleared, check_fault_delay, check_fault_drop, check_fault_truncate,
              check_fault_keepalive_flood, check_fault_u2f_status, check_fault_unknown_command, check_fault_unknown_fault,
              check_fault_status_any, check_fault_delay_no_ms,
              check_cli_call, check_remove_authenticator, check_event_sequence,
              check_sigterm)


def test_rig():
    """The rig checks, in order, on one `latchkey rig`; then one started without --root."""
    first = len(RESULTS)
    session = RigSession()
    try:
        for rig_check in RIG_CHECKS:
            rig_check(session)
    finally:
        try:
            session.close()
        except Exception as error:  # noqa: BLE001 - the suite goes on
            print(f"      (stopping the rig: {type(error).__name__}: {error})", flush=True)
    check_default_root()
    check_start_pid_file()
    if not all(ok for _, ok in RESULTS[first:]) and session.process is not None:
        print("--- last output of latchkey rig ---\n" + session.process.output()[-3000:], flush=True)
