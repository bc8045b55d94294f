#!/usr/bin/env python3
"""Benchmarks/instructions.py's gate and targets on made-up counts: a count more than 3% over its
baseline fails, one within passes, one far under passes and asks for the baseline to follow, a
profile missing from either side fails; the targets' ratios and limits. Standard library only.

Prints one line per check and `instructions tests: N passed, N failed`; exits 1 on a failure."""
import importlib.util
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "instructions", os.path.join(HERE, os.pardir, os.pardir, "Benchmarks", "instructions.py"))
instructions = importlib.util.module_from_spec(spec)
spec.loader.exec_module(instructions)

RESULTS = []


def check(name, condition):
    RESULTS.append(condition)
    print(("PASS  " if condition else "FAIL  ") + name, flush=True)


def verdicts(counts, baseline):
    return [(ok, line.split()[1].rstrip(":")) for ok, line in instructions.compare(counts, baseline)]


check("a count 3% over its baseline or less passes",
      verdicts({"a": 103_000, "b": 100_000}, {"a": 100_000, "b": 100_000}) == [(True, "a"), (True, "b")])
check("a count more than 3% over its baseline fails (a 5% regression)",
      verdicts({"a": 105_000}, {"a": 100_000}) == [(False, "a")])
lines = instructions.compare({"a": 90_000}, {"a": 100_000})
check("a count more than 3% under its baseline passes and asks for the baseline to follow",
      lines[0][0] and "update it" in lines[0][1])
check("a profile in the baseline but not measured fails", verdicts({}, {"a": 1}) == [(False, "a")])
check("a profile measured but not in the baseline fails", verdicts({"a": 1, "z": 5}, {"a": 1}) == [(True, "a"), (False, "z")])

counts = {"es256-sign": 250_000, "core-getassertion": 265_000, "resident-allowlist": 280_000,
          "socket-getassertion": 300_000, "socket-ping": 16_000, "p256-keygen": 200_000, "sql-insert": 100_000,
          "resident-makecredential": 400_000}
rows = {label: (ratio, met) for label, _, ratio, _, met in instructions.target_rows(counts)}
check("a ratio target: 265,000 over one sign of 250,000 is 1.06×, met", rows["non-resident getAssertion"] == ("1.06×", True))
check("a ratio target missed: 280,000 is 1.12× against 1.10×", rows["resident getAssertion by allowList"] == ("1.12×", False))
check("an absolute target: the socket share is the socket path minus the in-process one (35,000 > 30,000)",
      rows["socket + CTAPHID share of a getAssertion"] == ("", False))
check("makeCredential's baseline is one keygen plus the SQL-only save (400,000 / 300,000 = 1.33×)",
      rows["resident makeCredential"] == ("1.33×", False))
check("a target whose profiles were not run is left out", "U2F authenticate" not in rows)

with tempfile.TemporaryDirectory() as work:
    path = os.path.join(work, "benchmarks.md")
    with open(path, "w") as handle:
        handle.write("# Benchmarks\n\nprose\n")
    instructions.write_section(path, "table one")
    instructions.write_section(path, "table two")
    with open(path) as handle:
        text = handle.read()
    check("the markdown section is added once and then replaced in place",
          text.count("<!-- instructions:begin -->") == 1 and "table two" in text and "table one" not in text
          and text.startswith("# Benchmarks\n\nprose\n"))

failed = RESULTS.count(False)
print(f"instructions tests: {len(RESULTS) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
