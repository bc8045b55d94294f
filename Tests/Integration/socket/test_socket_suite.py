"""The socket-transport integration suite: the real `latchkey serve` (and `rig`, `native-host`, the
CLI) driven by python-fido2 2.2.1 and real programs, under pytest.

    .build/test-venv/bin/python -m pytest -v -s Tests/Integration/socket            # all of it
    .build/test-venv/bin/python -m pytest -v -s Tests/Integration/socket -k rig     # the groups named so
    .build/test-venv/bin/python -m pytest Tests/Integration/socket --collect-only -q     # their names

`--latchkey PATH` names the binary (default: .build/debug/latchkey). Each pytest test is a group
of checks, in the order below: the `@check` functions of socket_*.py, each printing PASS or FAIL
with its time as it runs (`-s` shows them as they come, `-v` the group's name above them). A group fails when one of its checks
did, naming them. The run ends with the checks' count, `socket integration: N passed, N failed`,
then pytest's own count of groups.

The checks are in socket_ctap2.py, socket_cli.py, socket_ctap21.py, socket_presence.py, socket_notify_daemons.py
(--presence notify answered with clicks on GNOME's notification-daemon on Xvfb),
socket_hostile.py, socket_floods.py (hostile-client floods: a well-behaved client's latency and the
key's memory under each), socket_uv.py (built-in user verification: --uv auto and deny), socket_polkit.py (--uv polkit against polkitd and pkttyagent),
socket_fprintd.py (--uv fprintd: the real fprintd-verify against a stand-in fprintd, fake_fprintd.py), socket_algorithms.py (ES384, ES512 and
ES256K beside ES256 and EdDSA), socket_ctap22.py (CTAP 2.2: the persistent token, thirdPartyPayment, enterprise attestation), socket_replay.py
(`latchkey replay` of a traced session), socket_sealed.py (a master key sealed with a passphrase, kill -9 mid-seal), socket_seal_methods.py (sealed to gnome-keyring and to swtpm, kill -9 mid-switch), socket_exchange.py (`latchkey export`/`import`: CXF,
HPKE and passphrase files, Bitwarden and KeePassXC fixtures, refusals, backup and restore), socket_endpoints.py (the sites'
passkey endpoints over real HTTPS with a test CA), socket_rig.py (`latchkey rig`: keys
added, seeded, answered and removed through its control socket, via scripts/python/latchkey_rig.py), socket_signals.py
(websites' signals through `latchkey native-host`, as a browser sends them), socket_first_hour.py and socket_first_day.py
(what a new source and package user meet: wrong wording, refused options, dry runs, --json errors, the docs' snippets run
as written), socket_secrets.py (secrets at rest, in the trace, the logs and the CLI's output;
no core dumps), socket_fido2_suite.py (python-fido2 2.2.1's own device suite, unchanged,
through fido2_device_plugin.py), socket_local_users.py (another local user squatting or connecting to the sockets; answers
that would act on a terminal; sockets published only when they accept) and socket_crash.py (SIGKILLs at random moments: LATCHKEY_CRASH_KILLS, default 300,
and LATCHKEY_CRASH_SEED); what they share in socket_support.py, and what the floods share with the
uhid suite's (e2e_floods.py) in flood_support.py.
"""

import pytest

from socket_support import RESULTS, Key, time  # first: it puts ../support and scripts/python on the path
import socket_algorithms
import socket_cli
import socket_crash
import socket_ctap2
import socket_ctap21
import socket_ctap22
import socket_endpoints
import socket_exchange
import socket_fido2_suite
import socket_first_day
import socket_first_hour
import socket_floods
import socket_fprintd
import socket_hostile
import socket_local_users
import socket_notify_daemons
import socket_polkit
import socket_presence
import socket_replay
import socket_rig
import socket_seal_methods
import socket_sealed
import socket_secrets
import socket_signals
import socket_unit_sandbox
import socket_uv


def main_key():
    """The checks that share one key, "main", in this order (reset last: it wipes the key); the
    key must then exit 0."""
    key = Key("main").start()
    key.started = time.time()
    try:
        for test in (socket_ctap2.test_ping_wink, socket_cli.test_cli_diagnostics, socket_ctap2.test_get_info,
                     socket_ctap2.test_register_es256, socket_ctap2.test_register_eddsa, socket_ctap2.test_resident,
                     socket_ctap2.test_get_next_assertion, socket_ctap2.test_exclude_list, socket_ctap2.test_u2f,
                     socket_ctap2.test_u2f_encodings,
                     socket_ctap2.test_two_clients, socket_ctap2.test_bad_packets, socket_ctap2.test_hid_errors,
                     socket_ctap2.test_socket_mode, socket_ctap21.test_get_info_ctap21, socket_first_hour.test_first_hour,
                     socket_ctap2.test_reset):
            test(key)
    finally:
        key.stop()
    if key.process.returncode != 0:
        RESULTS.append(("key exited cleanly", False))
        print("FAIL  key exit status", key.process.returncode, key.log())


# Each group starts the keys it needs; they run in this order.
GROUPS = [
    main_key,
    socket_ctap2.test_cancel_and_prompt,
    socket_ctap2.test_restart_and_lock,
    socket_presence.test_notify_real_dbus,
    socket_presence.test_notify_dunst,
    socket_notify_daemons.test_notify_second_daemon,
    socket_presence.test_notify_without_actions_falls_back,
    socket_cli.test_control_presence_and_trace,
    socket_presence.test_notify_presence_with_stand_in,
    socket_cli.test_cli_store_signals,
    socket_signals.test_native_host,
    socket_signals.test_native_host_callers_and_origins,
    socket_cli.test_cli_device_credential_management,
    socket_ctap21.test_ctap21_pinned_key,
    socket_ctap21.test_accounts_chosen_on_key,
    socket_first_day.test_first_day,
    socket_uv.test_builtin_uv,
    socket_polkit.test_polkit_uv,
    socket_fprintd.test_fprintd_uv,
    socket_algorithms.test_algorithms,
    socket_ctap22.test_ctap22,
    socket_replay.test_replay,
    socket_sealed.test_sealed_stores,
    socket_seal_methods.test_seal_methods,
    socket_unit_sandbox.test_unit_sandbox,
    socket_exchange.test_exchange,
    socket_endpoints.test_endpoints,
    socket_rig.test_rig,
    socket_local_users.test_local_users,
    socket_fido2_suite.test_fido2_device_suite,
    socket_hostile.test_descriptor_exhaustion,
    socket_floods.test_floods,
    socket_secrets.test_secrets_at_rest,
    socket_crash.test_crash_safety,
]


@pytest.mark.parametrize("group", GROUPS, ids=[group.__name__.removeprefix("test_") for group in GROUPS])
def test_socket(group):
    print(flush=True)   # the checks' PASS/FAIL lines start a line of their own under pytest's
    before = len(RESULTS)
    try:
        group()
    except BaseException:
        # Outside any check (a key that would not start, say): counted with the checks too.
        RESULTS.append((f"{group.__name__} ran to its end", False))
        raise
    ran = RESULTS[before:]
    if not ran:
        RESULTS.append((f"{group.__name__} ran a check", False))
    failed = [name for name, ok in ran if not ok]
    assert ran, f"{group.__name__} ran no check"
    assert not failed, f"{len(failed)} of its {len(ran)} checks failed: " + "; ".join(failed)
