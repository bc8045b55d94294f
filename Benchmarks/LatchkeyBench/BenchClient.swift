import CTAPHID
import LinuxHID

/// A native CTAPHID client over any client link — a key's socket or a hidraw node — so the
/// benchmark measures the key and not a Python client: INIT once, then whole messages out and
/// in, KEEPALIVEs skipped.
final class BenchClient {
    enum Failure: Error { case timeout, hid(UInt8), protocolError(String), transport(TransportError) }

    let link: ClientReportTransport
    private(set) var channel: UInt32 = 0xFFFF_FFFF

    init(link: ClientReportTransport) throws {
        self.link = link
        let nonce: [UInt8] = (0..<8).map { _ in UInt8.random(in: 0...255) }
        let reply = try transact(command: CTAPHIDCommand.initialize.rawValue, payload: nonce)
        guard reply.count >= 17, Array(reply[0..<8]) == nonce else { throw Failure.protocolError("bad INIT reply") }
        channel = UInt32(reply[8]) << 24 | UInt32(reply[9]) << 16 | UInt32(reply[10]) << 8 | UInt32(reply[11])
    }

    convenience init(path: String) throws {
        try self.init(link: try SocketClient(path: path))
    }

    /// A link named the way `latchkey probe` names one: `socket:PATH` or a hidraw node.
    static func open(_ target: String) throws -> BenchClient {
        if target.hasPrefix("socket:") { return try BenchClient(path: String(target.dropFirst(7))) }
        return try BenchClient(link: try HIDRawDevice.open(path: target))
    }

    /// One transaction: the request's reports out, the reply reassembled. CTAPHID ERROR → `.hid`.
    func transact(command: UInt8, payload: [UInt8], timeoutMilliseconds: Int32 = 10_000) throws -> [UInt8] {
        let reports = MessageFragmenter.reports(channel: channel, command: command, payload: payload)
        do {
            if let socket = link as? SocketClient {
                try socket.send(reports: reports)   // one sendmmsg, as a C client would batch
            } else {
                for report in reports { try link.sendReport(report) }
            }
        } catch { throw Failure.transport(error) }
        var assembler = MessageAssembler(channel: channel, skipKeepalives: true)
        while true {
            let packet: [UInt8]?
            do { packet = try link.receiveReport(timeoutMilliseconds: timeoutMilliseconds) } catch { throw Failure.transport(error) }
            guard let packet else { throw Failure.timeout }
            switch assembler.feed(report: packet) {
            case let .complete(replyCommand, replyPayload):
                if replyCommand == CTAPHIDCommand.error.rawValue { throw Failure.hid(replyPayload.first ?? 0) }
                guard replyCommand == command else { throw Failure.protocolError("reply command \(replyCommand)") }
                return replyPayload
            case .needMore, .ignored:
                continue
            case let .error(error):
                throw Failure.protocolError("reassembly: \(error)")
            }
        }
    }

    func close() {
        if let socket = link as? SocketClient { socket.close() }
        if let device = link as? HIDRawDevice { device.close() }
    }
}
