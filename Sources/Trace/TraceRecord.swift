import Foundation

/// One line of a trace file (`latchkey serve --trace FILE`), format "latchkey-trace" version 1.
///
/// The file is JSON Lines: the first line is a `TraceHeader`, every further line one
/// `TraceRecord` — a CTAPHID report the key received ("in") or sent ("out"), or a note:
///
///     {"format":"latchkey-trace","version":1,"started":"2025-01-31T12:00:00.000Z","t":81234567,"key":"default","transport":"socket:/tmp/k.sock"}
///     {"t":81234901,"dir":"in","conn":1,"report":"ffffffff860008…"}
///     {"t":81235012,"dir":"in","conn":1,"report":"00000001900047…","redacted":[{"field":"clientPIN.newPinEnc","offset":84,"length":64}]}
///     {"t":81236000,"dir":"in","conn":2,"note":"dropped a 65-byte packet"}
///
/// - `t`: CLOCK_MONOTONIC in microseconds (the header's `t` is the same clock when the trace
///   began, `started` the wall clock then).
/// - `dir`: "in" (client → key) or "out" (key → client); `conn`: the transport connection
///   (uhid: 0; socket: 1, 2, … per client).
/// - `report`: the 64 bytes in hex, no report-ID byte. Bytes past a message's declared length
///   (padding) are written as zero, and so are secret fields:
/// - `redacted` (on a message's initialization report only): spans of the reassembled message
///   payload (offsets from its first payload byte, the CTAP command or status byte included)
///   that held secrets and are zero in the reports: PIN blocks, PIN/UV tokens, hmac-secret
///   salts and outputs, credBlob, largeBlobKey, large-blob data (see `TraceRedactor`).
/// - `withheld`: this report's data bytes are all zero because they belong to a message that
///   was never completed (or cannot be attributed), so the recorder could not tell whether it
///   held a secret. The CTAPHID header (channel, command or sequence, length) is kept.
///
/// Records are written when their message is complete, so a multi-report message may be
/// written after reports of other channels that arrived later: readers sort by `t`.
public struct TraceRecord: Equatable, Sendable {
    public enum Direction: String, Codable, Sendable {
        /// Client → key.
        case toKey = "in"
        /// Key → client.
        case fromKey = "out"
    }

    /// CLOCK_MONOTONIC, microseconds.
    public var time: UInt64
    public var direction: Direction
    public var connection: Int
    /// The 64-byte report with padding and secrets zeroed; nil for a note.
    public var report: [UInt8]?
    /// On the initialization report of a message: the secret spans blanked in its payload.
    public var redactions: [TraceRedaction]?
    /// Why this report's data bytes are all zero.
    public var withheld: String?
    public var note: String?

    public init(time: UInt64, direction: Direction, connection: Int, report: [UInt8]? = nil,
                redactions: [TraceRedaction]? = nil, withheld: String? = nil, note: String? = nil) {
        self.time = time; self.direction = direction; self.connection = connection; self.report = report
        self.redactions = redactions; self.withheld = withheld; self.note = note
    }
}

/// A secret span of a message payload that the trace does not contain.
public struct TraceRedaction: Codable, Equatable, Sendable {
    /// What it was, e.g. "clientPIN.pinHashEnc" or "getAssertion.authData.hmac-secret".
    public var field: String
    /// Offset in the reassembled message payload.
    public var offset: Int
    public var length: Int

    public init(field: String, offset: Int, length: Int) {
        self.field = field; self.offset = offset; self.length = length
    }

    private enum CodingKeys: String, CodingKey { case field, offset, length }

    /// A span read from a file must lie inside a CTAPHID message (at most 7609 bytes): a
    /// negative or overflowing offset or length is a malformed line, not a trap later.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        field = try container.decode(String.self, forKey: .field)
        offset = try container.decode(Int.self, forKey: .offset)
        length = try container.decode(Int.self, forKey: .length)
        guard (0...Self.maximumMessageLength).contains(offset), (0...Self.maximumMessageLength - offset).contains(length) else {
            throw DecodingError.dataCorruptedError(forKey: .length, in: container, debugDescription:
                "redaction \(offset)+\(length) is not inside a CTAPHID message (0…\(Self.maximumMessageLength) bytes)")
        }
    }

    /// CTAP 2.1 §11.2.4: the longest CTAPHID message, 57 + 128 × 59 bytes.
    static let maximumMessageLength = 7609

    public var range: Range<Int> { offset..<(offset + length) }
}

/// The first line of a trace file.
public struct TraceHeader: Codable, Equatable, Sendable {
    public static let formatName = "latchkey-trace"
    public static let currentVersion = 1

    public var format: String
    public var version: Int
    /// Wall clock when the trace began, ISO 8601 UTC.
    public var started: String
    /// CLOCK_MONOTONIC (µs) when the trace began: record times are on this clock.
    public var time: UInt64
    public var key: String?
    public var transport: String?

    enum CodingKeys: String, CodingKey {
        case format, version, started, time = "t", key, transport
    }

    public init(started: String, time: UInt64, key: String? = nil, transport: String? = nil) {
        self.format = Self.formatName; self.version = Self.currentVersion
        self.started = started; self.time = time; self.key = key; self.transport = transport
    }
}

extension TraceRecord: Codable {
    enum CodingKeys: String, CodingKey {
        case time = "t", direction = "dir", connection = "conn", report, redactions = "redacted", withheld, note
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        time = try container.decode(UInt64.self, forKey: .time)
        direction = try container.decode(Direction.self, forKey: .direction)
        connection = try container.decode(Int.self, forKey: .connection)
        if let hex = try container.decodeIfPresent(String.self, forKey: .report) {
            guard let bytes = Hex.decode(hex), bytes.count == 64 else {
                throw DecodingError.dataCorruptedError(forKey: .report, in: container,
                                                       debugDescription: "a report is 64 bytes in hex")
            }
            report = bytes
        } else {
            report = nil
        }
        redactions = try container.decodeIfPresent([TraceRedaction].self, forKey: .redactions)
        withheld = try container.decodeIfPresent(String.self, forKey: .withheld)
        note = try container.decodeIfPresent(String.self, forKey: .note)
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(time, forKey: .time)
        try container.encode(direction, forKey: .direction)
        try container.encode(connection, forKey: .connection)
        try container.encodeIfPresent(report.map(Hex.encode), forKey: .report)
        try container.encodeIfPresent(redactions, forKey: .redactions)
        try container.encodeIfPresent(withheld, forKey: .withheld)
        try container.encodeIfPresent(note, forKey: .note)
    }
}

/// Lower-case hex, as the trace file and its decoder write bytes.
enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = value(of: utf8[index]), let low = value(of: utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
