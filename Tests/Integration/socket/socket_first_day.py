"""Socket suite: the first day's bugs of a package user (issue 44), each against the real binary
and store as that user types the commands: backup and export of a store with a PIN, a dry run
that writes nothing, the PIN variables latchkey(1) names, a passphrase file others can read, a
short passphrase, and IDs typed to `signal all-accepted`."""

import shutil
import sys

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports


def private_file(name, text):
    path = os.path.join(WORK, name)
    with open(path, "w") as handle:
        handle.write(text)
    os.chmod(path, 0o600)
    return path


def cli(*args, env=None):
    """The binary as a user runs it, with no terminal (so nothing can be asked)."""
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          start_new_session=True, env={**os.environ, **(env or {})})


@check("first day: backup and export of a store whose key has a PIN take --pin-file, as their help says "
       "(a wrong PIN costs a retry and writes nothing); pin set reads LATCHKEY_NEW_PIN, as latchkey(1) says; restore "
       "into a store that is not empty says so before asking for a passphrase")
def check_store_pin_file():
    key = Key("day-pin").start()
    try:
        make_resident(Ctap2(key.device()), "day.example", b"day-handle", "day")
    finally:
        key.stop()
    env = {k: v for k, v in os.environ.items() if k not in ("LATCHKEY_PIN", "LATCHKEY_NEW_PIN")}
    set_pin = subprocess.run([BINARY, "pin", "set", "--store", key.store, "--json"], capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL, start_new_session=True,
                             env={**env, "LATCHKEY_NEW_PIN": "135790"})
    assert set_pin.returncode == 0 and json.loads(set_pin.stdout)["pinSet"] is True, (set_pin.stdout, set_pin.stderr)
    pin = private_file("day-pin.txt", "135790\n")
    wrong = private_file("day-wrong-pin.txt", "000000\n")
    passphrase = private_file("day-export-passphrase.txt", "a long enough passphrase\n")
    out = os.path.join(WORK, "day.backup")
    refused = cli("backup", "--store", key.store, "--out", out, "--passphrase-file", passphrase, "--pin-file", wrong,
                  "--scrypt-log-n", "10")
    assert refused.returncode == 1 and "wrong PIN" in refused.stderr and not os.path.exists(out), refused.stderr
    done = cli("backup", "--store", key.store, "--out", out, "--passphrase-file", passphrase, "--pin-file", pin,
               "--scrypt-log-n", "10", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["residentCredentials"] == 1 and os.path.getsize(out) > 0, done.stdout
    # restore into a store that is not empty says so before asking for the passphrase (and
    # before scrypt spends its second on it): no passphrase is given here at all.
    into_full = cli("restore", out, "--store", key.store)
    assert into_full.returncode == 1 and "is not empty" in into_full.stderr, into_full.stderr
    status = json.loads(cli("pin", "status", "--store", key.store, "--json").stdout)
    assert status["retries"] == 8, f"the right PIN did not restore the retries: {status}"
    exported = cli("export", "--store", key.store, "--out", os.path.join(WORK, "day.lkx"), "--passphrase-file", passphrase,
                   "--pin-file", pin, "--scrypt-log-n", "10")
    # The passkey counts signatures, so there is nothing to export — but the PIN was taken.
    assert "needs no PIN" not in exported.stderr and "--pin-file is for a device" not in exported.stderr, exported.stderr
    assert exported.returncode == 1 and "nothing to export" in exported.stderr, exported.stderr


@check("first day: import --dry-run into a --name that has no store yet creates nothing (no directory, no master "
       "key) and says what would be imported")
def check_dry_run_writes_nothing():
    home = tempfile.mkdtemp(prefix="day-home-", dir=WORK)
    data = os.path.join(home, "data")
    source = Key("day-source", extra=["--counter", "zero"]).start()  # passkeys that count nothing: export moves them
    try:
        make_resident(Ctap2(source.device()), "dry.example", b"dry-handle", "dry")
    finally:
        source.stop()
    passphrase = private_file("day-dry-passphrase.txt", "a long enough passphrase\n")
    exported = os.path.join(WORK, "day-dry.lkx")
    made = cli("export", "--store", source.store, "--out", exported, "--passphrase-file", passphrase, "--scrypt-log-n", "10")
    assert made.returncode == 0, f"could not make an export to import: {made.stderr}"
    dry = cli("import", exported, "--name", "fresh", "--passphrase-file", passphrase, "--dry-run",
              env={"XDG_DATA_HOME": data})
    assert dry.returncode == 0, dry.stderr
    assert not os.path.exists(os.path.join(data, "latchkey", "fresh")), \
        f"--dry-run made {os.listdir(os.path.join(data, 'latchkey'))} under {data}"
    assert "Dry run: 1 passkey(s) would be imported" in dry.stdout and "nothing was stored" in dry.stdout, dry.stdout


@check("first day: a store sealed with a passphrase, opened with LATCHKEY_PASSPHRASE_FILE naming a mode-644 file: "
       "one error, the chmod (not also 'none was given'); with none, the error names what this command takes; "
       "a passphrase file of 3 bytes is warned about")
def check_passphrase_errors():
    key = Key("day-sealed").start()
    key.stop()
    good = private_file("day-passphrase.txt", "correct horse battery\n")
    sealed = cli("store", "seal", "--store", key.store, "--passphrase", "--passphrase-file", good, "--scrypt-log-n", "10")
    assert sealed.returncode == 0, sealed.stderr
    open_file = os.path.join(WORK, "day-passphrase-644.txt")
    shutil.copy(good, open_file)
    os.chmod(open_file, 0o644)
    env = {"LATCHKEY_PASSPHRASE_FILE": open_file}
    listed = cli("credentials", "list", "--store", key.store, env=env)
    errors = [line for line in listed.stderr.splitlines() if line.startswith("Error:")]
    assert listed.returncode == 1 and len(errors) == 1, listed.stderr
    assert "chmod 600" in errors[0] and "none was given" not in errors[0], errors
    none = cli("credentials", "list", "--store", key.store, env={"LATCHKEY_PASSPHRASE_FILE": ""})
    assert none.returncode == 1 and "LATCHKEY_PASSPHRASE_FILE=FILE" in none.stderr, none.stderr
    assert "pass --passphrase-file" not in none.stderr, "it tells the user to pass an option credentials list refuses"
    opened = cli("credentials", "list", "--store", key.store, env={"LATCHKEY_PASSPHRASE_FILE": good})
    assert opened.returncode == 0, opened.stderr
    short = private_file("day-short.txt", "abc\n")
    resealed = cli("store", "seal", "--store", key.store, "--passphrase", "--passphrase-file", short, "--scrypt-log-n", "10",
                   "--current-passphrase-file", good)
    assert resealed.returncode == 0, resealed.stderr
    assert "Warning: the passphrase in " + short + " has 3 bytes" in resealed.stderr, resealed.stderr


@check("first day: signal all-accepted with the 6-character ID prefix `credentials list` shows keeps that passkey "
       "(it used to hide it as an unknown ID); a typed ID of nobody's is an error and hides nothing")
def check_all_accepted_prefix():
    key = Key("day-signal").start()
    try:
        ctap = Ctap2(key.device())
        kept = make_resident(ctap, "accept.example", b"accept-handle", "accept")
        prefix = b64url(kept)[:6]
        typo = latchkey_cli("signal", "all-accepted", "--store", key.store, "--rp", "accept.example", "--user-handle",
                            b64url(b"accept-handle"), "AAAAAAAAAA")
        assert typo.returncode == 1 and "names none of" in typo.stderr, typo.stderr
        done = latchkey_cli("signal", "all-accepted", "--store", key.store, "--rp", "accept.example", "--user-handle",
                            b64url(b"accept-handle"), "--json", prefix)
        assert done.returncode == 0 and json.loads(done.stdout)["hidden"] == 0, done.stdout + done.stderr
        assert offered_ids(ctap, "accept.example") == {kept}, "the passkey the user listed is no longer offered"
    finally:
        key.stop()


@check("first day: under --json every reporting command's error is a JSON document on stdout too "
       "({\"error\": {\"code\", \"message\"}}), with the exit status unchanged (1 failure, 64 usage)")
def check_json_errors():
    missing = os.path.join(WORK, "no-such-store")
    failing = [
        (1, ["credentials", "list", "--store", missing]), (1, ["pin", "status", "--store", missing]),
        (1, ["store", "status", "--store", missing]), (1, ["signal", "log", "--store", missing]),
        (1, ["signal", "unknown", "--rp", "a.example", "--store", missing, "abcdefgh"]),
        (1, ["export", "--store", missing, "--plaintext", "--out", os.path.join(WORK, "never.lkx")]),
        (1, ["trace", os.path.join(WORK, "no-such.trace")]), (1, ["replay", os.path.join(WORK, "no-such.trace")]),
        (1, ["import", os.path.join(WORK, "no-such.lkx"), "--store", missing]),
        (1, ["restore", os.path.join(WORK, "no-such.backup"), "--store", missing]),
        (1, ["presence", "status", "--name", "no-such-key"]),
        (64, ["credentials", "frobnicate"]), (64, ["devices", "--bogus"]), (64, ["backup"]),
    ]
    for status, args in failing:
        result = cli(*args, "--json")
        assert result.returncode == status, (args, result.returncode, result.stderr)
        try:
            document = json.loads(result.stdout)
        except ValueError:
            raise AssertionError(f"latchkey {' '.join(args)} --json: stdout is not JSON: {result.stdout!r}") from None
        error = document.get("error")
        assert isinstance(error, dict) and error.get("code") == ("usage" if status == 64 else "failure") \
            and error.get("message") and result.stderr.startswith("Error: " + error["message"]), (args, document, result.stderr)
    plain = cli("credentials", "list", "--store", missing)
    assert plain.returncode == 1 and plain.stdout == "", "without --json an error is on stderr alone"


def doc_block(path, marker):
    """The fenced code block of `path` (under the checkout's docs) that contains `marker`."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    with open(os.path.join(root, path)) as handle:
        text = handle.read()
    blocks = text.split("```")
    found = [block.split("\n", 1)[1] for block in blocks[1::2] if marker in block]
    assert len(found) == 1, f"{path}: {len(found)} code blocks hold {marker!r}"
    return root, found[0]


@check("first day: docs/rig-protocol.md's pytest fixture, copied as it is, runs a test on a machine without "
       "uhid (the socket transport) and leaves no directory behind; the README's python-fido2 snippet works as written")
def check_doc_snippets():
    root, fixture = doc_block("docs/rig-protocol.md", "def passkey_key")
    project = tempfile.mkdtemp(prefix="day-pytest-", dir=WORK)
    scratch = tempfile.mkdtemp(prefix="day-tmp-", dir=WORK)
    with open(os.path.join(project, "conftest.py"), "w") as handle:
        handle.write(fixture)
    with open(os.path.join(project, "test_passkey.py"), "w") as handle:
        handle.write(
            "import hashlib\n"
            "from fido2.ctap2 import Ctap2\n"
            "from latchkey_socket import open_device\n\n"
            "def test_a_passkey(passkey_key):\n"
            "    rig, key = passkey_key\n"
            "    ctap = Ctap2(open_device(key['socketPath']))\n"
            "    made = ctap.make_credential(hashlib.sha256(b'x').digest(), {'id': 'doc.example', 'name': 'doc'},\n"
            "                                {'id': b'doc', 'name': 'doc'}, [{'type': 'public-key', 'alg': -7}],\n"
            "                                options={'rk': True, 'uv': True})\n"
            "    assert made.auth_data.credential_data is not None\n"
            "    assert len(rig.get_credentials(key['authenticatorId'])) == 1\n")
    env = {**os.environ, "PATH": os.path.dirname(BINARY) + os.pathsep + os.environ.get("PATH", ""),
           "PYTHONPATH": os.path.join(root, "scripts", "python"), "TMPDIR": scratch}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", project], capture_output=True,
                         text=True, timeout=180, env=env, cwd=project)
    assert ran.returncode == 0 and "1 passed" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert os.listdir(scratch) == [], f"the fixture left {os.listdir(scratch)} behind"

    _, snippet = doc_block("README.md", "from latchkey_socket import open_device")
    path = os.path.join(WORK, "day-readme.sock")
    script = snippet.replace("/tmp/ci.sock", path).replace("latchkey serve", BINARY + " serve")
    script = script.replace(" &\n", f" --store {WORK}/day-readme-store >{WORK}/day-readme.log 2>&1 &\n"
                            f"for i in $(seq 1 100); do [ -S {path} ] && break; sleep 0.1; done\n", 1)
    shown = subprocess.run(["bash", "-c", script + "\nstatus=$?; kill %1; exit $status"], capture_output=True, text=True,
                           timeout=60, cwd=root, env={**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep
                                                      + os.environ.get("PATH", "")})
    assert shown.returncode == 0 and "FIDO_2_0" in shown.stdout, (script, shown.stdout, shown.stderr)


@check("first day: a command that follows a store's serving record sends nothing to a key that cannot prove it holds "
       "that store (a StoreProof challenge first): with the record pointing at another store's running key, `pin set` is "
       "refused and the other key's PIN stays unset; with the true record it goes through the key")
def check_key_proves_its_store():
    own, other = Key("day-proof").start(), Key("day-impostor").start()
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("LATCHKEY_PIN", "LATCHKEY_NEW_PIN")}
        env["LATCHKEY_NEW_PIN"] = "246813"
        record = os.path.join(own.store, "serving")
        true_record = open(record).read()
        # The impostor: the record now names the other store's key (its socket, and a live pid).
        with open(record, "w") as handle:
            handle.write(open(os.path.join(other.store, "serving")).read())
        refused = subprocess.run([BINARY, "pin", "set", "--store", own.store], capture_output=True, text=True, timeout=60,
                                 stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        assert refused.returncode == 1 and "does not hold that store" in refused.stderr, refused.stderr
        status = json.loads(cli("pin", "status", "--store", other.store, "--json").stdout)
        assert status.get("pinSet") is False, f"the impostor key got a PIN: {status}"
        with open(record, "w") as handle:
            handle.write(true_record)
        done = subprocess.run([BINARY, "pin", "set", "--store", own.store, "--json"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        assert done.returncode == 0 and json.loads(done.stdout)["pinSet"] is True, done.stdout + done.stderr
    finally:
        own.stop()
        other.stop()


def test_first_day():
    for test in (check_store_pin_file, check_dry_run_writes_nothing, check_passphrase_errors, check_all_accepted_prefix,
                 check_json_errors, check_doc_snippets, check_key_proves_its_store):
        test()
