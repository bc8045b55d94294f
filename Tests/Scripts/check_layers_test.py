#!/usr/bin/env python3
"""scripts/check-layers on small made-up packages: each rule it enforces fires on the tree that
breaks it, names the file, and a tree that keeps every rule passes. Standard library only.

Prints one line per check and `check-layers tests: N passed, N failed`; exits 1 on a failure."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir, "scripts", "check-layers"))
RESULTS = []

TABLE = """# Architecture

```layers
CLow:
Low:
Mid: Low CLow
Top: Mid Low
```
"""

PACKAGE = """// swift-tools-version:6.0
import PackageDescription
let package = Package(name: "T", targets: [
    .systemLibrary(name: "CLow"),
    .target(name: "Low"),
    .target(name: "Mid", dependencies: ["Low", "CLow"]),
    .target(name: "Top", dependencies: ["Mid", "Low"]),
])
"""


def tree(files):
    """A package in a fresh directory: the table, Package.swift and `files` (path → text)."""
    root = tempfile.mkdtemp(prefix="check-layers-test-")
    base = {"docs/architecture.md": TABLE, "Package.swift": PACKAGE,
            "Sources/CLow/module.modulemap": "module CLow [system] { header \"shim.h\" }\n",
            "Sources/Low/Low.swift": "public struct LowThing {}\n",
            "Sources/Mid/Mid.swift": "import Low\nimport CLow\npublic struct MidThing { var low: LowThing }\n",
            "Sources/Top/Top.swift": "import Mid\nimport Low\nstruct TopThing { var mid: MidThing; var low: LowThing }\n"}
    base.update(files)
    for path, text in base.items():
        if text is None:
            continue
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
    return root


def run(root, *arguments):
    return subprocess.run([sys.executable, SCRIPT, "--root", root, *arguments], capture_output=True, text=True)


def check(name, files, expect_status, expect_lines=(), arguments=()):
    result = run(tree(files), *arguments)
    missing = [line for line in expect_lines if line not in result.stdout]
    ok = result.returncode == expect_status and not missing
    RESULTS.append(ok)
    print(("PASS  " if ok else "FAIL  ") + name)
    if not ok:
        print(f"      exit {result.returncode} (expected {expect_status}); missing: {missing}\n" + result.stdout + result.stderr)


def main():
    check("a tree that keeps every rule passes", {}, 0, ["check-layers: 4 modules, 0 errors"])
    check("an import the row does not allow is an error naming the file",
          {"Sources/Low/Low.swift": "import Top\npublic struct LowThing {}\n"}, 1,
          ["error: Low imports Top (Sources/Low/Low.swift); its row allows: nothing"])
    check("@testable and access-level imports count too",
          {"Sources/Mid/Extra.swift": "@testable import Top\n", "Sources/Low/More.swift": "public import Mid\n"}, 1,
          ["error: Mid imports Top", "error: Low imports Mid"])
    check("an import in a comment or a string does not count",
          {"Sources/Low/Doc.swift": "// import Top\nlet text = \"import Top\"\n"}, 0)
    check("a Package.swift dependency the row does not allow is an error",
          {"Package.swift": PACKAGE.replace('.target(name: "Low")', '.target(name: "Low", dependencies: ["Top"])')}, 1,
          ["error: Package.swift lets Low depend on Top"])
    check("a declared dependency no file imports is a warning, not an error",
          {"Sources/Top/Top.swift": "import Mid\nstruct TopThing { var mid: MidThing }\n"}, 0,
          ["warning: Package.swift lets Top depend on Low, but no file of Top imports it"])
    check("a module with no row is an error", {"Sources/Stray/Stray.swift": "struct Stray {}\n"}, 1,
          ["error: module Stray has no row in the layer table"])
    check("a row for no module is an error", {"docs/architecture.md": TABLE.replace("Top: Mid Low\n", "Top: Mid Low\nGhost: Low\n")}, 1,
          ["error: the layer table has a row for Ghost, which is no module"])
    check("a file over the limit is an error; --max-lines sets the limit",
          {"Sources/Low/Long.swift": "let x = 1\n" * 601}, 1, ["error: Sources/Low/Long.swift has 601 lines (at most 600)"])
    check("a file at the limit passes", {"Sources/Low/Long.swift": "let x = 1\n" * 600}, 0)
    check("--max-lines lowers the limit", {"Sources/Low/Long.swift": "let x = 1\n" * 50}, 1,
          ["has 50 lines (at most 40)"], arguments=("--max-lines", "40"))
    check("two files using each other's types are a reference circle",
          {"Sources/Mid/A.swift": "struct AThing { var b: BThing? }\n", "Sources/Mid/B.swift": "struct BThing { var a: [AThing] }\n"}, 1,
          ["error: reference circle in Mid: A.swift (uses BThing) → B.swift (uses AThing) → A.swift"])
    check("a circle through three files is found",
          {"Sources/Mid/A.swift": "final class AThing { var b: BThing? }\n", "Sources/Mid/B.swift": "enum BThing { case c(CThing) }\n",
           "Sources/Mid/C.swift": "protocol CThing { func a() -> AThing }\n"}, 1, ["error: reference circle in Mid:"])
    check("a name in a comment makes no edge",
          {"Sources/Mid/A.swift": "struct AThing { var b: BThing? }\n", "Sources/Mid/B.swift": "/// Unlike AThing.\nstruct BThing {}\n"}, 0)
    check("--circles-warn reports circles as warnings",
          {"Sources/Mid/A.swift": "struct AThing { var b: BThing? }\n", "Sources/Mid/B.swift": "struct BThing { var a: AThing? }\n"}, 0,
          ["warning: reference circle in Mid"], arguments=("--circles-warn",))
    check("two source files with one name are an error naming both",
          {"Sources/Low/Same.swift": "struct S1 {}\n", "Sources/Mid/Same.swift": "struct S2 {}\n"}, 1,
          ["error: 2 files are named Same.swift (Sources/Low/Same.swift, Sources/Mid/Same.swift)"])
    owners = ("final class KeyOwner {\n    let pointer: OpaquePointer\n    deinit { EVP_PKEY_free(pointer) }\n}\n"
              "final class BigOwner {\n    let pointer: OpaquePointer\n    deinit { BN_clear_free(pointer) }\n}\n")
    check("a file with two OpenSSL owner classes is an error naming them", {"Sources/Low/Owners.swift": owners}, 1,
          ["error: Sources/Low/Owners.swift holds 2 OpenSSL owner classes (KeyOwner, BigOwner)"])
    check("one OpenSSL owner class a file passes",
          {"Sources/Low/KeyOwner.swift": owners.split("final class BigOwner")[0],
           "Sources/Low/BigOwner.swift": "final class BigOwner" + owners.split("final class BigOwner")[1]}, 0)
    check("read(2) outside SystemIO is an error; inside it is not",
          {"Sources/Low/Reader.swift": "import Glibc\nfunc f(_ fd: Int32, _ p: UnsafeMutableRawPointer) { _ = Glibc.read(fd, p, 1) }\n",
           "Sources/SystemIO/FileDescriptor.swift": "import Glibc\nfunc g(_ fd: Int32) { _ = Glibc.close(fd) }\n",
           "docs/architecture.md": TABLE.replace("Top: Mid Low\n", "Top: Mid Low\nSystemIO:\n")}, 1,
          ["error: Sources/Low/Reader.swift calls read(2) itself"])
    check("an Authenticator made from a configuration outside KeySpecification is an error",
          {"Sources/Top/Key.swift": "func k() { _ = try? Authenticator(configuration: c, store: s) }\n"}, 1,
          ["error: Sources/Top/Key.swift makes an Authenticator from a configuration"])
    check("a KeyRunner made outside KeyAssembly is an error",
          {"Sources/Top/Run.swift": "func r() { _ = try? KeyRunner(transport: t, handler: h) }\n"}, 1,
          ["error: Sources/Top/Run.swift makes a KeyRunner: assemble the key with KeyAssembly"])
    check("a key option's flag read by name is an error",
          {"Sources/Low/Options.swift": 'let o = KeyOption("counter", flag: "counter", shape: .text)\n',
           "Sources/Top/Serve.swift": 'func s() { _ = parsed.value("counter") }\n'}, 1,
          ["error: Sources/Top/Serve.swift reads the key option --counter by name"])
    check("a missing layers block is a usage error", {"docs/architecture.md": "# nothing here\n"}, 2)
    passed = sum(RESULTS)
    print(f"check-layers tests: {passed} passed, {len(RESULTS) - passed} failed")
    return 0 if passed == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
