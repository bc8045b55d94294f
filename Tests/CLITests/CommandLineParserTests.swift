import CLI
import FIDOClient
import KeyService
import LatchkeyTestSupport
import XCTest

final class CommandLineParserTests: XCTestCase {
    let spec = CommandSpec(name: "demo", abstract: "A demo.", positionals: ["target", "extra"], minimumPositionals: 1,
                           options: [.init("store", value: "DIR", help: "Store."), .init("json", help: "JSON output.")])

    func testOptionsFlagsAndPositionals() throws {
        let parsed = try CommandLineParser.parse(["--store", "/s", "x", "--json"], spec: spec)
        XCTAssertEqual(parsed.value("store"), "/s")
        XCTAssertTrue(parsed.flag("json"))
        XCTAssertEqual(parsed.positionals, ["x"])
    }

    func testInlineValueAndDoubleDash() throws {
        let parsed = try CommandLineParser.parse(["--store=/a=b", "--", "--json"], spec: spec)
        XCTAssertEqual(parsed.value("store"), "/a=b")
        XCTAssertFalse(parsed.flag("json"))
        XCTAssertEqual(parsed.positionals, ["--json"])
    }

    func testUsageErrors() {
        XCTAssertThrowsError(try CommandLineParser.parse(["--nope", "x"], spec: spec)) {
            XCTAssertEqual($0 as? UsageError, UsageError("unknown option '--nope'"))
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["x", "--store"], spec: spec)) {
            XCTAssertEqual($0 as? UsageError, UsageError("option '--store' needs a value <DIR>"))
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["--json=1", "x"], spec: spec)) {
            XCTAssertEqual($0 as? UsageError, UsageError("option '--json' takes no value"))
        }
        XCTAssertThrowsError(try CommandLineParser.parse([], spec: spec)) {
            XCTAssertEqual($0 as? UsageError, UsageError("missing <target>"))
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["a", "b", "c"], spec: spec)) {
            XCTAssertEqual($0 as? UsageError, UsageError("unexpected argument 'c'"))
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["-x", "a"], spec: spec)) {
            XCTAssertEqual($0 as? UsageError, UsageError("unknown option '-x'"))
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["--store", "a", "--store", "b", "x"], spec: spec))
    }

    func testHelpWinsOverMissingArguments() throws {
        XCTAssertTrue(try CommandLineParser.parse(["-h"], spec: spec).wantsHelp)
        XCTAssertTrue(try CommandLineParser.parse(["--help"], spec: spec).wantsHelp)
        XCTAssertTrue(spec.help.contains("--store <DIR>"))
        XCTAssertEqual(spec.usage, "Usage: latchkey demo [options] <target> [<extra>]")
    }

    func testServeOptions() throws {
        let environment = ["XDG_DATA_HOME": "/data", "HOME": "/home/u"]
        let defaults = try ServeCommand.options(from: CommandLineParser.parse([], spec: ServeCommand.spec), environment: environment)
        XCTAssertEqual(defaults.transport, .uhid(path: "/dev/uhid"))
        XCTAssertEqual(defaults.storeDirectory, "/data/latchkey/default")
        XCTAssertEqual(defaults.key.presence.rawValue, "prompt")
        let custom = try ServeCommand.options(from: CommandLineParser.parse(
            ["--transport", "socket:/tmp/k.sock", "--name", "work", "--presence", "auto", "--log-level", "debug"],
            spec: ServeCommand.spec), environment: ["HOME": "/home/u"])
        XCTAssertEqual(custom.transport, .socket(path: "/tmp/k.sock"))
        XCTAssertEqual(custom.storeDirectory, "/home/u/.local/share/latchkey/work")
        XCTAssertEqual(custom.logLevel, .debug)
        for bad in [["--transport", "usb"], ["--transport", "socket:"], ["--presence", "maybe"], ["--name", "../x"],
                    ["--log-level", "loud"]] {
            XCTAssertThrowsError(try ServeCommand.options(from: CommandLineParser.parse(bad, spec: ServeCommand.spec),
                                                          environment: environment), "\(bad)")
        }
    }
}
