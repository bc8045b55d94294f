import CTAPHID

/// The trace of a proxy between clients and a real key (`latchkey proxy`), in the format
/// `latchkey serve --trace` writes, with the same redaction (sans-IO: reports and times in,
/// records out).
///
/// A key that traces itself knows which request it ran on a channel, so it redacts the answer
/// as that command's (`TraceRecorder.dispatched`). A proxy only sees reports — and not all of
/// them: every client of the device can name any channel, a program may talk to the real node
/// directly, and a key may answer CHANNEL_BUSY, abort on INIT or not. So an answer is redacted as
/// a command's only when the proxy is sure which request it answers: exactly one request sent on
/// the channel since its last answer. Otherwise the channel is *in doubt* and its answers are
/// written as answers to an unknown request — blanked whole (TraceRecorder) —:
/// - a second request on a channel that has one outstanding (an INIT included);
/// - any ERROR answer (CHANNEL_BUSY goes to whichever request the key refused; the proxy cannot
///   tell which);
/// - an answer on a channel with nothing outstanding (a request the proxy never saw);
/// - a channel beyond the `maximumChannels` the proxy follows.
/// Doubt ends when a CBOR/MSG/PING/WINK answer arrives and leaves nothing outstanding; the next
/// request is then known again. More is blanked than strictly needed, never less.
public struct ProxyTraceRecorder: Sendable {
    private struct Channel: Sendable {
        var request: MessageAssembler
        var response: MessageAssembler
        /// Requests sent since the channel's last answer.
        var outstanding = 0
        var inDoubt = false
        var isIdle: Bool { outstanding == 0 && !inDoubt && !request.isAssembling && !response.isAssembling }

        init(_ id: UInt32) {
            request = MessageAssembler(channel: id)
            response = MessageAssembler(channel: id)
        }
    }

    private var recorder = TraceRecorder()
    private var channels: [UInt32: Channel] = [:]
    /// Channels followed at once. One beyond it is not followed: its answers are blanked.
    static let maximumChannels = 1024

    public init() {}

    /// A report the client sent to the key.
    public mutating func clientReport(_ report: [UInt8], time: UInt64) -> [TraceRecord] {
        guard let packet = CTAPHIDPacket(report: report) else {
            return recorder.record(report: report, direction: .toKey, connection: 0, time: time)
        }
        let id = packet.channel
        if var channel = follow(id) {
            if case let .complete(command, payload) = channel.request.feed(packet) {
                channel.request = MessageAssembler(channel: id)
                channel.outstanding += 1
                if channel.outstanding > 1 { channel.inDoubt = true }
                if channel.inDoubt {
                    forget(id)
                } else {
                    recorder.dispatched(hidCommand: command, payload: payload, channel: id, connection: 0)
                }
            }
            store(channel, id)
        } else {
            forget(id)
        }
        return recorder.record(report: report, direction: .toKey, connection: 0, time: time)
    }

    /// A report the key sent to the client.
    public mutating func keyReport(_ report: [UInt8], time: UInt64) -> [TraceRecord] {
        guard let packet = CTAPHIDPacket(report: report) else {
            return recorder.record(report: report, direction: .fromKey, connection: 0, time: time)
        }
        let id = packet.channel
        guard var channel = follow(id) else {
            forget(id)
            return recorder.record(report: report, direction: .fromKey, connection: 0, time: time)
        }
        // An answer starting on a channel in doubt, or one with nothing outstanding: before its
        // reports are recorded, the recorder is told it answers nothing it knows.
        if case let .initialization(_, command, _, _) = packet, command != CTAPHIDCommand.keepalive.rawValue,
           channel.inDoubt || channel.outstanding == 0 {
            channel.inDoubt = true
            forget(id)
        }
        let records = recorder.record(report: report, direction: .fromKey, connection: 0, time: time)
        if case let .complete(command, _) = channel.response.feed(packet) {
            channel.response = MessageAssembler(channel: id)
            if command != CTAPHIDCommand.keepalive.rawValue {
                if channel.outstanding == 0 {
                    channel.inDoubt = true
                } else {
                    channel.outstanding -= 1
                }
                if command == CTAPHIDCommand.error.rawValue || command == CTAPHIDCommand.initialize.rawValue {
                    // Which request an ERROR answers is unknown; an INIT answer leaves whatever
                    // the INIT interrupted possibly still running on a key that does not abort.
                    channel.inDoubt = true
                } else if channel.outstanding == 0 {
                    channel.inDoubt = false
                }
            }
        }
        store(channel, id)
        return records
    }

    /// The trace ends: unfinished messages are written withheld.
    public mutating func finish() -> [TraceRecord] { recorder.finish() }

    /// The channel's state, or nil when the table is full and the channel is not in it.
    private func follow(_ id: UInt32) -> Channel? {
        if let channel = channels[id] { return channel }
        return channels.count < Self.maximumChannels ? Channel(id) : nil
    }

    private mutating func store(_ channel: Channel, _ id: UInt32) {
        channels[id] = channel.isIdle ? nil : channel
    }

    /// The recorder no longer knows what the channel's answer answers: it is blanked whole.
    private mutating func forget(_ id: UInt32) {
        recorder.dispatched(hidCommand: CTAPHIDCommand.initialize.rawValue, payload: [], channel: id, connection: 0)
    }
}
