# Shared helpers for Latchkey's scripts (sourced, not run).
# shellcheck shell=bash

LATCHKEY_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="/opt/swift/usr/bin:$PATH"

say() { printf '%s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        say "need root for: $*"; return 1; fi
}

# Install Debian packages that are missing (apt-get update once, first).
ensure_debs() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing Debian packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The C libraries the package links (system-library targets) and pkg-config to find them,
# Debian's Public Suffix List, which `latchkey native-host` checks websites' RP IDs against, and
# what the toolchain's FoundationNetworking loads (libcurl) with the system trust store it checks
# sites against (`credentials --endpoints`).
ensure_build_deps() {
    ensure_debs pkg-config libssl-dev libsqlite3-dev libudev-dev libtss2-dev libsecret-1-dev zlib1g-dev publicsuffix libcurl4 ca-certificates
    if ! command -v swift >/dev/null; then
        say "error: no Swift 6 toolchain on PATH (expected /opt/swift/usr/bin/swift)."
        say "Install Swift 6 for Debian 12 and put its usr/bin on PATH, then run this again."
        return 1
    fi
}

# The release build the Debian package ships: the Swift runtime linked statically, bound at load
# time (lintian: hardening-no-bindnow). scripts/bench --instructions counts the instructions of
# this same build, so the two share its objects. Usage: release_build --product NAME
release_build() {
    swift build -c release -j "${LATCHKEY_BUILD_JOBS:-2}" --static-swift-stdlib -Xlinker -z -Xlinker now "$@"
}

# A Python venv with python-fido2 2.2.1 for the integration suites.
ensure_python_venv() {
    local venv="$LATCHKEY_ROOT/.build/test-venv"
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv" 2>/dev/null || { ensure_debs python3-venv && python3 -m venv "$venv"; }
    fi
    # playwright: its own driver only (the VM rig runs it with Debian's chromium; no browser download).
    # cryptography pinned: its wheel carries an OpenSSL with ML-DSA, which the suites check
    # Latchkey's ML-DSA signatures against; pytest runs python-fido2's own device suite.
    if ! "$venv/bin/python" -c 'import fido2, selenium, dbus_next, playwright, pytest, importlib.metadata as m; assert m.version("fido2") == "2.2.1" and m.version("cryptography") == "50.0.2"' 2>/dev/null; then
        say "installing python-fido2 2.2.1, cryptography, pytest, selenium, dbus-next and playwright into $venv"
        "$venv/bin/pip" install -q --disable-pip-version-check "fido2==2.2.1" "cryptography==50.0.2" "pytest==8.4.2" \
            "selenium==4.51.0" "dbus-next==0.2.3" "playwright==1.65.2" >&2
    fi
    printf '%s\n' "$venv/bin/python"
}

# python-fido2 2.2.1's own device suite: `tests/` of its sdist (the wheel has none), unpacked
# under .build/ and checked against the sdist's published SHA-256. Prints the directory.
FIDO2_SDIST_SHA256=85787428a94c3f8eaf72f0ff30afba983b559a1b1b795c93318c81b4ad4062c4
ensure_fido2_device_suite() {
    local python="$1" dir="$LATCHKEY_ROOT/.build/fido2-2.2.1-sdist"
    if [ ! -f "$dir/fido2-2.2.1/tests/device/conftest.py" ]; then
        rm -rf "$dir" && mkdir -p "$dir"
        "$python" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: "fido2==2.2.1" -d "$dir" >&2 \
            || { say "cannot download python-fido2 2.2.1's sdist from PyPI"; return 1; }
        echo "$FIDO2_SDIST_SHA256  $dir/fido2-2.2.1.tar.gz" | sha256sum -c --quiet - >&2 \
            || { say "python-fido2 2.2.1's sdist does not have its published SHA-256"; return 1; }
        tar -xzf "$dir/fido2-2.2.1.tar.gz" -C "$dir"
    fi
    printf '%s\n' "$dir/fido2-2.2.1"
}

# The VM rig's tools: qemu (TCG), a Debian kernel that ships uhid.ko, busybox for virtme-ng's
# init, the clients the e2e suite drives, and virtme-ng (PyPI) in a venv under .build/.
ensure_vm_deps() {
    ensure_debs qemu-system-x86 linux-image-amd64 busybox-static fido2-tools openssh-client python3-venv \
        chromium chromium-driver firefox-esr
    local venv="$LATCHKEY_ROOT/.build/vng-venv"
    if [ ! -x "$venv/bin/vng" ]; then
        python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check "virtme-ng==1.42" >&2
    fi
    printf '%s\n' "$venv/bin"
}

# The newest Debian kernel image installed.
vm_kernel() { ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1; }
