import CTAPHID
import LinuxHID

/// A native CTAPHID client over the socket transport, so the benchmark measures the key and not
/// a Python client: INIT once, then whole messages out and in, KEEPALIVEs skipped.
final class BenchClient {
    enum Failure: Error { case timeout, hid(UInt8), protocolError(String), transport(TransportError) }

    let socket: SocketClient
    private(set) var channel: UInt32 = 0xFFFF_FFFF

    init(path: String) throws {
        socket = try SocketClient(path: path)
        let nonce: [UInt8] = (0..<8).map { _ in UInt8.random(in: 0...255) }
        let reply = try transact(command: CTAPHIDCommand.initialize.rawValue, payload: nonce)
        guard reply.count >= 17, Array(reply[0..<8]) == nonce else { throw Failure.protocolError("bad INIT reply") }
        channel = UInt32(reply[8]) << 24 | UInt32(reply[9]) << 16 | UInt32(reply[10]) << 8 | UInt32(reply[11])
    }

    /// One transaction: the request's reports out, the reply reassembled. CTAPHID ERROR → `.hid`.
    func transact(command: UInt8, payload: [UInt8], timeoutMilliseconds: Int32 = 10_000) throws -> [UInt8] {
        do { try socket.send(reports: MessageFragmenter.reports(channel: channel, command: command, payload: payload)) }
        catch { throw Failure.transport(error) }
        var assembler = MessageAssembler(channel: channel, skipKeepalives: true)
        while true {
            let packet: [UInt8]?
            do { packet = try socket.receive(timeoutMilliseconds: timeoutMilliseconds) } catch { throw Failure.transport(error) }
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

    func close() { socket.close() }
}
