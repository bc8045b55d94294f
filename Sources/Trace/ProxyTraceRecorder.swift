import CTAPHID

/// The trace of a proxy between a client and a real key (`latchkey proxy`), in the format
/// `latchkey serve --trace` writes, with the same redaction (sans-IO: reports and times in,
/// records out).
///
/// A key that traces itself knows which request it ran on a channel, so it redacts the response
/// as that command's (`TraceRecorder.dispatched`). A proxy only sees reports, so it learns the
/// request from the client's side — and must not let a third client decide it: every client of
/// a hidraw node can name any channel, and one that sent getInfo on the channel where a
/// getAssertion is running would otherwise have the getAssertion's answer (hmac-secret output,
/// large-blob key) written out as a getInfo's, unredacted. So the request a channel's response
/// is redacted as is the first one sent while the channel had none outstanding; it stays until
/// the key answers it (a response of the same CTAPHID command, or any ERROR but CHANNEL_BUSY,
/// which the key gives the intruder), or until an INIT on that channel aborts it. Where that is
/// ambiguous, a response is redacted as an earlier request's: more is blanked, never less.
public struct ProxyTraceRecorder: Sendable {
    private var recorder = TraceRecorder()
    private var requests: [UInt32: MessageAssembler] = [:]
    private var responses: [UInt32: MessageAssembler] = [:]
    /// The CTAPHID command of the request outstanding on each channel.
    private var outstanding: [UInt32: UInt8] = [:]
    /// Channels followed at once; beyond it the tables start afresh (outstanding requests are
    /// then redacted as whatever comes next: TraceRecorder's own default is to redact CBOR
    /// responses whose request it does not know as unknown, keeping nothing secret).
    static let maximumChannels = 1024

    public init() {}

    /// A report the client sent to the key.
    public mutating func clientReport(_ report: [UInt8], time: UInt64) -> [TraceRecord] {
        if let packet = CTAPHIDPacket(report: report),
           case let .complete(command, payload) = Self.feed(packet, into: &requests, limit: Self.maximumChannels) {
            let channel = packet.channel
            if command == CTAPHIDCommand.initialize.rawValue {
                // INIT resynchronises the channel: what ran there is abandoned.
                outstanding[channel] = nil
                recorder.dispatched(hidCommand: command, payload: payload, channel: channel, connection: 0)
            } else if outstanding[channel] == nil {
                if outstanding.count >= Self.maximumChannels { outstanding.removeAll() }
                outstanding[channel] = command
                recorder.dispatched(hidCommand: command, payload: payload, channel: channel, connection: 0)
            }
            // Else the key answers CHANNEL_BUSY: the response on this channel is still the first request's.
        }
        return recorder.record(report: report, direction: .toKey, connection: 0, time: time)
    }

    /// A report the key sent to the client.
    public mutating func keyReport(_ report: [UInt8], time: UInt64) -> [TraceRecord] {
        let records = recorder.record(report: report, direction: .fromKey, connection: 0, time: time)
        if let packet = CTAPHIDPacket(report: report),
           case let .complete(command, payload) = Self.feed(packet, into: &responses, limit: Self.maximumChannels) {
            let channel = packet.channel
            let isBusy = command == CTAPHIDCommand.error.rawValue && payload.first == CTAPHIDError.channelBusy.rawValue
            if command != CTAPHIDCommand.keepalive.rawValue, !isBusy,
               command == CTAPHIDCommand.error.rawValue || outstanding[channel] == command {
                outstanding[channel] = nil
            }
        }
        return records
    }

    /// The trace ends: unfinished messages are written withheld.
    public mutating func finish() -> [TraceRecord] { recorder.finish() }

    private static func feed(_ packet: CTAPHIDPacket, into assemblers: inout [UInt32: MessageAssembler],
                             limit: Int) -> MessageAssembler.Result? {
        var assembler = assemblers.removeValue(forKey: packet.channel) ?? MessageAssembler(channel: packet.channel)
        let result = assembler.feed(packet)
        if case .needMore = result {
            if assemblers.count >= limit { assemblers.removeAll() }
            assemblers[packet.channel] = assembler
        }
        return result
    }
}
