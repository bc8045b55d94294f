import Authenticator
import CTAP
import CTAPHID
import FIDOClient
import Foundation
@testable import KeyService
import LinuxHID
import Synchronization
import XCTest

/// Which thread runs a request: the poll loop itself when presence never waits (auto, deny),
/// the worker otherwise, so a waiting request never holds up KEEPALIVE, CANCEL or other channels.
final class KeyRunnerTests: XCTestCase {
    /// Presence that approves at once and records whether the poll loop's thread asked.
    final class RecordingPresence: UserPresence, @unchecked Sendable {
        let answersImmediately: Bool
        let loopThread = Mutex<pthread_t?>(nil)
        let threads = Mutex<[String]>([])
        init(answersImmediately: Bool) { self.answersImmediately = answersImmediately }
        func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult {
            let onLoop = loopThread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
            threads.withLock { $0.append(onLoop ? "loop" : "other") }
            return .approved
        }
    }

    /// Serves a key on a socket in a thread of its own, runs `body` with a client, stops it.
    func serve(presence: RecordingPresence, _ body: (CTAPHIDClient) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "latchkey-runner-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/key.sock"
        let authenticator = try Authenticator(store: InMemoryCredentialStore(), presence: presence, clock: SystemClock())
        let runner = try KeyRunner(transport: try SocketTransport(path: path), authenticator: authenticator,
                                   logger: Logger(level: .error))
        let loop = Thread {
            presence.loopThread.withLock { $0 = pthread_self() }
            runner.run()
        }
        loop.start()
        defer {
            runner.requestStop()
            while !loop.isFinished { usleep(1000) }
        }
        let client = CTAPHIDClient(link: try SocketClient(path: path), replyTimeoutMilliseconds: 5_000)
        _ = try client.initialize()
        try body(client)
    }

    /// authenticatorReset right after power-up asks for presence once and answers CTAP2_OK.
    func resetAndReport(presence: RecordingPresence) throws -> [String] {
        try serve(presence: presence) { client in
            XCTAssertEqual(try client.cbor([CTAPCommand.reset.rawValue]), [CTAP2StatusCode.success.rawValue])
            XCTAssertEqual(try client.ping([1, 2, 3]), [1, 2, 3], "the key keeps serving")
        }
        return presence.threads.withLock { $0 }
    }

    func testPresenceThatNeverWaitsRunsOnTheLoop() throws {
        XCTAssertEqual(try resetAndReport(presence: RecordingPresence(answersImmediately: true)), ["loop"])
    }

    func testPresenceThatMayWaitRunsOnTheWorker() throws {
        let threads = try resetAndReport(presence: RecordingPresence(answersImmediately: false))
        XCTAssertEqual(threads, ["other"])
    }
}
