#!/usr/bin/env bash
# The Debian package as Debian's own tools see it: scripts/package builds it from this checkout,
# lintian finds no error or warning in it, and it holds what scripts/package says it does, with a
# binary that needs no Swift toolchain. (Installing it, starting a key from it as a user and
# removing it run in the VM rig: Tests/Integration/vm/e2e_guest.sh, "the Debian package".)
# Usage: Tests/Scripts/package_test.sh [DEB]   (default: build one with scripts/package)
# Prints one line per check and `package tests: N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh
ensure_debs lintian dpkg-dev >/dev/null || exit 1
passed=0; failed=0
check() {  # check NAME COMMAND...
    local name="$1"; shift
    if "$@" >/tmp/package-check.out 2>&1; then passed=$((passed + 1)); echo "PASS $name"
    else failed=$((failed + 1)); echo "FAIL $name"; sed 's/^/    | /' /tmp/package-check.out | tail -20; fi
}
deb="${1:-}"
if [ -z "$deb" ]; then
    started=$SECONDS
    deb="$(scripts/package | tail -n 1)" || { echo "FAIL scripts/package"; echo "package tests: 0 passed, 1 failed"; exit 1; }
    echo "scripts/package: $deb in $((SECONDS - started)) s ($(du -h "$deb" | cut -f1))"
fi
work="$(mktemp -d /tmp/package-test.XXXXXX)"; trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$deb" "$work/root"; dpkg-deb -e "$deb" "$work/control"
# lintian refuses nothing as root, but says so on stderr; its tags are on stdout.
check "lintian: no error or warning" sh -c "lintian --fail-on error,warning --display-level '>=warning' '$deb' 2>/dev/null | tee /dev/stderr | grep -q . && exit 1; lintian --fail-on error,warning '$deb' >/dev/null 2>&1"
check "the version is the binary's" sh -c "[ \"\$(dpkg-deb -f '$deb' Version)\" = \"\$('$work/root/usr/bin/latchkey' --version | cut -d' ' -f2)\" ]"
check "no Swift runtime linked dynamically" sh -c "! ldd '$work/root/usr/bin/latchkey' | grep -E 'swift|Foundation|dispatch|not found'"
check "depends on Debian 12 libraries only (no toolchain)" sh -c "dpkg-deb -f '$deb' Depends | tee /dev/stderr | grep -q libssl3 && ! dpkg-deb -f '$deb' Depends | grep -qi swift"
for path in usr/bin/latchkey usr/lib/udev/rules.d/70-latchkey.rules usr/lib/modules-load.d/latchkey.conf \
        usr/lib/systemd/user/latchkey.service usr/share/polkit-1/actions/org.latchkey.verify-user.policy \
        usr/lib/systemd/system/latchkey-uhid-broker.socket usr/lib/systemd/system/latchkey-uhid-broker.service \
        usr/share/man/man1/latchkey-uhid-broker.1.gz \
        usr/share/latchkey/extension/manifest.json usr/share/man/man1/latchkey.1.gz usr/share/man/man1/latchkey-serve.1.gz \
        usr/share/bash-completion/completions/latchkey usr/share/zsh/vendor-completions/_latchkey \
        usr/share/fish/vendor_completions.d/latchkey.fish usr/lib/python3/dist-packages/latchkey_socket.py \
        usr/lib/python3/dist-packages/latchkey_rig.py usr/share/doc/latchkey/copyright usr/share/doc/latchkey/changelog.gz; do
    check "holds /$path" test -s "$work/root/$path"
done
check "the broker's socket is where keys look for it, open to every user; its service is the packaged binary, sandboxed" sh -c "
    grep -qx 'ListenSequentialPacket=/run/latchkey/uhid.socket' '$work/root/usr/lib/systemd/system/latchkey-uhid-broker.socket' &&
    grep -qx 'SocketMode=0666' '$work/root/usr/lib/systemd/system/latchkey-uhid-broker.socket' &&
    grep -qx 'ExecStart=/usr/bin/latchkey uhid-broker' '$work/root/usr/lib/systemd/system/latchkey-uhid-broker.service' &&
    grep -qx 'CapabilityBoundingSet=' '$work/root/usr/lib/systemd/system/latchkey-uhid-broker.service' &&
    grep -qx 'DeviceAllow=/dev/uhid rw' '$work/root/usr/lib/systemd/system/latchkey-uhid-broker.service' &&
    grep -q 'deb-systemd-helper enable latchkey-uhid-broker.socket' '$work/control/postinst'"
check "systemd-analyze verify accepts the broker's units" sh -c "
    command -v systemd-analyze >/dev/null || exit 0
    d=\$(mktemp -d); cp '$work/root/usr/lib/systemd/system/'latchkey-uhid-broker.* \$d/
    sed -i \"s|/usr/bin/latchkey|$work/root/usr/bin/latchkey|\" \$d/latchkey-uhid-broker.service
    systemd-analyze verify --man=no \$d/latchkey-uhid-broker.socket \$d/latchkey-uhid-broker.service; s=\$?; rm -rf \$d; exit \$s"
check "the user unit runs the packaged binary (passkeys exportable: --counter zero)" grep -q '^ExecStart=/usr/bin/latchkey serve --presence notify --counter zero' "$work/root/usr/lib/systemd/user/latchkey.service"
check "the extension for every user: Debian's Chromium and Firefox ESR extension folders name it" sh -c \
    "[ \"\$(readlink -f '$work/root/usr/share/chromium/extensions/latchkey')\" = '$work/root/usr/share/latchkey/extension' ] \
     && [ \"\$(readlink -f '$work/root/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/signal-bridge@latchkey')\" = '$work/root/usr/share/latchkey/extension' ] \
     && grep -q 'startupScanScopes\", 8' '$work/root/etc/firefox-esr/latchkey.js' && [ \"\$(cat '$work/control/conffiles')\" = /etc/firefox-esr/latchkey.js ]"
check "every file the extension names is in the package (prompt.html, provider-background.js …)" python3 -c "
import json, os, sys
root = '$work/root/usr/share/latchkey/extension'
m = json.load(open(os.path.join(root, 'manifest.json')))
named = set(m['background']['scripts']) | {m['options_ui']['page']} | {f for c in m['content_scripts'] for f in c['js']}
named |= {'prompt.html', 'prompt.js', 'provider.js', 'provider-main.js'}
missing = sorted(f for f in named if not os.path.isfile(os.path.join(root, f)))
sys.exit(f'missing: {missing}' if missing else 0)"
# The system-wide host manifests are the ones `latchkey bridge install` writes for one user, but
# for the launcher, which runs the packaged binary's native host.
HOME="$work/home" "$work/root/usr/bin/latchkey" bridge install --store "$work/store" >/dev/null 2>&1
check "system-wide native-messaging manifests: bridge install's, with the packaged launcher" python3 -c "
import json, sys
import os
link = '$work/root/etc/chromium/native-messaging-hosts/org.latchkey.bridge.json'
assert os.readlink(link) == '/usr/share/latchkey/native-messaging-hosts/chromium.json', 'not a link to /usr (a conffile would outlive apt remove)'
pairs = [('$work/root/usr/share/latchkey/native-messaging-hosts/chromium.json', '$work/home/.config/chromium/NativeMessagingHosts/org.latchkey.bridge.json'),
         ('$work/root/usr/lib/mozilla/native-messaging-hosts/org.latchkey.bridge.json', '$work/home/.mozilla/native-messaging-hosts/org.latchkey.bridge.json')]
for system, user in pairs:
    a, b = json.load(open(system)), json.load(open(user))
    assert a.pop('path') == '/usr/lib/latchkey/native-host', system
    b.pop('path')
    assert a == b, (a, b)
"
check "the launcher runs the packaged binary's native host" grep -qx 'exec /usr/bin/latchkey native-host "\$@"' "$work/root/usr/lib/latchkey/native-host"
check "the rules are the repository's" cmp udev/70-latchkey.rules "$work/root/usr/lib/udev/rules.d/70-latchkey.rules"
check "postinst makes group latchkey and loads uhid; postrm leaves stores alone" sh -c \
    "grep -q 'groupadd --system latchkey' '$work/control/postinst' && grep -q 'modprobe uhid' '$work/control/postinst' && ! grep -q 'latchkey/' '$work/control/postrm'"
check "man pages for every command" sh -c "[ \$(ls '$work/root/usr/share/man/man1' | wc -l) -eq \$(( \$('$work/root/usr/bin/latchkey' --help | grep -cE '^  [a-z][a-z-]* {2,}') + 1 )) ]"
echo "package tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
