@testable import CLI
import FIDOClient
import KeyService
import LatchkeyTestSupport
import XCTest

final class CommandGroupTests: XCTestCase {
    let group = CommandGroup(name: "demo", abstract: "A demo group.", members: [
        .init(spec: CommandSpec(name: "demo one", abstract: "The first.", positionals: ["thing"], minimumPositionals: 1,
                                options: [.init("store", value: "DIR", help: "Store."), .init("json", help: "JSON.")])) { _ throws(UsageError) in 11 },
        .init(spec: CommandSpec(name: "demo two", abstract: "The second.",
                                options: [.init("store", value: "DIR", help: "Store."), .init("yes", help: "Yes.")])) { _ throws(UsageError) in 22 },
    ])

    func outcome(_ arguments: [String]) -> CommandOutcome { runCommand(group, arguments) }

    func testRunsTheNamedMemberWithItsOwnArguments() throws {
        XCTAssertEqual(outcome(["one", "x", "--store", "/s"]), .status(11))
        XCTAssertEqual(outcome(["two", "--yes"]), .status(22))
        let (member, narrowed) = try group.resolve(try CommandLineParser.parse(["one", "--json", "x"], spec: group.spec))
        XCTAssertEqual(member.word, "one")
        XCTAssertEqual(narrowed.positionals, ["x"])
        XCTAssertTrue(narrowed.flag("json"))
    }

    func testHoldsMembersToTheirOwnSpecs() {
        XCTAssertEqual(outcome([]), .usage("missing <one|two>"))
        XCTAssertEqual(outcome(["three"]), .usage("unknown subcommand 'demo three': use one, two"))
        XCTAssertEqual(outcome(["one"]), .usage("missing <thing>"))
        XCTAssertEqual(outcome(["one", "x", "--yes"]), .usage("unknown option '--yes' for 'demo one'"))
        XCTAssertEqual(outcome(["two", "x"]), .usage("unexpected argument 'x'"))
        XCTAssertEqual(outcome(["two", "--nope"]), .usage("unknown option '--nope'"))
    }

    func testSpecListsEveryOptionOnceWithItsMembers() {
        let spec = group.spec
        XCTAssertEqual(spec.options.map(\.name), ["store", "json", "yes"])
        XCTAssertEqual(spec.options.map(\.help), ["Store.", "(one) JSON.", "(two) Yes."])
        XCTAssertEqual(spec.usage, "Usage: latchkey demo [options] <one|two> [<thing>]")
    }

    func testUsageForAMemberOrTheGroup() throws {
        XCTAssertEqual(group.usage(for: try CommandLineParser.parse(["one", "x"], spec: group.spec)),
                       "Usage: latchkey demo one [options] <thing>")
        XCTAssertEqual(group.usage(for: try CommandLineParser.parse(["zzz"], spec: group.spec)),
                       "Usage: latchkey demo [options] <one|two> [<thing>]")
    }

    func testHelpForAMemberOrTheGroup() throws {
        let memberHelp = group.help(for: try CommandLineParser.parse(["two", "--help"], spec: group.spec))
        XCTAssertTrue(memberHelp.hasPrefix("The second.\n\nUsage: latchkey demo two [options]"), memberHelp)
        XCTAssertEqual(group.help(for: try CommandLineParser.parse(["--help"], spec: group.spec)), """
            A demo group.

            Usage: latchkey demo <subcommand> [options]

            Subcommands:
              one  The first.
              two  The second.

            Run `latchkey demo <subcommand> --help` (or `latchkey help demo <subcommand>`)
            for a subcommand's options.
            """)
    }
}
