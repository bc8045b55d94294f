"""Socket suite: a store whose master key is sealed with a passphrase (`latchkey store seal --passphrase`) —
what a user meets: `serve` refusing to start without the passphrase and saying how to give it, serving with
`--passphrase-file` (every credential still signs, verified as a relying party would), a copy of the directory
that opens nothing, wrong passphrases that change nothing, and SIGKILLs in the middle of sealing and unsealing
that never leave a store no passphrase opens."""

import random
import shutil

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports

PASSPHRASE = "correct horse battery staple"
# Cheap scrypt where many seals are made; the first seal uses the default (128 MiB).
QUICK = ["--scrypt-log-n", "10"]


def private_file(path, text):
    with open(path, "w") as handle:
        handle.write(text + "\n")
    os.chmod(path, 0o600)
    return path


def cli(*args, passphrase_file=None, timeout=60):
    env = {key: value for key, value in os.environ.items() if key != "LATCHKEY_PASSPHRASE_FILE"}
    if passphrase_file:
        env["LATCHKEY_PASSPHRASE_FILE"] = passphrase_file
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          start_new_session=True, env=env)


def register(key, rp_id, resident):
    device = key.device()
    try:
        server = server_for(rp_id=rp_id)
        options, state = server.register_begin(
            {"id": os.urandom(8), "name": "sealed"}, user_verification=UserVerificationRequirement.DISCOURAGED,
            resident_key_requirement=ResidentKeyRequirement.REQUIRED if resident else ResidentKeyRequirement.DISCOURAGED)
        registration = client_for(device, origin=f"https://{rp_id}").make_credential(options.public_key)
        return server, server.register_complete(state, registration).credential_data
    finally:
        device.close()


def sign_in(key, server, credential, discoverable):
    device = key.device()
    try:
        request, state = server.authenticate_begin(None if discoverable else [credential],
                                                   user_verification=UserVerificationRequirement.DISCOURAGED)
        response = client_for(device, origin=f"https://{server.rp.id}").get_assertion(request.public_key).get_response(0)
        server.authenticate_complete(state, [credential], response)
    finally:
        device.close()


@check("store seal --passphrase (scrypt 2^17: 128 MiB): status says sealed; serve without the passphrase exits at once naming "
       "--passphrase-file; serve --passphrase-file signs for both credentials made before (Fido2Server verifies); a copy of "
       "the directory opens nothing without it; 5 wrong passphrases change nothing; unseal gives back the very same key file")
def test_sealed_store(work):
    store = os.path.join(work, "store")
    right = private_file(os.path.join(work, "pass"), PASSPHRASE)
    wrong = private_file(os.path.join(work, "wrong"), "Tr0ub4dor&3")
    key = Key("sealed-before", store=store).start()
    try:
        made = [register(key, "sealed.example", resident=False), register(key, "sealed-rk.example", resident=True)]
    finally:
        key.stop()
    with open(os.path.join(store, "master.key"), "rb") as handle:
        raw = handle.read()
    sealed = cli("store", "seal", "--passphrase", "--passphrase-file", right, "--store", store)
    assert sealed.returncode == 0 and "128 MiB per guess" in sealed.stdout, sealed.stdout + sealed.stderr
    status = json.loads(cli("store", "status", "--store", store, "--json").stdout)
    assert status["masterKey"] == "sealed" and status["kdf"]["logN"] == 17 and status["kdf"]["memoryBytes"] == 128 << 20, status
    with open(os.path.join(store, "master.key"), "rb") as handle:
        sealed_file = handle.read()
    assert raw not in sealed_file and sealed_file.startswith(b"latchkey sealed master key\n")

    refused = Key("sealed-none", store=store)
    refused.start(expect_up=False)
    assert refused.process.wait(timeout=20) == 1, refused.log()
    assert "--passphrase-file" in refused.log() and "sealed with a passphrase" in refused.log(), refused.log()

    key = Key("sealed-serving", store=store, extra=["--passphrase-file", right]).start()
    try:
        for (server, credential), discoverable in zip(made, (False, True)):
            sign_in(key, server, credential, discoverable)
    finally:
        assert key.stop() == 0, key.log()

    copy = os.path.join(work, "copy")
    shutil.copytree(store, copy)
    listed = cli("credentials", "list", "--store", copy)
    assert listed.returncode == 1 and "sealed with a passphrase" in listed.stderr, listed.stderr
    for _ in range(5):
        attempt = cli("credentials", "list", "--store", store, passphrase_file=wrong)
        assert attempt.returncode == 1 and "wrong passphrase" in attempt.stderr, attempt.stderr
    with open(os.path.join(store, "master.key"), "rb") as handle:
        assert handle.read() == sealed_file, "wrong passphrases changed master.key"
    listed = cli("credentials", "list", "--store", store, "--json", passphrase_file=right)
    assert listed.returncode == 0 and len(json.loads(listed.stdout)["credentials"]) == 1, listed.stdout + listed.stderr

    unsealed = cli("store", "unseal", "--passphrase-file", right, "--store", store)
    assert unsealed.returncode == 0, unsealed.stderr
    with open(os.path.join(store, "master.key"), "rb") as handle:
        assert handle.read() == raw, "unsealing gives back the very same key"


@check("kill -9 while sealing, changing the passphrase and unsealing, at random moments (LATCHKEY_SEAL_KILLS, default 150): "
       "after each kill the store opens with the passphrase it was last sealed with or without one, and lists its credential; "
       "no temporary (an unseal's holds the raw key) survives the next open")
def test_seal_kill_loop(work):
    store = os.path.join(work, "kill-store")
    first = private_file(os.path.join(work, "first"), PASSPHRASE)
    second = private_file(os.path.join(work, "second"), "another long passphrase")
    key = Key("seal-kills", store=store).start()
    try:
        register(key, "kills.example", resident=True)
    finally:
        key.stop()
    kills = int(os.environ.get("LATCHKEY_SEAL_KILLS", "150"))
    rng = random.Random(int(os.environ.get("LATCHKEY_CRASH_SEED") or 7))
    outcomes = {"killed": 0, "finished": 0}
    for _ in range(kills):
        status = json.loads(cli("store", "status", "--store", store, "--json").stdout)
        # The state decides the next step: seal, change the passphrase (which one it is now is tried), or unseal.
        if status["masterKey"] == "unsealed":
            args = ["store", "seal", "--passphrase", "--passphrase-file", first, *QUICK]
        else:
            current = first if cli("credentials", "list", "--store", store, passphrase_file=first).returncode == 0 else second
            if rng.random() < 0.5:
                new = second if current == first else first
                args = ["store", "seal", "--passphrase", "--passphrase-file", new, "--current-passphrase-file", current, *QUICK]
            else:
                args = ["store", "unseal", "--passphrase-file", current]
        process = subprocess.Popen([BINARY, *args, "--store", store], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0, 0.03))
        if process.poll() is None:
            process.kill()
            outcomes["killed"] += 1
        else:
            outcomes["finished"] += 1
        process.wait()
        opened = [cli("credentials", "list", "--store", store, "--json", passphrase_file=f) for f in (None, first, second)]
        usable = [o for o in opened if o.returncode == 0 and len(json.loads(o.stdout)["credentials"]) == 1]
        assert usable, f"no passphrase opens the store after `{' '.join(args)}`: " + " | ".join(o.stderr.strip() for o in opened)
    print(f"      ({kills} rounds: {outcomes['killed']} killed mid-way, {outcomes['finished']} finished first)", flush=True)
    # A round killed before its rename leaves master.key.new-*; an unseal's holds the raw key. The opens after
    # each round remove them: none may remain.
    leftovers = [name for name in os.listdir(store) if name.startswith(("master.key.new-", "master.key.old-"))]
    assert not leftovers, f"temporaries left beside the store: {leftovers}"
    assert outcomes["killed"] > 0, "no round was killed mid-way: the test did not test"


def test_sealed_stores():
    work = tempfile.mkdtemp(dir=WORK, prefix="sealed-")
    test_sealed_store(work)
    test_seal_kill_loop(work)
