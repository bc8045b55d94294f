import CLI
import FIDOClient
import KeyService
import LatchkeyTestSupport
import Presence
import XCTest

/// `latchkey serve --presence auto|deny|prompt|notify|control --control PATH --trace FILE`.
final class ServePresenceOptionsTests: XCTestCase {
    let environment = ["XDG_DATA_HOME": "/data", "XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/u"]

    func options(_ arguments: [String]) throws -> ServeCommand.Options {
        try ServeCommand.options(from: CommandLineParser.parse(arguments, spec: ServeCommand.spec), environment: environment)
    }

    func testPresenceModes() throws {
        for mode in ["auto", "deny", "prompt", "notify", "control"] {
            XCTAssertEqual(try options(["--presence", mode]).key.presence.rawValue, mode)
        }
        XCTAssertThrowsError(try options(["--presence", "yes"])) {
            XCTAssertEqual($0 as? UsageError, UsageError("invalid --presence 'yes': use auto, deny, prompt, notify or control"))
        }
        XCTAssertNil(try options([]).controlPath, "no control socket unless --presence control")
        XCTAssertNil(try options([]).tracePath)
    }

    /// `--algorithms`: names or numbers, in the key's order of preference; each wrong entry named.
    func testAlgorithms() throws {
        XCTAssertEqual(try options([]).key.algorithms, [.es256, .edDSA, .es384, .es512, .es256K])
        XCTAssertEqual(try options(["--algorithms", "ES256,RS256,PS256"]).key.algorithms, [.es256, .rs256, .ps256])
        XCTAssertEqual(try options(["--algorithms", "es384,-7"]).key.algorithms, [.es384, .es256])
        XCTAssertEqual(try options(["--algorithms", "EdDSA"]).key.algorithms, [.edDSA])
        XCTAssertEqual(try options(["--algorithms", "ML-DSA-44,mldsa65,-50"]).key.algorithms, [.mlDSA44, .mlDSA65, .mlDSA87])
        XCTAssertThrowsError(try options(["--algorithms", "ES256,RS1"])) {
            XCTAssertEqual($0 as? UsageError, UsageError(
                "invalid --algorithms 'ES256,RS1': unknown algorithm 'RS1': the key makes ES256, EdDSA, ES384, ES512, ES256K, RS256, PS256, "
                + "ML-DSA-44, ML-DSA-65, ML-DSA-87"))
        }
        XCTAssertThrowsError(try options(["--algorithms", "ES256,-7"])) {
            XCTAssertEqual($0 as? UsageError, UsageError("invalid --algorithms 'ES256,-7': ES256 is named twice"))
        }
        XCTAssertThrowsError(try options(["--algorithms", ""]))
        XCTAssertThrowsError(try options(["--algorithms", "ES256,"]))
    }

    func testControlSocketPath() throws {
        let defaults = try options(["--presence", "control", "--name", "work"])
        XCTAssertEqual(defaults.controlPath, "/run/user/1000/latchkey/work.control")
        XCTAssertTrue(defaults.controlPathIsDefault)
        let explicit = try options(["--presence", "control", "--control", "/tmp/rig/k.control"])
        XCTAssertEqual(explicit.controlPath, "/tmp/rig/k.control")
        XCTAssertFalse(explicit.controlPathIsDefault)
        let noRuntimeDirectory = try ServeCommand.options(
            from: CommandLineParser.parse(["--presence", "control"], spec: ServeCommand.spec), environment: ["HOME": "/home/u"])
        XCTAssertEqual(noRuntimeDirectory.controlPath, "/home/u/.cache/latchkey/run-\(ControlSocket.hostLabel())/default.control")
        XCTAssertThrowsError(try options(["--control", "/tmp/k.control"])) {
            XCTAssertEqual($0 as? UsageError, UsageError("--control is for --presence control (or notify, for a server without buttons)"))
        }
        // notify takes one: where to answer when the notification server shows no buttons.
        XCTAssertEqual(try options(["--presence", "notify", "--control", "/tmp/k.control"]).controlPath, "/tmp/k.control")
        XCTAssertThrowsError(try options(["--presence", "control", "--control", ""]))
    }

    func testTraceOption() throws {
        XCTAssertEqual(try options(["--trace", "/tmp/key.trace", "--presence", "auto"]).tracePath, "/tmp/key.trace")
        XCTAssertEqual(try options(["--trace=out.jsonl"]).tracePath, "out.jsonl")
        XCTAssertThrowsError(try options(["--trace", ""]))
    }

    func testHelpNamesEveryMode() {
        let help = ServeCommand.spec.help
        XCTAssertTrue(help.contains("--presence <auto|deny|prompt|notify|control>"), help)
        XCTAssertTrue(help.contains("--control <PATH>"), help)
        XCTAssertTrue(help.contains("--trace <FILE>"), help)
        XCTAssertTrue(help.contains("latchkey approve"), help)
    }
}
