#!/usr/bin/env bash
# The Debian package as a user meets it, INSIDE the VM rig (e2e_guest.sh's last step, with the
# Swift toolchain hidden): `apt install ./latchkey_*.deb`, then a user who is not root starts a
# key from it, finds it with fido2-token -L and makes and uses a passkey on it with headless
# Chromium (e2e_playwright.py, checked by Fido2Server); Debian's Chromium and Firefox ESR load the
# extension the package installs for every user, twice each (e2e_package_browsers.py); man and
# bash completion find their files; `apt remove` takes the package's files away and leaves the
# user's store.
# Usage: e2e_package.sh DEB PYTHON WORK_DIR. Exit 77: Chromium never loaded the page (not run).
set -u
DEB="$1"; PYTHON="$2"; WORK="$3"
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/guest_lib.sh"
rm -rf "$WORK"; mkdir -p "$WORK"
started=$SECONDS
fail() { echo "FAIL ($((SECONDS - started)) s): $*"; [ -n "${key_pid:-}" ] && kill -TERM "$key_pid" 2>/dev/null
        [ -n "${broker_pid:-}" ] && kill -TERM "$broker_pid" 2>/dev/null; exit 1; }
ok() { echo "ok ($((SECONDS - started)) s): $*"; }
key_pid=""

[ ! -e /opt/swift/usr/bin/swift ] && ! command -v swift >/dev/null || fail "the Swift toolchain is still in sight"
# What earlier steps left (scripts/install's group and rule): the package must bring its own.
rm -f /etc/udev/rules.d/70-latchkey.rules
getent group latchkey >/dev/null && { groupdel latchkey || fail "cannot remove the group earlier steps made"; }

# man-db's trigger reindexes every page, minutes under TCG: off, as in most CI images (man -w needs no index).
rm -f /var/lib/man-db/auto-update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$DEB" >"$WORK/apt-install.txt" 2>&1 \
    || { cat "$WORK/apt-install.txt"; fail "apt-get install $DEB"; }
ok "apt-get install $(basename "$DEB")"
[ "$(command -v latchkey)" = /usr/bin/latchkey ] || fail "latchkey is not /usr/bin/latchkey"
ldd /usr/bin/latchkey | tee "$WORK/ldd.txt" | grep -E "not found|swift" && fail "the binary needs what Debian does not give it"
latchkey --version || fail "latchkey --version"
gid=$(getent group latchkey | cut -d: -f3); [ -n "$gid" ] || fail "postinst made no group latchkey"
udevadm settle --timeout=20
[ "$(stat -c '%a %G' /dev/uhid)" = "660 latchkey" ] || fail "/dev/uhid is $(stat -c '%a %G' /dev/uhid), not 660 latchkey (the package's rule, reloaded by postinst)"
ok "group latchkey, /dev/uhid 660 latchkey"
man -w latchkey | grep -qx /usr/share/man/man1/latchkey.1.gz || fail "man -w latchkey: $(man -w latchkey 2>&1)"
man -w latchkey-serve >/dev/null || fail "man -w latchkey-serve"
completed=$(bash -c 'source /usr/share/bash-completion/completions/latchkey; COMP_WORDS=(latchkey credentials l); COMP_CWORD=2; _latchkey; echo "${COMPREPLY[*]}"')
[ "$completed" = list ] || fail "bash completion of 'latchkey credentials l' gave '$completed'"
/usr/bin/python3 -c 'import latchkey_rig, importlib.util, sys; sys.exit(importlib.util.find_spec("latchkey_socket") is None)' \
    || fail "Debian's python3 cannot import latchkey_rig and latchkey_socket"
ok "man -w latchkey, bash completion, python3 modules"

# A user in no group at all (not latchkey): their key goes through the package's uhid broker, run
# here by hand as systemd would start it from latchkey-uhid-broker.socket (the VM has no systemd).
broker_pid=""
/usr/bin/latchkey uhid-broker --log-level debug >"$WORK/broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 1 100); do [ -S /run/latchkey/uhid.socket ] && break; sleep 0.1; done
[ -S /run/latchkey/uhid.socket ] || { cat "$WORK/broker.log"; fail "the packaged broker did not listen"; }
uid=4343
grep -q "^lkuser:" /etc/passwd || echo "lkuser:x:$uid:$uid:Latchkey user:$WORK/home:/bin/bash" >>/etc/passwd
home="$WORK/home"; mkdir -p "$home" "$WORK/run" "$WORK/playwright"; chmod 0700 "$WORK/run"
chown "$uid:$uid" "$home" "$WORK/run" "$WORK/playwright"
as_user() { setpriv --reuid=$uid --regid=$uid --clear-groups env -i HOME="$home" XDG_RUNTIME_DIR="$WORK/run" PATH=/usr/bin:/bin "$@"; }
as_user latchkey serve --presence auto --uv auto --name pkg >"$WORK/key.log" 2>&1 &
key_pid=$!
node=""
for _ in $(seq 1 100); do node=$(hidraw_for pkg) && [ -n "$node" ] && break; sleep 0.1; done
[ -n "$node" ] || { cat "$WORK/key.log"; fail "no hidraw node for the user's key"; }
udevadm settle --timeout=20
[ "$(stat -c '%a %u' "$node")" = "600 $uid" ] || fail "$node is $(stat -c '%a %u' "$node"), not 600 $uid"
as_user fido2-token -L | tee "$WORK/list.txt" | grep -q "$node" || { cat "$WORK/list.txt"; fail "fido2-token -L as the user does not list $node"; }
ok "the user's key from /usr/bin/latchkey: $node (0600, theirs), listed by fido2-token -L"
# The user's Python is Debian's; python-fido2 and Playwright come from the test venv's packages
# (the venv's own interpreter may live where only root can reach, e.g. under /root/.pyenv).
site="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
as_user PYTHONPATH="$site" timeout -k 15 540 /usr/bin/python3 "$HERE/e2e_playwright.py" "$WORK/playwright" >"$WORK/playwright.out" 2>&1
status=$?
cat "$WORK/playwright.out" | grep -E "ok in|NOT RUN|Error" | tail -5
if [ "$status" -eq 77 ]; then kill -TERM "$key_pid" "$broker_pid"; wait "$key_pid" "$broker_pid"; exit 77; fi
[ "$status" -eq 0 ] || { tail -20 "$WORK/playwright.out"; tail -5 "$WORK/key.log"; fail "headless Chromium as the user"; }
ok "headless Chromium (the user's) made a passkey and signed in with it"
kill -TERM "$key_pid"; wait "$key_pid"; key_pid=""
grep -q "uid $uid's key 'pkg' created" "$WORK/broker.log" || { cat "$WORK/broker.log"; fail "the key was not made through the broker"; }
kill -TERM "$broker_pid"; wait "$broker_pid"; broker_pid=""
ok "a user in no group: the key made through the packaged uhid broker"
# The extension and its native host for every user, from the package alone: each browser started
# twice on a fresh profile as the user finds it in the page; the system-wide manifests start the
# packaged launcher (e2e_package_browsers.py).
mkdir -p "$WORK/browsers"; chown "$uid:$uid" "$WORK/browsers"
as_user PYTHONPATH="$site" timeout -k 15 1200 /usr/bin/python3 "$HERE/e2e_package_browsers.py" "$WORK/browsers" \
    >"$WORK/browsers.out" 2>&1
status=$?
grep -E "PASS|FAIL|passed" "$WORK/browsers.out"
[ "$status" -eq 0 ] || { tail -20 "$WORK/browsers.out"; fail "the extension installed for good (e2e_package_browsers.py)"; }
ok "Chromium and Firefox ESR load Latchkey's extension from the package, twice each; the host manifests reach it"
store="$home/.local/share/latchkey/pkg"
[ -s "$store/credentials.sqlite" ] && [ -s "$store/master.key" ] || fail "no store at $store"

DEBIAN_FRONTEND=noninteractive apt-get remove -y latchkey >"$WORK/apt-remove.txt" 2>&1 || { cat "$WORK/apt-remove.txt"; fail "apt-get remove"; }
for path in /usr/bin/latchkey /usr/lib/udev/rules.d/70-latchkey.rules /usr/share/man/man1/latchkey.1.gz \
        /usr/lib/systemd/user/latchkey.service /usr/share/bash-completion/completions/latchkey /usr/share/latchkey \
        /usr/share/chromium/extensions/latchkey "/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/signal-bridge@latchkey" \
        /etc/chromium/native-messaging-hosts/org.latchkey.bridge.json /usr/lib/mozilla/native-messaging-hosts/org.latchkey.bridge.json \
        /usr/lib/latchkey; do
    [ ! -e "$path" ] || fail "$path is still there after apt-get remove"
done
[ -s "$store/credentials.sqlite" ] && [ -s "$store/master.key" ] || fail "apt-get remove touched the user's store"
ok "apt-get remove: the package's files gone, the user's store kept"
