import Authenticator
import FIDOCrypto
@testable import CLI
import Foundation
@testable import Presence
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

    func answer(_ action: String, timeout: UInt64 = 5_000, rp: String? = nil, request: UInt64? = nil) -> Background<ControlResponse?> {
        let path = self.path
        return Background { try? ControlClient.exchange(ControlRequest(action: action, timeoutMilliseconds: timeout, rpID: rp,
                                                                       requestID: request),
                                                        path: path, pathIsDefault: false, replyTimeoutMilliseconds: 10_000) }
    }

    /// A U2F request as U2FHandler makes it: no RP ID, the application parameter as its hash,
    /// the APDU data as its fingerprint.
    static func u2f(_ operation: PresenceRequest.Operation, app: String, challenge: UInt8, timeout: UInt64) -> PresenceRequest {
        let application = SHA256.hash(Array(app.utf8))
        return PresenceRequest(operation: operation, timeoutMilliseconds: timeout, rpIDHash: application,
                               fingerprint: SHA256.hash([UInt8](repeating: challenge, count: 32) + application))
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
        XCTAssertEqual(response, ControlResponse(result: "approved", operation: "register", rpID: "example.com", user: "alice",
                                                 requestID: 1))
        XCTAssertEqual(result.wait(), .approved)
        XCTAssertNil(presence.status().pending)
    }

    /// Race-free for rigs: `latchkey approve --rp` may come first and wait for that RP's request;
    /// requests of other RPs, and a reset, do not take it.
    func testAnswerForAnRPWaitsForThatRPsNextRequest() throws {
        let response = answer("deny", rp: "example.com")
        waitUntil { $0.waitingAnswers == 1 }
        var other = PresenceRequest(operation: .makeCredential, rpID: "evil.example", timeoutMilliseconds: 100,
                                    rpIDHash: SHA256.hash(Array("evil.example".utf8)))
        XCTAssertEqual(presence.confirmPresence(other, cancellation: CancellationFlag()), .timedOut, "another RP")
        other = PresenceRequest(operation: .reset, timeoutMilliseconds: 100)
        XCTAssertEqual(presence.confirmPresence(other, cancellation: CancellationFlag()), .timedOut, "a reset")
        var register = Self.register
        register.rpIDHash = SHA256.hash(Array("example.com".utf8))
        let started = Date()
        XCTAssertEqual(presence.confirmPresence(register, cancellation: CancellationFlag()), .denied)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1, "taken at once, not after the request's timeout")
        XCTAssertEqual(response.wait()??.result, "denied")
        XCTAssertEqual(presence.status().waitingAnswers, 0)
    }

    /// A bare `latchkey approve --timeout 3600` used to approve whatever came next (a reset,
    /// another client's registration). Now it answers only what is pending, at once.
    func testBareAnswerNeverWaitsForAFutureRequest() throws {
        let started = Date()
        let response = try XCTUnwrap(answer("approve", timeout: 3_600_000).wait())
        XCTAssertEqual(response?.result, "none")
        XCTAssertTrue(response?.message?.hasPrefix("no presence request is pending") == true, "\(String(describing: response))")
        XCTAssertLessThan(Date().timeIntervalSince(started), 2, "not the hour it asked for")
        var reset = PresenceRequest(operation: .reset, timeoutMilliseconds: 100)
        XCTAssertEqual(presence.confirmPresence(reset, cancellation: CancellationFlag()), .timedOut)
        XCTAssertEqual(presence.status().waitingAnswers, 0)
    }

    func testTimeoutAndNoRequest() throws {
        // Nothing pending for that RP: the answer waits its timeout, then "none".
        let response = try XCTUnwrap(answer("approve", timeout: 100, rp: "example.com").wait())
        XCTAssertEqual(response?.result, "none")
        XCTAssertEqual(response?.message, "no presence request for example.com came within 0.1 s")

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

    /// U2F clients poll with 500 ms requests. An answer given between two polls (within the hold
    /// window, 2 s by default, after a timeout) goes to the next poll of that same request — not
    /// to another operation, and not to another app's U2F request of the same operation.
    func testAnswerBetweenU2FPollsGoesToTheNextPollOfThatRequest() throws {
        let poll = Self.u2f(.u2fRegister, app: "https://one.example", challenge: 1, timeout: 100)
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
        let response = answer("approve", timeout: 0)
        waitUntil { $0.waitingAnswers == 1 }
        let other = PresenceRequest(operation: .getAssertion, rpID: "example.com", timeoutMilliseconds: 100)
        XCTAssertEqual(presence.confirmPresence(other, cancellation: CancellationFlag()), .timedOut, "another operation")
        let otherApp = Self.u2f(.u2fRegister, app: "https://two.example", challenge: 2, timeout: 100)
        XCTAssertEqual(presence.confirmPresence(otherApp, cancellation: CancellationFlag()), .timedOut, "another app's U2F register")
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .approved)
        let approved = response.wait() ?? nil
        XCTAssertEqual(approved?.operation, "U2F register")
        XCTAssertEqual(approved?.requestID, 1, "every poll of one request keeps its id")
    }

    /// `--rp` matches a U2F request by its application parameter, SHA-256(RP ID).
    func testAnswerForAnRPMatchesU2FByApplicationParameter() throws {
        let response = answer("approve", rp: "u2f.example")
        waitUntil { $0.waitingAnswers == 1 }
        let otherApp = Self.u2f(.u2fAuthenticate, app: "other.example", challenge: 3, timeout: 100)
        XCTAssertEqual(presence.confirmPresence(otherApp, cancellation: CancellationFlag()), .timedOut)
        let poll = Self.u2f(.u2fAuthenticate, app: "u2f.example", challenge: 4, timeout: 100)
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .approved)
        XCTAssertEqual(response.wait()??.result, "approved")
    }

    /// `--request N`: only the request `presence status` showed as N.
    func testAnswerForARequestID() throws {
        let result = confirm(Self.register)
        waitUntil { $0.pending != nil }
        let id = try XCTUnwrap(presence.status().pendingID)
        let wrong = try XCTUnwrap(answer("approve", request: id + 1).wait())
        XCTAssertEqual(wrong?.result, "none")
        XCTAssertTrue(wrong?.message?.contains("request \(id + 1) is not pending") == true, "\(String(describing: wrong))")
        XCTAssertNotNil(presence.status().pending, "still waiting")
        let right = try XCTUnwrap(answer("deny", request: id).wait())
        XCTAssertEqual(right?.result, "denied")
        XCTAssertEqual(right?.requestID, id)
        XCTAssertEqual(result.wait(), .denied)
        // A new request gets a new id.
        let next = confirm(Self.register)
        waitUntil { $0.pending != nil }
        XCTAssertEqual(presence.status().pendingID, id + 1)
        XCTAssertEqual(answer("approve").wait()??.result, "approved")
        XCTAssertEqual(next.wait(), .approved)
    }

    func testHeldAnswerLapsesAfterTheHoldWindow() throws {
        let poll = Self.u2f(.u2fAuthenticate, app: "https://one.example", challenge: 5, timeout: 50)
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
        let started = Date()
        let response = try XCTUnwrap(answer("approve", timeout: 0).wait())
        XCTAssertEqual(response?.result, "none")
        let waited = Date().timeIntervalSince(started)
        XCTAssertTrue(waited >= Double(Self.hold) / 1_000 - 0.05 && waited < 3, "\(waited)")
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
    }

    /// An answer reserved for a polling U2F request never serves anything else, even when it
    /// asked for a long --timeout: after the hold window it lapses ("none").
    func testReservedAnswerNeverServesAnotherRequest() throws {
        let poll = Self.u2f(.u2fRegister, app: "https://one.example", challenge: 6, timeout: 50)
        XCTAssertEqual(presence.confirmPresence(poll, cancellation: CancellationFlag()), .timedOut)
        let answered = Date()
        let response = answer("approve", timeout: 5_000)
        waitUntil { $0.waitingAnswers == 1 }
        var other = Self.register
        other.timeoutMilliseconds = 100
        XCTAssertEqual(presence.confirmPresence(other, cancellation: CancellationFlag()), .timedOut, "reserved for U2F register")
        Thread.sleep(until: answered.addingTimeInterval(Double(Self.hold) / 1_000 + 0.1))
        other.timeoutMilliseconds = 300
        XCTAssertEqual(presence.confirmPresence(other, cancellation: CancellationFlag()), .timedOut, "and never anything else")
        XCTAssertEqual(response.wait()??.result, "none")
    }

    /// A `latchkey approve` that is killed while it waits must not approve anything later.
    func testClosedConnectionWithdrawsItsAnswer() throws {
        let client = try FileDescriptor.unixSocket(type: SOCK_STREAM, nonBlocking: false)
        XCTAssertNoThrow(try client.connect(to: UnixSocketAddress(path: path)))
        XCTAssertTrue(LineSocket.write(ControlLine.encode(ControlRequest(action: "approve", timeoutMilliseconds: 10_000,
                                                                        rpID: "example.com")), to: client))
        waitUntil { $0.waitingAnswers == 1 }
        client.close()
        waitUntil { $0.waitingAnswers == 0 }
        var request = Self.register
        request.timeoutMilliseconds = 100
        XCTAssertEqual(presence.confirmPresence(request, cancellation: CancellationFlag()), .timedOut)
    }

    /// Protocol 1.1: the camelCase names beside the original ones, in answers, and read in requests.
    func testCamelCaseNamesBesideTheOriginalOnes() throws {
        let response = ControlResponse(result: "status", rpID: "example.com",
                                       pending: .init(id: 4, operation: "register", rpID: "example.com", user: nil, waitingMilliseconds: 1200),
                                       waitingAnswers: 0)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(ControlLine.encode(response))) as? [String: Any])
        XCTAssertEqual(object["rp_id"] as? String, "example.com")
        XCTAssertEqual(object["rpId"] as? String, "example.com")
        XCTAssertEqual(object["waiting_answers"] as? Int, 0)
        XCTAssertEqual(object["waitingAnswers"] as? Int, 0)
        let pending = try XCTUnwrap(object["pending"] as? [String: Any])
        XCTAssertEqual(pending["waiting_ms"] as? Int, 1200)
        XCTAssertEqual(pending["waitingMs"] as? Int, 1200)
        XCTAssertEqual(ControlLine.decode(ControlResponse.self, from: ControlLine.encode(response)), response)
        XCTAssertEqual(ControlCommand(line: Array(#"{"v":1,"action":"approve","rpId":"example.com","timeoutMs":500}"#.utf8)),
                       .answer(.approve, .relyingParty("example.com"), timeoutMilliseconds: 500))
        XCTAssertEqual(ControlCommand(line: Array(#"{"v":1,"action":"approve","rp_id":"example.com","timeout_ms":500}"#.utf8)),
                       .answer(.approve, .relyingParty("example.com"), timeoutMilliseconds: 500))
    }

    func testStatusAndProtocolErrors() throws {
        let result = confirm(Self.register)
        waitUntil { $0.pending != nil }
        let status = try ControlClient.exchange(ControlRequest(action: "status"), path: path, pathIsDefault: false, replyTimeoutMilliseconds: 5_000)
        XCTAssertEqual(status.result, "status")
        XCTAssertEqual(status.pending?.operation, "register")
        XCTAssertEqual(status.pending?.rpID, "example.com")
        XCTAssertEqual(status.waitingAnswers, 0)
        XCTAssertEqual(try ControlClient.exchange(ControlRequest(action: "touch"), path: path, pathIsDefault: false, replyTimeoutMilliseconds: 5_000).result,
                       "error")
        let both = ControlRequest(action: "approve", rpID: "example.com", requestID: 1)
        XCTAssertEqual(try ControlClient.exchange(both, path: path, pathIsDefault: false, replyTimeoutMilliseconds: 5_000).message,
                       "give rp_id or request, not both")
        XCTAssertEqual(status.pending?.id, 1)
        var future = ControlRequest(action: "approve")
        future.version = 2
        XCTAssertEqual(try ControlClient.exchange(future, path: path, pathIsDefault: false, replyTimeoutMilliseconds: 5_000).result, "error")
        XCTAssertEqual(answer("approve").wait()??.result, "approved")
        XCTAssertEqual(result.wait(), .approved)
    }

    func testStopReleasesWaitersAndRemovesTheSocket() throws {
        let response = answer("approve", rp: "example.com")
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
        // Without XDG_RUNTIME_DIR: under the user's cache directory, never /tmp (issue 34).
        let host = ControlSocket.hostLabel()
        XCTAssertEqual(ControlSocket.defaultPath(name: "work", environment: ["HOME": "/home/u"], uid: 1000),
                       "/home/u/.cache/latchkey/run-\(host)/work.control")
        XCTAssertEqual(ControlSocket.defaultPath(name: "work", environment: ["HOME": "/home/u/", "XDG_CACHE_HOME": "/c"], uid: 1000),
                       "/c/latchkey/run-\(host)/work.control")
        XCTAssertEqual(ControlSocket.defaultPath(name: "work", environment: ["HOME": "relative"], uid: 0),
                       (ControlSocket.homeDirectory(uid: 0) ?? "") + "/.cache/latchkey/run-\(host)/work.control")
        XCTAssertFalse(host.isEmpty)
        XCTAssertTrue(host.utf8.count <= 32 && host.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" })
        // Missing parents are made private too.
        let nested = directory.path + "/home/.cache/latchkey/run-x"
        try ControlSocket.preparePrivateDirectory(nested)
        XCTAssertNil(ControlSocket.privacyProblem(nested))
        XCTAssertNil(ControlSocket.privacyProblem(directory.path + "/absent"))
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

        // Clients of a default path check its directory as the servers do, before connecting:
        // a live socket in a directory anyone could have made hears nothing (issue 34).
        let squatted = try ControlSocket(path: open + "/default.control", presence: ControlPresence(logger: Logger(level: .error, sink: { _ in })),
                                         logger: Logger(level: .error, sink: { _ in }))
        squatted.start()
        defer { squatted.stop() }
        XCTAssertThrowsError(try ControlClient.exchange(ControlRequest(action: "status"), path: open + "/default.control",
                                                        pathIsDefault: true, replyTimeoutMilliseconds: 2_000)) {
            let message = ($0 as? ControlSocket.Failure)?.description ?? ""
            XCTAssertTrue(message.contains("must be a directory owned by you with mode 0700") && message.contains("mode 755"), message)
        }
        XCTAssertEqual(try ControlClient.exchange(ControlRequest(action: "status"), path: open + "/default.control",
                                                  pathIsDefault: false, replyTimeoutMilliseconds: 2_000).result, "status",
                       "a path given with --control is the user's choice: only the peer's uid is checked")
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
