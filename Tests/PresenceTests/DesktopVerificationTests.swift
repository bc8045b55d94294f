import Authenticator
import Foundation
@testable import Presence
import LatchkeyTestSupport
import XCTest
import SystemIO

/// `--uv polkit` and `--uv fprintd` (ProgramVerification): what each program's exit means to
/// the key, the command lines, and the deadline and cancellation that close the program. The
/// real polkitd and pkttyagent are driven in the socket suite (socket_polkit.py).
final class DesktopVerificationTests: XCTestCase {
    let logger = Logger(level: .error, sink: { _ in })
    static let request = VerificationRequest(purpose: .getAssertion, rpID: "example.com", timeoutMilliseconds: 300)

    func testPkcheckExitsMapToTheCTAPOutcomes() {
        func outcome(_ status: Int32, _ errors: String = "") -> VerificationResult {
            PolkitVerification.interpret(ProgramExit(status: status, output: "", errorOutput: errors)).0
        }
        XCTAssertEqual(outcome(0), .verified)
        XCTAssertEqual(outcome(1, "Not authorized."), .notVerified, "a failed authentication spends a retry")
        XCTAssertEqual(outcome(2, "Authorization requires authentication but no agent is available."), .declined)
        XCTAssertEqual(outcome(3, "Authentication request was dismissed."), .declined, "a dismissed dialog spends none")
        let missing = PolkitVerification.interpret(ProgramExit(
            status: 127, output: "", errorOutput: "Action org.latchkey.verify-user is not registered"))
        XCTAssertEqual(missing.0, .declined)
        XCTAssertTrue(missing.note?.contains("/usr/share/polkit-1/actions") == true, missing.note ?? "")
        XCTAssertTrue(PolkitVerification.interpret(ProgramExit(status: 2, output: "")).note?.contains("agent") == true)
    }

    func testPkcheckNamesThisProcessBeyondAPID() throws {
        let runner = FakeNotificationRunner { $0.finish(ProgramExit(status: 0, output: "")) }
        let verification = PolkitVerification.make(executable: "/usr/bin/pkcheck", logger: logger, runner: runner)
        XCTAssertEqual(verification.verifyUser(Self.request, cancellation: CancellationFlag()), .verified)
        let call = try XCTUnwrap(runner.calls.first)
        XCTAssertEqual(Array(call.prefix(4)), ["/usr/bin/pkcheck", "--action-id", "org.latchkey.verify-user", "--process"])
        let subject = call[4].split(separator: ",")
        XCTAssertEqual(subject.count, 3, "pid,start-time,uid: \(call[4])")
        XCTAssertEqual(subject.first.map(String.init), String(getpid()))
        XCTAssertEqual(subject.last.map(String.init), String(getuid()))
        XCTAssertEqual(call.last, "--allow-user-interaction")
        XCTAssertFalse(call.contains("--detail"), "polkit refuses details from a caller that is neither root nor the action's owner")
        XCTAssertEqual(verification.modality, UserVerificationMethod.passcodeInternal)
    }

    func testFprintdVerifyOutputMapsToTheCTAPOutcomes() {
        func outcome(_ status: Int32, _ output: String) -> VerificationResult {
            FprintdVerification.interpret(ProgramExit(status: status, output: output)).0
        }
        let device = "Using device /net/reactivated/Fprint/Device/0\nListing enrolled fingers:\n - #0: right-index-finger\n"
        XCTAssertEqual(outcome(0, device + "Verify started!\nVerifying: any\nVerify result: verify-match (done)\n"), .verified)
        XCTAssertEqual(outcome(1, device + "Verify result: verify-no-match (done)\n"), .notVerified)
        XCTAssertEqual(outcome(1, device + "Verify result: verify-retry-scan\nVerify result: verify-no-match (done)\n"), .notVerified)
        XCTAssertEqual(outcome(1, device + "Verify result: verify-disconnected (done)\n"), .declined)
        XCTAssertEqual(outcome(1, "No devices available\n"), .declined, "no reader: declined, no retry spent")
        XCTAssertEqual(outcome(1, device + "Verify result: verify-match (done)\n"), .notVerified,
                       "a match must also exit 0: anything else is not a verification")
        let runner = FakeNotificationRunner { $0.finish(ProgramExit(status: 0, output: "Verify result: verify-match (done)\n")) }
        let verification = FprintdVerification.make(executable: "/usr/bin/fprintd-verify", logger: logger, runner: runner,
                                                    userName: "alice")
        XCTAssertEqual(verification.verifyUser(Self.request, cancellation: CancellationFlag()), .verified)
        XCTAssertEqual(runner.calls.first, ["/usr/bin/fprintd-verify", "-f", "any", "alice"])
        XCTAssertEqual(verification.modality, UserVerificationMethod.fingerprintInternal)
    }

    func testTheDeadlineAndCancellationCloseTheProgram() {
        let waiting = FakeNotificationRunner()
        let verification = PolkitVerification.make(executable: "/usr/bin/pkcheck", logger: logger, runner: waiting)
        let started = Date()
        XCTAssertEqual(verification.verifyUser(Self.request, cancellation: CancellationFlag()), .timedOut)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.29)
        XCTAssertEqual(waiting.processes.first?.closeCount, 1, "the dialog is closed at the deadline")

        let cancellation = CancellationFlag()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { cancellation.cancel() }
        let long = VerificationRequest(purpose: .token, timeoutMilliseconds: 10_000)
        XCTAssertEqual(verification.verifyUser(long, cancellation: cancellation), .cancelled)
        XCTAssertEqual(waiting.processes.last?.closeCount, 1)

        let failing = FakeNotificationRunner(failing: true)
        XCTAssertEqual(PolkitVerification.make(executable: "/nonexistent", logger: logger, runner: failing)
            .verifyUser(Self.request, cancellation: CancellationFlag()), .declined)
    }
}
