#!/usr/bin/env python3
"""Seed corpora for the libFuzzer targets in Fuzz/Targets, made from real traffic.

What it does
------------
1. Starts `latchkey serve --transport socket:… --presence auto --trace …` on a fresh store in a
   temporary directory (never the user's store or sockets), and drives a broad session against
   it over python-fido2 and raw CTAPHID reports: getInfo; makeCredential (ES256, EdDSA,
   ES384, ES512, ES256K, resident or not, credProtect / hmac-secret / credBlob / largeBlobKey / minPinLength /
   thirdPartyPayment, enterpriseAttestation); the persistent (pcmr) token;
   getAssertion (allowList, discoverable with getNextAssertion, hmac-secret salts on both PIN
   protocols); clientPIN (getRetries, getKeyAgreement, setPIN, a wrong PIN, changePIN, tokens
   with and without permissions); credentialManagement (0x0A and the 0x41 preview); largeBlobs;
   authenticatorConfig; selection; reset (refused outside the 10 s window, then accepted after a
   SIGHUP power cycle); U2F through fido2.ctap1.Ctap1 and hand-made APDUs; CTAPHID PING, WINK,
   LOCK, CANCEL, resync, bad sequence numbers, wrong-sized packets, an abandoned message; and
   the project's own CLI clients (`latchkey probe / wink / pin status / credentials list
   --socket`). The control-socket requests of `latchkey approve / deny / presence status` are
   captured on a listener of our own.
2. Reads the trace back (Sources/Trace/TraceRecord.swift: JSON lines, 64-byte reports, secrets
   zeroed), reassembles CTAPHID messages per (direction, connection, channel), pairs requests
   with responses, and writes the seed formats each target reads (see Fuzz/Targets/*):

   FuzzCBOR                 CTAP2 request parameters and response bodies, one per file.
   FuzzMakeCredential, FuzzGetAssertion, FuzzClientPIN, FuzzCredentialManagement,
   FuzzLargeBlobs, FuzzConfigReset
                            FuzzScript: setup byte, then records op ‖ len(2, BE) ‖ body, where
                            op indexes the target's `commands` list (read from its .swift file)
                            and op | 0x80 asks the harness to authenticate the body.
   FuzzU2F                  setup byte 0x00, records 0x00 ‖ len ‖ APDU (and op 0x80 ‖ P1).
   FuzzCTAPHID              channel(4) ‖ cmd ‖ len(2) ‖ payload, then steps op ‖ n ‖ n bytes:
                            one connection's real reports (channel IDs renumbered to the ones the
                            harness's state machine allocates, 0x1000 upwards) with an op 5
                            "complete" step carrying the real response after each CBOR/MSG.
   FuzzUHIDEvent            4380-byte struct uhid_event: UHID_OUTPUT events carrying real
                            reports, and START / STOP / OPEN / CLOSE / GET_REPORT / SET_REPORT.
   FuzzTrace                the trace file itself, prefixes and per-connection slices.
   FuzzControl              control-socket request lines (captured from the CLI, and variants).
   FuzzRig                  rig control API request lines (written here, from the README contract).
   FuzzImport               files for `latchkey import`/`restore`: CXF, Bitwarden, KeePassXC fixtures and
                            the CLI's own exports (plain, passphrase, HPKE) and a backup.
   FuzzSignalBridge         native-messaging streams to `latchkey native-host` (written here, from
                            the README contract: framed signals naming the target's credentials).
   FuzzDeflate              zlib's raw DEFLATE of sample blobs, and the blobs (written here).

   Every file is named by the SHA-1 of its content; each target keeps at most 100 files. The
   script wipes and rewrites Fuzz/corpus/<Target>/ for exactly these targets and writes nothing
   else in the tree.

Run (from the repository root, with the binary already built):

    .build/test-venv/bin/python Fuzz/make-corpus.py .build/debug/latchkey

python-fido2 2.x is needed (the test venv has it). Client data hashes, user handles, salts and
names are fixed, but keys, signatures and ECDH shares are fresh each run, so the file names
change from run to run while the shape of the corpus does not. LATCHKEY_CORPUS_KEEP=1 keeps the
temporary directory (trace, key log) for a look afterwards.
"""

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import zlib

from fido2 import cbor
from fido2.client import DefaultClientDataCollector, Fido2Client, UserInteraction
from fido2.ctap import CtapError
from fido2.ctap1 import ApduError, Ctap1
from fido2.ctap2 import ClientPin, Config, CredentialManagement, Ctap2, LargeBlobs
from fido2.ctap2.base import args as ctap2_args
from fido2.ctap2.pin import PinProtocolV1, PinProtocolV2
from fido2.hid import CTAPHID

# The connection class and fixtures the socket suite uses, not copies of them.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Integration", "support"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "python"))
from latchkey_socket import open_device  # noqa: E402
from exchange_fixtures import bitwarden_fixture, hand_written_cxf, keepassxc_fixture  # noqa: E402
from ctaphid_frames import fragments, init_packet  # noqa: E402 - one framing
from fido2.server import Fido2Server
from fido2.webauthn import ResidentKeyRequirement, UserVerificationRequirement

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
TARGETS = os.path.join(HERE, "Targets")
MAX_FILES = 100

# FuzzKey (Fuzz/Targets/FuzzSupport/FuzzKey.swift) seeds its credentials on these RP IDs and sets
# this PIN: real traffic on the same names reaches the seeded state when the fuzzer replays it.
RP = {"id": "fuzz.example", "name": "fuzz.example"}
RP2 = {"id": "other.example", "name": "other.example"}
FIRST_PIN = "31415926"
PIN = "271828"
ES256 = {"type": "public-key", "alg": -7}
EDDSA = {"type": "public-key", "alg": -8}

ODDITIES = []   # what the key did that the session did not expect


def note(text):
    ODDITIES.append(text)
    print("  ODD: " + text, flush=True)


def sha(text):
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).digest()


# --- the key and connections to it -----------------------------------------------------------

class Key:
    def __init__(self, binary, work):
        self.binary = binary
        self.socket_path = os.path.join(work, "key.sock")
        self.store = os.path.join(work, "store")
        self.trace_path = os.path.join(work, "key.trace")
        self.log_path = os.path.join(work, "key.log")
        self.process = None
        self.started = 0.0
        self.devices = []

    def start(self):
        args = [self.binary, "serve", "--transport", f"socket:{self.socket_path}", "--presence", "auto",
                "--store", self.store, "--name", "corpus", "--trace", self.trace_path, "--log-level", "debug",
                "--enterprise-rp", RP["id"]]
        self.log = open(self.log_path, "ab")
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"latchkey exited with {self.process.returncode}; see {self.log_path}")
            if os.path.exists(self.socket_path):
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                try:
                    probe.connect(self.socket_path)
                    self.started = time.time()
                    return
                except OSError:
                    pass
                finally:
                    probe.close()
            time.sleep(0.05)
        raise RuntimeError("latchkey did not come up")

    def device(self):
        device = open_device(self.socket_path)
        self.devices.append(device)
        return device

    def close_devices(self):
        for device in self.devices:
            try:
                device.close()
            except OSError:
                pass
        self.devices = []

    def power_cycle(self):
        self.process.send_signal(signal.SIGHUP)
        time.sleep(0.4)

    def stop(self):
        self.close_devices()
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        if self.process.returncode != 0:
            note(f"the key exited with status {self.process.returncode}")


def step(name, function, *args, expect=None, **kwargs):
    """Runs one exchange; expect is a CtapError code or APDU status word it should fail with."""
    try:
        value = function(*args, **kwargs)
    except CtapError as error:
        if expect is None or error.code != expect:
            note(f"{name}: CTAP error {error.code!r}" + (f", expected {expect!r}" if expect is not None else ""))
        return None
    except ApduError as error:
        if expect is None or error.code != expect:
            note(f"{name}: APDU status 0x{error.code:04x}" + (f", expected 0x{expect:04x}" if expect is not None else ""))
        return None
    except Exception as error:  # noqa: BLE001 - the session goes on; the report says what broke
        note(f"{name}: {type(error).__name__}: {error}")
        traceback.print_exc(limit=3)
        return None
    if expect is not None:
        note(f"{name}: succeeded, expected error {expect!r}")
    return value


# --- the session -----------------------------------------------------------------------------

def hmac_secret_input(ctap, protocol, salts):
    """getAssertion's hmac-secret input: keyAgreement, saltEnc, saltAuth, pinUvAuthProtocol."""
    key_agreement, shared_secret = ClientPin(ctap, protocol)._get_shared_secret()
    salt_enc = protocol.encrypt(shared_secret, salts)
    return {1: key_agreement, 2: salt_enc, 3: protocol.authenticate(shared_secret, salt_enc), 4: protocol.VERSION}


def descriptor(credential_id):
    return {"type": "public-key", "id": credential_id}


def credential_id(attestation):
    return bytes(attestation.auth_data.credential_data.credential_id) if attestation else None


class PinInteraction(UserInteraction):
    def request_pin(self, permissions, rp_id):
        return PIN


def session_without_pin(key, made):
    device = key.device()
    ctap = Ctap2(device)                                  # getInfo
    step("getInfo", ctap.get_info)
    step("PING", device.ping, b"latchkey corpus")
    step("PING (3 reports)", device.ping, bytes(range(150)))
    step("WINK", device.wink)
    step("selection", ctap.selection)

    made["edsger"] = credential_id(step(
        "makeCredential ES256 non-resident hmac-secret", ctap.make_credential, sha("mc edsger"), RP,
        {"id": b"\x04", "name": "edsger", "displayName": "Edsger"}, [ES256],
        extensions={"hmac-secret": True, "credProtect": 1}))
    ada = step("makeCredential EdDSA resident, every extension", ctap.make_credential, sha("mc ada"), RP,
               {"id": b"\x01\x01", "name": "ada", "displayName": "Ada"}, [EDDSA, ES256],
               extensions={"credProtect": 2, "hmac-secret": True, "credBlob": b"\x09\x09\x09",
                           "largeBlobKey": True, "minPinLength": True},
               options={"rk": True})
    made["ada"] = credential_id(ada)
    made["ada-lbk"] = ada.large_blob_key if ada else None
    made["grace"] = credential_id(step(
        "makeCredential ES256 resident", ctap.make_credential, sha("mc grace"), RP,
        {"id": b"\x02\x02", "name": "grace", "displayName": "Grace"}, [ES256],
        extensions={"credBlob": b"grace-blob", "largeBlobKey": True}, options={"rk": True}))
    made["barbara"] = credential_id(step(
        "makeCredential ES256 resident, no extensions", ctap.make_credential, sha("mc barbara"), RP,
        {"id": b"\x0e", "name": "barbara"}, [ES256], options={"rk": True}))
    step("makeCredential hmac-secret-mc (salts at creation)", ctap.make_credential, sha("mc hmac-mc"), RP,
         {"id": b"\x0f", "name": "hmac-mc", "displayName": "Hmac Mc"}, [ES256],
         extensions={"hmac-secret": True,
                     "hmac-secret-mc": hmac_secret_input(ctap, PinProtocolV2(), sha("mc salt one"))},
         options={"rk": True})
    made["alan"] = credential_id(step(
        "makeCredential resident credProtect 3 on a second RP", ctap.make_credential, sha("mc alan"), RP2,
        {"id": b"\x03", "name": "alan", "displayName": "Alan"}, [ES256],
        extensions={"credProtect": 3, "hmac-secret": True}, options={"rk": True}))
    made["eddsa-plain"] = credential_id(step(
        "makeCredential EdDSA non-resident, up true", ctap.make_credential, sha("mc plain"), RP2,
        {"id": b"\x05", "name": "plain"}, [EDDSA], options={"up": True}))
    # The other curves (non-resident, on RP2: RP's discoverable flows below see none of them).
    for name, alg, user in (("ES384", -35, b"\x10"), ("ES512", -36, b"\x11"), ("ES256K", -47, b"\x12")):
        made[name] = credential_id(step(
            f"makeCredential {name} non-resident", ctap.make_credential, sha(f"mc {name}"), RP2,
            {"id": user, "name": name.lower()}, [{"type": "public-key", "alg": alg}, ES256]))
    # thirdPartyPayment (CTAP 2.2): a payment credential, and assertions asking whether it is one.
    made["payment"] = credential_id(step(
        "makeCredential thirdPartyPayment", ctap.make_credential, sha("mc payment"), RP2,
        {"id": b"\x13", "name": "payment"}, [ES256], extensions={"thirdPartyPayment": True}))
    if made["payment"]:
        step("getAssertion thirdPartyPayment", ctap.get_assertion, RP2["id"], sha("ga payment"),
             allow_list=[descriptor(made["payment"])], extensions={"thirdPartyPayment": True})
    # enterpriseAttestation before it is enabled (no PIN yet: config would be open).
    step("makeCredential enterpriseAttestation while disabled", ctap.make_credential, sha("mc ep off"), RP2,
         {"id": b"\x14", "name": "ep"}, [ES256], enterprise_attestation=2, expect=CtapError.ERR.INVALID_PARAMETER)
    curves = [descriptor(made[name]) for name in ("ES384", "ES512", "ES256K") if made[name]]
    if curves:
        step("getAssertion allowList of ES384, ES512 and ES256K credentials", ctap.get_assertion, RP2["id"],
             sha("ga curves"), allow_list=curves)
    if made["edsger"]:
        step("makeCredential excluded", ctap.make_credential, sha("mc excluded"), RP, {"id": b"\x04", "name": "edsger"},
             [ES256], exclude_list=[descriptor(made["edsger"])], expect=CtapError.ERR.CREDENTIAL_EXCLUDED)
    step("makeCredential RS512 only", ctap.make_credential, sha("mc rs512"), RP, {"id": b"\x06", "name": "rsa"},
         [{"type": "public-key", "alg": -259}], expect=CtapError.ERR.UNSUPPORTED_ALGORITHM)
    step("makeCredential uv without a PIN", ctap.make_credential, sha("mc uv"), RP, {"id": b"\x07", "name": "uv"},
         [ES256], options={"uv": True}, expect=CtapError.ERR.INVALID_OPTION)
    step("makeCredential pinUvAuthParam probe without a PIN", ctap.make_credential, sha("mc probe"), RP,
         {"id": b"\x08", "name": "probe"}, [ES256], pin_uv_param=b"", pin_uv_protocol=2, expect=CtapError.ERR.PIN_NOT_SET)

    if made["edsger"]:
        step("getAssertion allowList, hmac-secret v2 (two salts)", ctap.get_assertion, RP["id"], sha("ga edsger"),
             allow_list=[descriptor(made["edsger"])],
             extensions={"hmac-secret": hmac_secret_input(ctap, PinProtocolV2(), sha("salt one") + sha("salt two"))})
        step("getAssertion allowList, hmac-secret v1 (one salt)", ctap.get_assertion, RP["id"], sha("ga edsger v1"),
             allow_list=[descriptor(made["edsger"]), descriptor(b"\x00" * 16)],
             extensions={"hmac-secret": hmac_secret_input(ctap, PinProtocolV1(), sha("salt one"))})
        step("getAssertion silent (up false)", ctap.get_assertion, RP["id"], sha("ga silent"),
             allow_list=[descriptor(made["edsger"])], options={"up": False})
    first = step("getAssertion discoverable (credBlob, largeBlobKey)", ctap.get_assertion, RP["id"], sha("ga discover"),
                 extensions={"credBlob": True, "largeBlobKey": True})
    for index in range(((first.number_of_credentials or 1) - 1) if first else 0):
        step(f"getNextAssertion {index + 1}", ctap.get_next_assertion)
    step("getNextAssertion with none pending", ctap.get_next_assertion, expect=CtapError.ERR.NOT_ALLOWED)
    step("getAssertion for an RP with none", ctap.get_assertion, "nobody.example", sha("ga none"),
         expect=CtapError.ERR.NO_CREDENTIALS)
    step("getAssertion credProtect 3 without UV", ctap.get_assertion, RP2["id"], sha("ga alan"),
         expect=CtapError.ERR.NO_CREDENTIALS)

    client_pin = ClientPin(ctap, PinProtocolV2())
    # No PIN yet: CTAP2_ERR_PIN_NOT_SET, as a YubiKey 5 answers (ClientPINHandler.getPINRetries).
    step("clientPIN getRetries", client_pin.get_pin_retries, expect=CtapError.ERR.PIN_NOT_SET)
    step("clientPIN getKeyAgreement v2", ctap.client_pin, 2, ClientPin.CMD.GET_KEY_AGREEMENT)
    step("clientPIN getKeyAgreement v1", ctap.client_pin, 1, ClientPin.CMD.GET_KEY_AGREEMENT)
    step("clientPIN getUVRetries", ctap.client_pin, 2, ClientPin.CMD.GET_UV_RETRIES,
         expect=CtapError.ERR.INVALID_SUBCOMMAND)
    step("clientPIN getPinToken without a PIN", client_pin.get_pin_token, PIN, ClientPin.PERMISSION.GET_ASSERTION,
         RP["id"], expect=CtapError.ERR.PIN_NOT_SET)
    step("largeBlobs read (initial array)", LargeBlobs(ctap).read_blob_array)
    step("credentialManagement metadata without a PIN", ctap.credential_mgmt, CredentialManagement.CMD.GET_CREDS_METADATA,
         pin_uv_protocol=2, pin_uv_param=b"\x00" * 32, expect=CtapError.ERR.PIN_AUTH_INVALID)

    # U2F over CTAPHID_MSG
    ctap1 = Ctap1(device)
    step("U2F version", ctap1.get_version)
    app = sha(RP["id"])
    registration = step("U2F register", ctap1.register, sha("u2f register"), app)
    if registration:
        handle = registration.key_handle
        step("U2F authenticate (enforce presence)", ctap1.authenticate, sha("u2f auth"), app, handle)
        step("U2F authenticate (check only)", ctap1.authenticate, sha("u2f check"), app, handle, check_only=True,
             expect=0x6985)
        step("U2F authenticate (don't enforce presence)", ctap1.send_apdu, 0, 0x02, 0x08, 0,
             sha("u2f dont") + app + bytes([len(handle)]) + handle)
        step("U2F authenticate, wrong appID", ctap1.authenticate, sha("u2f wrong"), sha("elsewhere"), handle,
             expect=0x6A80)
        made["u2f"] = handle
    step("U2F authenticate, unknown handle", ctap1.authenticate, sha("u2f bad"), app, b"\x55" * 64, expect=0x6A80)
    # Short-encoded APDUs and malformed ones, as old clients and fuzzers send them.
    for label, apdu in (("U2F version, short encoding", bytes([0, 3, 0, 0, 0])),
                        ("U2F version, no Le", bytes([0, 3, 0, 0])),
                        ("U2F register, short encoding", bytes([0, 1, 3, 0, 64]) + sha("short c") + app + b"\x00"),
                        ("U2F bad CLA", bytes([0x80, 3, 0, 0, 0])),
                        ("U2F unknown INS", bytes([0, 0x40, 0, 0, 0])),
                        ("U2F register, wrong length", bytes([0, 1, 0, 0, 0, 0, 10]) + b"\x11" * 10 + b"\0\0"),
                        ("U2F truncated", bytes([0]))):
        step(label, device.call, CTAPHID.MSG, apdu)

    # Hand-made CTAP2 requests that real (if careless) clients send.
    for label, message in (("getInfo with trailing bytes", b"\x04\xa0"),
                           ("unknown CTAP2 command", b"\x20"),
                           ("makeCredential, parameters not a map", b"\x01\x80"),
                           ("makeCredential, truncated CBOR", b"\x01\xa4\x01\x58\x20"),
                           ("getAssertion, missing clientDataHash", b"\x02" + cbor.encode({1: RP["id"]})),
                           ("clientPIN, unknown subcommand", b"\x06" + cbor.encode({1: 2, 2: 0x20})),
                           ("credentialManagement, no parameters", b"\x0a"),
                           ("largeBlobs, get and set", b"\x0c" + cbor.encode({1: 16, 2: b"", 3: 0}))):
        step(label, device.call, CTAPHID.CBOR, message)

    step("LOCK 1 s", device.lock, 1)
    step("LOCK release", device.lock, 0)
    step("CANCEL with nothing running", device._send_cancel)
    step("PING after CANCEL", device.ping, b"after cancel")
    key.close_devices()


def session_with_pin(key, made):
    device = key.device()
    ctap = Ctap2(device)
    client_pin = ClientPin(ctap, PinProtocolV2())
    step("clientPIN setPIN", client_pin.set_pin, FIRST_PIN)
    step("clientPIN setPIN again", client_pin.set_pin, FIRST_PIN, expect=CtapError.ERR.PIN_AUTH_INVALID)
    step("clientPIN wrong PIN", client_pin.get_pin_token, "00000000", ClientPin.PERMISSION.MAKE_CREDENTIAL, RP["id"],
         expect=CtapError.ERR.PIN_INVALID)
    step("clientPIN getRetries after a wrong PIN", client_pin.get_pin_retries)
    step("clientPIN changePIN", client_pin.change_pin, FIRST_PIN, PIN)
    legacy = ClientPin(ctap, PinProtocolV1())
    step("clientPIN getPinToken (legacy, v1)", legacy.get_pin_token, PIN)
    step("clientPIN getPinUvAuthTokenUsingPinWithPermissions without permissions", ctap.client_pin, 2,
         ClientPin.CMD.GET_TOKEN_USING_PIN, key_agreement=client_pin._get_shared_secret()[0],
         pin_hash_enc=b"\x00" * 32, permissions=0, expect=CtapError.ERR.INVALID_PARAMETER)
    step("clientPIN getPinUvAuthTokenUsingUvWithPermissions (no UV)", ctap.client_pin, 2,
         ClientPin.CMD.GET_TOKEN_USING_UV, key_agreement=client_pin._get_shared_secret()[0],
         permissions=ClientPin.PERMISSION.GET_ASSERTION, permissions_rpid=RP["id"],
         expect=CtapError.ERR.INVALID_SUBCOMMAND)

    # makeCredential and getAssertion with a pinUvAuthToken.
    token = step("clientPIN token mc|ga", client_pin.get_pin_token, PIN,
                 ClientPin.PERMISSION.MAKE_CREDENTIAL | ClientPin.PERMISSION.GET_ASSERTION, RP["id"])
    if token:
        cdh = sha("mc linus")
        linus = step("makeCredential with a token, resident", ctap.make_credential, cdh, RP,
                     {"id": b"\x09\x09", "name": "linus", "displayName": "Linus"}, [ES256, EDDSA],
                     extensions={"hmac-secret": True, "credProtect": 2, "credBlob": b"L", "largeBlobKey": True,
                                 "minPinLength": True},
                     options={"rk": True}, pin_uv_param=client_pin.protocol.authenticate(token, cdh),
                     pin_uv_protocol=2)
        made["linus"] = credential_id(linus)
        step("makeCredential pinUvAuthParam probe", ctap.make_credential, sha("mc probe"), RP,
             {"id": b"\x08", "name": "probe"}, [ES256], pin_uv_param=b"", pin_uv_protocol=2,
             expect=CtapError.ERR.PIN_INVALID)
        step("makeCredential rk without a token", ctap.make_credential, sha("mc no token"), RP,
             {"id": b"\x0a", "name": "notoken"}, [ES256], options={"rk": True}, expect=CtapError.ERR.PUAT_REQUIRED)
        # makeCredential cleared the token's permissions but lbw (CTAP 2.1 §6.1.2): a new one.
        token = step("clientPIN token ga", client_pin.get_pin_token, PIN, ClientPin.PERMISSION.GET_ASSERTION, RP["id"])
    if token:
        cdh = sha("ga uv")
        first = step("getAssertion discoverable with a token, hmac-secret", ctap.get_assertion, RP["id"], cdh,
                     extensions={"hmac-secret": hmac_secret_input(ctap, PinProtocolV2(), sha("uv salt")),
                                 "credBlob": True, "largeBlobKey": True},
                     pin_uv_param=client_pin.protocol.authenticate(token, cdh), pin_uv_protocol=2)
        for index in range(((first.number_of_credentials or 1) - 1) if first else 0):
            step(f"getNextAssertion (uv) {index + 1}", ctap.get_next_assertion)
        cdh = sha("ga wrong param")
        step("getAssertion with a wrong pinUvAuthParam", ctap.get_assertion, RP["id"], cdh,
             pin_uv_param=b"\x01" * 32, pin_uv_protocol=2, expect=CtapError.ERR.PIN_AUTH_INVALID)
    token2 = step("clientPIN token ga for the second RP", client_pin.get_pin_token, PIN,
                  ClientPin.PERMISSION.GET_ASSERTION, RP2["id"])
    if token2:
        cdh = sha("ga alan uv")
        step("getAssertion credProtect 3 with a token", ctap.get_assertion, RP2["id"], cdh,
             allow_list=[descriptor(made["alan"])] if made.get("alan") else None,
             extensions={"hmac-secret": hmac_secret_input(ctap, PinProtocolV2(), sha("alan salt"))},
             pin_uv_param=client_pin.protocol.authenticate(token2, cdh), pin_uv_protocol=2)

    # A browser-like passkey flow (Fido2Client: getInfo, PIN token, rk + uv, prf / credProps).
    client = Fido2Client(open_device(key.socket_path),
                         client_data_collector=DefaultClientDataCollector("https://fuzz.example"),
                         user_interaction=PinInteraction())
    server = Fido2Server({"id": RP["id"], "name": "Fuzz RP"}, verify_attestation=None)
    options, state = server.register_begin({"id": b"\x0b\x0b", "name": "pat", "displayName": "Pat"},
                                           resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                           user_verification=UserVerificationRequirement.REQUIRED,
                                           extensions={"credProps": True, "prf": {}})
    step("Fido2Client makeCredential (passkey)", client.make_credential, options.public_key)
    request, state = server.authenticate_begin(None, user_verification=UserVerificationRequirement.REQUIRED,
                                               extensions={"prf": {"eval": {"first": sha("prf first")}}})
    step("Fido2Client getAssertion (passkey)", client.get_assertion, request.public_key)

    # The persistentPinUvAuthToken (CTAP 2.2 pcmr): reads, and a delete it may not do.
    step("clientPIN token pcmr + cm", client_pin.get_pin_token, PIN,
         ClientPin.PERMISSION.PERSISTENT_CREDENTIAL_MGMT | ClientPin.PERMISSION.CREDENTIAL_MGMT,
         expect=CtapError.ERR.UNAUTHORIZED_PERMISSION)
    pcmr_token = step("clientPIN token pcmr", client_pin.get_pin_token, PIN, ClientPin.PERMISSION.PERSISTENT_CREDENTIAL_MGMT)
    if pcmr_token:
        step("getInfo with encIdentifier", ctap.get_info)
        persistent = CredentialManagement(ctap, client_pin.protocol, pcmr_token)
        step("credentialManagement getCredsMetadata (persistent token)", persistent.get_metadata)
        step("credentialManagement enumerateRPs (persistent token)", persistent.enumerate_rps)
        step("credentialManagement enumerateCredentials (persistent token)", persistent.enumerate_creds, sha(RP["id"]))
        if made.get("barbara"):
            step("credentialManagement deleteCredential (persistent token)", persistent.delete_cred,
                 descriptor(made["barbara"]), expect=CtapError.ERR.PIN_AUTH_INVALID)

    # credentialManagement
    cm_token = step("clientPIN token cm", client_pin.get_pin_token, PIN, ClientPin.PERMISSION.CREDENTIAL_MGMT)
    if cm_token:
        credman = CredentialManagement(ctap, client_pin.protocol, cm_token)
        step("credentialManagement getCredsMetadata", credman.get_metadata)
        step("credentialManagement enumerateRPs", credman.enumerate_rps)
        for rp in (RP, RP2):
            step(f"credentialManagement enumerateCredentials {rp['id']}", credman.enumerate_creds, sha(rp["id"]))
        if made.get("grace"):
            step("credentialManagement updateUserInformation", credman.update_user_info, descriptor(made["grace"]),
                 {"id": b"\x02\x02", "name": "grace.hopper", "displayName": "Grace Hopper"})
            step("credentialManagement updateUserInformation, wrong user ID", credman.update_user_info,
                 descriptor(made["grace"]), {"id": b"\xff", "name": "x"}, expect=CtapError.ERR.INVALID_PARAMETER)
        # libfido2 sends the same subcommands on the preview command 0x41.
        step("credentialManagementPreview getCredsMetadata", ctap.send_cbor, 0x41,
             ctap2_args(1, None, 2, client_pin.protocol.authenticate(cm_token, b"\x01")))
        params = {1: sha(RP["id"])}
        step("credentialManagementPreview enumerateCredentialsBegin", ctap.send_cbor, 0x41,
             ctap2_args(4, params, 2, client_pin.protocol.authenticate(cm_token, b"\x04" + cbor.encode(params))))
        step("credentialManagementPreview enumerateCredentialsNext", ctap.send_cbor, 0x41, ctap2_args(5))
        step("credentialManagement enumerateRPsGetNextRP with none pending", ctap.credential_mgmt,
             CredentialManagement.CMD.ENUMERATE_RPS_NEXT, expect=CtapError.ERR.NOT_ALLOWED)
        if made.get("alan"):
            step("credentialManagement deleteCredential", credman.delete_cred, descriptor(made["alan"]))
            step("credentialManagement deleteCredential again", credman.delete_cred, descriptor(made["alan"]),
                 expect=CtapError.ERR.NO_CREDENTIALS)
        step("credentialManagement with a wrong pinUvAuthParam", ctap.credential_mgmt,
             CredentialManagement.CMD.GET_CREDS_METADATA, pin_uv_protocol=2, pin_uv_param=b"\x02" * 32,
             expect=CtapError.ERR.PIN_AUTH_INVALID)

    # largeBlobs
    lbw = step("clientPIN token lbw", client_pin.get_pin_token, PIN, ClientPin.PERMISSION.LARGE_BLOB_WRITE)
    if lbw and made.get("ada-lbk"):
        blobs = LargeBlobs(ctap, client_pin.protocol, lbw)
        step("largeBlobs write (one fragment)", blobs.put_blob, made["ada-lbk"], b"ada's large blob " * 8)
        step("largeBlobs write (several fragments)", blobs.put_blob, made["ada-lbk"], bytes(range(256)) * 6)
        step("largeBlobs read", LargeBlobs(ctap).get_blob, made["ada-lbk"])
        step("largeBlobs write without a token", LargeBlobs(ctap).put_blob, made["ada-lbk"], b"x",
             expect=CtapError.ERR.PUAT_REQUIRED)
        step("largeBlobs delete", blobs.delete_blob, made["ada-lbk"])
        step("largeBlobs read after delete", LargeBlobs(ctap).read_blob_array)

    # authenticatorConfig
    cfg_token = step("clientPIN token acfg", client_pin.get_pin_token, PIN, ClientPin.PERMISSION.AUTHENTICATOR_CFG)
    if cfg_token:
        config = Config(ctap, client_pin.protocol, cfg_token)
        step("config setMinPINLength 6 with an RP ID", config.set_min_pin_length, 6, rp_ids=[RP["id"]])
        step("config setMinPINLength lower", config.set_min_pin_length, 4, expect=CtapError.ERR.PIN_POLICY_VIOLATION)
        step("clientPIN changePIN shorter than the minimum", client_pin.change_pin, PIN, "12345",
             expect=CtapError.ERR.PIN_POLICY_VIOLATION)
        step("config toggleAlwaysUv on", config.toggle_always_uv)
        step("getInfo with alwaysUv", ctap.get_info)
        step("U2F version with alwaysUv", Ctap1(device).get_version, expect=0x6D00)
        step("makeCredential without a token under alwaysUv", ctap.make_credential, sha("mc auv"), RP,
             {"id": b"\x0c", "name": "auv"}, [ES256], expect=CtapError.ERR.PUAT_REQUIRED)
        step("config toggleAlwaysUv off", config.toggle_always_uv)
        # Sent directly: python-fido2 refuses subcommands getInfo does not list.
        for label, sub_command, params in (("config enableEnterpriseAttestation", 0x01, None),
                                           ("config vendorPrototype", 0xFF, {1: 0})):
            message = b"\xff" * 32 + b"\x0d" + bytes([sub_command]) + (cbor.encode(params) if params else b"")
            step(label, ctap.config, sub_command, params, 2, client_pin.protocol.authenticate(cfg_token, message),
                 expect=CtapError.ERR.INVALID_SUBCOMMAND if sub_command == 0xFF else None)
        # Enterprise attestation, now enabled: vendor-facilitated (the key is started with
        # --enterprise-rp for RP), platform-managed, and a value that is neither.
        ep_token = step("clientPIN token mc (enterprise attestation)", client_pin.get_pin_token, PIN,
                        ClientPin.PERMISSION.MAKE_CREDENTIAL, RP["id"])
        for value, expect in ((1, None), (2, None), (3, CtapError.ERR.INVALID_OPTION)):
            if not ep_token:
                break
            cdh = sha(f"mc ep {value}")
            step(f"makeCredential enterpriseAttestation {value}", ctap.make_credential, cdh, RP,
                 {"id": bytes([0x20 + value]), "name": f"ep{value}"}, [ES256], enterprise_attestation=value,
                 pin_uv_param=client_pin.protocol.authenticate(ep_token, cdh), pin_uv_protocol=2, expect=expect)
            ep_token = step("clientPIN token mc (again)", client_pin.get_pin_token, PIN,
                            ClientPin.PERMISSION.MAKE_CREDENTIAL, RP["id"])
    step("config without a token", Config(ctap).set_min_pin_length, 8, expect=CtapError.ERR.PUAT_REQUIRED)
    mc_token = step("clientPIN token mc (minPinLength)", client_pin.get_pin_token, PIN,
                    ClientPin.PERMISSION.MAKE_CREDENTIAL, RP["id"])
    if mc_token:
        cdh = sha("mc minpin")
        step("makeCredential minPinLength for a listed RP", ctap.make_credential, cdh, RP,
             {"id": b"\x0d", "name": "minpin"}, [ES256], extensions={"minPinLength": True}, options={"rk": True},
             pin_uv_param=client_pin.protocol.authenticate(mc_token, cdh), pin_uv_protocol=2)
    if cfg_token:
        cfg_token = step("clientPIN token acfg (again)", client_pin.get_pin_token, PIN,
                         ClientPin.PERMISSION.AUTHENTICATOR_CFG)
    if cfg_token:
        step("config setMinPINLength forceChangePin", Config(ctap, client_pin.protocol, cfg_token).set_min_pin_length,
             force_change_pin=True)
        step("getInfo with forcePINChange", ctap.get_info)
        step("clientPIN token while a change is forced", client_pin.get_pin_token, PIN,
             ClientPin.PERMISSION.GET_ASSERTION, RP["id"], expect=CtapError.ERR.PIN_POLICY_VIOLATION)
        step("clientPIN changePIN (forced)", client_pin.change_pin, PIN, "27182818")
        step("clientPIN changePIN back", client_pin.change_pin, "27182818", PIN)
    key.close_devices()


def session_cli(key, binary, work):
    """The project's own client code: probe, wink, pin status, credentials list over --socket."""
    pin_file = os.path.join(work, "pin")
    # Mode 0600: the CLI refuses a PIN file others can read.
    with os.fdopen(os.open(pin_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
        handle.write(PIN + "\n")
    for args in (["probe", "--socket", key.socket_path, "--pings", "4", "--echo-bytes", "7609"],
                 ["wink", "--socket", key.socket_path],
                 ["pin", "status", "--socket", key.socket_path, "--json"],
                 ["credentials", "list", "--socket", key.socket_path, "--pin-file", pin_file, "--json"]):
        result = subprocess.run([binary, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            note(f"`latchkey {' '.join(args[:2])}` exited {result.returncode}: {result.stderr.strip()[:200]}")


# Raw CTAPHID ----------------------------------------------------------------------------------

BROADCAST = 0xFFFFFFFF


class RawConnection:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(2.0)
        self.sock.connect(path)

    def send(self, report):
        self.sock.send(report)

    def response(self, channel, timeout=2.0):
        """(command, payload) of the next non-keepalive message on channel, or None."""
        self.sock.settimeout(timeout)
        payload, length, command = None, 0, None
        try:
            while True:
                report = self.sock.recv(65)
                if len(report) != 64:
                    return None
                cid, kind = struct.unpack(">IB", report[:5])
                if cid != channel:
                    continue
                if kind & 0x80:
                    if kind == 0x80 | CTAPHID.KEEPALIVE:
                        continue
                    command, length = kind & 0x7F, struct.unpack(">H", report[5:7])[0]
                    payload = report[7:7 + length]
                elif payload is not None:
                    payload += report[5:5 + length - len(payload)]
                if payload is not None and len(payload) >= length:
                    return command, payload
        except (socket.timeout, OSError):
            return None

    def call(self, channel, command, payload):
        for report in fragments(channel, command, payload):
            self.send(report)
        return self.response(channel)

    def close(self):
        self.sock.close()


def session_raw(key):
    raw = RawConnection(key.socket_path)
    nonce = bytes.fromhex("c0ffee0000000001")
    answer = raw.call(BROADCAST, CTAPHID.INIT, nonce)
    if not answer or answer[1][:8] != nonce:
        note(f"raw INIT: unexpected answer {answer!r}")
        raw.close()
        return
    cid = struct.unpack(">I", answer[1][8:12])[0]
    expected = {
        "PING (4 reports)": (raw.call(cid, CTAPHID.PING, bytes(range(200))), CTAPHID.PING),
        "CBOR getInfo": (raw.call(cid, CTAPHID.CBOR, b"\x04"), CTAPHID.CBOR),
        "MSG U2F version": (raw.call(cid, CTAPHID.MSG, bytes([0, 3, 0, 0, 0])), CTAPHID.MSG),
        "INIT resync on the channel": (raw.call(cid, CTAPHID.INIT, bytes.fromhex("c0ffee0000000002")), CTAPHID.INIT),
        "WINK": (raw.call(cid, CTAPHID.WINK, b""), CTAPHID.WINK),
        "unknown command 0x2a": (raw.call(cid, 0x2A, b"?"), CTAPHID.ERROR),
        "vendor command 0x51": (raw.call(cid, 0x51, b"vendor"), CTAPHID.ERROR),
        "empty CBOR": (raw.call(cid, CTAPHID.CBOR, b""), CTAPHID.ERROR),
        "channel 0": (raw.call(0, CTAPHID.PING, b"zero"), CTAPHID.ERROR),
        "PING on an unallocated channel": (raw.call(0x0BADCAFE, CTAPHID.PING, b"nobody"), CTAPHID.ERROR),
        "broadcast PING": (raw.call(BROADCAST, CTAPHID.PING, b"everyone"), CTAPHID.ERROR),
        "LOCK 20 s (too long)": (raw.call(cid, CTAPHID.LOCK, b"\x14"), CTAPHID.ERROR),
    }
    # A continuation with the wrong sequence number.
    raw.send(init_packet(cid, CTAPHID.PING, 100, bytes(57)))
    raw.send((struct.pack(">IB", cid, 5) + bytes(59)).ljust(64, b"\0"))
    expected["continuation out of sequence"] = (raw.response(cid), CTAPHID.ERROR)
    # A continuation nobody started (ignored), then a PING that still works.
    raw.send((struct.pack(">IB", cid, 0) + b"stray").ljust(64, b"\0"))
    expected["PING after a stray continuation"] = (raw.call(cid, CTAPHID.PING, b"still"), CTAPHID.PING)
    # A second message's INIT in the middle of the first (CTAPHID_ERR_CHANNEL_BUSY or restart).
    raw.send(init_packet(cid, CTAPHID.PING, 120, b"A" * 57))
    raw.send(init_packet(cid, CTAPHID.PING, 4, b"B" * 4))
    expected["INIT in the middle of a message"] = (raw.response(cid), None)
    # A declared length past 7609.
    raw.send(init_packet(cid, CTAPHID.PING, 7610, b"L" * 57))
    expected["length 7610"] = (raw.response(cid), CTAPHID.ERROR)
    # CANCEL with nothing running: no answer; a PING after it is answered.
    raw.send(init_packet(cid, CTAPHID.CANCEL, 0))
    expected["PING after CANCEL"] = (raw.call(cid, CTAPHID.PING, b"after cancel"), CTAPHID.PING)
    # A message left unfinished: the key times it out (ERR_MSG_TIMEOUT).
    raw.send(init_packet(cid, CTAPHID.CBOR, 300, b"\x01" + bytes(56)))
    expected["unfinished message"] = (raw.response(cid, timeout=4.0), CTAPHID.ERROR)
    for label, (answer, command) in expected.items():
        if answer is None:
            note(f"raw {label}: no answer")
        elif command is not None and answer[0] != command:
            note(f"raw {label}: answered command 0x{answer[0]:02x} {answer[1][:8].hex()}")
    raw.close()

    # Wrong-sized packets (dropped, noted in the trace) and a message abandoned mid-way.
    raw = RawConnection(key.socket_path)
    answer = raw.call(BROADCAST, CTAPHID.INIT, bytes.fromhex("c0ffee0000000003"))
    cid = struct.unpack(">I", answer[1][8:12])[0] if answer else 0x01020304
    for size in (65, 10, 1):
        try:
            raw.sock.send(init_packet(cid, CTAPHID.PING, 8, b"wrongsiz").ljust(size, b"\0")[:size])
        except OSError as error:
            note(f"raw {size}-byte packet: {error}")
    raw.send(init_packet(cid, CTAPHID.PING, 8, b"rightsiz"))
    if raw.response(cid) is None:
        note("raw PING after wrong-sized packets: no answer")
    raw.send(init_packet(cid, CTAPHID.CBOR, 200, b"\x02" + bytes(56)))
    time.sleep(0.1)
    raw.close()
    time.sleep(0.2)


def session_reset(key):
    # Outside the 10 s window after power-up, reset is refused ...
    wait = 10.5 - (time.time() - key.started)
    if wait > 0:
        time.sleep(wait)
    device = key.device()
    ctap = Ctap2(device)
    step("reset after 10 s", ctap.reset, expect=CtapError.ERR.NOT_ALLOWED)
    key.close_devices()
    # ... and accepted after a power cycle (SIGHUP).
    key.power_cycle()
    device = key.device()
    ctap = Ctap2(device)
    step("reset after a power cycle", ctap.reset)
    step("getInfo after reset", ctap.get_info)
    step("clientPIN getRetries after reset", ClientPin(ctap, PinProtocolV2()).get_pin_retries,
         expect=CtapError.ERR.PIN_NOT_SET)
    step("getAssertion after reset", ctap.get_assertion, RP["id"], sha("ga after reset"),
         expect=CtapError.ERR.NO_CREDENTIALS)
    key.close_devices()


# Control socket requests, as the CLI writes them ----------------------------------------------

def capture_control_lines(binary, work):
    """Runs `latchkey approve/deny/presence status --control PATH` against a listener of ours
    and keeps the request line each writes (answering with a plausible response)."""
    path = os.path.join(work, "capture.control")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    listener.settimeout(10)
    lines = []
    replies = [b'{"operation":"register","result":"approved","rp_id":"fuzz.example","user":"ada"}\n',
               b'{"message":"no presence request came within 0 s","result":"none"}\n',
               b'{"pending":{"operation":"U2F register","waiting_ms":1200},"result":"status","waiting_answers":0}\n',
               b'{"result":"denied","operation":"authenticate","rp_id":"other.example"}\n']
    commands = [["approve"], ["deny", "--timeout", "0"], ["presence", "status"], ["deny", "--timeout", "5"],
                ["approve", "--timeout", "0"]]
    # Answers naming their target (ControlPresence.Target), where this binary has the options.
    usage = subprocess.run([binary, "approve", "--help"], capture_output=True, text=True, timeout=10).stdout
    if "--rp" in usage:
        commands += [["approve", "--rp", "fuzz.example"], ["deny", "--rp", "other.example", "--timeout", "5"]]
    if "--request" in usage:
        commands += [["approve", "--request", "3"], ["deny", "--request", "4"]]
    for index, args in enumerate(commands):
        process = subprocess.Popen([binary, *args, "--control", path], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            client, _ = listener.accept()
            client.settimeout(5)
            line = b""
            while not line.endswith(b"\n"):
                chunk = client.recv(4096)
                if not chunk:
                    break
                line += chunk
            lines.append(line)
            client.sendall(replies[index % len(replies)])
            client.close()
        except OSError as error:
            note(f"capturing `latchkey {' '.join(args)}`: {error}")
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    listener.close()
    return lines


# --- reading the trace back --------------------------------------------------------------------

def read_trace(path):
    with open(path, "rb") as handle:
        raw = handle.read()
    lines = raw.split(b"\n")
    header = json.loads(lines[0])
    records = [json.loads(line) for line in lines[1:] if line.strip()]
    order = sorted(range(len(records)), key=lambda index: (records[index]["t"], index))
    return raw, header, [records[index] for index in order], [lines[1 + index] for index in order]


class Message:
    def __init__(self, t, direction, conn, channel, command, length):
        self.t, self.direction, self.conn, self.channel = t, direction, conn, channel
        self.command, self.length, self.payload = command, length, bytearray()
        self.reports = []           # indices of its reports in the record list

    @property
    def complete(self):
        return len(self.payload) >= self.length


def reassemble(records):
    """Complete CTAPHID messages, in order of their last report, per (dir, conn, channel)."""
    partial, messages = {}, []
    for index, record in enumerate(records):
        if "report" not in record:
            continue
        report = bytes.fromhex(record["report"])
        channel, kind = struct.unpack(">IB", report[:5])
        slot = (record["dir"], record["conn"], channel)
        if kind & 0x80:
            length = struct.unpack(">H", report[5:7])[0]
            message = Message(record["t"], record["dir"], record["conn"], channel, kind & 0x7F, length)
            message.payload += report[7:7 + length]
            partial[slot] = message
        elif slot in partial:
            message = partial[slot]
            message.payload += report[5:5 + message.length - len(message.payload)]
        else:
            continue
        message.reports.append(index)
        if message.complete:
            message.payload = bytes(message.payload)
            messages.append(message)
            del partial[slot]
    return messages


def pair(messages):
    """(request, response) for CBOR and MSG requests: the next non-keepalive answer on the channel."""
    pairs, waiting = [], {}
    for message in messages:
        slot = (message.conn, message.channel)
        if message.direction == "in":
            if message.command in (CTAPHID.CBOR, CTAPHID.MSG):
                waiting[slot] = message
            continue
        if message.command == CTAPHID.KEEPALIVE or slot not in waiting:
            continue
        request = waiting.pop(slot)
        pairs.append((request, message if message.command == request.command else None))
    return pairs


# --- seeds ----------------------------------------------------------------------------------------

def record(op, body):
    return bytes([op]) + struct.pack(">H", len(body)) + body


def cap(items, limit=MAX_FILES):
    """Deduplicated, and at most `limit`: when there are more, taken round-robin over the
    groups (in order of first appearance) so every kind of seed keeps some."""
    groups, seen = {}, set()
    for group, data in items:
        if data in seen:
            continue
        seen.add(data)
        groups.setdefault(group, []).append(data)
    chosen = []
    queues = list(groups.values())
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    return chosen


COMMAND_BYTES = {"makeCredential": 0x01, "getAssertion": 0x02, "getInfo": 0x04, "clientPIN": 0x06, "reset": 0x07,
                 "getNextAssertion": 0x08, "bioEnrollment": 0x09, "credentialManagement": 0x0A, "selection": 0x0B,
                 "largeBlobs": 0x0C, "config": 0x0D, "credentialManagementPreview": 0x41}
FAMILY_TARGETS = ["FuzzMakeCredential", "FuzzGetAssertion", "FuzzClientPIN", "FuzzCredentialManagement",
                  "FuzzLargeBlobs", "FuzzConfigReset"]


def family_ops(target):
    """{CTAP command byte: op} from the target's `CommandFamily(commands: [...])`."""
    with open(os.path.join(TARGETS, target, f"{target}.swift")) as handle:
        source = handle.read()
    names = re.search(r"commands:\s*\[([^\]]*)\]", source).group(1)
    commands = [COMMAND_BYTES[name.strip().lstrip(".")] for name in names.split(",") if name.strip()]
    ops = {}
    for op, command in enumerate(commands):
        ops.setdefault(command, op)
    return ops


SETUPS = (0x00, 0x02 | 0x04, 0x17)


def family_seeds(target, requests):
    """requests: (command, parameters) of the real CTAP2 requests, in order."""
    ops = family_ops(target)
    mine = [(command, body) for command, body in requests if command in ops]
    items = []
    for command, body in mine:
        for setup in SETUPS:
            items.append((f"single {command:02x} {setup:02x}", bytes([setup]) + record(ops[command], body)))
    for start in range(0, len(mine), 60):
        chunk = mine[start:start + 60]
        for setup in (0x00, 0x17):
            items.append(("sequence", bytes([setup]) + b"".join(record(ops[c], b) for c, b in chunk)))
        # Authenticated: map bodies get op | 0x80 (the harness adds a real pinUvAuthParam).
        items.append(("authenticated", bytes([0x17]) + b"".join(
            record(ops[c] | (0x80 if is_map(b) else 0), b) for c, b in chunk)))
    for command, body in mine:
        if is_map(body):
            items.append(("authenticated single", bytes([0x17]) + record(ops[command] | 0x80, body)))
    # Control records the harness shares: power cycle (0xF3), clock (0xF0), presence (0xF2/0xF1),
    # channel (0xF4), around a real request.
    # The first request of each command; a reset (outside the window at the harness's one hour
    # of uptime) also after a power cycle, with the requests that followed it for real.
    firsts = {}
    for position, (command, body) in enumerate(mine):
        firsts.setdefault(command, (position, body))
    for command, (position, body) in firsts.items():
        op = ops[command]
        authenticated = op | (0x80 if is_map(body) else 0)
        items.append(("control", bytes([0x17]) + record(0xF3, b"") + record(op, body)
                      + b"".join(record(ops[c], b) for c, b in mine[position + 1:position + 5])))
        items.append(("control", bytes([0x06]) + record(0xF2, b"\x00") + record(op, body)
                      + record(0xF1, b"") + record(0xF0, b"\x28") + record(op, body)))
        items.append(("control", bytes([0x07]) + record(0xF4, b"") + record(authenticated, body)))
    return items


def is_map(body):
    return bool(body) and 0xA0 <= body[0] <= 0xBF


def u2f_seeds(apdus):
    items = [("single", b"\x00" + record(0x00, apdu)) for apdu in apdus]
    items.append(("sequence", b"\x00" + b"".join(record(0x00, apdu) for apdu in apdus[:30])))
    for p1 in (0x03, 0x07, 0x08):
        items.append(("known handle", b"\x00" + record(0x80, bytes([p1]))))
    items.append(("known handle", b"\x00" + record(0xF2, b"\x00") + record(0x80, b"\x03") + record(0xF1, b"")
                  + record(0x80, b"\x03" + sha("challenge"))))
    return items


def ctaphid_seeds(records, messages, pairs):
    responses = {id(request): response for request, response in pairs}
    init_answers = {}   # (conn, nonce) -> allocated channel, from the key's INIT answers
    for message in messages:
        if message.direction == "out" and message.command == CTAPHID.INIT and message.channel == BROADCAST:
            if len(message.payload) >= 12:
                init_answers.setdefault((message.conn, message.payload[:8]), message.payload[8:12])
    completes = {}      # index of a request's last report -> response payload
    for message in messages:
        if message.direction == "in" and id(message) in responses:
            response = responses[id(message)]
            completes[message.reports[-1]] = response.payload[:255] if response else b"\x01"
    first_part = {}     # conn -> its longest request (several reports, for the reassembly check)
    for message in messages:
        if message.direction == "in":
            if message.conn not in first_part or len(message.payload) > len(first_part[message.conn][2]):
                first_part[message.conn] = (message.channel, message.command, message.payload)

    def head(channel, command, payload):
        return struct.pack(">IBH", channel, command, len(payload)) + payload

    def steps_for(indices, op_of, limit=250):
        """Steps for the records at indices (one connection each mapped to op_of[conn])."""
        mapping, next_channel, steps, out = {}, 0x1000, 0, b""
        last = {}
        for index in indices:
            last[records[index]["conn"]] = index
        for index in indices:
            record_ = records[index]
            report = bytearray(bytes.fromhex(record_["report"]))
            channel, kind = struct.unpack(">IB", report[:5])
            if channel == BROADCAST and kind == 0x80 | CTAPHID.INIT:
                allocated = init_answers.get((record_["conn"], bytes(report[7:15])))
                if allocated is not None and allocated not in mapping:
                    mapping[allocated] = struct.pack(">I", next_channel)
                    next_channel += 1
            if bytes(report[:4]) in mapping:
                report[:4] = mapping[bytes(report[:4])]
            out += bytes([op_of[record_["conn"]], 64]) + bytes(report)
            steps += 1
            if index in completes:
                out += bytes([5, len(completes[index])]) + completes[index]
                steps += 1
            if last[record_["conn"]] == index and len(op_of) > 1:
                out += bytes([6, 1, op_of[record_["conn"]]])
                steps += 1
            if steps >= limit:
                break
        return out

    in_by_conn = {}
    for index, record_ in enumerate(records):
        if record_["dir"] == "in" and "report" in record_:
            in_by_conn.setdefault(record_["conn"], []).append(index)
    items = []
    for conn, indices in in_by_conn.items():
        channel, command, payload = first_part.get(conn, (BROADCAST, CTAPHID.PING, b""))
        prefix = head(channel, command, payload)
        # The whole connection (up to the harness's 256 steps), then later windows of it, each
        # beginning with the connection's first report (its INIT) so a channel exists.
        items.append(("connection", prefix + steps_for(indices, {conn: 0})))
        for start in range(100, len(indices), 100):
            items.append(("window", prefix + steps_for([indices[0]] + indices[start:start + 120], {conn: 0})))
    # Several connections at once: consecutive connections on ops 0..3, by time.
    conns = sorted(in_by_conn)
    for start in range(0, len(conns), 4):
        group = conns[start:start + 4]
        if len(group) < 2:
            continue
        indices = sorted(index for conn in group for index in in_by_conn[conn][:60])
        channel, command, payload = first_part.get(group[0], (BROADCAST, CTAPHID.PING, b""))
        items.append(("connections", head(channel, command, payload)
                      + steps_for(indices, {conn: op for op, conn in enumerate(group)})))
    # Fragment/reassembly checks alone: one real request per (command, number of reports).
    kinds = set()
    for message in messages:
        kind = (message.command, (len(message.payload) + 1) // 59)
        if message.direction == "in" and kind not in kinds:
            kinds.add(kind)
            items.append(("reassembly", head(message.channel, message.command, message.payload)))
    return items


def uhid_event(kind, fields=()):
    event = bytearray(4380)
    struct.pack_into("<I", event, 0, kind)
    for offset, fmt, value in fields:
        struct.pack_into(fmt, event, offset, value)
    return event


def uhid_output(report, report_type=1):
    event = uhid_event(6, [(4100, "<H", 65), (4102, "<B", report_type)])
    event[4] = 0x00                    # report ID
    event[5:5 + 64] = report
    return bytes(event)


def uhid_seeds(records, messages):
    items = []
    for message in messages:
        if message.direction == "in":
            for position, index in enumerate(message.reports[:2]):
                kind = "init" if position == 0 else "continuation"
                items.append((f"{kind} {message.command:02x}", uhid_output(bytes.fromhex(records[index]["report"]))))
    first = bytes.fromhex(records[messages[0].reports[0]]["report"]) if messages else bytes(64)
    fixed = [
        ("events", bytes(uhid_event(2, [(4, "<Q", 0)]))),                                  # START
        ("events", bytes(uhid_event(2, [(4, "<Q", 0x7)]))),                                # START, all flags
        ("events", bytes(uhid_event(3))),                                                  # STOP
        ("events", bytes(uhid_event(4))),                                                  # OPEN
        ("events", bytes(uhid_event(5))),                                                  # CLOSE
        ("events", bytes(uhid_event(9, [(4, "<I", 1), (8, "<B", 0), (9, "<B", 0)]))),     # GET_REPORT feature
        ("events", bytes(uhid_event(9, [(4, "<I", 0x2A), (8, "<B", 0), (9, "<B", 2)]))),  # GET_REPORT input
        ("events", uhid_output(first, report_type=0)),                                     # OUTPUT as feature
        ("events", bytes(uhid_event(4))[:4]),                                              # OPEN, type only
        ("events", bytes(uhid_event(6, [(4100, "<H", 64), (4102, "<B", 1)]))[:4103]),      # OUTPUT, no ID byte
    ]
    set_report = uhid_event(13, [(4, "<I", 7), (8, "<B", 0), (9, "<B", 1), (10, "<H", 65)])
    set_report[12 + 1:12 + 65] = first
    fixed.append(("events", bytes(set_report)))
    set_feature = uhid_event(13, [(4, "<I", 8), (8, "<B", 0), (9, "<B", 0), (10, "<H", 0)])
    fixed.append(("events", bytes(set_feature)))
    return fixed + items


def trace_seeds(raw, header_line, sorted_lines, records):
    items = [("whole", raw)]
    for count in (0, 1, 4, 16, 64, 256):
        items.append(("prefix", header_line + b"\n" + b"".join(line + b"\n" for line in sorted_lines[:count])))
    conns = sorted({record["conn"] for record in records})
    for conn in conns:
        lines = [line for line, record in zip(sorted_lines, records) if record["conn"] == conn]
        items.append(("connection", header_line + b"\n" + b"".join(line + b"\n" for line in lines[:400])))
    # Records with redactions, notes and withheld bytes, each alone after the header.
    for line, record in zip(sorted_lines, records):
        if "redacted" in record or "note" in record or "withheld" in record:
            items.append(("special " + ",".join(sorted(k for k in ("redacted", "note", "withheld") if k in record)),
                          header_line + b"\n" + line + b"\n"))
    items.append(("no trailing newline", header_line + b"\n" + sorted_lines[0]))
    return items


def control_seeds(captured):
    """Sources/KeyService/ControlMessage.swift: ControlRequest / ControlCommand(line:)."""
    lines = list(captured) + [
        b'{"v":1,"action":"approve","timeout_ms":30000}\n',
        b'{"v":1,"action":"deny","timeout_ms":0}\n',
        b'{"v":1,"action":"status"}\n',
        b'{"v":1,"action":"approve"}\n',
        b'{"v":1,"action":"approve","rp_id":"fuzz.example","timeout_ms":30000}\n',
        b'{"action":"deny","rp_id":"other.example","timeout_ms":5000,"v":1}\n',
        b'{"v":1,"action":"deny","request":4}\n',
        b'{"action":"approve","request":3,"timeout_ms":30000,"v":1}\n',
        b'{"v":1,"action":"approve","rp_id":"fuzz.example","request":3}\n',
        b'{"v":1,"action":"approve","rp_id":""}\n',
        b'{"v":1,"action":"approve","rp_id":"' + b"a" * 254 + b'"}\n',
        b'{"v":1,"action":"deny","request":0}\n',
        b'{"v":1,"action":"deny","request":-4}\n',
        b'{"v":1,"action":"deny","request":"4"}\n',
        b'{"v":1,"action":"approve","rp_id":"fuzz.example","timeout_ms":3600001}\n',
        b'{"v":1,"action":"status","request":4,"rp_id":"fuzz.example"}\n',
        b'{"v":1,"action":"approve","timeout_ms":30000,"rp_id":"fuzz.example","user":"ada"}\n',
        b'{"v":1,"action":"deny","timeout_ms":5000,"request":{"operation":"register","rp_id":"fuzz.example"}}\n',
        b'{"v":1,"action":"status","pending":{"operation":"U2F register","waiting_ms":1200},"waiting_answers":0}\n',
        b'{"v":2,"action":"status"}\n',
        b'{"v":1,"action":"reboot"}\n',
        b'{"action":"approve","timeout_ms":1}\n',
        b'{"v":1,"action":"approve","timeout_ms":18446744073709551615}\n',
        b'{"v":1,"action":"approve","timeout_ms":-1}\n',
        b'{"v":1.0,"action":"status"}\n',
        b'[1,"status"]\n',
        b'{"v":1,"action":"st\\u0061tus"}\n',
        b'{"v":1,"action":"approve"}\n{"v":1,"action":"deny"}\n',
        b'{"v":1,"action":"approve"',
    ]
    return [("line", line) for line in lines]


def deflate_seeds():
    """FuzzDeflate: mode byte 0x00 ‖ zlib's raw DEFLATE (wbits -15, as python-fido2 and Chromium
    compress large blobs) of sample blobs at levels 0, 1, 6 and 9 with the default, fixed-code and
    Huffman-only strategies; mode 0x01 ‖ the blobs themselves."""
    pangram = b"the quick brown fox jumps over the lazy dog "
    blobs = [b"", b"a", b"abcabcabcabc" * 10, bytes(pangram[(i * i + i // 7) % 44] for i in range(2000)),
             bytes(range(256)) * 4, b"ssh-ed25519-cert-v01@openssh.com AAAA" + bytes(200)]
    seeds = []
    for blob in blobs:
        for level in (0, 1, 6, 9):
            for strategy in (zlib.Z_DEFAULT_STRATEGY, zlib.Z_FIXED, zlib.Z_HUFFMAN_ONLY):
                compressor = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strategy)
                seeds.append((f"zlib level {level}", b"\x00" + compressor.compress(blob) + compressor.flush()))
        seeds.append(("blob", b"\x01" + blob))
    return seeds


def rig_seeds():
    """Sources/KeyService/Rig*.swift: request lines of the rig control API (README contract), on the
    FuzzRig target's rig (one socket key k1 with one credential)."""
    credential = (b'{"credentialId":"AAECAwQFBgcICQoLDA0ODw","isResidentCredential":true,"rpId":"fuzz.example",'
                  b'"userHandle":"AQ","privateKey":"MC4CAQAwBQYDK2VwBCIEIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f",'
                  b'"signCount":7,"userName":"fuzz"}')
    lines = [
        b'{"v":1,"id":1,"method":"listAuthenticators"}',
        b'{"v":1,"id":2,"method":"getCredentials","params":{"authenticatorId":"k1"}}',
        b'{"v":1,"id":3,"method":"getCredential","params":{"authenticatorId":"k1","credentialId":"AAECAwQFBgcICQoLDA0ODw"}}',
        b'{"v":1,"id":4,"method":"addCredential","params":{"authenticatorId":"k1","credential":' + credential + b'}}',
        b'{"v":1,"id":5,"method":"removeCredential","params":{"authenticatorId":"k1","credentialId":"AAECAwQFBgcICQoLDA0ODw"}}',
        b'{"v":1,"id":6,"method":"removeAllCredentials","params":{"authenticatorId":"k1"}}',
        b'{"v":1,"id":7,"method":"setUserVerified","params":{"authenticatorId":"k1","isUserVerified":false}}',
        b'{"v":1,"id":8,"method":"setUserConsenting","params":{"authenticatorId":"k1","isUserConsenting":false}}',
        b'{"v":1,"id":9,"method":"setAutomaticPresenceSimulation","params":{"authenticatorId":"k1","enabled":false}}',
        b'{"v":1,"id":10,"method":"setAutomaticUserVerification","params":{"authenticatorId":"k1","enabled":true}}',
        b'{"v":1,"id":11,"method":"setResponseOverrideBits","params":{"authenticatorId":"k1","isBogusSignature":true,"isBadUV":true}}',
        b'{"v":1,"id":12,"method":"injectFault","params":{"authenticatorId":"k1","command":"makeCredential","fault":"status","status":40}}',
        b'{"v":1,"id":13,"method":"injectFault","params":{"authenticatorId":"k1","command":"any","fault":"keepaliveFlood","keepalives":5,"times":0}}',
        b'{"v":1,"id":14,"method":"clearFaults","params":{"authenticatorId":"k1"}}',
        b'{"v":1,"id":15,"method":"powerCycle","params":{"authenticatorId":"k1"}}',
        b'{"v":1,"id":16,"method":"addAuthenticator","params":{"protocol":"u2f","hasUserVerification":true}}',
        b'{"v":1,"id":17,"method":"addAuthenticator","params":{"authenticatorId":"x","seed":"","extensions":["credBlob"]}}',
        b'{"v":1,"id":18,"method":"addAuthenticator","params":{"protocol":"ctap2","transport":"usb","attestation":"installation"}}',
        b'{"v":1,"id":19,"method":"setCredentialProperties","params":{"authenticatorId":"k1","credentialId":"AA","backupState":true}}',
        b'{"v":1,"id":20,"method":"subscribe","params":{"authenticatorId":"k1"}}',
        b'{"v":1,"id":21,"method":"getCredentials","params":{"authenticatorId":7}}',
        b'{"v":1,"id":22,"method":"addCredential","params":{"authenticatorId":"k1","credential":{"credentialId":"a+b/","rpId":""}}}',
        b'{"v":2,"id":23,"method":"listAuthenticators"}',
        b'{"v":1,"method":"removeAuthenticator","params":{"authenticatorId":"nope"}}',
        b'{"v":1,"id":"x","method":"listAuthenticators"}',
        b'{"v":1,"id":18446744073709551616,"method":"listAuthenticators"}',
        b'[1,2,3]', b'not json', b'', b'{"v":1,"method":"frob","params":[]}',
    ]
    return [("rig line", line) for line in lines]


def signal_bridge_seeds():
    """Sources/SignalBridge: byte streams as a browser writes them to `latchkey native-host` (a
    native-endian 32-bit length, then JSON), naming the FuzzSignalBridge target's credentials
    (IDs AAAAAAAAAAAAAAAAAAAAAA and AQEBAQEBAQEBAQEBAQEBAQ at fuzz.example, user handles user1
    and user2; other.example's AgICAgICAgICAgICAgICAg)."""
    def frame(body):
        return struct.pack("=I", len(body)) + body
    origin = b'"origin":"https://login.fuzz.example"'
    messages = [
        b'{"id":1,"type":"signal",' + origin + b',"method":"unknownCredential","options":{"rpId":"fuzz.example","credentialId":"AAAAAAAAAAAAAAAAAAAAAA"}}',
        b'{"id":2,"type":"signal",' + origin + b',"method":"allAcceptedCredentials","options":{"rpId":"fuzz.example","userId":"dXNlcjE","allAcceptedCredentialIds":["AQEBAQEBAQEBAQEBAQEBAQ"]}}',
        b'{"id":3,"type":"signal",' + origin + b',"method":"allAcceptedCredentials","options":{"rpId":"fuzz.example","userId":"dXNlcjE","allAcceptedCredentialIds":["AAAAAAAAAAAAAAAAAAAAAA"]}}',
        b'{"id":4,"type":"signal",' + origin + b',"method":"currentUserDetails","options":{"rpId":"fuzz.example","userId":"dXNlcjI","name":"n\u00e9","displayName":"D"}}',
        b'{"id":5,"type":"signal","origin":"https://other.example","method":"unknownCredential","options":{"rpId":"other.example","credentialId":"AgICAgICAgICAgICAgICAg"}}',
        b'{"id":6,"type":"signal",' + origin + b',"method":"unknownCredential","options":{"rpId":"other.example","credentialId":"AgICAgICAgICAgICAgICAg"}}',
        b'{"id":7,"type":"signal","origin":"http://127.0.0.1:8080","method":"unknownCredential","options":{"rpId":"fuzz.example","credentialId":"AA"}}',
        b'{"id":8,"type":"signal","origin":"https://a.ck","method":"unknownCredential","options":{"rpId":"ck","credentialId":"AA"}}',
        b'{"id":9,"type":"publicSuffixes"}',
        b'{"id":10,"type":"signal",' + origin + b',"method":"unknownCredential","options":{"rpId":"fuzz.example","credentialId":"AA=="}}',
        b'{"id":true}', b'[1]', b'{}', b'not json', b'',
    ]
    seeds = [("signal", frame(m)) for m in messages]
    seeds.append(("stream", b"".join(frame(m) for m in messages[:6])))
    seeds.append(("oversize", struct.pack("=I", 0x7FFFFFFF) + b"{"))
    seeds.append(("truncated", frame(messages[0])[:-5]))
    return seeds


def import_seeds(binary, work):
    """FuzzImport: the files `latchkey import` and `restore` read — the hand-written CXF, Bitwarden
    and KeePassXC fixtures of the socket suite (Tests/Integration/support/exchange_fixtures.py), and what
    the real CLI writes from a store with one imported passkey: a plaintext CXF export, one
    encrypted with a passphrase (scrypt 2^10) and to an X25519 key, and a whole-key backup."""
    seeds = [(kind, json.dumps(document).encode()) for kind, document in
             (("cxf", hand_written_cxf()), ("bitwarden", bitwarden_fixture()), ("keepassxc", keepassxc_fixture()))]
    store = os.path.join(work, "import-store")
    fixture = os.path.join(work, "fixture.cxf.json")
    with open(fixture, "w") as handle:
        json.dump(hand_written_cxf(), handle)
    passphrase = os.path.join(work, "passphrase")
    with open(os.open(passphrase, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
        handle.write("a fuzz corpus passphrase\n")
    key = os.path.join(work, "receiver.key")

    def run(*args):
        subprocess.run([binary, *args], check=True, capture_output=True, stdin=subprocess.DEVNULL, start_new_session=True)

    run("import", fixture, "--store", store)
    run("import", "--new-key", key)
    outputs = []
    for name, extra in (("plain.json", ["--plaintext"]), ("passphrase.lkx", ["--passphrase-file", passphrase, "--scrypt-log-n", "10"]),
                        ("hpke.lkx", ["--to", key + ".pub"])):
        out = os.path.join(work, name)
        run("export", "--store", store, "--out", out, *extra)
        outputs.append(out)
    backup = os.path.join(work, "key.backup")
    run("backup", "--store", store, "--out", backup, "--passphrase-file", passphrase, "--scrypt-log-n", "10")
    for path in outputs:
        with open(path, "rb") as handle:
            seeds.append((os.path.basename(path), handle.read()))
    with open(backup, "rb") as handle:
        seeds.append(("backup", handle.read()[:8192]))   # the header and the start of its ciphertext (-max_len)
    return seeds


def write_corpus(target, items):
    directory = os.path.join(CORPUS, target)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    chosen = cap(items)
    for data in chosen:
        with open(os.path.join(directory, hashlib.sha1(data).hexdigest()), "wb") as handle:
            handle.write(data)
    size = sum(len(data) for data in chosen)
    print(f"{target:26} {len(chosen):4} files {size:9} bytes", flush=True)
    return size


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: .build/test-venv/bin/python Fuzz/make-corpus.py .build/debug/latchkey")
    binary = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="latchkey-corpus-")
    try:
        key = Key(binary, work)
        key.start()
        made = {}
        try:
            print("session: CTAP2, U2F and CTAPHID without a PIN", flush=True)
            session_without_pin(key, made)
            print("session: with a PIN", flush=True)
            session_with_pin(key, made)
            print("session: latchkey CLI clients", flush=True)
            session_cli(key, binary, work)
            print("session: raw CTAPHID", flush=True)
            session_raw(key)
            print("session: reset", flush=True)
            session_reset(key)
        finally:
            key.stop()
        control_lines = capture_control_lines(binary, work)

        raw, header, records, sorted_lines = read_trace(key.trace_path)
        header_line = raw.split(b"\n", 1)[0]
        messages = reassemble(records)
        pairs = pair(messages)
        print(f"trace: {len(records)} records, {len(messages)} messages, {len(pairs)} requests", flush=True)

        requests = []       # (CTAP command, parameters) in order
        cbor_items = []
        apdus = []
        for request, response in pairs:
            if request.command == CTAPHID.CBOR and request.payload:
                command, params = request.payload[0], request.payload[1:]
                requests.append((command, params))
                if params:
                    # Parameters that are not one whole CBOR map (hand-made above) get a group of
                    # their own, so the cap never drops them.
                    try:
                        value, rest = cbor.decode_from(params)
                        shape = "request" if isinstance(value, dict) and not rest else "malformed"
                    except Exception:  # noqa: BLE001 - any decoding failure
                        shape = "malformed"
                    cbor_items.append((f"{shape} {command:02x}", params))
                if response and len(response.payload) > 1 and response.payload[0] == 0:
                    cbor_items.append((f"response {command:02x}", response.payload[1:]))
            elif request.command == CTAPHID.MSG:
                apdus.append(request.payload)

        total = write_corpus("FuzzCBOR", cbor_items)
        for target in FAMILY_TARGETS:
            total += write_corpus(target, family_seeds(target, requests))
        total += write_corpus("FuzzU2F", u2f_seeds(apdus))
        total += write_corpus("FuzzCTAPHID", ctaphid_seeds(records, messages, pairs))
        total += write_corpus("FuzzUHIDEvent", uhid_seeds(records, messages))
        total += write_corpus("FuzzTrace", trace_seeds(raw, header_line, sorted_lines, records))
        total += write_corpus("FuzzControl", control_seeds(control_lines))
        total += write_corpus("FuzzRig", rig_seeds())
        total += write_corpus("FuzzSignalBridge", signal_bridge_seeds())
        total += write_corpus("FuzzDeflate", deflate_seeds())
        total += write_corpus("FuzzImport", import_seeds(binary, work))
        print(f"{'total':26}            {total:9} bytes")
        if ODDITIES:
            print(f"\n{len(ODDITIES)} unexpected outcomes:")
            for text in ODDITIES:
                print("  - " + text)
    finally:
        if os.environ.get("LATCHKEY_CORPUS_KEEP"):
            print(f"kept {work} (trace, key log)")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
