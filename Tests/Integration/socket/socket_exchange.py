"""Socket suite: passkeys that move (`latchkey export` and `import`). A key made with `serve --counter
zero` exports its passkeys as CXF 1.0, encrypted to another key's X25519 key (HPKE) or with a
passphrase; a fresh store imports them, and its key signs for every one (Fido2Server verifies with the
public key registered on the first key), with the same hmac-secret (PRF) outputs, credBlob, large blob,
names and user handles, and counters that stay 0. Counting credentials stay behind, named on stderr.
Hand-written CXF, Bitwarden and KeePassXC fixtures import and sign; refusals (wrong passphrase, wrong
key, a cut or altered file, an unsupported version, a bad key among good ones, conflicts) leave the
store exactly as it was."""

import base64
import copy

from fido2.utils import websafe_decode

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports
from exchange_fixtures import attested, bitwarden_fixture, fixture_key, hand_written_cxf, keepassxc_fixture

RP = "moving.example"
BLOB = b"the large blob that moves with its passkey " * 8
PRF_SALT = hashlib.sha256(b"prf salt that moves").digest()


# Secrets the checks use (passphrases, PINs, private keys as files hold them): no CLI output may
# carry one, whatever the command and however it ends.
SECRETS = {CTAP21_PIN}


def cli(*args, env=None, pin=None):
    environment = dict(os.environ)
    environment.pop("LATCHKEY_PIN", None)
    if pin is not None:
        environment["LATCHKEY_PIN"] = pin
    environment.update(env or {})
    result = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=environment)
    leaked = [secret for secret in SECRETS if secret and (secret in result.stdout or secret in result.stderr)]
    assert not leaked, f"latchkey {' '.join(args[:2])} printed a secret ({len(leaked)} of them)"
    return result


def private_file(name, text):
    SECRETS.add(text.strip())
    path = os.path.join(WORK, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
        handle.write(text)
    return path


def listed(store):
    result = cli("credentials", "list", "--store", store, "--all", "--json")
    assert result.returncode == 0, result.stderr
    return {entry["credentialId"]: entry for entry in json.loads(result.stdout)["credentials"]}


def store_fingerprint(store):
    """What the store holds, as the CLI lists it (every field), to show a refusal changed nothing."""
    return json.dumps(listed(store), sort_keys=True)


def pin_client(device, origin):
    return Fido2Client(device, client_data_collector=DefaultClientDataCollector(origin),
                       user_interaction=Ctap21PinInteraction(CTAP21_PIN))


def sign_in(device, server, credential, extensions=None, origin=f"https://{RP}", pin=True):
    """A sign-in with allowCredentials [credential], verified by `server` with the registered public key."""
    client = pin_client(device, origin) if pin else client_for(device, origin)
    verification = UserVerificationRequirement.PREFERRED if pin else UserVerificationRequirement.DISCOURAGED
    request, state = server.authenticate_begin([credential], user_verification=verification)
    public_key = dict(request.public_key)
    if extensions:
        public_key["extensions"] = extensions
    response = client.get_assertion(public_key).get_response(0)
    server.authenticate_complete(state, [credential], response)
    return response


def export_round_trip(source):
    """On `source` (counting first, then --counter zero, PIN set): an old counting passkey, alice's passkey
    with PRF (Fido2Client), bob's with credBlob and a large blob (Ctap2). Returns what B must reproduce."""
    ctap, client_pin = ctap21_session(source)
    client_pin.set_pin(CTAP21_PIN)
    old_id = bytes(ctap21_make_resident(ctap, client_pin, {"id": "old.example", "name": "Old"},
                                        {"id": b"old-user", "name": "old"})[0].auth_data.credential_data.credential_id)
    source.stop()
    source.extra = ["--counter", "zero"]
    source.start()

    device = source.device()
    server = server_for(rp_id=RP)
    options, state = server.register_begin({"id": b"alice-handle", "name": "alice", "displayName": "Alice Liddell"},
                                           resident_key_requirement=ResidentKeyRequirement.REQUIRED,
                                           user_verification=UserVerificationRequirement.REQUIRED)
    public_key = dict(options.public_key)
    public_key["extensions"] = {"prf": {"eval": {"first": PRF_SALT}}}
    registration = pin_client(device, f"https://{RP}").make_credential(public_key)
    alice = server.register_complete(state, registration).credential_data
    assert registration.response.attestation_object.auth_data.counter == 0, "counterless from its first signature"
    prf_at_a = registration.client_extension_results["prf"]["results"]["first"]
    assertion = sign_in(device, server, alice, {"prf": {"eval": {"first": PRF_SALT}}})
    assert assertion.response.authenticator_data.counter == 0
    assert assertion.client_extension_results["prf"]["results"]["first"] == prf_at_a
    device.close()

    ctap, client_pin = ctap21_session(source)
    attestation, token = ctap21_make_resident(
        ctap, client_pin, {"id": RP, "name": "Moving"}, {"id": b"bob-handle", "name": "bob", "displayName": "Bob"},
        extensions={"credBlob": b"bob's credBlob", "largeBlobKey": True},
        permissions=ClientPin.PERMISSION.MAKE_CREDENTIAL | ClientPin.PERMISSION.LARGE_BLOB_WRITE)
    bob_id = bytes(attestation.auth_data.credential_data.credential_id)
    LargeBlobs(ctap, client_pin.protocol, token).put_blob(attestation.large_blob_key, BLOB)
    return server, alice, prf_at_a, bob_id, old_id


def assertion_for(ctap, rp_id, credential_id, extensions):
    return ctap.get_assertion(rp_id, os.urandom(32), [{"type": "public-key", "id": credential_id}], extensions=extensions)


@check("export → import round trip: serve --counter zero makes counterless passkeys (signCount 0, verified by Fido2Server), an "
       "older counting one stays behind and is named on stderr; export needs the PIN (none → refused, wrong → a retry spent); "
       "encrypted to `import --new-key`'s key (HPKE), imported onto a new store, whose key signs for both passkeys with the "
       "first key's public keys (Fido2Server), the same PRF output, credBlob and large blob, names and user handles, counter 0 "
       "after signing; importing again: conflict (exit 1, nothing changed), --skip-existing, --replace")
def test_exchange_round_trip():
    source = Key("export-a", extra=["--counter", "counting"]).start()
    target = Key("import-b", store=os.path.join(WORK, "import-b-store"))
    try:
        server, alice, prf_at_a, bob_id, old_id = export_round_trip(source)
        assert listed(source.store)[b64url(alice.credential_id)]["signatureCounter"] == "zero"
        assert listed(source.store)[b64url(old_id)]["signatureCounter"] == "counting"

        key_path = os.path.join(WORK, "receiver.key")
        made = cli("import", "--new-key", key_path)
        assert made.returncode == 0, made.stderr
        assert stat.S_IMODE(os.stat(key_path).st_mode) == 0o600
        assert open(key_path + ".pub").read().startswith("-----BEGIN PUBLIC KEY-----")

        out = os.path.join(WORK, "moving.lkx")
        no_pin = cli("export", "--store", source.store, "--to", key_path + ".pub", "--out", out)
        assert no_pin.returncode != 0 and "PIN" in no_pin.stderr and not os.path.exists(out), no_pin.stderr
        wrong = cli("export", "--store", source.store, "--to", key_path + ".pub", "--out", out, pin="87654321")
        assert wrong.returncode == 1 and "wrong PIN; 7 retries left" in wrong.stderr and not os.path.exists(out), wrong.stderr
        exported = cli("export", "--store", source.store, "--to", key_path + ".pub", "--out", out, pin=CTAP21_PIN)
        assert exported.returncode == 0, exported.stderr
        assert "Exported 2 passkey(s)" in exported.stdout, exported.stdout
        assert f"not exported: old.example {b64url(old_id)}: a counting signature counter" in exported.stderr, exported.stderr
        assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
        envelope = json.loads(open(out).read())
        assert envelope["method"] == "hpke" and envelope["contents"] == "cxf", envelope.keys()
        assert b"alice" not in open(out, "rb").read(), "encrypted: no name in the clear"
        # The PIN's retries were restored by the right PIN.
        assert ClientPin(Ctap2(source.device())).get_pin_retries()[0] == 8

        imported = cli("import", out, "--store", target.store, "--key", key_path)
        assert imported.returncode == 0, imported.stdout + imported.stderr
        assert "Imported 2 passkey(s)" in imported.stdout, imported.stdout
        moved = listed(target.store)
        assert set(moved) == {b64url(alice.credential_id), b64url(bob_id)}, moved.keys()
        assert moved[b64url(alice.credential_id)]["userName"] == "alice"
        assert moved[b64url(alice.credential_id)]["userDisplayName"] == "Alice Liddell"
        assert moved[b64url(alice.credential_id)]["userHandle"] == b64url(b"alice-handle")
        assert moved[b64url(bob_id)]["userHandle"] == b64url(b"bob-handle")
        assert all(entry["signatureCounter"] == "zero" for entry in moved.values()), moved

        target.start()
        # With UV on both keys (a PIN here too), so the PRF uses the same CredRandom (CTAP 2.1 §12.5).
        ClientPin(Ctap2(target.device())).set_pin(CTAP21_PIN)
        device = target.device()
        for _ in range(2):
            response = sign_in(device, server, alice, {"prf": {"eval": {"first": PRF_SALT}}})
            assert response.response.authenticator_data.counter == 0, "counterless on B, and never counting"
            assert response.client_extension_results["prf"]["results"]["first"] == prf_at_a, "same salt, same PRF output"
        device.close()
        ctap = Ctap2(target.device())
        bob = assertion_for(ctap, RP, bob_id, {"credBlob": True, "largeBlobKey": True})   # no UV: credProtect 1
        assert (bob.auth_data.extensions or {}).get("credBlob") == b"bob's credBlob", bob.auth_data.extensions
        assert LargeBlobs(ctap).get_blob(bob.large_blob_key) == BLOB
        assert bob.auth_data.counter == 0
        target.stop()

        before = store_fingerprint(target.store)
        again = cli("import", out, "--store", target.store, "--key", key_path)
        assert again.returncode == 1 and "conflict" in again.stdout and "--replace" in again.stdout, again.stdout
        assert store_fingerprint(target.store) == before
        skipped = cli("import", out, "--store", target.store, "--key", key_path, "--skip-existing")
        assert skipped.returncode == 0 and skipped.stdout.count("skipped:") == 2, skipped.stdout
        replaced = cli("import", out, "--store", target.store, "--key", key_path, "--replace", "--json")
        assert replaced.returncode == 0, replaced.stdout + replaced.stderr
        assert [p["status"] for p in json.loads(replaced.stdout)["passkeys"]] == ["replaced", "replaced"], replaced.stdout
        assert set(listed(target.store)) == set(moved)
    finally:
        source.stop()
        if target.process:
            target.stop()


@check("export/import refusals leave the store exactly as it was: a wrong passphrase, a file encrypted to another key, "
       "one cut short, one altered, CXF version 2, a file with a good passkey and one whose P-256 scalar is out of range "
       "(nothing imported), an unknown format; --plaintext needs --out on a terminal-less run too when asked; each error names "
       "what is wrong")
def test_exchange_refusals():
    source = Key("refusals-a", extra=["--counter", "zero"])
    source.start()
    store = os.path.join(WORK, "refusals-b-store")
    try:
        ctap = Ctap2(source.device())
        make_resident(ctap, RP, b"carol-handle", "carol")
        passphrase = private_file("export-passphrase", "correct horse battery staple\n")
        out = os.path.join(WORK, "refusals.lkx")
        exported = cli("export", "--store", source.store, "--passphrase-file", passphrase, "--scrypt-log-n", "12", "--out", out)
        assert exported.returncode == 0, exported.stderr
        seed = cli("import", out, "--store", store, "--passphrase-file", passphrase)
        assert seed.returncode == 0, seed.stdout + seed.stderr
        # A second, different passkey in the source, for the refused imports to (not) bring.
        make_resident(ctap, RP, b"dave-handle", "dave")
        exported = cli("export", "--store", source.store, "--passphrase-file", passphrase, "--scrypt-log-n", "12", "--out", out)
        assert exported.returncode == 0, exported.stderr
        before = store_fingerprint(store)

        def refused(path, *extra, says):
            result = cli("import", path, "--store", store, "--skip-existing", *extra)
            assert result.returncode != 0, f"{path}: imported: {result.stdout}"
            assert says in result.stdout + result.stderr, f"{path}: {result.stdout} {result.stderr}"
            assert store_fingerprint(store) == before, f"{path}: the store changed"

        refused(out, "--passphrase-file", private_file("wrong-passphrase", "not the passphrase\n"),
                says="wrong passphrase, or the file was altered")
        other_key = os.path.join(WORK, "other.key")
        assert cli("import", "--new-key", other_key).returncode == 0
        to_key = os.path.join(WORK, "to-key.lkx")
        third_key = os.path.join(WORK, "third.key")
        assert cli("import", "--new-key", third_key).returncode == 0
        assert cli("export", "--store", source.store, "--to", third_key + ".pub", "--out", to_key).returncode == 0
        refused(to_key, "--key", other_key, says="encrypted to another key")

        text = open(out).read()
        cut = private_file("cut.lkx", text[: len(text) // 2])
        refused(cut, "--passphrase-file", passphrase, says="not JSON")
        envelope = json.loads(text)
        ciphertext = bytearray(websafe_decode(envelope["ciphertext"]))
        ciphertext[len(ciphertext) // 2] ^= 0x01
        envelope["ciphertext"] = b64url(bytes(ciphertext))
        altered = private_file("altered.lkx", json.dumps(envelope))
        refused(altered, "--passphrase-file", passphrase, says="wrong passphrase, or the file was altered")
        envelope = json.loads(text)
        envelope["kdf"]["logN"] = 10   # a weaker cost is part of the authenticated header
        weakened = private_file("weakened.lkx", json.dumps(envelope))
        refused(weakened, "--passphrase-file", passphrase, says="wrong passphrase, or the file was altered")

        document = hand_written_cxf()
        document["version"] = {"major": 2, "minor": 0}
        refused(private_file("v2.json", json.dumps(document)), says="CXF version 2.0")

        document = hand_written_cxf()
        bad = copy.deepcopy(document["accounts"][0]["items"][0])
        bad["id"] = b64url(b"bad-item")
        der = bytearray(websafe_decode(bad["credentials"][0]["key"]))
        scalar_at = der.index(bytes([0x04, 0x20])) + 2   # the ECPrivateKey's OCTET STRING
        der[scalar_at:scalar_at + 32] = b"\xff" * 32      # above the group order
        bad["credentials"][0]["key"] = b64url(bytes(der))
        bad["credentials"][0]["credentialId"] = b64url(b"bad-credential")
        bad["credentials"][0]["userHandle"] = b64url(b"bad-user")
        document["accounts"][0]["items"].append(bad)
        refused(private_file("bad-key.json", json.dumps(document)), says="EC private scalar outside [1, n-1]")
        refused(private_file("unknown.json", json.dumps({"hello": "world"})), says="not a CXF document")
        refused(private_file("empty.json", ""), says="the file is empty")

        plain = cli("export", "--store", source.store, "--plaintext", "--passphrase-file", passphrase)
        assert plain.returncode == 64 and "one of --to, --passphrase-file and --plaintext" in plain.stderr, plain.stderr
        none = cli("export", "--store", source.store)
        assert none.returncode == 64 and "say how to encrypt" in none.stderr, none.stderr
    finally:
        source.stop()


@check("backup → restore: a running counting key with a PIN, resident and non-resident credentials and a large blob, backed up "
       "(PIN asked; passphrase); the restored store's key signs for both credentials (the wrapping key moved) with counters above "
       "the old key's last, keeps the PIN, its retries and the large blob, lists the same credentials; restore refuses a store "
       "that is not empty and a wrong passphrase (nothing written); import refuses a backup and names restore")
def test_backup_restore():
    source = Key("backup-a")
    source.start()
    target_store = os.path.join(WORK, "restored-store")
    target = Key("backup-b", store=target_store)
    try:
        ctap, client_pin = ctap21_session(source)
        client_pin.set_pin(CTAP21_PIN)
        attestation, token = ctap21_make_resident(
            ctap, client_pin, {"id": RP, "name": "Moving"}, {"id": b"erin-handle", "name": "erin"},
            extensions={"largeBlobKey": True},
            permissions=ClientPin.PERMISSION.MAKE_CREDENTIAL | ClientPin.PERMISSION.LARGE_BLOB_WRITE)
        resident_id = bytes(attestation.auth_data.credential_data.credential_id)
        LargeBlobs(ctap, client_pin.protocol, token).put_blob(attestation.large_blob_key, BLOB)
        mc_token = client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.MAKE_CREDENTIAL, RP)
        client_data_hash = os.urandom(32)
        plain = ctap.make_credential(client_data_hash, {"id": RP, "name": "Moving"}, {"id": b"x", "name": "x"},
                                     [{"type": "public-key", "alg": -7}],
                                     pin_uv_param=client_pin.protocol.authenticate(mc_token, client_data_hash),
                                     pin_uv_protocol=client_pin.protocol.VERSION)
        plain_id = bytes(plain.auth_data.credential_data.credential_id)
        last = {credential_id: max(assertion_for(ctap, RP, credential_id, None).auth_data.counter for _ in range(3))
                for credential_id in (resident_id, plain_id)}
        passphrase = private_file("backup-passphrase", "a backup passphrase\n")
        out = os.path.join(WORK, "key.backup")
        no_pin = cli("backup", "--store", source.store, "--passphrase-file", passphrase, "--out", out)
        assert no_pin.returncode != 0 and not os.path.exists(out), no_pin.stderr
        made = cli("backup", "--store", source.store, "--passphrase-file", passphrase, "--scrypt-log-n", "12", "--out", out,
                   pin=CTAP21_PIN)
        assert made.returncode == 0 and "1 resident credential(s)" in made.stdout, made.stdout + made.stderr
        source.stop()

        wrong = cli("restore", out, "--store", target_store, "--passphrase-file", private_file("bad-backup-passphrase", "nope\n"))
        assert wrong.returncode == 1 and "wrong passphrase" in wrong.stderr and not os.path.exists(target_store), wrong.stderr
        busy = cli("restore", out, "--store", source.store, "--passphrase-file", passphrase)
        assert busy.returncode == 1 and "is not empty" in busy.stderr, busy.stderr
        imported = cli("import", out, "--store", target_store, "--passphrase-file", passphrase)
        assert imported.returncode == 1 and "latchkey restore" in imported.stderr, imported.stderr
        assert not os.path.exists(os.path.join(target_store, "credentials.sqlite")) or listed(target_store) == {}
        if os.path.isdir(target_store):
            import shutil
            shutil.rmtree(target_store)
        restored = cli("restore", out, "--store", target_store, "--passphrase-file", passphrase)
        assert restored.returncode == 0 and "1 resident credential(s)" in restored.stdout, restored.stdout + restored.stderr
        assert set(listed(target_store)) == {b64url(resident_id)}

        target.start()
        ctap, client_pin = ctap21_session(target)
        assert client_pin.get_pin_retries()[0] == 8, "the PIN and its retries moved"
        for credential_id in (resident_id, plain_id):
            counter = assertion_for(ctap, RP, credential_id, None).auth_data.counter
            assert counter > last[credential_id], (credential_id, counter, last[credential_id])
        blob_key = assertion_for(ctap, RP, resident_id, {"largeBlobKey": True}).large_blob_key
        assert LargeBlobs(ctap).get_blob(blob_key) == BLOB
        client_pin.get_pin_token(CTAP21_PIN, ClientPin.PERMISSION.CREDENTIAL_MGMT)   # the same PIN opens it
    finally:
        source.stop()
        if target.process:
            target.stop()


# --- fixtures in other managers' formats ------------------------------------------------------

@check("imports from other managers, each signing afterwards (Fido2Server with the fixture's public key, signCount 0): a "
       "hand-written CXF 1.0 document (padding, unknown members; a TOTP and a password skipped and counted), Bitwarden's JSON "
       "(GUID credential ID → its 16 bytes, counter \"5\" → 0; a note and a password-only login skipped), KeePassXC's .passkey "
       "(PEM); --dry-run stores nothing; the store is created by the import")
def test_exchange_fixtures():
    key = Key("fixtures", store=os.path.join(WORK, "fixtures-store"))
    for name in ("cxf", "bitwarden", "keepassxc"):
        _, der = fixture_key(name)
        SECRETS.update({b64url(der), base64.b64encode(der).decode(), base64.urlsafe_b64encode(der).decode()})
    try:
        cxf = private_file("fixture.cxf.json", json.dumps(hand_written_cxf()))
        dry = cli("import", cxf, "--store", key.store, "--dry-run")
        assert dry.returncode == 0 and "would be imported" in dry.stdout, dry.stdout + dry.stderr
        assert not os.path.exists(key.store), "a dry run stores nothing, not even a new store"
        result = cli("import", cxf, "--store", key.store, "--json")
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert report["format"] == "CXF 1.0" and report["skippedItems"] == {"basic-auth": 1, "totp": 1}, report
        result = cli("import", private_file("fixture.bitwarden.json", json.dumps(bitwarden_fixture())), "--store", key.store, "--json")
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert report["format"] == "Bitwarden JSON", report
        assert report["skippedItems"] == {"login without a passkey": 1, "secure note": 1}, report
        result = cli("import", private_file("grace.passkey", json.dumps(keepassxc_fixture())), "--store", key.store)
        assert result.returncode == 0 and "KeePassXC passkey" in result.stdout, result.stdout + result.stderr

        entries = listed(key.store)
        bitwarden_id = bytes.fromhex("7b1f5c2e3a444d6e9f1021a2b3c4d5e6")
        assert set(entries) == {b64url(b"cxf-credential-id"), b64url(bitwarden_id), b64url(b"keepassxc-credential")}, entries
        assert entries[b64url(bitwarden_id)]["rpName"] == "BW Example"

        key.start()
        for rp_id, credential_id, name in (("cxf.example", b"cxf-credential-id", "cxf"), ("bw.example", bitwarden_id, "bitwarden"),
                                           ("kp.example", b"keepassxc-credential", "keepassxc")):
            private, _ = fixture_key(name)
            server = server_for(rp_id=rp_id)
            device = key.device()
            try:
                response = sign_in(device, server, attested(credential_id, private), origin=f"https://{rp_id}", pin=False)
            finally:
                device.close()
            assert response.response.authenticator_data.counter == 0, rp_id
    finally:
        if key.process:
            key.stop()


def test_exchange():
    """The export/import checks, each on keys of its own."""
    test_exchange_round_trip()
    test_exchange_refusals()
    test_exchange_fixtures()
    test_backup_restore()
