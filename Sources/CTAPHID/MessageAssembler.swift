/// Reassembles one channel's message from CTAPHID packets (CTAP 2.1 §11.2.4).
///
/// The device-side state machine keeps one per in-progress message; client
/// tools (e.g. `probe`) feed it the device's response reports. It knows
/// nothing about time: message timeouts are the owner's business.
///
/// KEEPALIVE packets: by default a KEEPALIVE (0x3B) is an ordinary one-packet
/// message and comes back as `.complete(command: 0x3B, payload: [status])`;
/// with `skipKeepalives: true` it is `.ignored` instead, so a client can loop
/// until the real response. An ERROR response comes back as
/// `.complete(command: 0x3F, payload: [code])`.
public struct MessageAssembler: Sendable {
    public enum Result: Sendable, Equatable {
        /// A whole message; `command` is without the 0x80 bit.
        case complete(command: UInt8, payload: [UInt8])
        /// The packet was accepted; more continuation packets are expected.
        case needMore
        /// The message in progress (if any) was dropped. `.invalidSequence`: a
        /// continuation out of order, or an initialization packet interrupting a
        /// message; `.invalidLength`: a declared length above 7609.
        case error(CTAPHIDError)
        /// The packet does not concern this assembler: another channel, a
        /// continuation with no message in progress, a skipped KEEPALIVE, or a
        /// report that is not 64 bytes. State is unchanged.
        case ignored
    }

    private struct Partial: Sendable {
        var channel: UInt32
        var command: UInt8
        var length: Int
        var payload: [UInt8]
        var nextSequence: UInt8
    }

    /// When set, packets on other channels are `.ignored`. When nil, a
    /// continuation only counts for the channel whose message is in progress,
    /// but an initialization packet on any channel interrupts that message.
    public let channel: UInt32?
    public let skipsKeepalives: Bool
    private var partial: Partial?

    public init(channel: UInt32? = nil, skipKeepalives: Bool = false) {
        self.channel = channel
        self.skipsKeepalives = skipKeepalives
    }

    /// Whether a multi-packet message is partly received.
    public var isAssembling: Bool { partial != nil }

    /// Drops the message in progress, if any.
    public mutating func reset() {
        partial = nil
    }

    /// Parses and feeds a raw report; a report that is not 64 bytes is `.ignored`.
    public mutating func feed(report: [UInt8]) -> Result {
        guard let header = CTAPHIDReportHeader(report: report) else { return .ignored }
        return feed(header, data: report[header.dataStart...])
    }

    public mutating func feed(_ packet: CTAPHIDPacket) -> Result {
        switch packet {
        case let .initialization(_, _, _, data), let .continuation(_, _, data):
            return feed(CTAPHIDReportHeader(packet), data: data[...])
        }
    }

    /// One packet, its header parsed and its data bytes a slice of the report (no copy of them
    /// but into the message).
    mutating func feed(_ header: CTAPHIDReportHeader, data: ArraySlice<UInt8>) -> Result {
        if let channel, header.channel != channel { return .ignored }
        if header.isInitialization {
            let command = header.commandOrSequence
            let declaredLength = header.declaredLength
            if skipsKeepalives && command == CTAPHIDCommand.keepalive.rawValue { return .ignored }
            // §11.2.5.4: a new initialization packet while a message is in progress aborts it with ERR_INVALID_SEQ.
            if partial != nil {
                partial = nil
                return .error(.invalidSequence)
            }
            // §11.2.4: at most 57 + 128 * 59 = 7609 bytes fit one message.
            guard declaredLength <= CTAPHIDPacket.maxMessageLength else { return .error(.invalidLength) }
            if declaredLength <= data.count {
                return .complete(command: command, payload: Array(data.prefix(declaredLength)))
            }
            var payload: [UInt8] = []
            payload.reserveCapacity(declaredLength)
            payload.append(contentsOf: data)
            partial = Partial(channel: header.channel, command: command, length: declaredLength,
                              payload: payload, nextSequence: 0)
            return .needMore
        }
        // §11.2.5.4: a continuation packet with no message in progress is ignored.
        guard var current = partial, current.channel == header.channel else { return .ignored }
        partial = nil  // keeps `current.payload` uniquely referenced while appending
        // §11.2.5.4: continuation packets carry sequence numbers 0, 1, 2, ... in order; otherwise ERR_INVALID_SEQ.
        guard header.commandOrSequence == current.nextSequence else { return .error(.invalidSequence) }
        let take = min(current.length - current.payload.count, data.count)
        current.payload.append(contentsOf: data.prefix(take))
        if current.payload.count == current.length {
            return .complete(command: current.command, payload: current.payload)
        }
        current.nextSequence += 1
        partial = current
        return .needMore
    }
}
