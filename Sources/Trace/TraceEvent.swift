import Foundation

/// One line of a decoded trace (`latchkey trace`): a whole CTAPHID message with its names,
/// a run of identical KEEPALIVEs, or a note.
public struct TraceEvent: Equatable, Sendable {
    /// A channel ID as the decoder prints it: eight hex digits.
    static func channelText(_ channel: UInt32) -> String { String(format: "%08x", channel) }

    public enum Kind: String, Sendable, Encodable {
        case message
        /// Consecutive KEEPALIVEs with one status on one channel, collapsed (`count`).
        case keepalive
        /// Reports whose data the trace withholds (an unfinished message).
        case withheld
        /// A recorder note: a dropped packet, a closed connection.
        case note
    }

    public var kind: Kind
    /// Microseconds since the trace began (its first report or the header's time).
    public var time: UInt64
    /// Collapsed keepalives: when the last one was sent.
    public var endTime: UInt64?
    public var direction: TraceRecord.Direction
    public var connection: Int
    public var channel: UInt32?
    /// CTAPHID command name: "CBOR", "MSG", "INIT", "KEEPALIVE", "VENDOR 0x41", …
    public var hidCommand: String?
    /// Message payload length (bytes) and how many reports carried it.
    public var length: Int?
    public var reports: Int?
    /// The one-line description ("authenticatorMakeCredential (0x01)", "CTAP2_OK (0x00)", …).
    public var summary: String
    /// CTAP2 command (requests) or status (responses) spec name.
    public var ctapCommand: String?
    public var ctapStatus: String?
    /// The CBOR body in diagnostic notation, secrets shown as `<redacted N bytes>`.
    public var cbor: String?
    /// makeCredential / getAssertion responses: the authenticator data, decoded.
    public var authData: String?
    /// U2F request (ins/p1/p2, data length) or response (status word).
    public var u2f: U2F?
    /// Collapsed keepalives: how many.
    public var count: Int?
    /// Responses: milliseconds from the request's last report to the response's first.
    public var latencyMilliseconds: Double?
    public var redactions: [TraceRedaction]?
    public var withheld: String?
    /// A message's bytes as the file holds them (the CTAP command or status byte first; redacted
    /// spans zero): `--json` writes them as `payload`, for programs that take a trace apart
    /// (Fuzz/make-corpus.py makes its seeds from them).
    public var payload: [UInt8]?

    public struct U2F: Equatable, Sendable, Encodable {
        public var instruction: String?
        public var ins: UInt8?
        public var p1: UInt8?
        public var p2: UInt8?
        public var dataLength: Int?
        public var statusWord: String?
        public var statusName: String?

        enum CodingKeys: String, CodingKey {
            case instruction, ins, p1, p2, dataLength = "data_length", statusWord = "sw", statusName = "sw_name"
            case dataLengthCamel = "dataLength", statusNameCamel = "swName"
        }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(instruction, forKey: .instruction)
            try container.encodeIfPresent(ins, forKey: .ins)
            try container.encodeIfPresent(p1, forKey: .p1)
            try container.encodeIfPresent(p2, forKey: .p2)
            try container.encodeIfPresent(dataLength, forKey: .dataLength)
            try container.encodeIfPresent(dataLength, forKey: .dataLengthCamel)
            try container.encodeIfPresent(statusWord, forKey: .statusWord)
            try container.encodeIfPresent(statusName, forKey: .statusName)
            try container.encodeIfPresent(statusName, forKey: .statusNameCamel)
        }
    }

    init(kind: Kind, time: UInt64, direction: TraceRecord.Direction, connection: Int, summary: String) {
        self.kind = kind; self.time = time; self.direction = direction; self.connection = connection
        self.summary = summary
    }
}

extension TraceEvent: Encodable {
    enum CodingKeys: String, CodingKey {
        case kind, time = "t_us", endTime = "end_us", direction = "dir", connection = "conn", channel = "cid",
             hidCommand = "hid", length, reports, summary, ctapCommand = "ctap_command", ctapStatus = "ctap_status",
             cbor, authData = "auth_data", u2f, count, latencyMilliseconds = "latency_ms", redactions = "redacted", withheld,
             payload
        // The names every other Latchkey JSON uses (camelCase; a channel as "0x" and 8 hex digits),
        // beside the first ones, which stay for the readers that know them.
        case timeCamel = "tUs", endTimeCamel = "endUs", channelHex = "channel", ctapCommandCamel = "ctapCommand",
             ctapStatusCamel = "ctapStatus", authDataCamel = "authData", latencyMillisecondsCamel = "latencyMs"
    }

    /// A channel as every Latchkey command writes one in JSON: "0x" and 8 hex digits.
    public static func channelJSON(_ channel: UInt32) -> String { "0x" + channelText(channel) }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(time, forKey: .time)
        try container.encode(time, forKey: .timeCamel)
        try container.encodeIfPresent(endTime, forKey: .endTime)
        try container.encodeIfPresent(endTime, forKey: .endTimeCamel)
        try container.encode(direction, forKey: .direction)
        try container.encode(connection, forKey: .connection)
        try container.encodeIfPresent(channel.map(Self.channelText), forKey: .channel)
        try container.encodeIfPresent(channel.map(Self.channelJSON), forKey: .channelHex)
        try container.encodeIfPresent(hidCommand, forKey: .hidCommand)
        try container.encodeIfPresent(length, forKey: .length)
        try container.encodeIfPresent(reports, forKey: .reports)
        try container.encode(summary, forKey: .summary)
        try container.encodeIfPresent(ctapCommand, forKey: .ctapCommand)
        try container.encodeIfPresent(ctapCommand, forKey: .ctapCommandCamel)
        try container.encodeIfPresent(ctapStatus, forKey: .ctapStatus)
        try container.encodeIfPresent(ctapStatus, forKey: .ctapStatusCamel)
        try container.encodeIfPresent(cbor, forKey: .cbor)
        try container.encodeIfPresent(authData, forKey: .authData)
        try container.encodeIfPresent(authData, forKey: .authDataCamel)
        try container.encodeIfPresent(u2f, forKey: .u2f)
        try container.encodeIfPresent(count, forKey: .count)
        try container.encodeIfPresent(latencyMilliseconds, forKey: .latencyMilliseconds)
        try container.encodeIfPresent(latencyMilliseconds, forKey: .latencyMillisecondsCamel)
        try container.encodeIfPresent(redactions, forKey: .redactions)
        try container.encodeIfPresent(withheld, forKey: .withheld)
        try container.encodeIfPresent(payload.map { Hex.encode($0) }, forKey: .payload)
    }
}
