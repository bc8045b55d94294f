"""Socket suite: CTAPHID and CTAP2 basics — PING/WINK, getInfo, registration and assertion
(ES256, EdDSA, resident), getNextAssertion, excludeList, U2F, two clients, bad packets and
CTAPHID errors, the socket's mode, reset, CANCEL with the terminal prompt, restart and LOCK."""

from socket_support import *  # noqa: F401,F403 - the suite's shared helpers and imports

@check("CTAPHID INIT, PING (1 and 7609 bytes) and WINK")
def test_ping_wink(key):
    device = key.device()
    assert device.version == 2
    assert device.capabilities & 0x04, "CBOR capability"
    assert device.ping(b"hello") == b"hello"
    payload = os.urandom(7609)
    assert device.ping(payload) == payload
    device.wink()
    device.close()


@check("getInfo reports what Latchkey does")
def test_get_info(key):
    info = Ctap2(key.device()).info
    assert "FIDO_2_0" in info.versions and "U2F_V2" in info.versions, info.versions
    assert info.max_msg_size == 1200   # a YubiKey 5's: fits the kernel's uhid queue (AuthenticatorConfiguration)
    assert info.options.get("rk") is True and info.options.get("up") is True
    assert len(info.aaguid) == 16
    algorithms = [entry["alg"] for entry in info.algorithms]
    assert -7 in algorithms and -8 in algorithms, algorithms
    assert info.remaining_disc_creds is not None and info.remaining_disc_creds > 0


def register_and_authenticate(key, algorithms, resident):
    device = key.device()
    client = client_for(device)
    server = server_for(algorithms=algorithms)
    user = {"id": os.urandom(16), "name": f"user-{os.urandom(3).hex()}", "displayName": "Test User"}
    options, state = server.register_begin(
        user, resident_key_requirement=ResidentKeyRequirement.REQUIRED if resident else ResidentKeyRequirement.DISCOURAGED,
        user_verification=UserVerificationRequirement.DISCOURAGED)
    registration = client.make_credential(options.public_key)
    auth_data = server.register_complete(state, registration)
    credential = auth_data.credential_data
    assert credential.public_key[3] == algorithms[0], credential.public_key
    allow = None if resident else [credential]
    request, state = server.authenticate_begin(allow, user_verification=UserVerificationRequirement.DISCOURAGED)
    selection = client.get_assertion(request.public_key)
    response = selection.get_response(0)
    server.authenticate_complete(state, [credential], response)
    device.close()
    return credential, user


@check("Fido2Client makeCredential ES256, packed attestation verified; getAssertion verified by Fido2Server")
def test_register_es256(key):
    register_and_authenticate(key, [-7], resident=False)


@check("Fido2Client makeCredential EdDSA; assertion verified by Fido2Server")
def test_register_eddsa(key):
    register_and_authenticate(key, [-8], resident=False)


@check("discoverable credential: getAssertion with an empty allowList")
def test_resident(key):
    register_and_authenticate(key, [-7], resident=True)


@check("getNextAssertion walks 3 accounts, each signature verifies")
def test_get_next_assertion(key):
    ctap = Ctap2(key.device())
    rp = {"id": "multi.example", "name": "Multi"}
    keys = {}
    for index in range(3):
        user = {"id": bytes([index + 1]) * 8, "name": f"account{index}", "displayName": f"Account {index}"}
        attestation = ctap.make_credential(hashlib.sha256(b"mc%d" % index).digest(), rp, user,
                                           [{"type": "public-key", "alg": -7}], options={"rk": True})
        keys[attestation.auth_data.credential_data.credential_id] = attestation.auth_data.credential_data.public_key
    client_data_hash = hashlib.sha256(b"ga").digest()
    first = ctap.get_assertion("multi.example", client_data_hash)
    assert first.number_of_credentials == 3, first.number_of_credentials
    responses = [first] + [ctap.get_next_assertion() for _ in range(2)]
    seen = set()
    for response in responses:
        credential_id = response.credential["id"]
        response.verify(client_data_hash, keys[credential_id])
        seen.add(credential_id)
    assert seen == set(keys), "every account once"
    expect_ctap_error(CtapError.ERR.NOT_ALLOWED, ctap.get_next_assertion)


@check("excludeList hit answers CREDENTIAL_EXCLUDED")
def test_exclude_list(key):
    ctap = Ctap2(key.device())
    rp = {"id": "exclude.example", "name": "Exclude"}
    user = {"id": b"u" * 8, "name": "u"}
    params = [{"type": "public-key", "alg": -7}]
    created = ctap.make_credential(hashlib.sha256(b"x").digest(), rp, user, params)
    credential_id = created.auth_data.credential_data.credential_id
    expect_ctap_error(CtapError.ERR.CREDENTIAL_EXCLUDED, ctap.make_credential, hashlib.sha256(b"y").digest(), rp, user,
                      params, exclude_list=[{"type": "public-key", "id": credential_id}])


@check("U2F register/authenticate via Ctap1, signatures verified")
def test_u2f(key):
    ctap1 = Ctap1(key.device())
    assert ctap1.get_version() == "U2F_V2"
    app_param = hashlib.sha256(b"https://u2f.example").digest()
    client_param = hashlib.sha256(b"u2f-register").digest()
    registration = ctap1.register(client_param, app_param)
    registration.verify(app_param, client_param)
    challenge = hashlib.sha256(b"u2f-auth").digest()
    signature = ctap1.authenticate(challenge, app_param, registration.key_handle)
    signature.verify(app_param, challenge, registration.public_key)
    try:
        ctap1.authenticate(challenge, app_param, registration.key_handle, check_only=True)
        raise AssertionError("check-only must not sign")
    except ApduError as error:
        assert error.code == 0x6985, hex(error.code)
    try:
        ctap1.authenticate(challenge, hashlib.sha256(b"other").digest(), registration.key_handle)
        raise AssertionError("a key handle for another app must be rejected")
    except ApduError as error:
        assert error.code == 0x6A80, hex(error.code)


@check("U2F APDUs in the encodings old and careless clients send: short (ISO 7816-4) accepted as extended is; "
       "a bad CLA, an unknown INS, a wrong length and a truncated APDU get their status words; "
       "don't-enforce-presence (P1 0x08) signs")
def test_u2f_encodings(key):
    device = key.device()
    ctap1 = Ctap1(device)

    def status(apdu):
        answer = device.call(CTAPHID.MSG, apdu)
        return answer[:-2], int.from_bytes(answer[-2:], "big")

    assert status(bytes([0, 3, 0, 0, 0])) == (b"U2F_V2", 0x9000)            # short, Le 0 (256)
    assert status(bytes([0, 3, 0, 0])) == (b"U2F_V2", 0x9000)               # no Le at all
    app = hashlib.sha256(b"https://u2f-short.example").digest()
    challenge = hashlib.sha256(b"u2f short register").digest()
    body, word = status(bytes([0, 1, 3, 0, 64]) + challenge + app + b"\x00")  # register, short Lc and Le
    assert word == 0x9000 and body[0] == 0x05, (hex(word), body[:2])
    handle = body[67:67 + body[66]]
    # Don't enforce presence (FIDO U2F raw messages §5.1, P1 0x08): signs; the flags byte says so.
    signature = ctap1.send_apdu(0, 0x02, 0x08, 0, hashlib.sha256(b"dont").digest() + app + bytes([len(handle)]) + handle)
    assert signature[0] & 0x01 == 0, signature[:5].hex()
    assert status(bytes([0x80, 3, 0, 0, 0])) == (b"", 0x6E00)              # SW_CLA_NOT_SUPPORTED
    assert status(bytes([0, 0x40, 0, 0, 0])) == (b"", 0x6D00)              # SW_INS_NOT_SUPPORTED
    assert status(bytes([0, 1, 0, 0, 0, 0, 10]) + b"\x11" * 10 + b"\0\0") == (b"", 0x6700)   # register, 10 bytes
    assert status(bytes([0])) == (b"", 0x6700)                              # shorter than a header
    device.close()


@check("two clients at once on separate channels get their own replies")
def test_two_clients(key):
    first, second = key.device(), key.device()
    assert first._channel_id != second._channel_id
    results = {}

    def worker(label, device):
        for round_number in range(20):
            payload = f"{label}-{round_number}".encode() * 50
            assert device.ping(payload) == payload
        results[label] = True

    threads = [threading.Thread(target=worker, args=(label, device)) for label, device in (("a", first), ("b", second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == {"a": True, "b": True}, results
    first.close()
    second.close()


@check("wrong-size packets are dropped and the connection keeps working")
def test_bad_packets(key):
    sock = raw_socket(key)
    sock.send(b"\xff" * 63)
    sock.send(b"\xff" * 65)
    nonce = os.urandom(8)
    sock.send(struct.pack(">IBH", 0xFFFFFFFF, 0x80 | CTAPHID.INIT, 8).ljust(7, b"\0") + nonce + b"\0" * 49)
    reply = sock.recv(100)
    assert len(reply) == 64 and reply[7:15] == nonce, reply.hex()
    sock.close()


@check("CTAPHID errors: CID 0 → INVALID_CHANNEL, declared length 7610 → INVALID_LEN, another connection's channel → INVALID_CHANNEL")
def test_hid_errors(key):
    sock = raw_socket(key)
    sock.send(struct.pack(">IBH", 0, 0x80 | CTAPHID.PING, 1) + b"\0" * 57)
    reply = sock.recv(100)
    assert reply[4] == 0xBF and reply[7] == 0x0B, reply[:8].hex()
    # This connection's own channel: INIT on broadcast.
    nonce = os.urandom(8)
    sock.send(struct.pack(">IBH", 0xFFFFFFFF, 0x80 | CTAPHID.INIT, 8) + nonce + b"\0" * 49)
    reply = sock.recv(100)
    assert reply[4] == 0x80 | CTAPHID.INIT and reply[7:15] == nonce, reply[:16].hex()
    channel = struct.unpack(">I", reply[15:19])[0]
    sock.send(struct.pack(">IBH", channel, 0x80 | CTAPHID.PING, 7610) + b"\0" * 57)
    reply = sock.recv(100)
    assert reply[4] == 0xBF and reply[7] == 0x03, reply[:8].hex()
    # Another connection's channel is not this one's to use (issue 16: channels belong to
    # the connection that allocated them).
    device = key.device()
    sock.send(struct.pack(">IBH", device._channel_id, 0x80 | CTAPHID.PING, 1) + b"\0" * 57)
    reply = sock.recv(100)
    assert reply[4] == 0xBF and reply[7] == 0x0B, reply[:8].hex()
    assert device.ping(b"mine") == b"mine"
    sock.close()
    device.close()


@check("socket file is mode 0600")
def test_socket_mode(key):
    mode = stat.S_IMODE(os.stat(key.socket_path).st_mode)
    assert mode == 0o600, oct(mode)


@check("reset after a power cycle (SIGHUP) wipes credentials; too late without one → NOT_ALLOWED")
def test_reset(key):
    ctap = Ctap2(key.device())
    rp = {"id": "reset.example"}
    created = ctap.make_credential(hashlib.sha256(b"r").digest(), rp, {"id": b"r" * 4, "name": "r"},
                                   [{"type": "public-key", "alg": -7}], options={"rk": True})
    credential_id = created.auth_data.credential_data.credential_id
    time.sleep(0.1)
    started = time.time()
    if time.time() - key.started < 10.5:
        time.sleep(max(0.0, 10.5 - (time.time() - key.started)))
    expect_ctap_error(CtapError.ERR.NOT_ALLOWED, ctap.reset)
    key.power_cycle()
    ctap = Ctap2(key.device())
    ctap.reset()
    expect_ctap_error(CtapError.ERR.NO_CREDENTIALS, ctap.get_assertion, "reset.example", hashlib.sha256(b"q").digest(),
                      allow_list=[{"type": "public-key", "id": credential_id}])
    assert time.time() - started < 30


@check("prompt presence: UPNEEDED keepalive, CANCEL → KEEPALIVE_CANCEL (0x2D), then 'y' on the terminal approves (a user "
       "name's terminal escapes shown as text: no ESC or BEL reaches the terminal)")
def test_cancel_and_prompt():
    key = Key("prompt", presence="prompt", use_pty=True).start()
    try:
        ctap = Ctap2(key.device())
        event = threading.Event()
        statuses = []
        timer = threading.Timer(0.7, event.set)
        timer.start()
        expect_ctap_error(CtapError.ERR.KEEPALIVE_CANCEL, ctap.make_credential, hashlib.sha256(b"c").digest(),
                          {"id": "cancel.example"}, {"id": b"c" * 4, "name": "carol"},
                          [{"type": "public-key", "alg": -7}], event=event, on_keepalive=statuses.append)
        assert 2 in statuses, f"UPNEEDED keepalive seen: {statuses}"
        prompt = key.tty_output()
        assert "cancel.example" in prompt, prompt

        # The user name carries terminal escapes (OSC 52 would set the terminal's clipboard): the
        # prompt shows them as text and the terminal never receives an ESC or a BEL.
        prompts = []

        def approve():
            output = key.tty_output(wait=5)
            prompts.append(output)
            assert "Approve?" in output, output
            key.answer("y")

        answering = threading.Thread(target=approve)
        answering.start()
        created = ctap.make_credential(hashlib.sha256(b"d").digest(), {"id": "cancel.example"},
                                       {"id": b"d" * 4, "name": "\x1b]52;c;ZXZpbA==\x07dave"}, [{"type": "public-key", "alg": -7}])
        answering.join()
        assert prompts and "for \\x1B]52;c;ZXZpbA==\\x07dave. Approve?" in prompts[0], prompts
        assert "\x1b" not in prompts[0] and "\x07" not in prompts[0], repr(prompts[0])
        assert created.auth_data.is_user_present()

        def deny():
            key.tty_output(wait=5)
            key.answer("n")

        answering = threading.Thread(target=deny)
        answering.start()
        expect_ctap_error(CtapError.ERR.OPERATION_DENIED, ctap.make_credential, hashlib.sha256(b"e").digest(),
                          {"id": "cancel.example"}, {"id": b"e" * 4, "name": "erin"}, [{"type": "public-key", "alg": -7}])
        answering.join()

        # A client that vanishes mid-request cancels it; the key keeps serving others.
        sock = raw_socket(key)
        nonce = os.urandom(8)
        sock.send(struct.pack(">IBH", 0xFFFFFFFF, 0x80 | CTAPHID.INIT, 8) + nonce + b"\0" * 49)
        channel = struct.unpack(">I", sock.recv(64)[15:19])[0]
        request = bytes([0x0B])  # authenticatorSelection waits for a touch
        sock.send(struct.pack(">IBH", channel, 0x80 | CTAPHID.CBOR, len(request)) + request + b"\0" * (57 - len(request)))
        time.sleep(0.4)
        sock.close()
        time.sleep(0.4)
        assert key.process.poll() is None, "key still running"
        device = key.device()
        assert device.ping(b"still here") == b"still here"
        device.close()
        assert "cancelled" in key.log(), "the vanished client's request was cancelled"
    finally:
        key.stop()


@check("credentials survive a restart; the socket is removed at exit; a second key on the same store is refused")
def test_restart_and_lock():
    key = Key("durable").start()
    ctap = Ctap2(key.device())
    rp = {"id": "durable.example"}
    created = ctap.make_credential(hashlib.sha256(b"p").digest(), rp, {"id": b"p" * 4, "name": "pat"},
                                   [{"type": "public-key", "alg": -7}], options={"rk": True})
    public_key = created.auth_data.credential_data.public_key
    first_count = ctap.get_assertion("durable.example", hashlib.sha256(b"1").digest()).auth_data.counter

    second = Key("durable-twin", store=key.store).start(expect_up=False)
    status = second.process.wait(timeout=20)
    assert status == 1, status
    assert "in use by another running key" in second.log(), second.log()

    assert key.stop() == 0
    assert not os.path.exists(key.socket_path), "socket removed on shutdown"
    key = Key("durable").start()
    try:
        ctap = Ctap2(key.device())
        client_data_hash = hashlib.sha256(b"2").digest()
        assertion = ctap.get_assertion("durable.example", client_data_hash)
        assertion.verify(client_data_hash, public_key)
        assert assertion.auth_data.counter > first_count, "counter never goes backwards across restarts"
    finally:
        key.stop()
