#!/usr/bin/env python3
"""Socket-transport integration suite: the real `latchkey serve` driven by python-fido2 2.2.1.

Usage: socket_suite.py PATH/TO/latchkey
Prints one line per check and a final `N passed, N failed` line; exits 1 on any failure.
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

import sys

from socket_support import BINARY, RESULTS, WORK, Key, time
from socket_ctap2 import *  # noqa: F401,F403
from socket_cli import *  # noqa: F401,F403
from socket_ctap21 import *  # noqa: F401,F403
from socket_presence import *  # noqa: F401,F403
from socket_notify_daemons import *  # noqa: F401,F403
from socket_hostile import *  # noqa: F401,F403
from socket_floods import *  # noqa: F401,F403
from socket_secrets import *  # noqa: F401,F403
from socket_crash import *  # noqa: F401,F403
from socket_uv import *  # noqa: F401,F403
from socket_polkit import *  # noqa: F401,F403
from socket_fprintd import *  # noqa: F401,F403
from socket_algorithms import *  # noqa: F401,F403
from socket_ctap22 import *  # noqa: F401,F403
from socket_replay import *  # noqa: F401,F403
from socket_sealed import *  # noqa: F401,F403
from socket_seal_methods import *  # noqa: F401,F403
from socket_unit_sandbox import *  # noqa: F401,F403
from socket_exchange import *  # noqa: F401,F403
from socket_endpoints import *  # noqa: F401,F403
from socket_rig import *  # noqa: F401,F403
from socket_signals import *  # noqa: F401,F403
from socket_first_hour import *  # noqa: F401,F403
from socket_first_day import *  # noqa: F401,F403
from socket_local_users import *  # noqa: F401,F403
from socket_fido2_suite import *  # noqa: F401,F403

def main():
    print(f"socket integration suite: {BINARY}, work dir {WORK}", flush=True)
    key = Key("main").start()
    key.started = time.time()
    try:
        for test in (test_ping_wink, test_cli_diagnostics, test_get_info, test_register_es256, test_register_eddsa, test_resident,
                     test_get_next_assertion, test_exclude_list, test_u2f, test_two_clients, test_bad_packets,
                     test_hid_errors, test_socket_mode, test_get_info_ctap21, test_first_hour, test_reset):
            test(key)
    finally:
        key.stop()
    if key.process.returncode != 0:
        RESULTS.append(("key exited cleanly", False))
        print("FAIL  key exit status", key.process.returncode, key.log())
    test_cancel_and_prompt()
    test_restart_and_lock()
    test_notify_real_dbus()
    test_notify_dunst()
    test_notify_second_daemon()
    test_notify_without_actions_falls_back()
    test_control_presence_and_trace()
    test_notify_presence_with_stand_in()
    test_cli_store_signals()
    test_native_host()
    test_native_host_callers_and_origins()
    test_cli_device_credential_management()
    test_ctap21_pinned_key()
    test_accounts_chosen_on_key()
    test_first_day()
    test_builtin_uv()
    test_polkit_uv()
    test_fprintd_uv()
    test_algorithms()
    test_ctap22()
    test_replay()
    test_sealed_stores()
    test_seal_methods()
    test_unit_sandbox()
    test_exchange()
    test_endpoints()
    test_rig()
    test_local_users()
    test_fido2_device_suite()
    test_descriptor_exhaustion()
    test_floods()
    test_secrets_at_rest()
    test_crash_safety()
    passed = sum(1 for _, ok in RESULTS if ok)
    failed = len(RESULTS) - passed
    if failed:
        print("--- last log of the main key ---\n" + key.log())
    print(f"socket integration: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
