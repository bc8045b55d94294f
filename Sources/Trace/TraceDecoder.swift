import CBOR
import CTAP
import CTAPHID
import Foundation

/// Decodes a trace (`TraceFile.Contents`) into `TraceEvent`s: reports reassembled into
/// messages per connection, direction and channel; CTAPHID, CTAP2 and U2F names; CBOR in
/// diagnostic notation with redacted fields shown as `<redacted N bytes>`; runs of identical
/// KEEPALIVEs collapsed; the time each response took.
public enum TraceDecoder {
    /// Byte strings longer than this are shortened in text output unless `fullByteStrings`.
    static let shortByteStringLimit = 48

    public static func decode(_ contents: TraceFile.Contents, fullByteStrings: Bool = false) -> [TraceEvent] {
        var state = State(fullByteStrings: fullByteStrings)
        // Records are written when their message is whole, not always in time order (TraceRecord).
        let records = contents.records.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }
        state.origin = min(contents.header.time, records.first?.element.time ?? contents.header.time)
        for (_, record) in records { state.feed(record) }
        // Events are made when a message is whole; show them in the order they began.
        return state.events.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
    }

    // MARK: Text output

    /// The readable form: one line per event, CBOR and authenticator data indented below.
    public static func text(_ events: [TraceEvent], header: TraceHeader, truncatedLines: Int = 0) -> String {
        var lines: [String] = []
        var title = "latchkey trace (format version \(header.version)), started \(header.started)"
        if let key = header.key { title += ", key '\(key)'" }
        if let transport = header.transport { title += " on \(transport)" }
        lines.append(title)
        lines.append("time (s)    conn  dir channel   message")
        for event in events {
            let time = String(format: "%10.6f", Double(event.time) / 1_000_000)
            let arrow = event.direction == .toKey ? "→" : "←"
            let channel = event.channel.map(TraceEvent.channelText) ?? "        "
            var line = "\(time)  #\(event.connection)".padding(toLength: 16, withPad: " ", startingAt: 0)
                + "\(arrow)  \(channel)  "
            switch event.kind {
            case .message:
                line += "\(event.hidCommand ?? "?") \(event.summary)"
                if let length = event.length {
                    line += ", \(length) byte\(length == 1 ? "" : "s")"
                    if let reports = event.reports, reports > 1 { line += " in \(reports) reports" }
                }
            case .keepalive, .withheld, .note:
                line += event.summary
            }
            if let latency = event.latencyMilliseconds { line += String(format: "   [%.1f ms]", latency) }
            lines.append(line)
            let indent = String(repeating: " ", count: 34)
            if let cbor = event.cbor { lines.append(indent + cbor) }
            if let authData = event.authData { lines.append(indent + "authData: " + authData) }
            if let redactions = event.redactions {
                lines.append(indent + "redacted: " + redactions.map { "\($0.field) (\($0.length) bytes)" }.joined(separator: ", "))
            }
        }
        if truncatedLines > 0 { lines.append("(the last line of the trace was cut short and is skipped)") }
        let messages = events.filter { $0.kind == .message }.count
        lines.append("\(messages) message\(messages == 1 ? "" : "s")")
        return lines.joined(separator: "\n")
    }

    /// JSON Lines: one `TraceEvent` object per line.
    public static func jsonLines(_ events: [TraceEvent]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return events.compactMap { event in
            (try? encoder.encode(event)).map { String(decoding: $0, as: UTF8.self) }
        }.joined(separator: "\n")
    }


    // MARK: Reassembly

    private struct StreamKey: Hashable {
        var connection: Int
        var direction: TraceRecord.Direction
        var channel: UInt32
    }

    private struct ChannelKey: Hashable {
        var connection: Int
        var channel: UInt32
    }

    private struct Stream {
        var assembler: MessageAssembler
        var firstTime: UInt64 = 0
        var reports = 0
        var redactions: [TraceRedaction] = []
    }

    private struct State {
        let fullByteStrings: Bool
        var origin: UInt64 = 0
        var events: [TraceEvent] = []
        var streams: [StreamKey: Stream] = [:]
        /// Per channel: the last request (when it was whole, its CTAP command byte).
        var requests: [ChannelKey: (time: UInt64, ctapCommand: UInt8?)] = [:]
        /// Per channel: the index of a keepalive run still open, or of withheld reports.
        var openKeepalive: [ChannelKey: (index: Int, status: String)] = [:]
        var openWithheld: [StreamKey: Int] = [:]

        init(fullByteStrings: Bool) { self.fullByteStrings = fullByteStrings }

        mutating func feed(_ record: TraceRecord) {
            let time = record.time &- origin
            guard let report = record.report, let packet = CTAPHIDPacket(report: report) else {
                var event = TraceEvent(kind: .note, time: time, direction: record.direction,
                                       connection: record.connection, summary: record.note ?? "(empty record)")
                event.withheld = record.withheld
                events.append(event)
                return
            }
            let key = StreamKey(connection: record.connection, direction: record.direction, channel: packet.channel)
            let channelKey = ChannelKey(connection: record.connection, channel: packet.channel)
            if let reason = record.withheld {
                if let index = openWithheld[key], events[index].withheld == reason {
                    events[index].reports = (events[index].reports ?? 1) + 1
                    events[index].endTime = time
                } else {
                    var event = TraceEvent(kind: .withheld, time: time, direction: record.direction,
                                           connection: record.connection, summary: "")
                    event.channel = packet.channel
                    event.withheld = reason
                    event.reports = 1
                    if case let .initialization(_, command, length, _) = packet {
                        event.hidCommand = TraceDecoder.hidCommandName(command)
                        event.length = length
                    }
                    openWithheld[key] = events.count
                    events.append(event)
                }
                let index = openWithheld[key]!
                let reports = events[index].reports ?? 1
                events[index].summary = "\(events[index].hidCommand.map { "\($0) message" } ?? "message data") withheld (\(reason)), "
                    + "\(reports) report\(reports == 1 ? "" : "s")"
                streams[key] = nil
                return
            }
            openWithheld[key] = nil
            var stream = streams.removeValue(forKey: key) ?? Stream(assembler: MessageAssembler(channel: packet.channel))
            if case .initialization = packet {
                stream.firstTime = time
                stream.reports = 0
                stream.redactions = record.redactions ?? []
            }
            stream.reports += 1
            switch stream.assembler.feed(packet) {
            case let .complete(command, payload):
                message(command: command, payload: payload, stream: stream, key: key, channelKey: channelKey, lastTime: time)
            case .needMore:
                streams[key] = stream
            case let .error(error):
                var event = TraceEvent(kind: .note, time: time, direction: record.direction, connection: record.connection,
                                       summary: "malformed message (\(TraceDecoder.hidErrorName(error.rawValue)))")
                event.channel = packet.channel
                events.append(event)
            case .ignored:
                var event = TraceEvent(kind: .note, time: time, direction: record.direction, connection: record.connection,
                                       summary: "continuation packet without a message")
                event.channel = packet.channel
                events.append(event)
            }
        }

        private mutating func message(command: UInt8, payload: [UInt8], stream: Stream, key: StreamKey,
                                      channelKey: ChannelKey, lastTime: UInt64) {
            // Keepalives: extend the open run on this channel if the status is the same.
            if key.direction == .fromKey, command == CTAPHIDCommand.keepalive.rawValue {
                let status = TraceDecoder.keepaliveName(payload.first)
                if let open = openKeepalive[channelKey], open.status == status {
                    let index = open.index
                    let count = (events[index].count ?? 1) + 1
                    events[index].count = count
                    events[index].endTime = stream.firstTime
                    let span = Double(stream.firstTime &- events[index].time) / 1_000_000
                    events[index].summary = "KEEPALIVE \(status) ×\(count) (over \(String(format: "%.3f", span)) s)"
                    return
                }
                var event = TraceEvent(kind: .keepalive, time: stream.firstTime, direction: key.direction,
                                       connection: key.connection, summary: "KEEPALIVE \(status)")
                event.channel = key.channel
                event.hidCommand = "KEEPALIVE"
                event.count = 1
                openKeepalive[channelKey] = (events.count, status)
                events.append(event)
                return
            }
            openKeepalive[channelKey] = nil
            var event = TraceEvent(kind: .message, time: stream.firstTime, direction: key.direction,
                                   connection: key.connection, summary: "")
            event.channel = key.channel
            event.hidCommand = TraceDecoder.hidCommandName(command)
            event.length = payload.count
            event.reports = stream.reports
            event.payload = payload
            event.redactions = stream.redactions.isEmpty ? nil : stream.redactions
            let redacted = stream.redactions
            switch key.direction {
            case .toKey:
                var ctapCommand: UInt8?
                if command == CTAPHIDCommand.cbor.rawValue { ctapCommand = payload.first }
                if command != CTAPHIDCommand.cancel.rawValue {
                    requests[channelKey] = (lastTime, ctapCommand)
                }
                TraceDecoder.describeRequest(&event, command: command, payload: payload, redactions: redacted,
                                             full: fullByteStrings)
            case .fromKey:
                let request = requests.removeValue(forKey: channelKey)
                if let request { event.latencyMilliseconds = Double(stream.firstTime &- request.time) / 1_000 }
                TraceDecoder.describeResponse(&event, command: command, payload: payload, redactions: redacted,
                                              requestCommand: request?.ctapCommand, full: fullByteStrings)
            }
            events.append(event)
        }
    }

    // MARK: Describing messages

    static func describeRequest(_ event: inout TraceEvent, command: UInt8, payload: [UInt8],
                                redactions: [TraceRedaction], full: Bool) {
        switch command {
        case CTAPHIDCommand.cbor.rawValue:
            guard let first = payload.first else {
                event.summary = "(empty)"
                return
            }
            let name = CTAPCommand(rawValue: first)?.name ?? String(format: "command 0x%02x", first)
            event.ctapCommand = name
            event.summary = "\(name) (\(String(format: "0x%02x", first)))"
            if payload.count > 1 {
                let body = CBORLayout.parse(payload, exactly: 1..<payload.count)
                event.cbor = body.map { diagnostic($0, in: payload, redactions: redactions, full: full) }
                    ?? "undecodable CBOR: " + bytesText(payload, 1..<payload.count, redactions: redactions, full: full)
                if let body, let subcommand = subcommandName(command: first, body: body) {
                    event.summary += " " + subcommand
                }
            }
        case CTAPHIDCommand.msg.rawValue:
            describeAPDU(&event, payload: payload)
        case CTAPHIDCommand.initialize.rawValue:
            event.summary = "nonce " + Hex.encode(Array(payload.prefix(8)))
        case CTAPHIDCommand.ping.rawValue:
            event.summary = "echo request"
        case CTAPHIDCommand.lock.rawValue:
            event.summary = payload.first.map { $0 == 0 ? "release" : "for \($0) s" } ?? "(no duration)"
        default:
            event.summary = payload.isEmpty ? "" : Hex.encode(Array(payload.prefix(16))) + (payload.count > 16 ? "…" : "")
        }
    }

    static func describeResponse(_ event: inout TraceEvent, command: UInt8, payload: [UInt8],
                                 redactions: [TraceRedaction], requestCommand: UInt8?, full: Bool) {
        switch command {
        case CTAPHIDCommand.cbor.rawValue:
            guard let status = payload.first else {
                event.summary = "(empty)"
                return
            }
            let name = CTAP2StatusCode(rawValue: status)?.specName ?? "status"
            event.ctapStatus = name
            event.summary = "\(name) (\(String(format: "0x%02x", status)))"
            if let requestCommand, let command = CTAPCommand(rawValue: requestCommand) {
                event.ctapCommand = command.name
            }
            guard payload.count > 1 else { return }
            guard let body = CBORLayout.parse(payload, exactly: 1..<payload.count) else {
                event.cbor = "undecodable CBOR: " + bytesText(payload, 1..<payload.count, redactions: redactions, full: full)
                return
            }
            event.cbor = diagnostic(body, in: payload, redactions: redactions, full: full)
            let carriesAuthData: Set<UInt8> = [CTAPCommand.makeCredential.rawValue, CTAPCommand.getAssertion.rawValue,
                                               CTAPCommand.getNextAssertion.rawValue]
            if let requestCommand, carriesAuthData.contains(requestCommand),
               let authData = body.value(forKey: 2), authData.kind == .bytes {
                event.authData = describeAuthData(payload, authData.content, redactions: redactions, full: full)
            }
        case CTAPHIDCommand.msg.rawValue:
            var u2f = TraceEvent.U2F()
            if payload.count >= 2 {
                let word = UInt16(payload[payload.count - 2]) << 8 | UInt16(payload[payload.count - 1])
                u2f.statusWord = String(format: "%04x", word)
                u2f.statusName = statusWordName(word)
                u2f.dataLength = payload.count - 2
                event.summary = "SW \(u2f.statusWord!)" + (u2f.statusName.map { " (\($0))" } ?? "")
                    + (payload.count > 2 ? ", \(payload.count - 2) bytes of data" : "")
            } else {
                event.summary = "(no status word)"
            }
            event.u2f = u2f
        case CTAPHIDCommand.initialize.rawValue:
            if payload.count >= 17 {
                let channel = UInt32(payload[8]) << 24 | UInt32(payload[9]) << 16 | UInt32(payload[10]) << 8 | UInt32(payload[11])
                var capabilities: [String] = []
                if payload[16] & 0x01 != 0 { capabilities.append("WINK") }
                if payload[16] & 0x02 != 0 { capabilities.append("LOCK") }
                if payload[16] & 0x04 != 0 { capabilities.append("CBOR") }
                if payload[16] & 0x08 != 0 { capabilities.append("NMSG") }
                event.summary = "nonce \(Hex.encode(Array(payload[0..<8]))) → channel \(TraceEvent.channelText(channel)), "
                    + "CTAPHID protocol \(payload[12]), device \(payload[13]).\(payload[14]).\(payload[15]), "
                    + "capabilities \(capabilities.isEmpty ? "none" : capabilities.joined(separator: " "))"
            } else {
                event.summary = "(short INIT response)"
            }
        case CTAPHIDCommand.error.rawValue:
            event.summary = hidErrorName(payload.first ?? 0)
        case CTAPHIDCommand.ping.rawValue:
            event.summary = "echo"
        default:
            event.summary = payload.isEmpty ? "" : Hex.encode(Array(payload.prefix(16))) + (payload.count > 16 ? "…" : "")
        }
    }

    static func describeAPDU(_ event: inout TraceEvent, payload: [UInt8]) {
        var u2f = TraceEvent.U2F()
        guard let apdu = try? U2FAPDU(parsing: payload) else {
            event.summary = "malformed APDU"
            event.u2f = u2f
            return
        }
        let names: [UInt8: String] = [0x01: "U2F_REGISTER", 0x02: "U2F_AUTHENTICATE", 0x03: "U2F_VERSION"]
        u2f.instruction = names[apdu.ins]
        u2f.ins = apdu.ins; u2f.p1 = apdu.p1; u2f.p2 = apdu.p2
        u2f.dataLength = apdu.data.count
        var summary = (names[apdu.ins] ?? "ins") + String(format: " (ins 0x%02x) p1 0x%02x", apdu.ins, apdu.p1)
        if apdu.ins == 0x02 {
            let modes: [UInt8: String] = [0x03: "enforce-user-presence-and-sign", 0x07: "check-only",
                                          0x08: "dont-enforce-user-presence-and-sign"]
            if let mode = modes[apdu.p1] { summary += " \(mode)" }
        }
        summary += String(format: " p2 0x%02x", apdu.p2)
        if !apdu.data.isEmpty { summary += ", \(apdu.data.count) bytes of data" }
        event.summary = summary
        event.u2f = u2f
    }

    /// Subcommand names for clientPIN (key 2) and credential management (key 1).
    static func subcommandName(command: UInt8, body: CBORLayout) -> String? {
        switch CTAPCommand(rawValue: command) {
        case .clientPIN:
            guard case let .unsigned(sub)? = body.value(forKey: 2)?.kind else { return nil }
            let names: [UInt64: String] = [1: "getPINRetries", 2: "getKeyAgreement", 3: "setPIN", 4: "changePIN",
                                           5: "getPinToken", 6: "getPinUvAuthTokenUsingUvWithPermissions",
                                           7: "getUVRetries", 9: "getPinUvAuthTokenUsingPinWithPermissions"]
            return names[sub] ?? "subcommand \(sub)"
        case .credentialManagement, .credentialManagementPreview:
            guard case let .unsigned(sub)? = body.value(forKey: 1)?.kind else { return nil }
            let names: [UInt64: String] = [1: "getCredsMetadata", 2: "enumerateRPsBegin", 3: "enumerateRPsGetNextRP",
                                           4: "enumerateCredentialsBegin", 5: "enumerateCredentialsGetNextCredential",
                                           6: "deleteCredential", 7: "updateUserInformation"]
            return names[sub] ?? "subcommand \(sub)"
        default:
            return nil
        }
    }
}
