import Authenticator
import CTAP
import CTAPHID
import Glibc
import KeyService
import LinuxHID
import Synchronization
import SystemIO

/// A rig key's request handler with its injected faults (`RigFaults`): the first fault that
/// matches a request is used up by it. An answer replaces the request; a delay holds it
/// (KEEPALIVE PROCESSING goes on, CANCEL ends the wait), as a slow key would; a dropped,
/// truncated or flooded response is run as usual and then armed on `FaultyTransport`, which
/// does that to the response's reports.
final class FaultInjectingHandler: RequestHandlerWrapper {
    let inner: RequestHandler
    let faults: RigFaults
    let transport: FaultyTransport
    let logger: Logger

    init(_ inner: RequestHandler, faults: RigFaults, transport: FaultyTransport, logger: Logger) {
        self.inner = inner
        self.faults = faults
        self.transport = transport
        self.logger = logger
    }

    /// A fault may delay any request, so a rig key's requests always run on the worker (its
    /// presence may also wait for the rig's answer: `RigPresence`).
    var neverWaitsForUser: Bool { false }

    func handle(command: UInt8, payload: [UInt8], context: RequestContext) -> [UInt8] {
        let fault = faults.take(command: command, request: payload)
        switch fault {
        case let .answer(bytes)?:
            logger.debug("fault injected: answered \(bytes.map { String(format: "%02x", $0) }.joined()) without running the request")
            return bytes
        case let .delay(milliseconds)?:
            let until = MonotonicClock.milliseconds() + milliseconds
            while !context.cancellation.isCancelled, MonotonicClock.milliseconds() < until { usleep(5_000) }
            if context.cancellation.isCancelled {
                return command == CTAPHIDCommand.cbor.rawValue ? [CTAP2StatusCode.keepaliveCancel.rawValue] : [0x69, 0x85]
            }
        case let fault?:   // drop, truncate, flood: what happens to the response's reports
            transport.arm(fault, channel: context.channel)
        case nil:
            break
        }
        return inner.handle(command: command, payload: payload, context: context)
    }
}

/// The rig's transport around a key's real one (uhid or socket): a response armed with a fault
/// (`arm`) loses its reports (drop), all but its first (truncate), or follows a burst of
/// KEEPALIVEs (flood), paced as a USB key sends — a few reports per millisecond — so the flood
/// reaches a client that reads rather than overflowing a socket buffer at once. Everything
/// else passes through unchanged. Used from the key's loop, but for `arm` (the worker).
final class FaultyTransport: ReportTransport, @unchecked Sendable {
    static let floodReportsPerTick = 16

    private let inner: ReportTransport
    /// Faults waiting for their response's first report, by channel (a channel belongs to one
    /// connection). Set from the worker, taken on the loop.
    private let armed = Mutex<[UInt32: KeyFault]>([:])
    /// A response being cut: its channel and how many of its continuation packets are still to
    /// be swallowed. Loop only.
    private var cutting: [UInt32: Int] = [:]
    /// Reports held back behind a flood, per connection, in order. Loop only.
    private var held: [(connection: TransportConnection, report: [UInt8])] = []

    init(_ inner: ReportTransport) {
        self.inner = inner
    }

    func arm(_ fault: KeyFault, channel: UInt32) {
        armed.withLock { $0[channel] = fault }
    }

    var pollDescriptors: [Int32] { inner.pollDescriptors }

    func readEvents(from fd: Int32) -> [TransportEvent] {
        let events = inner.readEvents(from: fd)
        for case let .connectionClosed(connection) in events {
            held.removeAll { $0.connection == connection }
        }
        return events
    }

    func send(_ report: [UInt8], to connection: TransportConnection) {
        send(reports: [report], to: connection)
    }

    func send(reports: [[UInt8]], to connection: TransportConnection) {
        var passed: [[UInt8]] = []
        for report in reports {
            for shaped in shape(report, to: connection) {
                if held.contains(where: { $0.connection == connection }) {
                    held.append((connection, shaped))
                } else {
                    passed.append(shaped)
                }
            }
        }
        if !passed.isEmpty { inner.send(reports: passed, to: connection) }
    }

    /// What becomes of one outgoing report: itself, nothing, or (a flood's first) a burst of
    /// KEEPALIVEs to hold back and then itself.
    private func shape(_ report: [UInt8], to connection: TransportConnection) -> [[UInt8]] {
        guard report.count >= 7 else { return [report] }
        let channel = UInt32(report[0]) << 24 | UInt32(report[1]) << 16 | UInt32(report[2]) << 8 | UInt32(report[3])
        let isInitialization = report[4] & 0x80 != 0
        if !isInitialization {
            guard let remaining = cutting[channel] else { return [report] }
            cutting[channel] = remaining > 1 ? remaining - 1 : nil
            return []
        }
        // KEEPALIVEs the key sends while the request runs are not the response.
        guard report[4] != CTAPHIDCommand.keepalive.rawValue,
              let fault = armed.withLock({ $0.removeValue(forKey: channel) }) else { return [report] }
        let length = Int(report[5]) << 8 | Int(report[6])
        let continuations = length > 57 ? (length - 57 + 58) / 59 : 0
        switch fault {
        case .drop:
            if continuations > 0 { cutting[channel] = continuations }
            return []
        case .truncate:
            if continuations > 0 { cutting[channel] = continuations }
            return [report]
        case let .keepaliveFlood(count):
            let keepalive = MessageFragmenter.reports(channel: channel, command: CTAPHIDCommand.keepalive.rawValue,
                                                      payload: [KeepaliveStatus.processing.rawValue])[0]
            held.append(contentsOf: Array(repeating: (connection, keepalive), count: count))
            return [report]
        case .answer, .delay:
            return [report]
        }
    }

    var pendingSendDeadline: UInt64? {
        held.isEmpty ? inner.pendingSendDeadline : MonotonicClock.nanoseconds() + 1_000_000
    }

    /// The next few held reports of each connection; then whatever the real transport paced.
    func sendPending(nowNanoseconds: UInt64) {
        if !held.isEmpty {
            var sent: [TransportConnection: Int] = [:]
            var keep: [(connection: TransportConnection, report: [UInt8])] = []
            var batches: [(TransportConnection, [[UInt8]])] = []
            for item in held {
                let count = sent[item.connection, default: 0]
                if count < Self.floodReportsPerTick {
                    sent[item.connection] = count + 1
                    if let last = batches.indices.last, batches[last].0 == item.connection {
                        batches[last].1.append(item.report)
                    } else {
                        batches.append((item.connection, [item.report]))
                    }
                } else {
                    keep.append(item)
                }
            }
            held = keep
            for (connection, reports) in batches { inner.send(reports: reports, to: connection) }
        }
        inner.sendPending(nowNanoseconds: nowNanoseconds)
    }

    func shutdown() { inner.shutdown() }
}
