import Authenticator
import CTAP
import CTAPHID
import Foundation
@testable import KeyService
import LinuxHID
import Synchronization
import SystemIO
import XCTest

/// KeyRunner's loop driven a turn at a time with a fake transport and a fake clock: no socket,
/// no device, no sleeping for timers. The worker is the runner's own thread; a test waits for
/// it only where the worker is what is tested.
final class KeyRunnerLoopTests: XCTestCase {
    /// Reports in as scripted, reports out recorded.
    final class FakeTransport: ReportTransport {
        static let descriptor: Int32 = 1_000_000
        var incoming: [TransportEvent] = []
        var sent: [(report: [UInt8], connection: TransportConnection)] = []
        var isShutDown = false
        var pollDescriptors: [Int32] { [Self.descriptor] }
        func readEvents(from fd: Int32) -> [TransportEvent] {
            guard fd == Self.descriptor else { return [] }
            defer { incoming = [] }
            return incoming
        }
        func send(_ report: [UInt8], to connection: TransportConnection) { sent.append((report, connection)) }
        func shutdown() { isShutDown = true }
    }

    /// A request that waits for a person until released (or cancelled), saying so in its
    /// keepalive status; each call and power cycle logged in order.
    final class WaitingHandler: RequestHandler, @unchecked Sendable {
        let released = DispatchSemaphore(value: 0)
        let log = Mutex<[String]>([])
        var neverWaitsForUser: Bool { false }
        func mayRunLong(command: UInt8, payload: [UInt8]) -> Bool { false }
        func handle(command: UInt8, payload: [UInt8], context: RequestContext) -> [UInt8] {
            log.withLock { $0.append("request \(payload)") }
            context.reportStatus(.userPresenceNeeded)
            while released.wait(timeout: .now() + .milliseconds(5)) == .timedOut {
                if context.cancellation.isCancelled {
                    log.withLock { $0.append("cancelled") }
                    return [CTAP2StatusCode.keepaliveCancel.rawValue]
                }
            }
            return [CTAP2StatusCode.success.rawValue] + payload
        }
        func powerCycle() { log.withLock { $0.append("power cycle") } }
    }

    /// The loop's clock: CLOCK_MONOTONIC nanoseconds as the test sets them.
    final class FakeClock: Sendable {
        let now = Atomic<UInt64>(5_000_000_000)
    }

    let clock = FakeClock()
    var transport: FakeTransport!
    var handler: WaitingHandler!
    var runner: KeyRunner!

    override func setUpWithError() throws {
        transport = FakeTransport()
        handler = WaitingHandler()
        let clock = self.clock
        runner = try KeyRunner(transport: transport, handler: handler, logger: Logger(level: .error),
                               hidConfiguration: CTAPHIDConfiguration(channelIDSeed: 0x1000),
                               clock: { clock.now.load(ordering: .acquiring) })
    }

    override func tearDown() {
        handler.released.signal()
        runner.requestStop()
    }

    // MARK: Driving the loop

    private func advance(milliseconds: UInt64) { clock.now.add(milliseconds * 1_000_000, ordering: .acquiringAndReleasing) }

    /// Delivers `events` and runs one turn; returns what the key sent in it.
    @discardableResult
    private func deliver(_ events: [TransportEvent]) -> [(report: [UInt8], connection: TransportConnection)] {
        let before = transport.sent.count
        transport.incoming = events
        runner.turn(ready: [FakeTransport.descriptor])
        return Array(transport.sent[before...])
    }

    /// Turns the loop as the worker wakes it until `done` holds (at most 5 s of real time).
    private func turnUntil(_ what: String, _ done: () -> Bool) {
        let deadline = Date().addingTimeInterval(5)
        while !done() {
            guard Date() < deadline else { return XCTFail("\(what): not within 5 s") }
            let ready = (try? Poller.wait(for: [runner.wakeupDescriptor], timeoutMilliseconds: 50)) ?? []
            runner.turn(ready: ready)
        }
    }

    private func report(_ channel: UInt32, _ command: CTAPHIDCommand, _ payload: [UInt8], from connection: Int) -> TransportEvent {
        .report(CTAPHIDPacket.initialization(channel: channel, command: command.rawValue, declaredLength: payload.count,
                                             data: payload).report, from: connection)
    }

    /// INIT on the broadcast channel from `connection`: the channel the key gives it.
    private func allocateChannel(for connection: Int) throws -> UInt32 {
        let sent = deliver([report(CTAPHIDPacket.broadcastChannel, .initialize, Array(1...8), from: connection)])
        let packet = try XCTUnwrap(sent.first.flatMap { CTAPHIDPacket(report: $0.report) })
        guard case let .initialization(_, command, _, data) = packet, command == CTAPHIDCommand.initialize.rawValue else {
            XCTFail("no INIT response: \(packet)")
            return 0
        }
        return data[8..<12].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// (command, first payload byte) of each report sent, decoded.
    private func decoded(_ sent: [(report: [UInt8], connection: TransportConnection)]) -> [(UInt8, UInt8?)] {
        sent.compactMap { CTAPHIDPacket(report: $0.report) }.compactMap {
            guard case let .initialization(_, command, _, data) = $0 else { return nil }
            return (command, data.first)
        }
    }

    private var keepalive: UInt8 { CTAPHIDCommand.keepalive.rawValue }

    // MARK: Tests

    /// While presence waits the key sends KEEPALIVE (UPNEEDED) at once and then every 100 ms of
    /// the loop's clock; the answer follows the person's touch.
    func testKeepaliveWhilePresenceWaits() throws {
        let channel = try allocateChannel(for: 1)
        // (The worker may speak within this very turn: only a KEEPALIVE may come before the touch.)
        XCTAssertTrue(decoded(deliver([report(channel, .cbor, [0x42], from: 1)])).allSatisfy { $0.0 == keepalive })
        turnUntil("the worker's status") { transport.sent.count >= 2 }
        XCTAssertEqual(decoded(Array(transport.sent[1...])).map(\.0), [keepalive])
        XCTAssertEqual(decoded(Array(transport.sent[1...])).map(\.1), [KeepaliveStatus.userPresenceNeeded.rawValue])
        advance(milliseconds: 60)
        XCTAssertTrue(deliver([]).isEmpty, "a KEEPALIVE before 100 ms")
        advance(milliseconds: 50)
        let second = deliver([])
        XCTAssertEqual(decoded(second).map(\.0), [keepalive], "no KEEPALIVE after 110 ms")
        XCTAssertEqual(second.first?.connection, 1)
        handler.released.signal()
        turnUntil("the response") { decoded(transport.sent).last?.0 == CTAPHIDCommand.cbor.rawValue }
        XCTAssertEqual(decoded(transport.sent).last?.1, CTAP2StatusCode.success.rawValue)
    }

    /// CANCEL gets no answer of its own; the waiting request ends with KEEPALIVE_CANCEL.
    func testCancelMidRequest() throws {
        let channel = try allocateChannel(for: 1)
        deliver([report(channel, .cbor, [0x01], from: 1)])
        turnUntil("the request to start waiting") { transport.sent.count >= 2 }
        XCTAssertFalse(decoded(deliver([report(channel, .cancel, [], from: 1)])).contains { $0.0 == CTAPHIDCommand.cancel.rawValue },
                       "CANCEL was answered")
        turnUntil("the cancelled response") { decoded(transport.sent).last?.0 == CTAPHIDCommand.cbor.rawValue }
        XCTAssertEqual(decoded(transport.sent).last?.1, CTAP2StatusCode.keepaliveCancel.rawValue)
        XCTAssertEqual(handler.log.withLock { $0 }, ["request [1]", "cancelled"])
    }

    /// Another channel is ERR_CHANNEL_BUSY while a request runs, and served once it is done.
    func testABusyChannel() throws {
        let first = try allocateChannel(for: 1)
        let second = try allocateChannel(for: 2)
        deliver([report(first, .cbor, [0x01], from: 1)])
        let refused = deliver([report(second, .cbor, [0x02], from: 2)]).filter { $0.connection == 2 }
        XCTAssertEqual(decoded(refused).map(\.0), [CTAPHIDCommand.error.rawValue])
        XCTAssertEqual(decoded(refused).map(\.1), [CTAPHIDError.channelBusy.rawValue])
        XCTAssertEqual(refused.first?.connection, 2)
        XCTAssertEqual(decoded(deliver([report(second, .ping, [7, 7], from: 2)]).filter { $0.connection == 2 }).map(\.0),
                       [CTAPHIDCommand.error.rawValue], "a PING from another channel while busy")
        handler.released.signal()
        turnUntil("the first response") { transport.sent.contains { $0.connection == 1 && decoded([$0]).first?.0 == CTAPHIDCommand.cbor.rawValue } }
        XCTAssertEqual(decoded(deliver([report(second, .ping, [7, 7], from: 2)])).map(\.0), [CTAPHIDCommand.ping.rawValue])
    }

    /// A client that vanishes mid-request: its request is cancelled, its answer goes nowhere,
    /// and the next client is served.
    func testAClientVanishing() throws {
        let channel = try allocateChannel(for: 1)
        deliver([report(channel, .cbor, [0x01], from: 1)])
        turnUntil("the request to start waiting") { transport.sent.count >= 2 }
        deliver([.connectionClosed(1)])
        turnUntil("the request to see it") { handler.log.withLock { $0.contains("cancelled") } }
        let sentBefore = transport.sent.count
        advance(milliseconds: 500)
        deliver([])
        XCTAssertEqual(transport.sent.count, sentBefore, "something was sent after the client left")
        let next = try allocateChannel(for: 2)
        XCTAssertEqual(decoded(deliver([report(next, .ping, [1], from: 2)])).map(\.0), [CTAPHIDCommand.ping.rawValue])
    }

    /// A power cycle asked for mid-request runs after that request, on the same worker.
    func testAPowerCycleWaitsForTheRequestInFlight() throws {
        let channel = try allocateChannel(for: 1)
        deliver([report(channel, .cbor, [0x05], from: 1)])
        turnUntil("the request to start waiting") { transport.sent.count >= 2 }
        runner.requestPowerCycle()
        runner.turn(ready: [runner.wakeupDescriptor])
        usleep(50_000)   // time for a power cycle that (wrongly) did not wait to run
        XCTAssertEqual(handler.log.withLock { $0 }, ["request [5]"], "the power cycle ran mid-request")
        handler.released.signal()
        turnUntil("the power cycle") { handler.log.withLock { $0.count == 2 } }
        XCTAssertEqual(handler.log.withLock { $0 }, ["request [5]", "power cycle"])
    }

    /// A message whose continuation never comes is ERR_MSG_TIMEOUT when the loop's clock says so.
    func testAMessageTimeoutFollowsTheLoopsClock() throws {
        let channel = try allocateChannel(for: 1)
        let first = CTAPHIDPacket.initialization(channel: channel, command: CTAPHIDCommand.cbor.rawValue, declaredLength: 100,
                                                 data: Array(repeating: 1, count: 57))
        XCTAssertTrue(deliver([.report(first.report, from: 1)]).isEmpty)
        XCTAssertGreaterThan(runner.pollTimeoutMilliseconds, 400, "the loop would wake before the timeout")
        advance(milliseconds: 499)
        XCTAssertTrue(deliver([]).isEmpty, "timed out early")
        advance(milliseconds: 2)
        let timedOut = deliver([])
        XCTAssertEqual(decoded(timedOut).map(\.0), [CTAPHIDCommand.error.rawValue])
        XCTAssertEqual(decoded(timedOut).map(\.1), [CTAPHIDError.messageTimeout.rawValue])
        XCTAssertTrue(handler.log.withLock { $0.isEmpty }, "a partial message reached the handler")
    }

    /// A key that never waits for a person runs its requests on the loop, but one that may run
    /// long (an RSA key to make) goes to the worker: a client that resyncs its channel (INIT)
    /// while that runs, then sends another request, must not get the handler on two threads at
    /// once; the second waits behind the first, and so does a power cycle.
    final class AutomaticHandler: RequestHandler, @unchecked Sendable {
        let released = DispatchSemaphore(value: 0)
        let log = Mutex<[String]>([])
        let inside = Atomic<Int>(0)
        let mostInside = Atomic<Int>(0)
        var neverWaitsForUser: Bool { true }
        func mayRunLong(command: UInt8, payload: [UInt8]) -> Bool { payload == [0x01] }
        func handle(command: UInt8, payload: [UInt8], context: RequestContext) -> [UInt8] {
            let now = inside.add(1, ordering: .acquiringAndReleasing).newValue
            mostInside.max(now, ordering: .acquiringAndReleasing)
            defer { inside.subtract(1, ordering: .acquiringAndReleasing) }
            log.withLock { $0.append("request \(payload)") }
            if payload == [0x01] { _ = released.wait(timeout: .now() + .seconds(5)) }
            return [CTAP2StatusCode.success.rawValue] + payload
        }
        func powerCycle() {
            let now = inside.add(1, ordering: .acquiringAndReleasing).newValue
            mostInside.max(now, ordering: .acquiringAndReleasing)
            defer { inside.subtract(1, ordering: .acquiringAndReleasing) }
            log.withLock { $0.append("power cycle") }
        }
    }

    func testTheHandlerRunsOnOneThreadAtATimeAfterAResync() throws {
        let automatic = AutomaticHandler()
        runner.requestStop()
        let clock = self.clock
        runner = try KeyRunner(transport: transport, handler: automatic, logger: Logger(level: .error),
                               hidConfiguration: CTAPHIDConfiguration(channelIDSeed: 0x1000),
                               clock: { clock.now.load(ordering: .acquiring) })
        defer { automatic.released.signal() }
        let channel = try allocateChannel(for: 1)
        deliver([report(channel, .cbor, [0x01], from: 1)])
        turnUntil("the long request to start") { automatic.log.withLock { $0 == ["request [1]"] } }
        deliver([report(channel, .initialize, Array(1...8), from: 1)])   // the client resyncs its channel
        deliver([report(channel, .cbor, [0x02], from: 1)])
        runner.requestPowerCycle()
        runner.turn(ready: [runner.wakeupDescriptor])
        usleep(50_000)   // time for a request or power cycle that (wrongly) did not wait to run
        XCTAssertEqual(automatic.log.withLock { $0 }, ["request [1]"], "ran beside the request on the worker")
        automatic.released.signal()
        turnUntil("both requests and the power cycle") { automatic.log.withLock { $0.count == 3 } }
        XCTAssertEqual(automatic.log.withLock { $0 }, ["request [1]", "request [2]", "power cycle"])
        XCTAssertEqual(automatic.mostInside.load(ordering: .acquiring), 1, "the handler ran on two threads at once")
    }
}
