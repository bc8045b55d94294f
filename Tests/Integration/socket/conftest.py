"""pytest's view of the socket suite (test_socket_suite.py): `--latchkey PATH` names the binary
it runs (the repository's debug build when left out), and the run ends with the checks' own
count, `socket integration: N passed, N failed`, beside pytest's count of groups."""

import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir))


def pytest_addoption(parser):
    parser.addoption("--latchkey", default=os.path.join(ROOT, ".build", "debug", "latchkey"), metavar="PATH",
                     help="the latchkey binary the socket suite runs (default: .build/debug/latchkey)")
    parser.addoption("--trace-dir", metavar="DIR",
                     help="keep a trace of every key the suite starts in DIR (Fuzz/make-corpus.py's input)")


def pytest_configure(config):
    # socket_support reads it when the suite's modules are imported, after this.
    os.environ["LATCHKEY_BINARY"] = os.path.abspath(config.getoption("--latchkey"))
    if config.getoption("--trace-dir"):
        os.makedirs(config.getoption("--trace-dir"), exist_ok=True)
        os.environ["LATCHKEY_TRACE_DIR"] = os.path.abspath(config.getoption("--trace-dir"))
    # python-fido2's device suite, where scripts/test unpacks it, unless named otherwise.
    sdist = os.path.join(ROOT, ".build", "fido2-2.2.1-sdist", "fido2-2.2.1")
    if os.path.isdir(os.path.join(sdist, "tests", "device")):
        os.environ.setdefault("LATCHKEY_FIDO2_SUITE", sdist)


def pytest_terminal_summary(terminalreporter):
    check_support = sys.modules.get("check_support")
    if check_support is None or not check_support.RESULTS:
        return
    passed = sum(1 for _, ok in check_support.RESULTS if ok)
    failed = len(check_support.RESULTS) - passed
    terminalreporter.write_line(f"socket integration: {passed} passed, {failed} failed")
