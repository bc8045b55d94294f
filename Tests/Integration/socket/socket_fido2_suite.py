"""python-fido2 2.2.1's own device suite (`tests/device` of its sdist, unpacked by scripts/test
into LATCHKEY_FIDO2_SUITE) against one key with every algorithm on, over the socket. The suite
runs unchanged; fido2_device_plugin.py only tells it where the key is and how to replug it."""

import re

from socket_support import BINARY, SUPPORT, SCRIPTS, WORK, Key, check, os, subprocess, sys

# Every algorithm the key makes, as the suite's `algorithm` fixture asks for each by COSE number.
ALL_ALGORITHMS = "ES256,EdDSA,ES384,ES512,ES256K,RS256,PS256,ML-DSA-44,ML-DSA-65,ML-DSA-87"
# The suite's vendor-facilitated enterprise attestation test names an RP ID on its command line.
ENTERPRISE_RP = "ep.example.com"
# What a key may leave untested: bio enrollment (Latchkey's built-in UV has no fingerprint
# templates to enroll; `--uv fprintd` uses the reader's own enrollment).
ALLOWED_SKIPS = ("BioEnrollment not supported by authenticator",)


def run_device_suite(environment, label):
    """Runs pytest on the suite; returns (counts, skip reasons, output)."""
    suite = os.environ.get("LATCHKEY_FIDO2_SUITE")
    assert suite and os.path.isdir(os.path.join(suite, "tests", "device")), \
        "LATCHKEY_FIDO2_SUITE must name the unpacked python-fido2 2.2.1 sdist (scripts/test sets it)"
    env = dict(os.environ, **environment, PYTHONPATH=os.pathsep.join([SUPPORT, SCRIPTS]))
    result = subprocess.run([sys.executable, "-m", "pytest", "tests/device", "-p", "fido2_device_plugin",
                             "--ep-rp-id", ENTERPRISE_RP, "-q", "-rs", "-p", "no:cacheprovider", "--color=no"],
                            cwd=suite, env=env, capture_output=True, text=True, timeout=1800)
    output = result.stdout + result.stderr
    with open(os.path.join(WORK, f"fido2-device-suite-{label}.log"), "w") as log:
        log.write(output)
    summary = output.strip().splitlines()[-1] if output.strip() else ""
    counts = {word: int(number) for number, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", summary)}
    reasons = re.findall(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", output, re.M)
    return counts, reasons, output


@check("python-fido2 2.2.1's device suite (tests/device, unchanged) over the socket, every algorithm on: "
       "0 failed, 0 errors, skipped only bio enrollment")
def test_device_suite_over_socket(key):
    counts, reasons, output = run_device_suite(
        {"LATCHKEY_SUITE_SOCKET": key.socket_path, "LATCHKEY_SUITE_PID": str(key.process.pid)}, "socket")
    print(f"      device suite: {counts}", flush=True)
    assert counts.get("passed", 0) > 0 and not counts.get("failed") and not counts.get("errors") \
        and not counts.get("error"), output[-4000:]
    unexpected = sorted({reason for reason in reasons if not reason.startswith(ALLOWED_SKIPS)})
    assert not unexpected, f"skipped for other reasons: {unexpected}"


def test_fido2_device_suite():
    key = Key("fido2suite", extra=["--algorithms", ALL_ALGORITHMS, "--enterprise-rp", ENTERPRISE_RP]).start()
    try:
        test_device_suite_over_socket(key)
    finally:
        key.stop()
