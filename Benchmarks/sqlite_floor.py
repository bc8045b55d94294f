#!/usr/bin/env python3
"""The floor under issue 13's "resident makeCredential ≤ 1.3× one durable SQLite commit": what
SQLite alone costs for the transaction a resident makeCredential commits, with none of
Latchkey's work (no key generation, no sealing, no CBOR), against the baseline latchkey-bench
uses (one setting row, `saveSetting`).

Same schema (every migration in Sources/CredentialStore/StoreSchema.swift, read from there),
same PRAGMAs as SQLiteCredentialStore.configure (WAL, synchronous = FULL), same statements in
the same transaction as SQLiteCredentialStore.saveResidentCredential (the deletes that replace
an account, the count, the RP upsert, the insert and its triggers, the first counter block), on
a store of 1,000 credentials, with random blobs of the sealed rows' sizes. Each case is timed
alternately with the baseline (medians), as latchkey-bench does, since these machines are noisy.

Also: commits of 1-12 single-row pages, to show what each page adds to one durable commit, and
the same insert on a leaner schema (credentials WITHOUT ROWID keyed by cred_key, no total-count
row): what a schema rebuild would buy.

Usage: python3 Benchmarks/sqlite_floor.py [ROUNDS]   (default 600; standard library only)
"""

import os
import re
import sqlite3
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, os.pardir, "Sources", "CredentialStore", "StoreSchema.swift")
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 600
LEAN = """
CREATE TABLE lean (cred_key BLOB PRIMARY KEY, rp_key BLOB NOT NULL, user_key BLOB NOT NULL UNIQUE,
                   created_at INTEGER NOT NULL, hidden_since INTEGER, counter_hw INTEGER NOT NULL DEFAULT 0,
                   sealed BLOB NOT NULL, cred_protect INTEGER) WITHOUT ROWID;
CREATE INDEX lean_by_rp ON lean (rp_key, created_at);
"""


def open_store(directory):
    db = sqlite3.connect(os.path.join(directory, "store.sqlite3"), isolation_level=None)
    assert db.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    db.executescript("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;")
    for sql in re.findall(r'sql: """(.*?)"""', open(SCHEMA).read(), re.S):
        db.executescript(sql)
    db.executescript(LEAN)
    for i in range(12):
        db.execute(f"CREATE TABLE page{i} (k INTEGER PRIMARY KEY, v BLOB)")
        db.execute(f"INSERT INTO page{i} VALUES (1, x'00')")
    return db


def main():
    with tempfile.TemporaryDirectory(prefix="latchkey-floor-", dir=os.environ.get("TMPDIR", "/tmp")) as directory:
        db = open_store(directory)
        rp = os.urandom(32)
        db.execute("INSERT INTO rps (rp_key, sealed) VALUES (?, ?)", (rp, os.urandom(120)))
        db.execute("BEGIN")
        for i in range(1000):   # half of them one RP's, half spread over others
            row = (os.urandom(32), rp if i % 2 else os.urandom(32), os.urandom(32), i, os.urandom(330))
            if i % 2 == 0:
                db.execute("INSERT INTO rps (rp_key, sealed) VALUES (?, ?)", (row[1], os.urandom(120)))
            db.execute("INSERT INTO credentials (cred_key, rp_key, user_key, created_at, counter_hw, sealed, cred_protect)"
                       " VALUES (?, ?, ?, ?, 0, ?, 1)", row)
            db.execute("INSERT INTO lean (cred_key, rp_key, user_key, created_at, counter_hw, sealed, cred_protect)"
                       " VALUES (?, ?, ?, ?, 0, ?, 1)", row)
        db.execute("COMMIT")
        created = [10_000]

        def setting():   # the baseline: SQLiteCredentialStore.saveSetting
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO device (name, sealed) VALUES ('setting:bench.commit', ?) "
                       "ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed", (os.urandom(64),))
            db.execute("COMMIT")

        def resident(table="credentials"):   # SQLiteCredentialStore.saveResidentCredential's statements
            cred_key, user_key = os.urandom(32), os.urandom(32)
            created[0] += 1
            db.execute("BEGIN IMMEDIATE")
            db.execute(f"DELETE FROM {table} WHERE user_key = ? RETURNING cred_key", (user_key,)).fetchall()
            db.execute(f"DELETE FROM {table} WHERE cred_key = ? RETURNING cred_key", (cred_key,)).fetchall()
            if table == "credentials":
                db.execute("SELECT value FROM meta WHERE name = 'credential_count'").fetchall()
            db.execute("INSERT INTO rps (rp_key, sealed) VALUES (?, ?) ON CONFLICT (rp_key) DO UPDATE SET sealed = excluded.sealed",
                       (rp, os.urandom(120)))
            db.execute(f"INSERT INTO {table} (cred_key, rp_key, user_key, created_at, hidden_since, counter_hw, sealed, cred_protect)"
                       " VALUES (?, ?, ?, ?, NULL, 0, ?, 1)", (cred_key, rp, user_key, created[0], os.urandom(330)))
            if table == "lean":   # the RP's counts, which the triggers keep for the real table
                db.execute("UPDATE rps SET credential_count = credential_count + 1, visible_count = visible_count + 1,"
                           " open_count = open_count + 1, listed_count = listed_count + 1 WHERE rp_key = ?", (rp,))
            db.execute(f"UPDATE {table} SET counter_hw = 1024 WHERE cred_key = ?", (cred_key,))
            db.execute("COMMIT")

        def pages(n):
            def commit():
                db.execute("BEGIN IMMEDIATE")
                for i in range(n):
                    db.execute(f"UPDATE page{i} SET v = ? WHERE k = 1", (os.urandom(16),))
                db.execute("COMMIT")
            return commit

        cases = [("resident makeCredential's transaction, SQL only", resident),
                 ("the same on a WITHOUT ROWID table, no total row", lambda: resident("lean"))]
        cases += [(f"a commit of {n} one-row pages", pages(n)) for n in (1, 2, 4, 6, 8, 12)]
        print(f"{'case':58}{'median':>10}{'baseline':>11}{'ratio':>8}")
        for name, body in cases:
            measured, baseline = [], []
            for _ in range(ROUNDS):
                began = time.perf_counter(); body(); measured.append(time.perf_counter() - began)
                began = time.perf_counter(); setting(); baseline.append(time.perf_counter() - began)
            m, b = statistics.median(measured), statistics.median(baseline)
            print(f"{name:58}{m * 1e6:8.0f} µs{b * 1e6:8.0f} µs{m / b:7.2f}×", flush=True)
        print("baseline: one durable commit of a setting row (latchkey-bench's); target for the whole makeCredential: ≤ 1.3×")
        db.close()


if __name__ == "__main__":
    main()
