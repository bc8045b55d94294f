import Authenticator
import CTAP
import CTAPHID
import Foundation
import Trace
import LinuxHID
import Synchronization
import SystemIO

/// The running key: one poll loop owns the transport's descriptors and the CTAPHID timers;
/// CBOR/MSG requests run on a serial worker so KEEPALIVE, CANCEL and other channels are served
/// while the handler waits for the user (docs/architecture.md, The data path). With a handler
/// that never waits (auto, deny presence) the loop runs requests itself (see `dispatch`).
public final class KeyRunner: @unchecked Sendable {
    /// What the worker hands back to the loop.
    private enum Completion: Sendable {
        case response(transactionID: UInt64, bytes: [UInt8])
        case status(transactionID: UInt64, status: KeepaliveStatus)
    }

    /// Worker → loop hand-off: a locked list plus the eventfd that wakes the loop.
    private final class Mailbox: Sendable {
        let items = Mutex<[Completion]>([])
        let wakeup: WakeupEvent
        init(wakeup: WakeupEvent) { self.wakeup = wakeup }
        func post(_ completion: Completion) {
            items.withLock { $0.append(completion) }
            wakeup.signal()
        }
        func take() -> [Completion] {
            items.withLock { items in
                defer { items.removeAll() }
                return items
            }
        }
    }

    let transport: ReportTransport
    let handler: RequestHandler
    let logger: Logger
    private var stateMachine: CTAPHIDStateMachine
    private let worker = DispatchQueue(label: "latchkey.authenticator")
    /// How many requests may be on the worker at once (one runs, the rest wait behind it).
    static let maximumWorkerRequests = 4
    private let wakeup: WakeupEvent
    private let mailbox: Mailbox
    private var cancellations: [UInt64: CancellationFlag] = [:]
    private let stopRequested = Atomic<Bool>(false)
    /// Why the loop stopped on its own (the transport was lost), or nil: `serve` then exits 1.
    public private(set) var transportFailure: String?
    private let powerCycleRequested = Atomic<Bool>(false)
    /// `--trace FILE`: every report in and out, secrets blanked (TraceRecord, TraceRecorder).
    /// Used only from the poll loop.
    private let traceFile: TraceFile?
    private var traceRecorder = TraceRecorder()
    /// Warnings a client can cause at will (bad packets, refused connections), bounded.
    private var droppedPacketWarnings = WarningThrottle()
    private var refusedConnectionWarnings = WarningThrottle()
    /// CLOCK_MONOTONIC nanoseconds (the unit of the state machine's deadlines); tests give a
    /// clock of their own and drive the loop a turn at a time (`turn(ready:)`).
    private let clock: @Sendable () -> UInt64

    public init(transport: ReportTransport, handler: RequestHandler, logger: Logger,
                hidConfiguration: CTAPHIDConfiguration? = nil, trace: TraceFile? = nil,
                clock: @escaping @Sendable () -> UInt64 = { MonotonicClock.nanoseconds() }) throws(TransportError) {
        self.clock = clock
        self.transport = transport
        self.handler = handler
        self.logger = logger
        self.traceFile = trace
        var configuration = hidConfiguration ?? CTAPHIDConfiguration()
        if hidConfiguration == nil {
            // Random first channel ID, so channels of successive runs do not collide in clients' caches.
            configuration.channelIDSeed = UInt32.random(in: 1...0x7FFF_FFFF)
        }
        self.stateMachine = CTAPHIDStateMachine(configuration: configuration)
        do {
            self.wakeup = try WakeupEvent()
        } catch {
            throw TransportError(error, call: "eventfd")
        }
        self.mailbox = Mailbox(wakeup: wakeup)
    }

    /// Ask the loop to stop (thread-safe; async-signal-safe apart from the eventfd write).
    public func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        wakeup.signal()
    }

    /// The key's power cycle (SIGHUP): volatile authenticator state is dropped and the reset
    /// window reopens; the store is untouched. It runs after any request in flight.
    public func requestPowerCycle() {
        powerCycleRequested.store(true, ordering: .releasing)
        wakeup.signal()
    }

    /// Serve until `requestStop()`. Returns after the transport is shut down.
    public func run() {
        defer {
            for flag in cancellations.values { flag.cancel() }
            transport.shutdown()
            // Let a request still on the worker finish before the caller closes the store.
            worker.sync {}
            if let traceFile {
                traceFile.write(traceRecorder.finish())
                flushTrace()
                traceFile.close()
            }
        }
        var pollSet = PollSet()
        while !stopRequested.load(ordering: .acquiring) {
            let ready: [Int32]
            do {
                ready = try pollSet.wait(for: transport.pollDescriptors, and: wakeup.descriptor,
                                         timeoutMilliseconds: pollTimeoutMilliseconds)
            } catch {
                logger.error("poll failed: \(error); stopping")
                return
            }
            turn(ready: ready)
        }
    }

    /// How long the loop may sleep: until the state machine's or the transport's next deadline,
    /// at most a second.
    var pollTimeoutMilliseconds: Int32 {
        let now = clock()
        var timeout: Int32 = 1_000
        func until(_ deadline: UInt64?) {
            guard let deadline else { return }
            let remaining = deadline > now ? (deadline - now) / 1_000_000 : 0
            timeout = min(timeout, Int32(min(1_000, remaining + 1)))
        }
        until(stateMachine.nextDeadline())
        until(transport.pendingSendDeadline)
        return timeout
    }

    /// The wake-up descriptor the worker signals (tests wait on it between turns).
    var wakeupDescriptor: Int32 { wakeup.descriptor }

    /// One turn of the loop after poll: the ready descriptors' events, a power cycle asked for,
    /// the worker's completions, the timers and paced sends. Everything the key does between two
    /// polls, with no I/O of its own but the transport's (sans-IO tests drive it directly).
    func turn(ready: [Int32]) {
        for fd in ready {
            if fd == wakeup.descriptor {
                wakeup.drain()
                continue
            }
            for event in transport.readEvents(from: fd) {
                handle(event)
            }
        }
        if powerCycleRequested.exchange(false, ordering: .acquiringAndReleasing) {
            powerCycle()
        }
        drainCompletions()
        perform(stateMachine.tick(now: clock()))
        transport.sendPending(nowNanoseconds: clock())
        flushTrace()
    }

    private func handle(_ event: TransportEvent) {
        switch event {
        case let .report(report, connection):
            traceReport(report, .toKey, connection)
            perform(stateMachine.receive(report: report, from: connection, now: clock()))
        case let .connectionOpened(connection):
            logger.debug("client connected (#\(connection))")
        case let .connectionClosed(connection):
            logger.debug("client disconnected (#\(connection))")
            if let traceFile { traceFile.write(traceRecorder.connectionClosed(connection, time: Self.traceTime())) }
            perform(stateMachine.connectionClosed(connection))
        case let .droppedPacket(size, connection):
            if let line = droppedPacketWarnings.line("dropped a \(size)-byte packet from client #\(connection): reports are exactly 64 bytes",
                                                     now: clock()) {
                logger.warning(line)
            }
            if let traceFile { traceFile.write(traceRecorder.droppedPacket(size: size, connection: connection, time: Self.traceTime())) }
        case let .connectionRefused(reason):
            if let line = refusedConnectionWarnings.line("refused a client: \(reason)", now: clock()) {
                logger.warning(line)
            }
        case .deviceStarted:
            logger.debug("uhid device started")
        case .deviceStopped:
            logger.debug("uhid device stopped")
        case let .transportRestored(reason):
            logger.warning(reason)
        case let .transportLost(reason):
            logger.error("\(reason); stopping")
            transportFailure = reason
            stopRequested.store(true, ordering: .releasing)
        }
    }

    private func perform(_ actions: [CTAPHIDAction]) {
        // Consecutive reports to one connection (a reply's fragments) go to the transport as one
        // batch: one sendmmsg(2) on the socket instead of one send(2) per report.
        guard !actions.isEmpty else { return }
        var batch: [[UInt8]] = []
        var batchConnection: TransportConnection?
        func flush() {
            if let batchConnection, !batch.isEmpty { transport.send(reports: batch, to: batchConnection) }
            batch.removeAll(keepingCapacity: true)
            batchConnection = nil
        }
        defer { flush() }
        for action in actions {
            if case let .send(report, connection) = action {
                traceReport(report, .fromKey, connection)
                if batchConnection != connection { flush() }
                batchConnection = connection
                if batch.capacity == 0 { batch.reserveCapacity(actions.count) }   // one allocation per reply
                batch.append(report)
                continue
            }
            flush()
            switch action {
            case .send:
                break   // handled above
            case let .dispatch(request):
                dispatch(request)
            case let .cancelRequest(transactionID):
                logger.debug("request \(transactionID) cancelled")
                cancellations[transactionID]?.cancel()
            case .wink:
                logger.info("wink")
            }
        }
    }

    private func dispatch(_ request: CTAPHIDRequest) {
        if traceFile != nil {
            traceRecorder.dispatched(hidCommand: request.command, payload: request.payload, channel: request.channel,
                                     connection: request.connection)
        }
        let id = request.transactionID
        let handler = self.handler
        let logger = self.logger
        // A makeCredential that makes an RSA key (up to a second) goes to the worker all the same,
        // and so does every request while the worker holds one (a client that resynced its
        // channel mid-request sends the next at once): the handler runs on one thread at a time.
        if handler.neverWaitsForUser, cancellations.isEmpty,
           !handler.mayRunLong(command: request.command, payload: request.payload) {
            // Nothing in this request can wait for a person (auto/deny presence), so the loop runs
            // it itself: no hand-off to the worker and back, which costs two thread wake-ups —
            // more than the request on a VM (latchkey-bench, "socket" section). The only wait
            // left is SQLite's for a concurrent CLI write: as long as that write (milliseconds for
            // the CLI's edits; busy_timeout caps it at 5 s), during which the loop sends no
            // KEEPALIVE and answers no other channel. CANCEL cannot arrive mid-request.
            let context = RequestContext(channel: request.channel)
            let response = Self.run(request, on: handler, context: context, logger: logger)
            perform(stateMachine.complete(transactionID: id, response: response, now: clock()))
            return
        }
        // Requests on the worker (running or waiting) each hold an entry in `cancellations`. A
        // client that resyncs its channel (INIT) while its request still runs frees the channel,
        // and the state machine then dispatches its next request though the worker is still
        // busy: without a bound, a client could queue requests (and their memory) without end.
        // Past the bound the request is answered at once, busy (CTAP1_ERR_CHANNEL_BUSY as the
        // CTAP2 status; U2F: conditions not satisfied, which U2F clients retry).
        guard cancellations.count < Self.maximumWorkerRequests else {
            let busy: [UInt8] = request.command == CTAPHIDCommand.cbor.rawValue
                ? [CTAP2StatusCode.channelBusy.rawValue] : [0x69, 0x85]
            logger.debug("worker busy with \(cancellations.count) requests: answered busy (channel \(String(format: "%08x", request.channel)))")
            perform(stateMachine.complete(transactionID: id, response: busy, now: clock()))
            return
        }
        let flag = CancellationFlag()
        cancellations[id] = flag
        let mailbox = self.mailbox
        let context = RequestContext(channel: request.channel, cancellation: flag) { status in
            let mapped: KeepaliveStatus = status == .userPresenceNeeded ? .userPresenceNeeded : .processing
            mailbox.post(.status(transactionID: id, status: mapped))
        }
        worker.async {
            mailbox.post(.response(transactionID: id, bytes: Self.run(request, on: handler, context: context, logger: logger)))
        }
    }

    /// One CBOR or MSG request through the handler, logged at debug level with its time.
    private static func run(_ request: CTAPHIDRequest, on handler: RequestHandler, context: RequestContext,
                            logger: Logger) -> [UInt8] {
        let started = MonotonicClock.nanoseconds()
        let response = handler.handle(command: request.command, payload: request.payload, context: context)
        if logger.level >= .debug {
            let micros = (MonotonicClock.nanoseconds() - started) / 1_000
            logger.debug("\(describe(request: request, response: response)) (\(micros) µs, channel \(String(format: "%08x", request.channel)))")
        }
        return response
    }

    /// "authenticatorGetAssertion → CTAP2_OK" / "U2F ins 0x02 → SW 9000", for the debug log.
    private static func describe(request: CTAPHIDRequest, response: [UInt8]) -> String {
        if request.command == CTAPHIDCommand.cbor.rawValue {
            let command = request.payload.first.flatMap(CTAPCommand.init(rawValue:))?.name
                ?? String(format: "command 0x%02x", request.payload.first ?? 0)
            let status = response.first.flatMap(CTAP2StatusCode.init(rawValue:))?.specName
                ?? String(format: "0x%02x", response.first ?? 0)
            return "\(command) → \(status)"
        }
        let ins = request.payload.count > 1 ? String(format: "0x%02x", request.payload[1]) : "?"
        let word = response.suffix(2).map { String(format: "%02x", $0) }.joined()
        return "U2F ins \(ins) → SW \(word)"
    }

    private func drainCompletions() {
        for completion in mailbox.take() {
            switch completion {
            case let .response(id, bytes):
                cancellations[id] = nil
                perform(stateMachine.complete(transactionID: id, response: bytes, now: clock()))
            case let .status(id, status):
                perform(stateMachine.updateKeepalive(transactionID: id, status: status, now: clock()))
            }
        }
    }

    private func traceReport(_ report: [UInt8], _ direction: TraceRecord.Direction, _ connection: ConnectionID) {
        guard let traceFile, traceFile.failure == nil else { return }
        traceFile.write(traceRecorder.record(report: report, direction: direction, connection: connection,
                                             time: Self.traceTime()))
    }

    private func flushTrace() {
        guard let traceFile, traceFile.failure == nil else { return }
        if let failure = traceFile.flush() { logger.error(failure.description) }
    }

    /// Trace timestamps: CLOCK_MONOTONIC in microseconds.
    static func traceTime() -> UInt64 { MonotonicClock.nanoseconds() / 1_000 }

    private func powerCycle() {
        logger.info("power cycle: volatile state dropped, reset window reopened")
        let handler = self.handler
        // The handler is used from one thread at a time: the loop's when it runs requests itself
        // (it never waits for the user) and the worker holds none, otherwise the worker's, after
        // any request in flight.
        if handler.neverWaitsForUser, cancellations.isEmpty {
            handler.powerCycle()
        } else {
            worker.async { handler.powerCycle() }
        }
    }
}
