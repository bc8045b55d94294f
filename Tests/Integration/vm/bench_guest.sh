#!/usr/bin/env bash
# Transport benchmark INSIDE the VM rig: one key on uhid and one on a socket (same binary, both
# --presence auto), measured by latchkey-bench's native client — through /dev/hidrawN (the
# kernel's hidraw and uhid) and through the socket. Under TCG only the ratios mean anything.
# Usage: bench_guest.sh LATCHKEY_BINARY BENCH_BINARY RESULTS_DIR SECONDS
set -u
BIN="$1"; BENCH="$2"; RESULTS="$3"; SECONDS_PER_FIGURE="$4"
WORK=$(mktemp -d /tmp/latchkey-bench.XXXXXX)
cleanup() { kill -TERM $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
source "$(dirname "$0")/guest_lib.sh"
[ -e /dev/uhid ] || modprobe uhid 2>/dev/null
"$BIN" serve --transport uhid --presence auto --name bench-uhid --store "$WORK/store-uhid" --log-level warning \
    >"$WORK/uhid.log" 2>&1 &
"$BIN" serve --transport "socket:$WORK/key.sock" --presence auto --store "$WORK/store-socket" --log-level warning \
    >"$WORK/socket.log" 2>&1 &
node=""
for _ in $(seq 1 100); do
    node=$(hidraw_for bench-uhid) && [ -n "$node" ] && [ -S "$WORK/key.sock" ] && break
    sleep 0.1
done
if [ -z "$node" ] || [ ! -S "$WORK/key.sock" ]; then
    echo "the keys did not come up"; cat "$WORK/uhid.log" "$WORK/socket.log"; exit 1
fi
echo "kernel $(uname -r), $(nproc) CPUs (TCG); uhid key on $node, socket key on $WORK/key.sock"
"$BENCH" --seconds "$SECONDS_PER_FIGURE" --json "$RESULTS/vm-bench.json" \
    --remote "socket:$WORK/key.sock" --remote "$node" | tee "$RESULTS/vm-bench.txt"
status=${PIPESTATUS[0]}
kill -0 $(jobs -p) 2>/dev/null || { echo "a key exited during the benchmark"; cat "$WORK/uhid.log" "$WORK/socket.log"; exit 1; }
exit "$status"
