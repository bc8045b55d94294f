#!/usr/bin/env python3
"""`latchkey rig` on real uhid, run INSIDE the VM rig by e2e_guest.sh (check_rig): many keys at
once, each a hidraw device found by its uniq (sysfs HID_UNIQ `latchkey:rig-<id>`), driven by
python-fido2 over hidraw and by the libfido2 tools (fido2-token, fido2-cred, fido2-assert):
16 keys listed and answering getInfo; a credential seeded through the control API signing in;
response overrides caught by python-fido2's Fido2Server; an injected CTAP2 status reaching
fido2-cred; events in order; a `protocol u2f` key that libfido2 treats as U2F-only; a removed
key's node vanishing. The rig is stopped (SIGTERM, waited for) at the end, whatever happened,
and its nodes must be gone then, so that later steps see none of its keys.

Prints PASS/FAIL per check (as the other e2e python scripts do); exits 1 if any failed.
Usage: e2e_rig.py LATCHKEY_BINARY WORK_DIR"""

import base64
import glob
import hashlib
import os
import select
import signal
import struct
import subprocess
import sys
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from fido2 import cbor
from fido2.attestation import AttestationType, FidoU2FAttestation, InvalidSignature, PackedAttestation
from fido2.client import DefaultClientDataCollector, Fido2Client
from fido2.ctap2 import Ctap2
from fido2.hid import CtapHidDevice
from fido2.server import Fido2Server
from fido2.webauthn import AttestationConveyancePreference, ResidentKeyRequirement, UserVerificationRequirement

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir, "scripts", "python")))
sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "support")))
import latchkey_rig  # noqa: E402 - found through the path just added
from check_support import RESULTS, check, close_quietly  # noqa: E402 - in ../support
from rig_support import pkcs8, start_debug_rig, stop_rig  # noqa: E402 - in ../support

KEYS = 16           # keys at once
STEP = 15           # seconds: the bound on one request to the rig, one event, one HID report
NODE_WAIT = 10      # seconds for the hidraw nodes (and fido2-token -L) after the keys are added
GONE_WAIT = 5       # seconds for a removed key's node to disappear
TOOL_TIMEOUT = 30   # seconds for one libfido2 tool run
ORIGIN = "https://example.com"
ES256 = [{"type": "public-key", "alg": -7}]


# --- reporting ----------------------------------------------------------------------------------

def note(text):
    print(f"      {text}", flush=True)


def expect_raises(kinds, text, function, *args, **kwargs):
    """The exception `function` raises, which must be one of `kinds` and contain `text`."""
    try:
        result = function(*args, **kwargs)
    except kinds as error:
        assert text.lower() in str(error).lower(), f"raised {type(error).__name__}: {error!r}, expected {text!r}"
        return error
    raise AssertionError(f"expected {' or '.join(k.__name__ for k in kinds)} ({text!r}), got the result {result!r}")


# --- hidraw -------------------------------------------------------------------------------------

def hidraw_nodes():
    """{uniq: [/dev/hidrawN, …]} for the hidraw devices in sysfs (HID_UNIQ in the HID device's
    uevent) whose node exists in /dev."""
    found = {}
    for uevent in sorted(glob.glob("/sys/class/hidraw/hidraw*/device/uevent")):
        node = "/dev/" + uevent.split(os.sep)[4]
        try:
            with open(uevent, errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue        # the device went away while we looked
        for line in lines:
            if line.startswith("HID_UNIQ=") and os.path.exists(node):
                found.setdefault(line[len("HID_UNIQ="):], []).append(node)
    return found


class BoundedHidrawConnection:
    """python-fido2's Linux hidraw connection (report ID 0 prepended on write), but a read waits
    at most `timeout` seconds: a key that never answers fails the check instead of hanging it."""

    def __init__(self, descriptor, timeout=STEP):
        self.descriptor = descriptor
        self.timeout = timeout
        self.handle = os.open(descriptor.path, os.O_RDWR)

    def write_packet(self, data):
        if os.write(self.handle, b"\0" + data) != len(data) + 1:
            raise OSError("failed to write the whole report")

    def read_packet(self):
        readable, _, _ = select.select([self.handle], [], [], self.timeout)
        if not readable:
            raise TimeoutError(f"no report from {self.descriptor.path} in {self.timeout} s")
        return os.read(self.handle, self.descriptor.report_size_in)

    def close(self):
        os.close(self.handle)


def open_hidraw(node):
    from fido2.hid.linux import get_descriptor   # Linux only: imported where it is used
    descriptor = get_descriptor(node)
    connection = BoundedHidrawConnection(descriptor)
    try:
        return CtapHidDevice(descriptor, connection)     # CTAPHID INIT
    except BaseException:
        connection.close()
        raise


# --- libfido2 tools -----------------------------------------------------------------------------

def b64(data):
    """Standard base64, as the libfido2 tools read and write it."""
    return base64.b64encode(bytes(data)).decode("ascii")


def tool(*args):
    run = subprocess.run([str(arg) for arg in args], capture_output=True, text=True, timeout=TOOL_TIMEOUT,
                         stdin=subprocess.DEVNULL)
    return run


def tool_ok(*args):
    run = tool(*args)
    assert run.returncode == 0, f"{' '.join(map(str, args))}: exit status {run.returncode}: {(run.stderr + run.stdout).strip()[-800:]}"
    return run


def cred_input(path, rp_id, user_name):
    """fido2-cred -M input: clientDataHash, RP ID, user name, user ID."""
    with open(path, "w") as handle:
        handle.write(f"{b64(os.urandom(32))}\n{rp_id}\n{user_name}\n{b64(os.urandom(16))}\n")
    return path


def lines_of(path):
    with open(path) as handle:
        return handle.read().splitlines()


def make_and_verify_cred(work, tag, node, rp_id, fmt):
    """fido2-cred -M (ES256, not resident) then -V; the credential ID (base64) and the PEM public
    key file. The attestation format must be `fmt`."""
    made = os.path.join(work, f"{tag}.cred.out")
    tool_ok("fido2-cred", "-M", "-i", cred_input(os.path.join(work, f"{tag}.cred.in"), rp_id, f"user-{tag}"),
            "-o", made, node, "es256")
    lines = lines_of(made)
    assert len(lines) >= 6 and lines[2] == fmt, f"attestation format {lines[2:3]}, expected {fmt}: {lines}"
    verified = os.path.join(work, f"{tag}.verified")
    tool_ok("fido2-cred", "-V", "-i", made, "-o", verified, "es256")
    lines = lines_of(verified)
    pem = os.path.join(work, f"{tag}.pub.pem")
    with open(pem, "w") as handle:
        handle.write("\n".join(lines[1:]) + "\n")
    return lines[0], pem


def get_and_verify_assert(work, tag, node, rp_id, credential_id_b64, pem):
    """fido2-assert -G -p with the credential ID, then -V -p with the public key; the
    authenticator data (raw bytes) that was verified."""
    request = os.path.join(work, f"{tag}.assert.in")
    with open(request, "w") as handle:
        handle.write(f"{b64(os.urandom(32))}\n{rp_id}\n{credential_id_b64}\n")
    out = os.path.join(work, f"{tag}.assert.out")
    tool_ok("fido2-assert", "-G", "-p", "-i", request, "-o", out, node)
    lines = lines_of(out)
    assert len(lines) >= 4, f"fido2-assert -G printed {lines}"
    verify = os.path.join(work, f"{tag}.assert.verify")
    with open(verify, "w") as handle:
        handle.write("\n".join(lines[:4]) + "\n")
    tool_ok("fido2-assert", "-V", "-p", "-i", verify, pem, "es256")
    auth_data = cbor.decode(base64.b64decode(lines[2]))   # libfido2 writes authData as a CBOR byte string
    return bytes(auth_data)


def counter_of(auth_data):
    return struct.unpack(">I", auth_data[33:37])[0]


# --- the session --------------------------------------------------------------------------------

class Session:
    """The rig under test, its keys and what the checks learn, in order. Keys are added, found
    and opened through `add_key`, `node` and `open` only."""

    def __init__(self, binary, work):
        self.binary = binary
        self.work = work
        self.control = os.path.join(work, "rig.control")
        self.root = os.path.join(work, "rig-root")
        self.process = None         # latchkey_rig.RigProcess
        self.client = None          # latchkey_rig.Rig
        self.events = None          # latchkey_rig.EventStream of every key
        self.keys = {}              # authenticatorId -> the Authenticator addAuthenticator answered
        self.nodes = {}             # authenticatorId -> /dev/hidrawN
        self.devices = []           # python-fido2 devices to close
        self.state = {}

    def rig(self):
        assert self.client is not None, "the rig is not running (see the first check)"
        return self.client

    def add_key(self, **options):
        key = self.rig().add_authenticator(**options)
        self.keys[key["authenticatorId"]] = key
        return key

    def node(self, authenticator_id, timeout=NODE_WAIT):
        """The key's hidraw node, found by its uniq in sysfs (waits up to `timeout` s for it)."""
        assert authenticator_id in self.keys, f"no key {authenticator_id} was added (see the addAuthenticator checks)"
        node = self.nodes.get(authenticator_id)
        if node and os.path.exists(node):
            return node
        uniq = self.keys[authenticator_id]["uniq"]
        deadline = time.monotonic() + timeout
        while True:
            found = hidraw_nodes().get(uniq, [])
            if len(found) == 1:
                self.nodes[authenticator_id] = found[0]
                return found[0]
            assert len(found) < 2, f"several hidraw nodes with uniq {uniq}: {found}"
            if time.monotonic() > deadline:
                raise AssertionError(f"no hidraw node with uniq {uniq} after {timeout} s "
                                     f"(uniqs in sysfs: {sorted(hidraw_nodes())})")
            time.sleep(0.05)

    def open(self, authenticator_id):
        """A python-fido2 CtapHidDevice on the key (closed when the session ends)."""
        device = open_hidraw(self.node(authenticator_id))
        self.devices.append(device)
        return device

    def close_devices(self):
        close_quietly(self.devices)
        self.devices = []

    def rig_uniqs(self):
        return {key["uniq"] for key in self.keys.values() if key.get("transport") == "usb"}

    def stop(self):
        """Closes everything and stops the rig (SIGTERM, then waits); its exit status or None."""
        self.close_devices()
        connections, self.events, self.client = (self.events, self.client), None, None
        return stop_rig(self.process, connections, os.path.join(self.work, "rig.log"))


def verify_packed(attestation_object, client_data_hash):
    assert attestation_object.fmt == "packed", attestation_object.fmt
    result = PackedAttestation().verify(attestation_object.att_stmt, attestation_object.auth_data, client_data_hash)
    assert result.attestation_type == AttestationType.BASIC, result.attestation_type


def verify_fido_u2f(attestation_object, client_data_hash):
    assert attestation_object.fmt == "fido-u2f", attestation_object.fmt
    FidoU2FAttestation().verify(attestation_object.att_stmt, attestation_object.auth_data, client_data_hash)


def user(name):
    return {"id": os.urandom(16), "name": name, "displayName": name.title()}


# --- 0. the rig ---------------------------------------------------------------------------------

@check("rig: `latchkey rig --control WORK/rig.control --root WORK/rig-root --log-level debug` starts; "
       "a subscription to every key's events is answered")
def check_rig_starts(s):
    s.process = start_debug_rig(latchkey_rig, s.binary, s.control, s.root, os.path.join(s.work, "rig.pid"), timeout=20)
    s.client = latchkey_rig.Rig(s.control, timeout=STEP)
    s.events = latchkey_rig.EventStream(s.control, timeout=STEP)


# --- 1. sixteen keys ----------------------------------------------------------------------------

@check(f"rig: addAuthenticator ×{KEYS} (k1 with transport usb, the rest by default): k1 … k{KEYS}, each transport usb "
       f"with uniq latchkey:rig-kN and hidName Latchkey rig-kN; listAuthenticators lists all {KEYS}")
def check_add_keys(s):
    for n in range(1, KEYS + 1):
        expected = f"k{n}"
        key = s.add_key(**({"transport": "usb"} if n == 1 else {}))
        assert key.get("authenticatorId") == expected, key
        assert key.get("transport") == "usb", key
        assert key.get("uniq") == f"latchkey:rig-{expected}", key
        assert key.get("hidName") == f"Latchkey rig-{expected}", key
    s.state["added"] = time.monotonic()
    listed = [entry["authenticatorId"] for entry in s.rig().list_authenticators()]
    assert listed == [f"k{n}" for n in range(1, KEYS + 1)], listed


@check(f"rig: {KEYS} hidraw nodes within {NODE_WAIT} s, one per uniq (sysfs HID_UNIQ latchkey:rig-k1 … k{KEYS}), all distinct; "
       "python-fido2 opens each and reads its uniq and name back (HIDIOCGRAWUNIQ, HIDIOCGRAWNAME)")
def check_nodes(s):
    ids = [f"k{n}" for n in range(1, KEYS + 1)]
    deadline = s.state.get("added", time.monotonic()) + NODE_WAIT
    for authenticator_id in ids:
        s.node(authenticator_id, timeout=max(0.0, deadline - time.monotonic()))
    nodes = [s.nodes[authenticator_id] for authenticator_id in ids]
    assert len(set(nodes)) == KEYS, f"nodes not distinct: {nodes}"
    note(f"nodes: {' '.join(f'{i}={s.nodes[i]}' for i in ids)}")
    for authenticator_id in ids:
        device = open_hidraw(s.nodes[authenticator_id])
        try:
            key = s.keys[authenticator_id]
            assert device.serial_number == key["uniq"], (s.nodes[authenticator_id], device.serial_number, key["uniq"])
            assert device.product_name == key["hidName"], (s.nodes[authenticator_id], device.product_name, key["hidName"])
            assert (device.descriptor.vid, device.descriptor.pid) == (0x1209, 0x4C4B), device.descriptor
        finally:
            device.close()


@check(f"rig: fido2-token -L lists all {KEYS} rig keys' nodes (vendor=0x1209, product=0x4c4b) within {NODE_WAIT} s of the adds")
def check_token_list(s):
    ids = [f"k{n}" for n in range(1, KEYS + 1)]
    wanted = {s.node(authenticator_id, timeout=0) for authenticator_id in ids}
    deadline = s.state.get("added", time.monotonic()) + NODE_WAIT
    while True:
        run = tool("fido2-token", "-L")
        listed = {}
        for line in run.stdout.splitlines():
            path, _, rest = line.partition(": ")
            listed[path] = rest
        missing = sorted(wanted - set(listed))
        if run.returncode == 0 and not missing:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"fido2-token -L (exit {run.returncode}) misses {missing}: {run.stdout.strip()} {run.stderr.strip()}")
        time.sleep(0.2)
    wrong = [f"{path}: {listed[path]}" for path in sorted(wanted) if "vendor=0x1209, product=0x4c4b" not in listed[path]]
    assert not wrong, f"rig nodes listed with other IDs: {wrong}"
    # libfido2 1.12 takes manufacturer/product strings from a USB parent, which a uhid device lacks:
    # its lines show the node and IDs, not the HID name; say whether this one shows the names.
    named = sum("rig-k" in listed[path] for path in wanted)
    note(f"{len(wanted)} rig nodes listed among {len(listed)} devices; {named} of their lines name rig-kN "
         f"(e.g. {sorted(wanted)[0]}: {listed[sorted(wanted)[0]]})")


@check(f"rig: fido2-token -I on each of the {KEYS} nodes: exit 0 and a version strings line with FIDO_2_1")
def check_token_info(s):
    failures = []
    for n in range(1, KEYS + 1):
        node = s.node(f"k{n}", timeout=0)
        run = tool("fido2-token", "-I", node)
        versions = [line for line in run.stdout.splitlines() if line.startswith("version strings:")]
        if run.returncode != 0 or not versions or "FIDO_2_1" not in versions[0]:
            failures.append(f"k{n} {node}: exit {run.returncode}, {versions or 'no version strings line'} {run.stderr.strip()[-200:]}")
        elif n == 1:
            note(f"k1: {versions[0]}")
    assert not failures, "; ".join(failures)


# --- 2. a credential seeded through the API -----------------------------------------------------

@check("rig: addCredential on k2 (P-256 PKCS#8, resident, rpId rig.example, userHandle, signCount 10): a credentialAdded "
       "event; python-fido2 Ctap2 getAssertion over k2's hidraw node with allowList [the ID] signs counter 11, the "
       "signature verifies with the public key; a credentialAsserted event with signCount 11")
def check_seeded_credential(s):
    private_key = ec.generate_private_key(ec.SECP256R1())
    credential_id, handle = os.urandom(32), b"rig-e2e-erin"
    s.rig().add_credential("k2", {"credentialId": credential_id, "isResidentCredential": True, "rpId": "rig.example",
                                  "privateKey": pkcs8(private_key), "userHandle": handle, "signCount": 10,
                                  "userName": "erin"})
    s.state["seeded"] = (private_key, credential_id)
    added = s.events.wait_for("credentialAdded", timeout=STEP, credentialId=credential_id)
    assert added.get("authenticatorId") == "k2" and added["params"].get("rpId") == "rig.example", added
    client_data_hash = os.urandom(32)
    assertion = Ctap2(s.open("k2")).get_assertion("rig.example", client_data_hash,
                                                  [{"type": "public-key", "id": credential_id}])
    assert bytes(assertion.credential["id"]) == credential_id, bytes(assertion.credential["id"]).hex()
    assert assertion.auth_data.rp_id_hash == hashlib.sha256(b"rig.example").digest(), "wrong rpIdHash"
    assert assertion.auth_data.is_user_present(), f"flags 0x{assertion.auth_data.flags:02x}"
    assert assertion.auth_data.counter == 11, f"counter {assertion.auth_data.counter}, expected 11"
    private_key.public_key().verify(assertion.signature, bytes(assertion.auth_data) + client_data_hash,
                                    ec.ECDSA(hashes.SHA256()))
    event = s.events.wait_for("credentialAsserted", timeout=STEP, credentialId=credential_id)
    assert event.get("authenticatorId") == "k2", event
    assert event["params"].get("signCount") == 11 and event["params"].get("rpId") == "rig.example", event


@check("rig: fido2-assert -G -p with the seeded credential's ID on k2's node, -V -p with its public key: verified, counter 12")
def check_seeded_fido2_assert(s):
    assert "seeded" in s.state, "no seeded credential (see the addCredential check)"
    private_key, credential_id = s.state["seeded"]
    pem = os.path.join(s.work, "seeded.pub.pem")
    with open(pem, "wb") as handle:
        handle.write(private_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                           serialization.PublicFormat.SubjectPublicKeyInfo))
    auth_data = get_and_verify_assert(s.work, "seeded", s.node("k2"), "rig.example", b64(credential_id), pem)
    assert counter_of(auth_data) == 12, f"counter {counter_of(auth_data)}, expected 12"
    event = s.events.wait_for("credentialAsserted", timeout=STEP, credentialId=credential_id)
    assert event["params"].get("signCount") == 12, event


# --- 3. response overrides seen by a relying party ----------------------------------------------

@check("rig: key rp (hasUserVerification, isUserVerified) on hidraw: Fido2Client registers a credential (not resident) "
       "that Fido2Server accepts (packed attestation verified)")
def check_rp_register(s):
    s.add_key(authenticatorId="rp", hasUserVerification=True, isUserVerified=True)
    client = Fido2Client(s.open("rp"), client_data_collector=DefaultClientDataCollector(ORIGIN))
    server = Fido2Server({"id": "example.com", "name": "Rig RP"}, attestation=AttestationConveyancePreference.DIRECT,
                         verify_attestation=verify_packed)
    options, state = server.register_begin(user("rig-rp-user"), resident_key_requirement=ResidentKeyRequirement.DISCOURAGED,
                                           user_verification=UserVerificationRequirement.DISCOURAGED)
    credential = server.register_complete(state, client.make_credential(options.public_key)).credential_data
    s.state["rp"] = (client, server, credential)


def rp_sign_in(s, user_verification):
    """authenticate_begin on key rp's credential and the client's response (not yet checked)."""
    assert "rp" in s.state, "no credential on key rp (see the registration check)"
    client, server, credential = s.state["rp"]
    request, state = server.authenticate_begin([credential], user_verification=user_verification)
    response = client.get_assertion(request.public_key).get_response(0)
    return server, state, credential, response


def with_overrides(s, function, **bits):
    s.rig().set_response_override_bits("rp", **bits)
    try:
        return function()
    finally:
        s.rig().set_response_override_bits("rp")


@check("rig: setResponseOverrideBits isBogusSignature on rp: Fido2Server authenticate_complete raises (Invalid signature), "
       "and register_complete rejects a new registration's packed attestation signature")
def check_override_bogus_signature(s):
    def run():
        server, state, credential, response = rp_sign_in(s, UserVerificationRequirement.DISCOURAGED)
        expect_raises((ValueError,), "invalid signature", server.authenticate_complete, state, [credential], response)
        client, server, _ = s.state["rp"]
        options, state = server.register_begin(user("rig-bogus-user"), resident_key_requirement=ResidentKeyRequirement.DISCOURAGED,
                                               user_verification=UserVerificationRequirement.DISCOURAGED)
        expect_raises((InvalidSignature,), "", server.register_complete, state, client.make_credential(options.public_key))
    with_overrides(s, run, is_bogus_signature=True)


@check("rig: setResponseOverrideBits isBadUV on rp, user_verification required: the key verifies (uvRequested event), the "
       "assertion has UP and a valid signature but no UV flag, and authenticate_complete raises for the UV check")
def check_override_bad_uv(s):
    def run():
        server, state, credential, response = rp_sign_in(s, UserVerificationRequirement.REQUIRED)
        s.events.wait_for("uvRequested", timeout=STEP, authenticatorId="rp")
        auth_data = response.response.authenticator_data
        assert auth_data.is_user_present() and not auth_data.is_user_verified(), f"flags 0x{auth_data.flags:02x}"
        credential.public_key.verify(bytes(auth_data) + response.response.client_data.hash, response.response.signature)
        expect_raises((ValueError,), "user verification required", server.authenticate_complete, state, [credential], response)
    with_overrides(s, run, is_bad_uv=True)


@check("rig: setResponseOverrideBits isBadUP on rp: the assertion lacks the UP flag under a valid signature; "
       "authenticate_complete raises (User Present flag not set)")
def check_override_bad_up(s):
    def run():
        server, state, credential, response = rp_sign_in(s, UserVerificationRequirement.DISCOURAGED)
        auth_data = response.response.authenticator_data
        assert not auth_data.is_user_present(), f"flags 0x{auth_data.flags:02x}"
        credential.public_key.verify(bytes(auth_data) + response.response.client_data.hash, response.response.signature)
        expect_raises((ValueError,), "user present flag not set", server.authenticate_complete, state, [credential], response)
    with_overrides(s, run, is_bad_up=True)


@check("rig: setResponseOverrideBits all false on rp: authenticate_complete succeeds with user_verification required (UV and UP set)")
def check_override_cleared(s):
    s.rig().set_response_override_bits("rp", is_bogus_signature=False, is_bad_uv=False, is_bad_up=False)
    server, state, credential, response = rp_sign_in(s, UserVerificationRequirement.REQUIRED)
    auth_data = response.response.authenticator_data
    assert auth_data.is_user_present() and auth_data.is_user_verified(), f"flags 0x{auth_data.flags:02x}"
    assert server.authenticate_complete(state, [credential], response).credential_id == credential.credential_id


# --- 4. an injected fault reaches fido2-cred ----------------------------------------------------

@check("rig: injectFault k4 makeCredential status 0x28: fido2-cred -M fails naming FIDO_ERR_KEY_STORE_FULL; "
       "the next fido2-cred -M succeeds (packed)")
def check_fault_reaches_fido2_cred(s):
    node = s.node("k4")
    fault_id = s.rig().inject_fault("k4", "makeCredential", "status", status=0x28)
    assert isinstance(fault_id, int), fault_id
    run = tool("fido2-cred", "-M", "-i", cred_input(os.path.join(s.work, "fault.cred.in"), "fault.rig.example", "user-fault"),
               "-o", os.path.join(s.work, "fault.cred.out"), node, "es256")
    note(f"fido2-cred -M with the fault: exit {run.returncode}: {run.stderr.strip()}")
    assert run.returncode != 0, f"fido2-cred -M succeeded despite the fault: {run.stdout}"
    assert "FIDO_ERR_KEY_STORE_FULL" in run.stderr, f"stderr does not name FIDO_ERR_KEY_STORE_FULL: {run.stderr!r}"
    make_and_verify_cred(s.work, "after-fault", node, "fault.rig.example", "packed")


# --- 5. events in order -------------------------------------------------------------------------

@check("rig: an EventStream subscribed to k5 sees, for a makeCredential then a getAssertion on k5 (python-fido2 over hidraw), "
       "exactly presenceRequested (register), credentialAdded, presenceRequested (sign in), credentialAsserted, seq strictly increasing")
def check_event_order(s):
    s.node("k5")
    with latchkey_rig.EventStream(s.control, authenticator_id="k5", timeout=STEP) as stream:
        ctap = Ctap2(s.open("k5"))
        created = ctap.make_credential(os.urandom(32), {"id": "order.rig.example", "name": "Order"}, user("olga"), ES256)
        credential_id = bytes(created.auth_data.credential_data.credential_id)
        assertion = ctap.get_assertion("order.rig.example", os.urandom(32), [{"type": "public-key", "id": credential_id}])
        events = []
        deadline = time.monotonic() + STEP
        while len(events) < 4:
            events.append(stream.next(timeout=max(0.0, deadline - time.monotonic())))
        try:
            while True:     # anything more, within half a second, is one event too many
                events.append(stream.next(timeout=0.5))
        except TimeoutError:
            pass
    summary = [(event.get("event"), event.get("seq"), (event.get("params") or {}).get("operation")) for event in events]
    note(f"events: {summary}")
    assert [event.get("event") for event in events] == ["presenceRequested", "credentialAdded", "presenceRequested",
                                                        "credentialAsserted"], summary
    seqs = [event.get("seq") for event in events]
    assert all(isinstance(seq, int) for seq in seqs) and all(a < b for a, b in zip(seqs, seqs[1:])), seqs
    assert all(event.get("authenticatorId") == "k5" for event in events), events
    assert events[0]["params"].get("operation") == "register", events[0]
    assert events[2]["params"].get("operation") == "sign in", events[2]
    for event in (events[1], events[3]):
        assert latchkey_rig.b64url_decode(event["params"]["credentialId"]) == credential_id, event
        assert event["params"].get("rpId") == "order.rig.example", event
    assert events[3]["params"].get("signCount") == assertion.auth_data.counter, (events[3], assertion.auth_data.counter)


# --- 6. a U2F-only key --------------------------------------------------------------------------

@check("rig: addAuthenticator protocol u2f (authenticatorId u2f): fido2-token -I on its node exits 0 and shows a U2F-only "
       "device: CTAPHID caps without cbor, no version strings line, no FIDO_2 anywhere")
def check_u2f_token_info(s):
    key = s.add_key(authenticatorId="u2f", protocol="u2f")
    assert key.get("protocol") == "u2f" and key.get("uniq") == "latchkey:rig-u2f", key
    run = tool_ok("fido2-token", "-I", s.node("u2f"))
    note("fido2-token -I: " + " | ".join(run.stdout.strip().splitlines()))
    caps = [line for line in run.stdout.splitlines() if line.startswith("caps:")]
    assert caps and "nocbor" in caps[0], f"caps line {caps}: expected nocbor"
    assert any(line.startswith("proto:") for line in run.stdout.splitlines()), run.stdout
    assert "version strings" not in run.stdout and "FIDO_2" not in run.stdout, run.stdout
    assert "aaguid" not in run.stdout, run.stdout


@check("rig: fido2-cred -M (ES256, not resident) on the u2f key succeeds through libfido2's U2F register (fmt fido-u2f, "
       "-V verified); fido2-assert -G -p with that credential (U2F authenticate) verifies with -V -p")
def check_u2f_fido2_cred_assert(s):
    node = s.node("u2f")
    credential_id, pem = make_and_verify_cred(s.work, "u2f", node, "u2f.rig.example", "fido-u2f")
    auth_data = get_and_verify_assert(s.work, "u2f", node, "u2f.rig.example", credential_id, pem)
    assert auth_data[:32] == hashlib.sha256(b"u2f.rig.example").digest(), "wrong rpIdHash"
    assert auth_data[32] & 0x01, f"flags 0x{auth_data[32]:02x} without UP"


@check("rig: python-fido2 Fido2Client on the u2f key falls back to CTAP1: register (fido-u2f attestation verified) and "
       "authenticate, accepted by Fido2Server")
def check_u2f_python(s):
    device = s.open("u2f")
    client = Fido2Client(device, client_data_collector=DefaultClientDataCollector(ORIGIN))
    assert "U2F_V2" in client.info.versions and not any(v.startswith("FIDO_2") for v in client.info.versions), client.info.versions
    server = Fido2Server({"id": "example.com", "name": "Rig RP"}, attestation=AttestationConveyancePreference.DIRECT,
                         verify_attestation=verify_fido_u2f)
    options, state = server.register_begin(user("rig-u2f-user"), user_verification=UserVerificationRequirement.DISCOURAGED)
    credential = server.register_complete(state, client.make_credential(options.public_key)).credential_data
    request, state = server.authenticate_begin([credential], user_verification=UserVerificationRequirement.DISCOURAGED)
    server.authenticate_complete(state, [credential], client.get_assertion(request.public_key).get_response(0))


# --- 7. removing a key --------------------------------------------------------------------------

@check(f"rig: removeAuthenticator k{KEYS}: its hidraw node disappears within {GONE_WAIT} s; every other rig key keeps its "
       f"node (same uniq, same path); k{KEYS} is no longer listed; k1 still echoes a PING")
def check_remove_key(s):
    gone_id = f"k{KEYS}"
    node, uniq = s.node(gone_id), s.keys[gone_id]["uniq"]
    others = {authenticator_id: known for authenticator_id, known in s.nodes.items() if authenticator_id != gone_id}
    assert len(others) >= KEYS - 1, f"only {sorted(others)} have known nodes (see the hidraw node checks)"
    s.rig().remove_authenticator(gone_id)
    removed = s.keys.pop(gone_id)
    s.nodes.pop(gone_id, None)
    s.state.setdefault("removed", []).append(removed)
    started = time.monotonic()
    while os.path.exists(node) or uniq in hidraw_nodes():
        assert time.monotonic() - started < GONE_WAIT, f"{node} ({uniq}) still there after {GONE_WAIT} s"
        time.sleep(0.05)
    note(f"{node} gone after {time.monotonic() - started:.2f} s")
    now = hidraw_nodes()
    moved = {authenticator_id: (node, now.get(s.keys[authenticator_id]["uniq"]))
             for authenticator_id, node in others.items() if now.get(s.keys[authenticator_id]["uniq"]) != [node]}
    assert not moved, f"other keys' nodes changed: {moved}"
    listed = [entry["authenticatorId"] for entry in s.rig().list_authenticators()]
    assert gone_id not in listed and set(listed) == set(s.keys), listed
    message = f"k1 after removing k{KEYS}".encode()
    assert s.open("k1").ping(message) == message, "k1 no longer echoes a PING"


# --- the end: SIGTERM ---------------------------------------------------------------------------

@check(f"rig: SIGTERM stops the rig (exit status 0) and every hidraw node of its keys is gone within {GONE_WAIT} s")
def check_stop(s, uniqs):
    status = s.stop()
    assert status is not None, "the rig was not running"
    started = time.monotonic()
    while True:
        left = {uniq: nodes for uniq, nodes in hidraw_nodes().items() if uniq in uniqs}
        if not left:
            break
        assert time.monotonic() - started < GONE_WAIT, f"still there after {GONE_WAIT} s: {left}"
        time.sleep(0.05)
    assert status == 0, f"exit status {status}"


CHECKS = (check_add_keys, check_nodes, check_token_list, check_token_info,
          check_seeded_credential, check_seeded_fido2_assert,
          check_rp_register, check_override_bogus_signature, check_override_bad_uv, check_override_bad_up,
          check_override_cleared,
          check_fault_reaches_fido2_cred,
          check_event_order,
          check_u2f_token_info, check_u2f_fido2_cred_assert, check_u2f_python,
          check_remove_key)


def run_all(s, checks=CHECKS):
    try:
        check_rig_starts(s)
        if s.client is not None and s.events is not None:
            for rig_check in checks:
                rig_check(s)
    finally:
        uniqs = s.rig_uniqs() | {key["uniq"] for key in s.state.get("removed", [])}
        if s.process is not None:
            check_stop(s, uniqs)
        else:
            s.stop()
    failed = [name for name, ok in RESULTS if not ok]
    if failed and s.process is not None:
        print("--- last output of latchkey rig ---\n" + s.process.output()[-4000:], flush=True)
    print(f"rig e2e: {len(RESULTS) - len(failed)} passed, {len(failed)} failed", flush=True)
    for name in failed:
        print(f"  failed: {name}", flush=True)
    return not failed


def main():
    binary, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(work, exist_ok=True)

    def terminated(signum, _frame):   # `timeout` or the harness: stop the rig on the way out (finally)
        raise SystemExit(f"e2e_rig.py: signal {signum}")
    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGHUP, terminated)
    sys.exit(0 if run_all(Session(binary, work)) else 1)


if __name__ == "__main__":
    main()
