#!/usr/bin/env python3
"""Instructions per operation on Latchkey's hot paths, counted by callgrind: the measure of record
for performance (docs/benchmarks.md), because the same binary and inputs give the same counts
however busy the machine is, where wall-clock times move by 10-30% from run to run.

Each profile (`latchkey-bench --profile NAME`, Benchmarks/LatchkeyBench/Profile.swift) runs
twice under `valgrind --tool=callgrind`, N and 2N times; the difference divided by N is one
operation's cost, so start-up and set-up cancel. Swift's hashing is made deterministic
(SWIFT_DETERMINISTIC_HASHING) so dictionary probes repeat too; what still varies is the ECDSA
nonce's bit pattern, a handful of instructions.

    python3 Benchmarks/instructions.py BENCH                      # the table and the targets
    python3 Benchmarks/instructions.py BENCH --check FILE         # and fail on a count 3% over FILE's
    python3 Benchmarks/instructions.py BENCH --write-baseline FILE
    python3 Benchmarks/instructions.py BENCH --markdown docs/benchmarks.md

BENCH is a release `latchkey-bench` built as the package builds latchkey (scripts/bench
--instructions builds it so and runs this). The baseline is updated deliberately, with the reason
in the commit: a count that grew by more than 3% fails `--check`; one that fell by more than 3%
is reported, so the baseline can follow it down.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

TOLERANCE = 0.03

# name: what one operation is
PROFILES = {
    "es256-sign": "one ES256 signature of 69 bytes (SHA-256 + ECDSA P-256)",
    "p256-keygen": "one P-256 key generated (scalar and public point)",
    "core-getassertion": "getAssertion, non-resident (allowList), in process",
    "resident-allowlist": "getAssertion, resident credential by allowList",
    "discoverable-1": "getAssertion, discoverable, 1 account at the RP",
    "discoverable-1000": "getAssertion, discoverable, 1,000 accounts at the RP",
    "socket-getassertion": "getAssertion over the socket transport and CTAPHID (key and client)",
    "socket-ping": "CTAPHID PING (57 bytes) over the socket transport",
    "u2f-authenticate": "U2F authenticate (enforce presence)",
    "resident-makecredential": "makeCredential, resident, durable (one commit)",
    "sql-insert": "the SQL alone of that save: same transaction and statements, rows sealed once",
    "durable-commit": "the store's smallest durable transaction (a setting row)",
}

# Profiles whose set-up varies from process to process (a store filled with rows whose keyed
# hashes differ each time, so its pages split differently) need more operations for the
# difference of two runs to settle: with N = 50 one operation of discoverable-1000 moved by ±7%.
ITERATIONS = {"discoverable-1000": 500}

# (label, value, baseline, limit): value and baseline are functions of the per-operation counts;
# a limit under 100 is a ratio, over it an absolute count of instructions. Issue 47's targets.
TARGETS = [
    ("non-resident getAssertion", lambda c: c["core-getassertion"], lambda c: c["es256-sign"], 1.06),
    ("resident getAssertion by allowList", lambda c: c["resident-allowlist"], lambda c: c["es256-sign"], 1.10),
    ("discoverable getAssertion, 1 account", lambda c: c["discoverable-1"], lambda c: c["es256-sign"], 1.12),
    ("discoverable getAssertion, 1,000 accounts", lambda c: c["discoverable-1000"], lambda c: c["es256-sign"], 1.12),
    ("socket + CTAPHID share of a getAssertion", lambda c: c["socket-getassertion"] - c["core-getassertion"], None, 30_000),
    ("PING round trip over the socket", lambda c: c["socket-ping"], None, 15_000),
    ("resident makeCredential", lambda c: c["resident-makecredential"],
     lambda c: c["p256-keygen"] + c["sql-insert"], 1.3),
    ("U2F authenticate", lambda c: c["u2f-authenticate"], lambda c: c["es256-sign"], 1.06),
]


def total(path):
    with open(path) as handle:
        for line in handle:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError(f"{path} has no totals line")


def measure(bench, name, iterations, work):
    counts = []
    for n in (iterations, 2 * iterations):
        out = os.path.join(work, f"{name}.{n}.out")
        result = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", bench, "--profile", name,
                                 "--iterations", str(n)],
                                env=dict(os.environ, SWIFT_DETERMINISTIC_HASHING="1"), capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"latchkey-bench --profile {name} exited {result.returncode}: {result.stderr[-800:]}")
        counts.append(total(out))
    return (counts[1] - counts[0]) / iterations


def compare(counts, baseline, tolerance=TOLERANCE):
    """[(ok, line)] for each profile in baseline: a count more than `tolerance` over its baseline
    fails; one more than `tolerance` under it passes and says the baseline can follow."""
    results = []
    for name, base in sorted(baseline.items()):
        if name not in counts:
            results.append((False, f"FAIL  {name}: in the baseline but not measured"))
            continue
        change = counts[name] / base - 1
        text = f"{name}: {counts[name]:,.0f} instructions, baseline {base:,.0f} ({change:+.1%})"
        # (with a margin for floating point: exactly 3% over is within)
        if counts[name] - base > tolerance * base + 1e-6:
            results.append((False, f"FAIL  {text}: more than {tolerance:.0%} over the baseline"))
        elif base - counts[name] > tolerance * base + 1e-6:
            results.append((True, f"PASS  {text}: below the baseline by more than {tolerance:.0%}; "
                                  "update it (scripts/bench --instructions --write-baseline)"))
        else:
            results.append((True, f"PASS  {text}"))
    for name in sorted(set(counts) - set(baseline)):
        results.append((False, f"FAIL  {name}: measured but not in the baseline (add it with --write-baseline)"))
    return results


def target_rows(counts):
    rows = []
    for label, value, baseline, limit in TARGETS:
        try:
            measured = value(counts)
            base = baseline(counts) if baseline else None
        except KeyError:
            continue
        if base:
            ratio = measured / base
            rows.append((label, measured, f"{ratio:.2f}×", f"≤ {limit:.2f}×", ratio <= limit))
        else:
            rows.append((label, measured, "", f"≤ {limit:,}", measured <= limit))
    return rows


def markdown(counts, iterations):
    lines = ["| operation | instructions per operation |", "|---|---:|"]
    for name, what in PROFILES.items():
        if name in counts:
            lines.append(f"| `{name}`: {what} | {counts[name]:,.0f} |")
    lines += ["", "| target (issue 47) | instructions | ratio | target | met |", "|---|---:|---:|---:|---|"]
    for label, measured, ratio, limit, met in target_rows(counts):
        lines.append(f"| {label} | {measured:,.0f} | {ratio} | {limit} | {'yes' if met else 'no'} |")
    lines += ["", f"Counted by callgrind ({iterations} against {2 * iterations} operations per profile, "
                  + ", ".join(f"{n} against {2 * n} for {name}" for name, n in ITERATIONS.items())
                  + "), `scripts/bench --instructions`."]
    return "\n".join(lines)


def write_section(path, text):
    begin, end = "<!-- instructions:begin -->", "<!-- instructions:end -->"
    with open(path) as handle:
        document = handle.read()
    if begin in document and end in document:
        document = document[:document.index(begin) + len(begin)] + "\n" + text + "\n" + document[document.index(end):]
    else:
        document = document.rstrip("\n") + "\n\n## Instructions per operation\n\n" + begin + "\n" + text + "\n" + end + "\n"
    with open(path, "w") as handle:
        handle.write(document)


def main():
    parser = argparse.ArgumentParser(description="Instructions per operation on the hot paths (callgrind).")
    parser.add_argument("bench", help="a release latchkey-bench")
    parser.add_argument("--iterations", type=int, default=50, help="N: each profile runs N and 2N times (default 50)")
    parser.add_argument("--profiles", help="comma-separated profile names (default: all)")
    parser.add_argument("--check", metavar="FILE", help="fail when a count is more than 3%% over FILE's")
    parser.add_argument("--write-baseline", metavar="FILE", help="write the counts to FILE as the new baseline")
    parser.add_argument("--markdown", metavar="FILE", help="write the tables into FILE's instructions section")
    parser.add_argument("--json", metavar="FILE", help="write the counts as JSON")
    arguments = parser.parse_args()
    names = arguments.profiles.split(",") if arguments.profiles else list(PROFILES)
    unknown = [name for name in names if name not in PROFILES]
    if unknown:
        sys.exit(f"instructions: unknown profile {', '.join(unknown)} (one of: {', '.join(PROFILES)})")

    counts = {}
    with tempfile.TemporaryDirectory(prefix="latchkey-instructions-") as work:
        for name in names:
            iterations = max(arguments.iterations, ITERATIONS.get(name, 0))
            counts[name] = measure(os.path.abspath(arguments.bench), name, iterations, work)
            print(f"  {name:26} {counts[name]:12,.0f}   {PROFILES[name]}", flush=True)
    print()
    for label, measured, ratio, limit, met in target_rows(counts):
        print(f"  target {label}: {measured:,.0f}{' = ' + ratio if ratio else ''} ({limit}): {'met' if met else 'NOT MET'}")
    document = {"format": "latchkey-instructions", "version": 1, "iterations": arguments.iterations,
                "counts": {name: round(value) for name, value in counts.items()}}
    if arguments.json:
        with open(arguments.json, "w") as handle:
            json.dump(document, handle, indent=2)
    if arguments.write_baseline:
        with open(arguments.write_baseline, "w") as handle:
            json.dump(document, handle, indent=2)
            handle.write("\n")
        print(f"\nwrote the baseline {arguments.write_baseline}")
    if arguments.markdown:
        write_section(arguments.markdown, markdown(counts, arguments.iterations))
    if arguments.check:
        with open(arguments.check) as handle:
            baseline = json.load(handle)["counts"]
        if arguments.profiles:
            baseline = {name: value for name, value in baseline.items() if name in names}
        results = compare(counts, baseline)
        print()
        for _, line in results:
            print(line)
        failed = sum(1 for ok, _ in results if not ok)
        print(f"instructions: {len(results) - failed} passed, {failed} failed")
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
