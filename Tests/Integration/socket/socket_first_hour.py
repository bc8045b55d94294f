"""Socket suite: what a new user meets in their first hour, each check against the real binary
and store — an export that cannot export, where new files go, a PIN on a running key's store,
backup's memory, store paths that are wrong in different ways, a key that does not start,
doctor in CI, one rule for credential ID prefixes, exit codes, JSON times, error wording."""

import resource

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports


def cli_env(*args, env=None, timeout=60):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})


@check("first hour: export of a key whose passkeys all count signatures exits 1 with why and what to do, writes no "
       "file; credentials list shows EXPORT no (and --json exportable false)")
def check_export_nothing(key):
    make_resident(Ctap2(key.device()), "hour.example", b"hour-handle", "hour")
    out = os.path.join(WORK, "hour-export.lkx")
    exported = latchkey_cli("export", "--store", key.store, "--out", out, "--plaintext", new_session=True)
    assert exported.returncode == 1, (exported.returncode, exported.stdout, exported.stderr)
    assert "nothing to export" in exported.stderr and "--counter zero" in exported.stderr, exported.stderr
    assert not os.path.exists(out), "an export that exported nothing wrote a file"
    listed = latchkey_cli("credentials", "list", "--store", key.store, "--rp", "hour.example")
    lines = listed.stdout.splitlines()
    header = lines[1].split()
    assert listed.returncode == 0 and header[-2:] == ["EXPORT", "AUTOFILL"], listed.stdout
    # Not exportable (a counting passkey), but offered in the extension's sign-in menu (visible).
    assert lines[2].split()[-2:] == ["no", "yes"], listed.stdout
    entries = json.loads(latchkey_cli("credentials", "list", "--store", key.store, "--json").stdout)["credentials"]
    assert all(entry["exportable"] is False and entry["autofill"] is True for entry in entries), entries


@check("first hour: import --new-key into a directory that does not exist yet makes it (0700) and the key files")
def check_new_key_parents():
    home = tempfile.mkdtemp(prefix="hour-home-", dir=WORK)
    target = os.path.join(home, ".config", "latchkey", "receive.key")
    made = latchkey_cli("import", "--new-key", target)
    assert made.returncode == 0, made.stderr
    assert os.path.isfile(target) and os.stat(target).st_mode & 0o777 == 0o600, oct(os.stat(target).st_mode)
    assert os.stat(os.path.dirname(target)).st_mode & 0o777 == 0o700


@check("first hour: pin set --store S while a key runs on S goes through that key (its socket, found by the store), "
       "and pin status --socket then says the PIN is set")
def check_pin_through_running_key():
    key = Key("hour-pin").start()
    try:
        pin_file = os.path.join(WORK, "hour-pin.txt")
        with open(pin_file, "w") as handle:
            handle.write("246810\n")
        os.chmod(pin_file, 0o600)
        done = latchkey_cli("pin", "set", "--store", key.store, "--pin-file", pin_file, "--json", new_session=True)
        assert done.returncode == 0, (done.stdout, done.stderr)
        assert json.loads(done.stdout)["pinSet"] is True, done.stdout
        assert "going through it (socket " + key.socket_path in done.stderr, done.stderr
        status = json.loads(latchkey_cli("pin", "status", "--socket", key.socket_path, "--json").stdout)
        assert status.get("pinSet") is True or status.get("clientPin") is True, status
    finally:
        key.stop()


@check("first hour: backup of a small store stays small in memory (max RSS under 150 MB, was 1 GB) and restore "
       "takes it back; backup and restore --json report it")
def check_backup_memory(key):
    out = os.path.join(WORK, "hour.backup")
    passphrase = os.path.join(WORK, "hour-passphrase.txt")
    with open(passphrase, "w") as handle:
        handle.write("correct horse battery staple\n")
    os.chmod(passphrase, 0o600)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    made = cli_env("backup", "--store", key.store, "--out", out, "--passphrase-file", passphrase, "--scrypt-log-n", "14", "--json")
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert made.returncode == 0, made.stderr
    report = json.loads(made.stdout)
    assert report["out"] == out and report["residentCredentials"] >= 1, report
    assert peak_kb < 150 * 1024 or before >= 150 * 1024, f"backup peaked at {peak_kb} kB"
    print(f"      (backup max RSS {peak_kb // 1024} MB)")
    restored = os.path.join(WORK, "hour-restored")
    back = cli_env("restore", out, "--store", restored, "--passphrase-file", passphrase, "--json")
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["residentCredentials"] == report["residentCredentials"], back.stdout


@check("first hour: store paths — missing (exit 1, 'does not exist'), a regular file ('not a directory'), another "
       "user's ('permission denied'); store status of a missing store exits 1")
def check_store_path_errors(key):
    missing = latchkey_cli("credentials", "list", "--store", os.path.join(WORK, "no-such-store"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr, missing.stderr
    regular = os.path.join(WORK, "a-file")
    open(regular, "w").close()
    file_store = latchkey_cli("credentials", "list", "--store", regular)
    assert file_store.returncode == 1 and "is not a directory" in file_store.stderr, file_store.stderr
    unsealed = json.loads(latchkey_cli("store", "unseal", "--store", key.store, "--json").stdout)
    assert unsealed == {"store": key.store, "masterKey": "unsealed", "changed": False}, unsealed
    status = latchkey_cli("store", "status", "--store", os.path.join(WORK, "no-such-store"))
    assert status.returncode == 1 and "does not exist" in status.stderr, (status.returncode, status.stderr)
    if os.geteuid() == 0:
        base = tempfile.mkdtemp(prefix="latchkey-hour-")   # reachable by all, the store in it 0700 and root's
        os.chmod(base, 0o755)
        private = os.path.join(base, "store")
        os.mkdir(private, 0o700)
        other = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BINARY, "credentials", "list",
                                "--store", private], capture_output=True, text=True, timeout=30)
        assert other.returncode == 1 and "permission denied" in other.stderr, other.stderr


@check("first hour: serve that cannot start (its socket's directory missing) exits 1 naming the directory and leaves no "
       "store; a serve that starts on a new store logs 'created a new store at'")
def check_serve_failure_leaves_no_store():
    store = os.path.join(WORK, "hour-never")
    failed = subprocess.run([BINARY, "serve", "--transport", f"socket:{WORK}/no-such-dir/k.sock", "--presence", "auto",
                             "--store", store], capture_output=True, text=True, timeout=30)
    assert failed.returncode == 1, failed.returncode
    assert f"the directory {WORK}/no-such-dir does not exist" in failed.stderr, failed.stderr
    assert not os.path.exists(store), os.listdir(store)
    key = Key("hour-new").start()
    key.stop()
    assert "created a new store at " + key.store in key.log(), key.log()[-500:]
    again = Key("hour-new").start()
    again.stop()
    assert again.log().count("created a new store") == 1, "said again for a store that was there"


@check("first hour: doctor where the key runs on a socket and there is no uhid (or CI is set): no FAIL, exit 0, and "
       "--store finds the key serving that store on its socket")
def check_doctor_ci():
    key = Key("hour-doctor").start()
    try:
        doctor = cli_env("doctor", "--store", key.store, "--json", env={"CI": "true"})
        assert doctor.returncode == 0, doctor.stdout
        checks = {c["id"]: c for c in json.loads(doctor.stdout)["checks"]}
        assert all(c["status"] != "FAIL" for c in checks.values()), checks
        assert key.socket_path in checks["key-running"]["detail"] and key.store in checks["key-running"]["detail"], checks["key-running"]
        for name in ("uhid", "udev-rules", "user-service", "signal-bridge"):
            assert checks[name]["status"] == "OK", checks[name]
    finally:
        key.stop()


@check("first hour: one rule for credential IDs — a prefix of 6+ works in signal unknown as in credentials show; "
       "under 6 is a usage error (64) naming the rule; a missing one exits 1")
def check_id_prefixes(key):
    credential = make_resident(Ctap2(key.device()), "prefix.example", b"prefix-handle", "prefix")
    prefix = b64url(credential)[:8]
    shown = latchkey_cli("credentials", "show", "--store", key.store, prefix)
    assert shown.returncode == 0 and "prefix.example" in shown.stdout, shown.stderr
    short = latchkey_cli("credentials", "show", "--store", key.store, prefix[:4])
    assert short.returncode == 64 and "at least 6 characters" in short.stderr, short.stderr
    hidden = latchkey_cli("signal", "unknown", "--store", key.store, "--rp", "prefix.example", prefix)
    assert hidden.returncode == 0 and "is hidden" in hidden.stdout, hidden.stdout + hidden.stderr
    log = json.loads(latchkey_cli("signal", "log", "--store", key.store, "--json").stdout)["entries"]
    assert log and all(len(e["time"]) == 20 and e["time"].endswith("Z") and e["time"][10] == "T" for e in log), log[-1]
    missing = latchkey_cli("signal", "unknown", "--store", key.store, "--rp", "prefix.example", "ZZZZZZZZZZ")
    assert missing.returncode == 1 and "no credential ZZZZZZZZZZ" in missing.stderr, missing.stderr
    latchkey_cli("credentials", "unhide", "--store", key.store, prefix)


@check("first hour: no Foundation text reaches the user: trace of a missing file says 'No such file or directory'")
def check_error_wording():
    missing = latchkey_cli("trace", os.path.join(WORK, "no-such.trace"))
    assert missing.returncode == 1 and missing.stderr.strip().endswith("No such file or directory"), missing.stderr
    assert "could not be completed" not in missing.stderr


def test_first_hour(key):
    """The first-hour checks that use the suite's main key, then those with keys of their own."""
    for test in (check_export_nothing, check_backup_memory, check_store_path_errors, check_id_prefixes):
        test(key)
    for test in (check_new_key_parents, check_pin_through_running_key, check_serve_failure_leaves_no_store,
                 check_doctor_ci, check_error_wording):
        test()
