import Authenticator
import Foundation
@testable import Presence
import LatchkeyTestSupport
import Synchronization
import XCTest
import SystemIO

/// A notify-send stand-in: the test decides when and how it exits.
final class FakeNotification: RunningProgram, @unchecked Sendable {
    private let state = Mutex<(exit: ProgramExit?, closed: Int)>((nil, 0))
    var exit: ProgramExit? { state.withLock { $0.exit } }
    var closeCount: Int { state.withLock { $0.closed } }
    func finish(_ exit: ProgramExit) { state.withLock { $0.exit = exit } }
    func close() {
        state.withLock { state in
            state.closed += 1
            // notify-send on SIGINT: closes the notification and exits without an action.
            if state.exit == nil { state.exit = ProgramExit(status: 0, output: "", errorOutput: "Wait cancelled, closing notification") }
        }
    }
}

final class FakeNotificationRunner: ProgramRunner, @unchecked Sendable {
    private let state = Mutex<(calls: [[String]], processes: [FakeNotification], failing: Bool)>(([], [], false))
    /// What the next started notification does right away (nil: keeps waiting).
    let onStart: @Sendable (FakeNotification) -> Void

    init(failing: Bool = false, onStart: @escaping @Sendable (FakeNotification) -> Void = { _ in }) {
        self.onStart = onStart
        state.withLock { $0.failing = failing }
    }

    var calls: [[String]] { state.withLock { $0.calls } }
    var processes: [FakeNotification] { state.withLock { $0.processes } }

    func start(executable: String, arguments: [String]) throws(ProgramStartFailure) -> RunningProgram {
        let failing = state.withLock { $0.failing }
        if failing { throw ProgramStartFailure("cannot run \(executable): No such file or directory") }
        let process = FakeNotification()
        state.withLock {
            $0.calls.append([executable] + arguments)
            $0.processes.append(process)
        }
        onStart(process)
        return process
    }
}

final class NotifyPresenceTests: XCTestCase {
    let logger = Logger(level: .error, sink: { _ in })
    static let register = PresenceRequest(operation: .makeCredential, rpID: "example.com", userName: "alice",
                                          timeoutMilliseconds: 400)

    /// The poll window, shortened from 2 s to keep the tests quick.
    static let hold: UInt64 = 300

    func presence(_ runner: FakeNotificationRunner) -> NotifyPresence {
        NotifyPresence(executable: "/usr/bin/notify-send", runner: runner, logger: logger, holdMilliseconds: Self.hold)
    }

    func testCommandLine() {
        XCTAssertEqual(NotifyPresence.arguments(for: Self.register),
                       ["--app-name=Latchkey", "--urgency=critical", "--icon=security-high", "--action=default=Approve",
                        "--action=approve=Approve", "--action=deny=Deny", "--wait", "--expire-time=30000", "--", "Latchkey", "register at example.com for alice"])
        let long = PresenceRequest(operation: .getAssertion, rpID: "<b>evil</b>&co\\n", timeoutMilliseconds: 60_000)
        let arguments = NotifyPresence.arguments(for: long)
        XCTAssertEqual(arguments.last, "sign in at &lt;b&gt;evil&lt;/b&gt;&amp;co\\\\\\\\n", "markup and backslash escapes are neutralised")
        XCTAssertTrue(arguments.contains("--expire-time=60000"))
        let u2f = PresenceRequest(operation: .u2fRegister, timeoutMilliseconds: 500)
        XCTAssertEqual(NotifyPresence.arguments(for: u2f).last, "U2F register")
        // A user name with a terminal escape: shown as text (notify-send turns "\\x1B" back into "\x1B").
        let escaped = PresenceRequest(operation: .makeCredential, rpID: "example.com", userName: "\u{1B}]52;c;eA==\u{07}eve",
                                      timeoutMilliseconds: 400)
        XCTAssertEqual(NotifyPresence.arguments(for: escaped).last, "register at example.com for \\\\x1B]52;c;eA==\\\\x07eve")
    }

    func testResultMapping() {
        let deadline: UInt64 = 10_000
        XCTAssertEqual(NotifyPresence.result(of: ProgramExit(status: 0, output: "approve\n"), finishedAt: 100, deadline: deadline), .approved)
        XCTAssertEqual(NotifyPresence.result(of: ProgramExit(status: 0, output: "deny\n"), finishedAt: 100, deadline: deadline), .denied)
        // The notification itself clicked (its default action: dunst's middle click, `dunstctl action`).
        XCTAssertEqual(NotifyPresence.result(of: ProgramExit(status: 0, output: "default\n"), finishedAt: 100, deadline: deadline), .approved)
        // Closed by the user (no action) well before the deadline: denied.
        XCTAssertEqual(NotifyPresence.result(of: ProgramExit(status: 0, output: ""), finishedAt: 100, deadline: deadline), .denied)
        // Closed without an action at the deadline: the server expired it.
        XCTAssertEqual(NotifyPresence.result(of: ProgramExit(status: 0, output: ""), finishedAt: 9_700, deadline: deadline), .timedOut)
        // notify-send failed (no server, no actions): never approval.
        XCTAssertEqual(NotifyPresence.result(of: ProgramExit(status: 1, output: "", errorOutput: "Actions are not supported"),
                                             finishedAt: 9_900, deadline: deadline), .denied)
    }

    func testApproveAndDenyButtons() {
        for (action, expected) in [("approve", PresenceResult.approved), ("deny", .denied), ("", .denied)] {
            let runner = FakeNotificationRunner { process in
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { process.finish(ProgramExit(status: 0, output: action + "\n")) }
            }
            var request = Self.register
            request.timeoutMilliseconds = 5_000   // answered (or closed) long before the deadline
            XCTAssertEqual(presence(runner).confirmPresence(request, cancellation: CancellationFlag()), expected, action)
            XCTAssertEqual(runner.calls.count, 1)
            XCTAssertEqual(runner.calls.first?.first, "/usr/bin/notify-send")
        }
    }

    func testTimeoutClosesTheNotification() {
        let runner = FakeNotificationRunner()
        let started = Date()
        XCTAssertEqual(presence(runner).confirmPresence(Self.register, cancellation: CancellationFlag()), .timedOut)
        let waited = Date().timeIntervalSince(started)
        XCTAssertTrue(waited >= 0.399 && waited < 3, "\(waited)")
        XCTAssertEqual(runner.processes.first?.closeCount, 1)
    }

    func testCancellationClosesTheNotification() {
        let runner = FakeNotificationRunner()
        let cancellation = CancellationFlag()
        var request = Self.register
        request.timeoutMilliseconds = 10_000
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { cancellation.cancel() }
        let started = Date()
        XCTAssertEqual(presence(runner).confirmPresence(request, cancellation: cancellation), .cancelled)
        XCTAssertLessThan(Date().timeIntervalSince(started), 2, "not the request's 10 s timeout")
        XCTAssertEqual(runner.processes.first?.closeCount, 1)
    }

    func testNotifySendThatCannotStartDenies() {
        let runner = FakeNotificationRunner(failing: true)
        XCTAssertEqual(presence(runner).confirmPresence(Self.register, cancellation: CancellationFlag()), .denied)
    }

    /// U2F polls: one notification spans the polls, and a click between two polls answers the next.
    func testU2FPollsShareOneNotification() {
        let runner = FakeNotificationRunner()
        let presence = presence(runner)
        let poll = PresenceRequest(operation: .u2fRegister, timeoutMilliseconds: 60)
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
        XCTAssertEqual(runner.calls.count, 1)
        XCTAssertEqual(runner.processes[0].closeCount, 0, "kept open between polls")
        runner.processes[0].finish(ProgramExit(status: 0, output: "approve\n"))   // clicked between polls
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .approved)
        XCTAssertEqual(runner.calls.count, 1)

        // Another operation does not take over the notification: it gets its own.
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
        let other = PresenceRequest(operation: .u2fAuthenticate, timeoutMilliseconds: 60)
        XCTAssertEqual(presence.confirmPresence(other, cancellation: CancellationFlag()), .timedOut)
        XCTAssertEqual(runner.calls.count, 3)
        XCTAssertEqual(runner.processes[1].closeCount, 1, "the register notification was closed")
    }

    func testAbandonedU2FNotificationIsClosed() {
        let runner = FakeNotificationRunner()
        let poll = PresenceRequest(operation: .u2fAuthenticate, timeoutMilliseconds: 50)
        XCTAssertEqual(presence(runner).confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
        let deadline = Date().addingTimeInterval(Double(Self.hold) / 1_000 + 2)
        while runner.processes[0].closeCount == 0, Date() < deadline { usleep(10_000) }
        XCTAssertEqual(runner.processes[0].closeCount, 1, "closed once no poll came within the hold window")
    }

    func testEnvironmentCheck() throws {
        let directory = try ShortTempDirectory()
        let executable = directory.path + "/notify-send"
        FileManager.default.createFile(atPath: executable, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
        let session = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus", "PATH": "/nonexistent:" + directory.path]
        XCTAssertEqual(try NotifyPresence.checkEnvironment(session, version: { _ in "notify-send 0.8.1\n" }), executable)
        XCTAssertEqual(try NotifyPresence.checkEnvironment(session, version: { _ in nil }), executable)
        XCTAssertThrowsError(try NotifyPresence.checkEnvironment(session, version: { _ in "notify-send 0.7.9\n" })) {
            XCTAssertTrue("\($0)".contains("0.8 or later"), "\($0)")
        }
        XCTAssertThrowsError(try NotifyPresence.checkEnvironment(["PATH": directory.path], version: { _ in nil })) {
            XCTAssertTrue("\($0)".contains("DBUS_SESSION_BUS_ADDRESS"), "\($0)")
        }
        XCTAssertThrowsError(try NotifyPresence.checkEnvironment(["DBUS_SESSION_BUS_ADDRESS": "x", "PATH": "/nonexistent"],
                                                                 version: { _ in nil })) {
            XCTAssertTrue("\($0)".contains("libnotify-bin"), "\($0)")
        }
    }

    /// GetCapabilities as `dbus-send --print-reply` prints it (dunst 1.9's answer), and what a
    /// server without actions or a missing server give.
    func testNotificationServerCapabilities() {
        let dunst = """
            method return time=1764750000.123 sender=:1.3 -> destination=:1.7 serial=9 reply_serial=2
               array [
                  string "actions"
                  string "body"
                  string "body-hyperlinks"
                  string "body-markup"
                  string "icon-static"
                  string "x-dunst-stack-tag"
               ]
            """
        XCTAssertEqual(NotificationServer.capabilities(run: { _, _ in (0, dunst) }),
                       .success(["actions", "body", "body-hyperlinks", "body-markup", "icon-static", "x-dunst-stack-tag"]))
        let plain = "method return time=1 sender=:1.3 -> destination=:1.7 serial=9 reply_serial=2\n   array [\n      string \"body\"\n   ]\n"
        XCTAssertEqual(NotificationServer.capabilities(run: { _, _ in (0, plain) }), .success(["body"]))
        guard case .failure(let noServer) = NotificationServer.capabilities(run: { _, _ in
            (1, "Error org.freedesktop.DBus.Error.ServiceUnknown: The name org.freedesktop.Notifications was not provided")
        }) else { return XCTFail("no server is a failure") }
        XCTAssertTrue(noServer.description.contains("ServiceUnknown"), noServer.description)
        guard case .failure(let noTool) = NotificationServer.capabilities(run: { _, _ in nil }) else { return XCTFail("no dbus-send") }
        XCTAssertTrue(noTool.description.contains("dbus-send is not installed"), noTool.description)
    }
}
