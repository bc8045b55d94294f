"""Passkey files in other managers' formats, written from their published field names, with
fresh P-256 keys: a hand-written CXF 1.0 document, a Bitwarden JSON export and a KeePassXC
`.passkey` file. Shared by the socket suite (socket_exchange.py) and the fuzz corpus
(Fuzz/make-corpus.py)."""

import base64

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from fido2.cose import CoseKey
from fido2.webauthn import Aaguid, AttestedCredentialData


def b64url(data):
    return base64.urlsafe_b64encode(bytes(data)).rstrip(b"=").decode()


def p256_key():
    private = ec.generate_private_key(ec.SECP256R1())
    der = private.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return private, der


def attested(credential_id, private):
    return AttestedCredentialData.create(Aaguid(bytes(16)), credential_id, CoseKey.for_name("ES256").from_cryptography_key(
        private.public_key()))


FIXTURE_KEYS = {}


def fixture_key(name):
    if name not in FIXTURE_KEYS:
        FIXTURE_KEYS[name] = p256_key()
    return FIXTURE_KEYS[name]


def hand_written_cxf():
    """A CXF 1.0 document written by hand from the published field names: one passkey, a password and
    a TOTP beside it (skipped and counted), members this reader does not know (ignored), padded base64url."""
    _, der = fixture_key("cxf")
    padded = base64.urlsafe_b64encode(der).decode()   # with '=' padding: readers tolerate it
    return {
        "version": {"major": 1, "minor": 0},
        "exporterRpId": "exporter.example",
        "exporterDisplayName": "A password manager",
        "timestamp": 1764547200,
        "accounts": [{
            "id": b64url(b"account-1"), "username": "erin", "email": "erin@example.com", "fullName": "Erin",
            "collections": [],
            "items": [
                {"id": b64url(b"item-1"), "creationAt": 1764547200, "modifiedAt": 1764547200, "title": "CXF Example",
                 "favorite": True, "scope": {"urls": ["https://cxf.example"], "androidApps": []},
                 "credentials": [{"type": "passkey", "credentialId": b64url(b"cxf-credential-id"), "rpId": "cxf.example",
                                  "username": "erin", "userDisplayName": "Erin E.", "userHandle": b64url(b"erin-handle"),
                                  "key": padded, "futureMember": {"anything": 1}},
                                 {"type": "totp", "secret": "JBSWY3DPEHPK3PXP", "period": 30, "digits": 6,
                                  "algorithm": "sha1", "username": "erin"}]},
                {"id": b64url(b"item-2"), "creationAt": 1764547200, "modifiedAt": 1764547200, "title": "A site",
                 "credentials": [{"type": "basic-auth", "username": {"fieldType": "string", "value": "erin"},
                                  "password": {"fieldType": "concealed-string", "value": "hunter2"}}]},
            ],
        }],
    }


def bitwarden_fixture():
    _, der = fixture_key("bitwarden")
    return {
        "encrypted": False, "folders": [],
        "items": [
            {"id": "0b5e4d5e-0000-4000-8000-000000000001", "type": 1, "name": "Bitwarden Example",
             "login": {"username": "frank", "password": "hunter2", "uris": [{"uri": "https://bw.example"}],
                       "fido2Credentials": [{
                           "credentialId": "7b1f5c2e-3a44-4d6e-9f10-21a2b3c4d5e6", "keyType": "public-key",
                           "keyAlgorithm": "ECDSA", "keyCurve": "P-256", "keyValue": b64url(der), "rpId": "bw.example",
                           "userHandle": b64url(b"frank-handle"), "userName": "frank", "counter": "5",
                           "rpName": "BW Example", "userDisplayName": "Frank", "discoverable": "true",
                           "creationDate": "2025-11-30T12:00:00.000Z"}]}},
            {"id": "0b5e4d5e-0000-4000-8000-000000000002", "type": 2, "name": "A note", "notes": "not a passkey"},
            {"id": "0b5e4d5e-0000-4000-8000-000000000003", "type": 1, "name": "Password only",
             "login": {"username": "frank", "password": "hunter2"}},
        ],
    }


def keepassxc_fixture():
    private, _ = fixture_key("keepassxc")
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return {"relyingParty": "kp.example", "url": "https://kp.example/login", "username": "grace",
            "credentialId": b64url(b"keepassxc-credential"), "userHandle": b64url(b"grace-handle"), "privateKey": pem}
