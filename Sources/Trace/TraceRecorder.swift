import CTAPHID

/// Turns the key's CTAPHID traffic into trace records with secrets blanked (sans-IO: the
/// caller passes reports and times in and writes the records that come out; see
/// `TraceRecord` for the file format and `TraceRedactor` for what counts as secret).
///
/// Each report is held until the message it belongs to is whole (reassembled per connection,
/// direction and channel with `MessageAssembler`), because a secret field may start in one
/// report and end in a later one. Then the message's reports are written with padding and
/// secret spans zeroed, the first one carrying the list of redactions. Reports of a message
/// that is never completed (interrupted, a client gone, the trace ending) are written with
/// their data zeroed (`withheld`): the recorder cannot tell whether they held a secret.
public struct TraceRecorder: Sendable {
    private struct StreamKey: Hashable, Sendable {
        var connection: Int
        var direction: TraceRecord.Direction
        var channel: UInt32
    }

    private struct ChannelKey: Hashable, Sendable {
        var connection: Int
        var channel: UInt32
    }

    private struct Stream: Sendable {
        var assembler: MessageAssembler
        var pending: [(time: UInt64, report: [UInt8])] = []
    }

    /// Messages in progress. A client may start messages on any number of channel IDs, so
    /// beyond this many the oldest is written out withheld.
    static let maximumOpenMessages = 256
    /// CTAP command bytes of the last CBOR request dispatched per channel (to know what a
    /// response is).
    static let maximumRememberedChannels = 1024

    private var streams: [StreamKey: Stream] = [:]
    private var requestCommands: [ChannelKey: UInt8] = [:]

    public init() {}

    /// A report received (`.toKey`) or sent (`.fromKey`) at `time` (µs, monotonic).
    public mutating func record(report: [UInt8], direction: TraceRecord.Direction, connection: Int,
                                time: UInt64) -> [TraceRecord] {
        guard let packet = CTAPHIDPacket(report: report) else {
            return [TraceRecord(time: time, direction: direction, connection: connection,
                                note: "a \(report.count)-byte report (not 64 bytes), not recorded")]
        }
        let key = StreamKey(connection: connection, direction: direction, channel: packet.channel)
        var stream = streams.removeValue(forKey: key) ?? Stream(assembler: MessageAssembler(channel: packet.channel))
        var records: [TraceRecord] = []
        switch stream.assembler.feed(packet) {
        case let .complete(command, payload):
            stream.pending.append((time, report))
            records += completed(stream.pending, key: key, command: command, payload: payload)
        case .needMore:
            stream.pending.append((time, report))
            streams[key] = stream
            if streams.count > Self.maximumOpenMessages { records += evictOldest() }
        case .error:
            if case .initialization = packet, !stream.pending.isEmpty {
                // §11.2.5.4: an initialization packet interrupted the message in progress. That
                // message is withheld; the new packet starts afresh.
                records += withheld(stream.pending, key: key, reason: "interrupted message")
                return records + record(report: report, direction: direction, connection: connection, time: time)
            }
            // A continuation out of sequence, or a declared length above 7609: nothing whole to show.
            records += withheld(stream.pending + [(time, report)], key: key, reason: "invalid message")
        case .ignored:
            // A continuation with no message in progress: nobody knows what it belonged to.
            records += withheld([(time, report)], key: key, reason: "continuation without a message")
        }
        return records
    }

    /// The key dispatched a request on `channel` (the CTAPHID state machine accepted it and
    /// the authenticator runs it): the response on that channel is redacted as `command`'s
    /// (CBOR: the CTAP command byte, `payload.first`). Call it before the response's reports are
    /// recorded. Only a dispatched request counts: one answered CHANNEL_BUSY never ran, so a
    /// third party naming a busy channel (on uhid every client shares the device) cannot make a
    /// getAssertion's answer look like getInfo's and have its secrets written out.
    public mutating func dispatched(hidCommand: UInt8, payload: [UInt8], channel: UInt32, connection: Int) {
        let key = ChannelKey(connection: connection, channel: channel)
        guard hidCommand == CTAPHIDCommand.cbor.rawValue, let command = payload.first else {
            requestCommands[key] = nil
            return
        }
        if requestCommands.count >= Self.maximumRememberedChannels, requestCommands[key] == nil {
            requestCommands.removeAll()
        }
        requestCommands[key] = command
    }

    /// A packet of the wrong size that the transport dropped (its bytes are not available).
    public func droppedPacket(size: Int, connection: Int, time: UInt64) -> [TraceRecord] {
        [TraceRecord(time: time, direction: .toKey, connection: connection, note: "dropped a \(size)-byte packet")]
    }

    /// The connection is gone: its unfinished messages are written withheld.
    public mutating func connectionClosed(_ connection: Int, time: UInt64) -> [TraceRecord] {
        var records: [TraceRecord] = []
        for key in streams.keys.filter({ $0.connection == connection }).sorted(by: Self.keyOrder) {
            if let stream = streams.removeValue(forKey: key) {
                records += withheld(stream.pending, key: key, reason: "connection closed mid-message")
            }
        }
        requestCommands = requestCommands.filter { $0.key.connection != connection }
        records.append(TraceRecord(time: time, direction: .toKey, connection: connection, note: "connection closed"))
        return records
    }

    /// The trace ends: every unfinished message is written withheld.
    public mutating func finish() -> [TraceRecord] {
        var records: [TraceRecord] = []
        for key in streams.keys.sorted(by: Self.keyOrder) {
            if let stream = streams.removeValue(forKey: key) {
                records += withheld(stream.pending, key: key, reason: "unfinished when the trace ended")
            }
        }
        return records.sorted { $0.time < $1.time }
    }

    // MARK: -

    private mutating func completed(_ reports: [(time: UInt64, report: [UInt8])], key: StreamKey,
                                    command: UInt8, payload: [UInt8]) -> [TraceRecord] {
        let channel = ChannelKey(connection: key.connection, channel: key.channel)
        let redactions: [TraceRedaction]
        switch key.direction {
        case .toKey:
            // What a response is comes from `dispatched`, never from a request seen here.
            redactions = TraceRedactor.requestRedactions(hidCommand: command, payload: payload)
        case .fromKey:
            redactions = TraceRedactor.responseRedactions(hidCommand: command, payload: payload,
                                                          requestCommand: requestCommands[channel])
        }
        var blanked = payload
        for redaction in redactions {
            for index in redaction.range where index < blanked.count { blanked[index] = 0 }
        }
        // Rebuild the reports from the blanked payload: same headers, zero padding.
        var records: [TraceRecord] = []
        var offset = 0
        for (index, entry) in reports.enumerated() {
            let packet: CTAPHIDPacket
            if index == 0 {
                let take = min(CTAPHIDPacket.initializationDataSize, blanked.count)
                packet = .initialization(channel: key.channel, command: command, declaredLength: blanked.count,
                                         data: Array(blanked[0..<take]))
                offset = take
            } else {
                let take = min(CTAPHIDPacket.continuationDataSize, blanked.count - offset)
                packet = .continuation(channel: key.channel, sequence: UInt8(index - 1),
                                       data: Array(blanked[offset..<(offset + take)]))
                offset += take
            }
            records.append(TraceRecord(time: entry.time, direction: key.direction, connection: key.connection,
                                       report: packet.report,
                                       redactions: index == 0 && !redactions.isEmpty ? redactions : nil))
        }
        return records
    }

    private func withheld(_ reports: [(time: UInt64, report: [UInt8])], key: StreamKey, reason: String) -> [TraceRecord] {
        reports.map { entry in
            var report = entry.report
            // Keep the CTAPHID header: CID + CMD + BCNT (initialization) or CID + SEQ (continuation).
            let headerSize = report[4] & 0x80 != 0 ? 7 : 5
            for index in headerSize..<report.count { report[index] = 0 }
            return TraceRecord(time: entry.time, direction: key.direction, connection: key.connection,
                               report: report, withheld: reason)
        }
    }

    private mutating func evictOldest() -> [TraceRecord] {
        guard let oldest = streams.min(by: { ($0.value.pending.first?.time ?? 0) < ($1.value.pending.first?.time ?? 0) }),
              let stream = streams.removeValue(forKey: oldest.key) else { return [] }
        return withheld(stream.pending, key: oldest.key, reason: "too many unfinished messages")
    }

    private static func keyOrder(_ a: StreamKey, _ b: StreamKey) -> Bool {
        (a.connection, a.direction == .toKey ? 0 : 1, a.channel) < (b.connection, b.direction == .toKey ? 0 : 1, b.channel)
    }
}
