#!/usr/bin/env bash
# The uhid broker in the VM (docs/uhid-broker.md), with udevd running and 70-latchkey.rules
# applied: users in no group run keys through `latchkey uhid-broker` (root), each key stamped
# with its own user; another user cannot make a key that claims the first one, cannot reach the
# first one's device, and breaking the broker's rules ends only the breaker's own device; a
# broker that stops takes its keys along (serve exits 1) and a restarted one serves them again.
# Also measured, not asserted: a report round trip through the broker against direct uhid
# (`latchkey probe --pings 200`, medians), printed as a ratio.
# Usage: e2e_broker.sh LATCHKEY PYTHON WORK DIRECT_NODE   (run as root; exit 0 when all held)
# (The raw client runs as another user under Debian's python3: the test venv is root's.)
set -uo pipefail
BIN="$1" PYTHON="$2" WORK="$3" DIRECT="$4"
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/guest_lib.sh"
SOCKET=/run/latchkey/uhid.socket
ok=1
fail() { echo "FAILED: $*"; ok=0; }
as_user() { local uid="$1"; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups env HOME="$WORK/home-$uid" "$@"; }
wait_for() {  # wait_for SECONDS COMMAND...: until COMMAND succeeds
    local tries=$(( $1 * 10 )); shift
    for _ in $(seq 1 "$tries"); do "$@" && return 0; sleep 0.1; done
    return 1
}

start_broker() {
    "$BIN" uhid-broker --socket "$SOCKET" --log-level debug >>"$WORK/broker.log" 2>&1 &
    BROKER=$!
    wait_for 20 test -S "$SOCKET" || { fail "the broker did not listen on $SOCKET"; cat "$WORK/broker.log"; return 1; }
    stat -c '%n %a %U' "$SOCKET"
    [ "$(stat -c '%a %U' "$SOCKET")" = "666 root" ] || fail "$SOCKET is not 0666 root"
}
start_key() {  # start_key UID NAME: `serve` as UID (no groups), through the broker
    mkdir -p "$WORK/home-$1" && chown "$1:$1" "$WORK/home-$1"
    as_user "$1" "$BIN" serve --transport uhid --presence auto --name "$2" --store "$WORK/home-$1/store-$2" \
        --log-level debug >>"$WORK/key-broker-$1-$2.log" 2>&1 &
    echo $! >"$WORK/key-broker-$1-$2.pid"
}
phys_of() { grep '^HID_PHYS=' "/sys/class/hidraw/$(basename "$1")/device/uevent" | cut -d= -f2-; }

# No user below is in group latchkey: /dev/uhid itself is closed to them.
for uid in 4245 4246; do
    if as_user "$uid" sh -c 'exec 3<>/dev/uhid' 2>/dev/null; then fail "uid $uid can open /dev/uhid itself"; fi
done
start_broker || exit 1

# 1. uid 4245's key, through the broker: its node, its phys, its owner; clients as 4245 use it.
start_key 4245 bob
wait_for 60 hidraw_for bob >/dev/null || { fail "uid 4245's key never appeared"; cat "$WORK/key-broker-4245-bob.log" "$WORK/broker.log"; exit 1; }
udevadm settle --timeout=20
bob=$(hidraw_for bob)
echo "uid 4245's key: $bob, phys $(phys_of "$bob"), $(stat -c '%a %u' "$bob")"
[ "$(phys_of "$bob")" = "latchkey/uid=4245/bob" ] || fail "phys is not latchkey/uid=4245/bob"
[ "$(stat -c '%a %u' "$bob")" = "600 4245" ] || fail "the node is not 0600 uid 4245"
# No seat ACL for a key's node: systemd's 70-uaccess.rules would tag it (a security token), and
# 73-seat-late.rules would give whoever sits at the seat access; 70-latchkey.rules prevents it.
udevadm info --query=property --name="$bob" | grep -E '^(CURRENT_)?TAGS=' | sed 's/^/  /'
if udevadm info --query=property --name="$bob" | grep -qE '^(CURRENT_)?TAGS=.*:uaccess:'; then
    fail "uid 4245's key node is tagged uaccess: the seat's user would get an ACL on it"
fi
as_user 4245 fido2-token -L >"$WORK/broker-token-list.txt" 2>&1
grep -q "^$bob:" "$WORK/broker-token-list.txt" || { fail "fido2-token -L as uid 4245 does not list $bob"; cat "$WORK/broker-token-list.txt"; }
as_user 4245 "$BIN" probe bob --pings 5 --echo-bytes 1500 >"$WORK/broker-probe.txt" 2>&1 \
    || { fail "latchkey probe bob (by name, as uid 4245) failed"; cat "$WORK/broker-probe.txt"; }
if as_user 4246 "$BIN" probe "$bob" --pings 1 --echo-bytes 0 >"$WORK/broker-probe-other.txt" 2>&1; then
    fail "uid 4246 could open uid 4245's key"
fi

# 2. uid 4246 asks for a key named bob, writing uid 4245's phys itself: the broker stamps 4246.
#    (A raw client: CREATE2 with the descriptor read off bob's own node, then a DESTROY, which
#    must end this device and nothing else.)
mkdir -p "$WORK/home-4246" && chown 4246:4246 "$WORK/home-4246"
IMPOSTOR="$WORK/home-4246"
cat >"$IMPOSTOR/impostor.py" <<'PY'
import socket, struct, sys, time
path, descriptor_file, out = sys.argv[1], sys.argv[2], sys.argv[3]
descriptor = open(descriptor_file, "rb").read()
event = bytearray(4380)
struct.pack_into("<I", event, 0, 11)                       # UHID_CREATE2
event[4:4 + 12] = b"Latchkey bob"
phys = b"latchkey/uid=4245/bob"; event[132:132 + len(phys)] = phys
uniq = b"latchkey:bob"; event[196:196 + len(uniq)] = uniq
struct.pack_into("<HHIIII", event, 260, len(descriptor), 3, 0x1209, 0x4C4B, 0x100, 0)
event[280:280 + len(descriptor)] = descriptor
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(path)
s.send(bytes(event))
time.sleep(3)                                              # udev gives the node its owner
with open(out, "w") as f:
    f.write("created\n")
time.sleep(4)                                              # the shell looks at the node meanwhile
destroy = bytearray(4380); struct.pack_into("<I", destroy, 0, 1)
s.send(bytes(destroy))
s.settimeout(10)
try:
    closed = s.recv(8192) == b""
    while not closed:
        closed = s.recv(8192) == b""
except OSError:
    closed = True
with open(out, "a") as f:
    f.write("closed by the broker\n" if closed else "still open\n")
PY
chmod 0644 "$IMPOSTOR/impostor.py"
as_user 4246 /usr/bin/python3 "$IMPOSTOR/impostor.py" "$SOCKET" "/sys/class/hidraw/$(basename "$bob")/device/report_descriptor" \
    "$IMPOSTOR/impostor.txt" >"$IMPOSTOR/impostor.log" 2>&1 &
impostor_pid=$!
wait_for 30 grep -q created "$IMPOSTOR/impostor.txt" 2>/dev/null || fail "the raw client never created its device"
udevadm settle --timeout=20
impostor=""
for dir in /sys/class/hidraw/hidraw*; do
    node="/dev/$(basename "$dir")"
    [ "$node" = "$bob" ] && continue
    grep -qx "HID_UNIQ=latchkey:bob" "$dir/device/uevent" 2>/dev/null && impostor="$node"
done
if [ -n "$impostor" ]; then
    echo "uid 4246's raw client (it wrote phys latchkey/uid=4245/bob): $impostor, phys $(phys_of "$impostor"), $(stat -c '%a %u' "$impostor")"
    [ "$(phys_of "$impostor")" = "latchkey/uid=4246/bob" ] || fail "the broker kept the client's phys"
    [ "$(stat -c '%u' "$impostor")" = "4246" ] || fail "the raw client's node is not uid 4246's"
else
    fail "the raw client's device did not appear"
fi
wait "$impostor_pid" || fail "the raw client failed: $(cat "$IMPOSTOR/impostor.log")"
cat "$IMPOSTOR/impostor.txt"
grep -q "closed by the broker" "$IMPOSTOR/impostor.txt" || fail "a DESTROY from the client did not end its connection"
wait_for 20 sh -c "[ ! -e '$impostor' ] || ! grep -qx HID_UNIQ=latchkey:bob /sys/class/hidraw/$(basename "${impostor:-none}")/device/uevent 2>/dev/null" \
    || fail "the refused client's device outlived its connection"
echo "broker log:"; sed 's/^/  /' "$WORK/broker.log" | tail -6
grep -q "uid 4246's key 'bob' created" "$WORK/broker.log" || fail "the broker did not log uid 4246's bob"
grep -q "refused uid 4246's key 'bob': UHID_DESTROY is not for a client to send" "$WORK/broker.log" || fail "the DESTROY was not refused"
kill -0 "$(cat "$WORK/key-broker-4245-bob.pid")" || fail "uid 4246's refused client took uid 4245's key down"
[ -e "$bob" ] || fail "uid 4245's node went away"

# 3. While a second device claims 'bob' (uid 4246's key through the broker), 4245's probe by name refuses to choose.
start_key 4246 bob
wait_for 60 sh -c '[ $(grep -lx "HID_UNIQ=latchkey:bob" /sys/class/hidraw/hidraw*/device/uevent | wc -l) = 2 ]' \
    || fail "uid 4246's own key bob did not appear beside 4245's"
udevadm settle --timeout=20
for dir in /sys/class/hidraw/hidraw*; do
    node="/dev/$(basename "$dir")"
    [ "$node" = "$bob" ] && continue
    if grep -qx "HID_UNIQ=latchkey:bob" "$dir/device/uevent" 2>/dev/null; then
        echo "uid 4246's bob: $node, phys $(phys_of "$node"), $(stat -c '%a %u' "$node")"
        [ "$(phys_of "$node")" = "latchkey/uid=4246/bob" ] || fail "uid 4246's key is not stamped uid 4246"
        [ "$(stat -c '%u' "$node")" = "4246" ] || fail "uid 4246's node is not its own"
    fi
done
if as_user 4245 "$BIN" pin status --device bob >"$WORK/broker-two-bobs.txt" 2>&1; then
    fail "with two devices named bob, uid 4245's command chose one"
fi
grep -q "2 devices claim to be the Latchkey key 'bob'" "$WORK/broker-two-bobs.txt" || { fail "no refusal naming both"; cat "$WORK/broker-two-bobs.txt"; }
kill -TERM "$(cat "$WORK/key-broker-4246-bob.pid")"; wait "$(cat "$WORK/key-broker-4246-bob.pid")" 2>/dev/null

# 4. Measured: a report round trip through the broker against direct uhid (medians of 200 PINGs).
through=$(as_user 4245 "$BIN" probe "$bob" --pings 200 --echo-bytes 0 --json | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["ping"]["medianMicroseconds"])')
direct=$("$BIN" probe "$DIRECT" --pings 200 --echo-bytes 0 --json | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["ping"]["medianMicroseconds"])')
echo "PING round trip, median of 200: through the broker $through µs, direct $direct µs, ratio $("$PYTHON" -c "print(round($through / $direct, 2))")"

# 5. The broker stops: its keys go (serve exits 1, the node disappears); a new broker serves them again.
kill -TERM "$BROKER"; wait "$BROKER"
pid=$(cat "$WORK/key-broker-4245-bob.pid")
wait_for 20 sh -c "! kill -0 $pid 2>/dev/null" || fail "uid 4245's key outlived the broker"
wait "$pid" 2>/dev/null; status=$?
[ "$status" = 1 ] || fail "serve exited $status when the broker went (1 expected, so that its unit restarts it)"
grep -q "the uhid broker ($SOCKET) closed the connection" "$WORK/key-broker-4245-bob.log" || fail "the key did not say why it stopped"
wait_for 20 sh -c '! ls /sys/class/hidraw/*/device/uevent 2>/dev/null | xargs grep -lx "HID_UNIQ=latchkey:bob" >/dev/null' \
    || fail "bob's node outlived the broker"
start_broker || exit 1
start_key 4245 bob
wait_for 60 hidraw_for bob >/dev/null || fail "uid 4245's key did not come back through a new broker"
kill -TERM "$(cat "$WORK/key-broker-4245-bob.pid")"; wait "$(cat "$WORK/key-broker-4245-bob.pid")" 2>/dev/null
kill -TERM "$BROKER"; wait "$BROKER"
[ "$ok" = 1 ]
