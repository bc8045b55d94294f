import Authenticator
import CTAP
import CTAPHID
import FIDOClient
import Foundation
@testable import KeyService
import LinuxHID
import Synchronization
import XCTest
import SystemIO

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
        let runner = try KeyRunner(transport: try SocketTransport(path: path), handler: authenticator,
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

    /// Presence stuck until released, deaf to cancellation: a request that the worker cannot
    /// finish (as a slow store write would be).
    final class StuckPresence: UserPresence, @unchecked Sendable {
        let release = DispatchSemaphore(value: 0)
        let asked = Atomic<Int>(0)
        func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult {
            asked.add(1, ordering: .relaxed)
            release.wait()
            return .denied
        }
    }

    /// Issue 16, item 9: INIT-resync frees a channel while its request still runs, so a client
    /// could queue requests on the worker without end. Past `maximumWorkerRequests` the key
    /// answers busy at once, and serves on once the worker is free.
    func testResyncCannotQueueRequestsWithoutBound() throws {
        let presence = StuckPresence()
        let directory = NSTemporaryDirectory() + "latchkey-runner-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/key.sock"
        let authenticator = try Authenticator(store: InMemoryCredentialStore(), presence: presence, clock: SystemClock())
        let runner = try KeyRunner(transport: try SocketTransport(path: path), handler: authenticator,
                                   logger: Logger(level: .error))
        let loop = Thread { runner.run() }
        loop.start()
        var released = false
        defer {
            if !released { for _ in 0..<16 { presence.release.signal() } }
            runner.requestStop()
            while !loop.isFinished { usleep(1000) }
        }
        let link = try SocketClient(path: path)
        let channel = try CTAPHIDClient(link: link, replyTimeoutMilliseconds: 5_000).initialize().channel
        var busyAnswers = 0
        for round in 0..<(KeyRunner.maximumWorkerRequests + 3) {
            // authenticatorReset asks for presence (and gets stuck there).
            try link.send(reports: MessageFragmenter.reports(channel: channel, command: CTAPHIDCommand.cbor.rawValue,
                                                             payload: [CTAPCommand.reset.rawValue]))
            // A CBOR answer now can only be "busy"; keepalives say the request is queued or running.
            var assembler = MessageAssembler(channel: channel, skipKeepalives: true)
            let deadline = Date().addingTimeInterval(0.3)
            while Date() < deadline, let report = try link.receive(timeoutMilliseconds: 50) {
                if case let .complete(command, payload) = assembler.feed(report: report), command == CTAPHIDCommand.cbor.rawValue {
                    XCTAssertEqual(payload, [CTAP2StatusCode.channelBusy.rawValue], "round \(round)")
                    busyAnswers += 1
                }
            }
            // Resync the channel: the request is abandoned (and cancelled), the channel free again.
            let nonce = [UInt8](repeating: UInt8(round), count: 8)
            try link.send(reports: MessageFragmenter.reports(channel: channel, command: CTAPHIDCommand.initialize.rawValue, payload: nonce))
            var initAssembler = MessageAssembler(channel: channel, skipKeepalives: true)
            var resynced = false
            while !resynced, let report = try link.receive(timeoutMilliseconds: 2_000) {
                if case let .complete(command, payload) = initAssembler.feed(report: report),
                   command == CTAPHIDCommand.initialize.rawValue, payload.prefix(8).elementsEqual(nonce) { resynced = true }
            }
            XCTAssertTrue(resynced, "round \(round): INIT answered while the worker is stuck")
        }
        XCTAssertEqual(presence.asked.load(ordering: .relaxed), 1, "only the first request reached presence")
        XCTAssertEqual(busyAnswers, 3, "the requests past the bound were answered busy")
        for _ in 0..<16 { presence.release.signal() }
        released = true
        let client = CTAPHIDClient(link: link, replyTimeoutMilliseconds: 5_000)
        _ = client.drain(quietMilliseconds: 200)
        _ = try client.initialize()
        XCTAssertEqual(try client.ping([7, 7]), [7, 7], "the key serves on")
        XCTAssertEqual(try client.cbor([CTAPCommand.getInfo.rawValue]).first, CTAP2StatusCode.success.rawValue)
    }

    func testPresenceThatNeverWaitsRunsOnTheLoop() throws {
        XCTAssertEqual(try resetAndReport(presence: RecordingPresence(answersImmediately: true)), ["loop"])
    }

    func testPresenceThatMayWaitRunsOnTheWorker() throws {
        let threads = try resetAndReport(presence: RecordingPresence(answersImmediately: false))
        XCTAssertEqual(threads, ["other"])
    }
}
