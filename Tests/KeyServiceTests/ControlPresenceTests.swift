import Authenticator
@testable import CLI
import Foundation
@testable import KeyService
import LatchkeyTestSupport
import Synchronization
import SystemIO
import XCTest

/// ControlPresence behind a real control socket in a temporary directory.
final class ControlPresenceTests: XCTestCase {
    var directory: ShortTempDirectory!
    var presence: ControlPresence!
    var server: ControlSocket!
    var path: String { directory.path + "/k.control" }

    override func setUpWithError() throws {
        directory = try ShortTempDirectory()
        presence = ControlPresence(logger: Logger(level: .error, sink: { _ in }), holdMilliseconds: Self.hold)
        server = try ControlSocket(path: directory.path + "/k.control", presence: presence, logger: Logger(level: .error, sink: { _ in }))
        server.start()
    }

    override func tearDown() {
        server.stop()
        server = nil
        presence = nil
        directory = nil
    }

    /// Rule 2's window, shortened from 2 s to keep the tests quick.
    static let hold: UInt64 = 500
    static let register = PresenceRequest(operation: .makeCredential, rpID: "example.com", userName: "alice",
                                          timeoutMilliseconds: 5_000)

    /// Runs `body` on another thread; `wait()` returns its result.
    final class Background<T: Sendable>: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var value: T?
        init(_ body: @escaping @Sendable () -> T) {
            Thread { [self] in
                value = body()
                done.signal()
            }.start()
        }
        func wait(seconds: Double = 10) -> T? {
            guard done.wait(timeout: .now() + seconds) == .success else { return nil }
            return value
        }
    }

    func answer(_ action: String, timeout: UInt64 = 5_000) -> Background<ControlResponse?> {
        let path = self.path
        return Background { try? ControlClient.exchange(ControlRequest(action: action, timeoutMilliseconds: timeout), path: path,
                                                        replyTimeoutMilliseconds: 10_000) }
    }

    func confirm(_ request: PresenceRequest, cancellation: CancellationFlag = CancellationFlag()) -> Background<PresenceResult> {
        let presence = self.presence!
        return Background { presence.confirmPresence(request, cancellation: cancellation) }
    }

    /// Waits (briefly) until the presence state satisfies `condition`.
    func waitUntil(_ condition: (ControlPresence.Status) -> Bool, file: StaticString = #filePath, line: UInt = #line) {
        let deadline = Date().addingTimeInterval(5)
        while !condition(presence.status()) {
            guard Date() < deadline else { return XCTFail("condition not reached", file: file, line: line) }
            usleep(2_000)
        }
    }

    func testApproveAPendingRequest() throws {
        let result = confirm(Self.register)
        waitUntil { $0.pending != nil }
        let response = try XCTUnwrap(answer("approve").wait())
        XCTAssertEqual(response, ControlResponse(result: "approved", operation: "register", rpID: "example.com", user: "alice"))
        XCTAssertEqual(result.wait(), .approved)
        XCTAssertNil(presence.status().pending)
    }

    /// Race-free for rigs: `latchkey approve` may come first and wait for the request.
    func testAnswerWaitsForTheNextRequest() throws {
        let response = answer("deny")
        waitUntil { $0.waitingAnswers == 1 }
        let started = Date()
        XCTAssertEqual(presence.confirmPresence(Self.register, cancellation: CancellationFlag()), .denied)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1, "taken at once, not after the request's timeout")
        XCTAssertEqual(response.wait()??.result, "denied")
        XCTAssertEqual(presence.status().waitingAnswers, 0)
    }

    func testTimeoutAndNoRequest() throws {
        // Nothing pending and nothing recent: the answer waits its timeout, then "none".
        let response = try XCTUnwrap(answer("approve", timeout: 100).wait())
        XCTAssertEqual(response?.result, "none")
        XCTAssertEqual(response?.message, "no presence request came within 0.1 s")

        var request = Self.register
        request.timeoutMilliseconds = 150
        let started = Date()
        XCTAssertEqual(presence.confirmPresence(request, cancellation: CancellationFlag()), .timedOut)
        let waited = Date().timeIntervalSince(started)
        XCTAssertTrue(waited >= 0.149 && waited < 2, "\(waited)")
    }

    func testCancellationEndsTheWaitPromptly() {
        let cancellation = CancellationFlag()
        let result = confirm(Self.register, cancellation: cancellation)
        waitUntil { $0.pending != nil }
        let started = Date()
        cancellation.cancel()
        XCTAssertEqual(result.wait(), .cancelled)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1, "not the request's 5 s timeout")
        XCTAssertEqual(presence.confirmPresence(Self.register, cancellation: cancellation), .cancelled)
    }

    /// ControlPresence rule 2: U2F clients poll with 500 ms requests. An answer given between two
    /// polls (within the hold window, 2 s by default, after a timeout) goes to the next request of
    /// that operation, not another one.
    func testAnswerBetweenU2FPollsGoesToTheNextPollOfThatOperation() throws {
        let poll = PresenceRequest(operation: .u2fRegister, timeoutMilliseconds: 100)
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
        let response = answer("approve", timeout: 0)   // 0: would be "none" without the rule
        waitUntil { $0.waitingAnswers == 1 }
        let other = PresenceRequest(operation: .getAssertion, rpID: "example.com", timeoutMilliseconds: 100)
        XCTAssertEqual(presence.confirmPresence(other, cancellation: CancellationFlag()), .timedOut, "another operation")
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .approved)
        XCTAssertEqual(response.wait()??.operation, "U2F register")
    }

    func testHeldAnswerLapsesAfterTheHoldWindow() throws {
        let poll = PresenceRequest(operation: .u2fAuthenticate, timeoutMilliseconds: 50)
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
        let started = Date()
        let response = try XCTUnwrap(answer("approve", timeout: 0).wait())
        XCTAssertEqual(response?.result, "none")
        let waited = Date().timeIntervalSince(started)
        XCTAssertTrue(waited >= Double(Self.hold) / 1_000 - 0.05 && waited < 3, "\(waited)")
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
    }

    /// Rule 2 reserves an answer for the polling operation only during the hold window; an answer
    /// with a longer --timeout then serves whatever comes next (rule 3).
    func testReservedAnswerServesAnyRequestAfterTheWindow() throws {
        let poll = PresenceRequest(operation: .u2fRegister, timeoutMilliseconds: 50)
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
        let answered = Date()
        let response = answer("approve", timeout: 5_000)
        waitUntil { $0.waitingAnswers == 1 }
        var other = Self.register
        other.timeoutMilliseconds = 100
        XCTAssertEqual(presence.confirmPresence(other, cancellation: CancellationFlag()), .timedOut, "reserved for U2F register")
        Thread.sleep(until: answered.addingTimeInterval(Double(Self.hold) / 1_000 + 0.1))
        other.timeoutMilliseconds = 2_000
        XCTAssertEqual(presence.confirmPresence(other, cancellation: CancellationFlag()), .approved)
        XCTAssertEqual(response.wait()??.operation, "register")
    }

    /// A `latchkey approve` that is killed while it waits must not approve anything later.
    func testClosedConnectionWithdrawsItsAnswer() throws {
        let client = try FileDescriptor.unixSocket(type: SOCK_STREAM, nonBlocking: false)
        XCTAssertNoThrow(try client.connect(to: UnixSocketAddress(path: path)))
        XCTAssertTrue(ControlIO.write(ControlLine.encode(ControlRequest(action: "approve", timeoutMilliseconds: 10_000)), to: client))
        waitUntil { $0.waitingAnswers == 1 }
        client.close()
        waitUntil { $0.waitingAnswers == 0 }
        var request = Self.register
        request.timeoutMilliseconds = 100
        XCTAssertEqual(presence.confirmPresence(request, cancellation: CancellationFlag()), .timedOut)
    }

    func testStatusAndProtocolErrors() throws {
        let result = confirm(Self.register)
        waitUntil { $0.pending != nil }
        let status = try ControlClient.exchange(ControlRequest(action: "status"), path: path, replyTimeoutMilliseconds: 5_000)
        XCTAssertEqual(status.result, "status")
        XCTAssertEqual(status.pending?.operation, "register")
        XCTAssertEqual(status.pending?.rpID, "example.com")
        XCTAssertEqual(status.waitingAnswers, 0)
        XCTAssertEqual(try ControlClient.exchange(ControlRequest(action: "touch"), path: path, replyTimeoutMilliseconds: 5_000).result,
                       "error")
        var future = ControlRequest(action: "approve")
        future.version = 2
        XCTAssertEqual(try ControlClient.exchange(future, path: path, replyTimeoutMilliseconds: 5_000).result, "error")
        XCTAssertEqual(answer("approve").wait()??.result, "approved")
        XCTAssertEqual(result.wait(), .approved)
    }

    func testStopReleasesWaitersAndRemovesTheSocket() throws {
        let response = answer("approve")
        waitUntil { $0.waitingAnswers == 1 }
        server.stop()
        XCTAssertEqual(response.wait()??.result, "error")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(presence.confirmPresence(Self.register, cancellation: CancellationFlag()), .cancelled)
    }

    func testSocketFileIsPrivateAndNotShared() throws {
        var status = stat()
        XCTAssertEqual(lstat(path, &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o600)
        XCTAssertThrowsError(try ControlSocket(path: path, presence: ControlPresence(logger: Logger(level: .error, sink: { _ in })),
                                               logger: Logger(level: .error, sink: { _ in }))) {
            XCTAssertTrue("\($0)".contains("another key is already using"), "\($0)")
        }
        // A stale socket file (nobody listening) is replaced.
        let stalePath = directory.path + "/stale.control"
        let stale = try FileDescriptor.unixSocket(type: SOCK_STREAM, nonBlocking: false)
        XCTAssertNoThrow(try stale.bind(to: UnixSocketAddress(path: stalePath)))
        stale.close()
        let replacement = try ControlSocket(path: stalePath, presence: ControlPresence(logger: Logger(level: .error, sink: { _ in })),
                                            logger: Logger(level: .error, sink: { _ in }))
        replacement.stop()
        XCTAssertThrowsError(try ControlSocket(path: directory.path + "/" + String(repeating: "x", count: 120),
                                               presence: presence, logger: Logger(level: .error, sink: { _ in })))
    }

    func testDefaultPathAndPrivateDirectory() throws {
        XCTAssertEqual(ControlSocket.defaultPath(name: "work", environment: ["XDG_RUNTIME_DIR": "/run/user/1000"]),
                       "/run/user/1000/latchkey/work.control")
        XCTAssertEqual(ControlSocket.defaultPath(name: "work", environment: [:], uid: 1000), "/tmp/latchkey-1000/work.control")
        let fresh = directory.path + "/fresh"
        try ControlSocket.preparePrivateDirectory(fresh)
        var status = stat()
        XCTAssertEqual(lstat(fresh, &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o700)
        try ControlSocket.preparePrivateDirectory(fresh)   // existing and private: fine
        let open = directory.path + "/open"
        XCTAssertEqual(mkdir(open, 0o755), 0)
        XCTAssertEqual(chmod(open, 0o755), 0)
        XCTAssertThrowsError(try ControlSocket.preparePrivateDirectory(open))
        let link = directory.path + "/link"
        XCTAssertEqual(symlink(fresh, link), 0)
        XCTAssertThrowsError(try ControlSocket.preparePrivateDirectory(link), "a symlink is not a private directory")
    }

    /// `latchkey approve` against a live control socket: 0 when its answer was taken, 1 with no key.
    func testApproveCommandExitStatus() {
        let result = confirm(Self.register)
        waitUntil { $0.pending != nil }
        XCTAssertEqual(ApproveCommand.run(.approve, ApproveCommand.Options(controlPath: path, timeoutMilliseconds: 1_000)), 0)
        XCTAssertEqual(result.wait(), .approved)
        XCTAssertEqual(ApproveCommand.run(.deny, ApproveCommand.Options(controlPath: directory.path + "/none.control",
                                                                        timeoutMilliseconds: 0)), 1, "no key there")
    }
}
