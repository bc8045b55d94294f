#!/usr/bin/env bash
# The uhid end-to-end suite, run INSIDE the VM rig (scripts/e2e boots it): the real kernel HID
# stack, the real `latchkey serve --transport uhid`, real clients (libfido2 tools, python-fido2
# over hidraw, OpenSSH). Usage: e2e_guest.sh LATCHKEY_BINARY PYTHON RESULTS_DIR
set -u
BIN="$1"; PYTHON="$2"; RESULTS="$3"
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK=/tmp/e2e; rm -rf "$WORK"; mkdir -p "$WORK"
export HOME="$WORK/home"; mkdir -p "$HOME"
passed=0; failed=0
log() { printf '%s\n' "$*"; }
step() {  # step NAME COMMAND...: run, print PASS/FAIL with the time taken
    local name="$1"; shift
    local started; started=$(date +%s%N)
    if "$@" >"$WORK/step.out" 2>&1; then
        local ms=$(( ($(date +%s%N) - started) / 1000000 ))
        passed=$((passed + 1)); log "PASS  $name ($((ms / 1000)).$(printf '%03d' $((ms % 1000))) s)"
    else
        failed=$((failed + 1)); log "FAIL  $name"; sed 's/^/      | /' "$WORK/step.out" | tail -25
    fi
}

start_key() {  # start_key NAME: a key on uhid with its own store; waits for its hidraw node
    local name="$1"
    "$BIN" serve --transport uhid --presence auto --name "$name" --store "$WORK/store-$name" \
        --log-level debug >>"$WORK/key-$name.log" 2>&1 &
    echo $! >"$WORK/key-$name.pid"
    for _ in $(seq 1 100); do
        node=$(hidraw_for "$name") && [ -n "$node" ] && { echo "$node" >"$WORK/key-$name.node"; return 0; }
        sleep 0.1
    done
    echo "no hidraw node for key $name"; cat "$WORK/key-$name.log"; return 1
}
stop_key() { local pid; pid=$(cat "$WORK/key-$1.pid"); kill -TERM "$pid"; wait "$pid"; }
node_of() { cat "$WORK/key-$1.node"; }
hidraw_for() {  # the /dev/hidrawN whose HID uniq is latchkey:NAME
    local dir
    for dir in /sys/class/hidraw/hidraw*; do
        [ -e "$dir" ] || continue
        if grep -qx "HID_UNIQ=latchkey:$1" "$dir/device/uevent" 2>/dev/null; then echo "/dev/$(basename "$dir")"; return 0; fi
    done
    return 1
}
b64() { base64 -w0; }

# --- checks -------------------------------------------------------------------------------------

check_report_descriptor() {
    local node sys
    node=$(node_of main); sys=/sys/class/hidraw/$(basename "$node")/device/report_descriptor
    local head; head=$(od -An -tx1 -N5 "$sys" | tr -d ' \n')
    echo "report descriptor starts $head"
    [ "$head" = "06d0f10901" ]
}
check_token_list() { fido2-token -L | tee /dev/stderr | grep -q "$(node_of main)"; }
check_token_info() {
    fido2-token -I "$(node_of main)" | tee "$WORK/info.txt"
    grep -q "FIDO_2_0" "$WORK/info.txt" && grep -q "U2F_V2" "$WORK/info.txt" && grep -qi "aaguid: d4a016d1783d4c7ea521dd2196f32a99" "$WORK/info.txt"
}

make_cred() {  # make_cred TAG TYPE RP [extra fido2-cred flags]: -M then -V; saves pubkey and cred id
    local tag="$1" type="$2" rp="$3"; shift 3
    { head -c32 /dev/urandom | b64; echo; echo "$rp"; echo "user-$tag"; head -c16 /dev/urandom | b64; echo; } >"$WORK/$tag.cred.in"
    fido2-cred -M "$@" -i "$WORK/$tag.cred.in" -o "$WORK/$tag.cred.out" "$(node_of main)" "$type" || return 1
    grep -q '^packed$' "$WORK/$tag.cred.out" || { echo "not packed attestation"; return 1; }
    local verify_flags=(); for flag in "$@"; do [ "$flag" = "-h" ] && verify_flags+=(-h); done
    fido2-cred -V "${verify_flags[@]}" -i "$WORK/$tag.cred.out" -o "$WORK/$tag.verified" "$type" || return 1
    sed -n 1p "$WORK/$tag.verified" >"$WORK/$tag.credid"
    sed -n '2,$p' "$WORK/$tag.verified" >"$WORK/$tag.pub.pem"
}
get_assert() {  # get_assert TAG TYPE RP [resident]: -G then -V with the credential's key
    local tag="$1" type="$2" rp="$3" resident="${4:-}"
    { head -c32 /dev/urandom | b64; echo; echo "$rp"; [ -z "$resident" ] && { cat "$WORK/$tag.credid"; }; } >"$WORK/$tag.assert.in"
    local flags=(-p); [ -n "$resident" ] && flags+=(-r)
    fido2-assert -G "${flags[@]}" -i "$WORK/$tag.assert.in" -o "$WORK/$tag.assert.out" "$(node_of main)" || return 1
    head -n4 "$WORK/$tag.assert.out" >"$WORK/$tag.assert.verify"
    fido2-assert -V -p -i "$WORK/$tag.assert.verify" "$WORK/$tag.pub.pem" "$type"
}
check_cred_assert() { make_cred "$1" "$2" "$3" && get_assert "$1" "$2" "$3"; }
check_resident() { make_cred rk es256 rk.example -r && get_assert rk es256 rk.example resident; }
check_wrong_rp_rejected() {
    { head -c32 /dev/urandom | b64; echo; echo "evil.example"; cat "$WORK/es.credid"; } >"$WORK/evil.in"
    ! fido2-assert -G -p -i "$WORK/evil.in" -o "$WORK/evil.out" "$(node_of main)"
}
check_tampered_rejected() {
    # Flip one byte of the signed authenticator data: verification must fail.
    local authdata tampered
    authdata=$(sed -n 3p "$WORK/es.assert.verify")
    tampered=$(echo "$authdata" | base64 -d | python3 -c 'import sys; d=bytearray(sys.stdin.buffer.read()); d[40]^=1; sys.stdout.buffer.write(d)' | b64)
    { sed -n 1,2p "$WORK/es.assert.verify"; echo "$tampered"; sed -n 4p "$WORK/es.assert.verify"; } >"$WORK/tampered.verify"
    ! fido2-assert -V -p -i "$WORK/tampered.verify" "$WORK/es.pub.pem" es256
}
check_python_hidraw() { "$PYTHON" "$HERE/e2e_python.py" "$(node_of main)"; }
check_ssh() {  # check_ssh TYPE: ssh-keygen makes an -sk key on the device, signs, verifies
    local type="$1" key="$WORK/id_$1"
    ssh-keygen -q -t "$type" -f "$key" -N "" -C "e2e@latchkey" </dev/null || return 1
    echo "latchkey e2e data" >"$WORK/data-$type.txt"
    ssh-keygen -Y sign -f "$key" -n file "$WORK/data-$type.txt" </dev/null || return 1
    echo "e2e@latchkey $(cat "$key.pub")" >"$WORK/allowed-$type"
    ssh-keygen -Y verify -f "$WORK/allowed-$type" -I e2e@latchkey -n file -s "$WORK/data-$type.txt.sig" <"$WORK/data-$type.txt"
}
check_stop_removes_node() {
    local node; node=$(node_of main)
    stop_key main || return 1
    for _ in $(seq 1 50); do [ -e "$node" ] || return 0; sleep 0.1; done
    echo "$node still exists"; return 1
}
check_restart_keeps_credentials() { start_key main && get_assert rk es256 rk.example resident; }
check_two_keys() {
    start_key second || return 1
    fido2-token -L | tee "$WORK/list.txt"
    # libfido2 1.12 reads manufacturer/product strings from a USB parent, which uhid devices lack.
    local count; count=$(grep -c "vendor=0x1209, product=0x4c4b" "$WORK/list.txt")
    [ "$(node_of main)" != "$(node_of second)" ] && [ "$count" -eq 2 ] || { echo "devices listed: $count"; return 1; }
    stop_key second
}

# --- run ----------------------------------------------------------------------------------------
log "guest kernel $(uname -r)"
modprobe uhid && modprobe hid-generic || { log "FAIL  modprobe uhid/hid-generic"; exit 1; }
step "key starts on uhid and its hidraw node appears" start_key main
step "report descriptor has the FIDO usage page (06 D0 F1 09 01)" check_report_descriptor
step "fido2-token -L lists the key" check_token_list
step "fido2-token -I shows getInfo (FIDO_2_0, U2F_V2, AAGUID)" check_token_info
step "fido2-cred -M/-V ES256, then fido2-assert -G/-V" check_cred_assert es es256 e2e.example
step "fido2-cred -M/-V EdDSA, then fido2-assert -G/-V" check_cred_assert ed eddsa e2e.example
step "fido2-cred -M -r (resident), fido2-assert -G -r without a credential ID" check_resident
step "fido2-assert for the wrong RP is rejected" check_wrong_rp_rejected
step "a tampered assertion fails fido2-assert -V" check_tampered_rejected
step "python-fido2 over hidraw: register + authenticate verified by Fido2Server" check_python_hidraw
step "OpenSSH ecdsa-sk key: ssh-keygen -Y sign/verify" check_ssh ecdsa-sk
step "OpenSSH ed25519-sk key: ssh-keygen -Y sign/verify" check_ssh ed25519-sk
step "stopping the key removes its hidraw node" check_stop_removes_node
step "restarting the key keeps its credentials" check_restart_keeps_credentials
step "two keys at once appear as two devices" check_two_keys
stop_key main 2>/dev/null
cp "$WORK"/key-*.log "$RESULTS/" 2>/dev/null
log "uhid e2e: $passed passed, $failed failed"
echo "$passed $failed" >"$RESULTS/summary"
[ "$failed" -eq 0 ]
