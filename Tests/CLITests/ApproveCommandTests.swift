@testable import CLI
import XCTest

/// `latchkey approve|deny [--name NAME | --control PATH] [--timeout SECONDS]` (the exit status
/// against a live key is in KeyServiceTests' ControlPresenceTests).
final class ApproveCommandTests: XCTestCase {
    func testApproveCommandOptions() throws {
        let environment = ["XDG_RUNTIME_DIR": "/run/user/7"]
        let defaults = try ApproveCommand.options(from: CommandLineParser.parse([], spec: ApproveCommand.approveSpec),
                                                  environment: environment)
        XCTAssertEqual(defaults, ApproveCommand.Options(controlPath: "/run/user/7/latchkey/default.control", controlPathIsDefault: true, timeoutMilliseconds: 30_000))
        let custom = try ApproveCommand.options(from: CommandLineParser.parse(["--name", "work", "--timeout", "2.5"],
                                                                               spec: ApproveCommand.denySpec), environment: environment)
        XCTAssertEqual(custom, ApproveCommand.Options(controlPath: "/run/user/7/latchkey/work.control", controlPathIsDefault: true, timeoutMilliseconds: 2_500))
        let explicit = try ApproveCommand.options(from: CommandLineParser.parse(["--control", "/tmp/x.control", "--timeout", "0"],
                                                                                 spec: ApproveCommand.approveSpec), environment: environment)
        XCTAssertEqual(explicit, ApproveCommand.Options(controlPath: "/tmp/x.control", timeoutMilliseconds: 0))
        for bad in [["--timeout", "-1"], ["--timeout", "soon"], ["--timeout", "inf"], ["--name", "a/b"]] {
            XCTAssertThrowsError(try ApproveCommand.options(from: CommandLineParser.parse(bad, spec: ApproveCommand.approveSpec),
                                                            environment: environment), "\(bad)")
        }
        XCTAssertTrue(ApproveCommand.approveSpec.help.contains("--timeout <SECONDS>"))
    }
}
