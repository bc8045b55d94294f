/// One 64-byte CTAPHID report (CTAP 2.1 §11.2.4), without a report-ID byte.
///
///     initialization: CID(4, big-endian) CMD(1, bit 7 set) BCNTH BCNTL DATA(57)
///     continuation:   CID(4, big-endian) SEQ(1, 0...0x7F)            DATA(59)
public enum CTAPHIDPacket: Sendable, Equatable {
    /// `command` is without the 0x80 bit; `data` holds the packet's data bytes
    /// (on parse: all 57, padding included; only the first `declaredLength` count).
    case initialization(channel: UInt32, command: UInt8, declaredLength: Int, data: [UInt8])
    /// `data` holds the packet's data bytes (on parse: all 59, padding included).
    case continuation(channel: UInt32, sequence: UInt8, data: [UInt8])

    public static let reportSize = 64
    public static let initializationDataSize = 57
    public static let continuationDataSize = 59
    public static let maxSequence: UInt8 = 0x7F
    /// §11.2.4: one initialization packet plus 128 continuations: 57 + 128 * 59 = 7609.
    public static let maxMessageLength = initializationDataSize + (Int(maxSequence) + 1) * continuationDataSize
    /// §11.2.3: CID 0xFFFFFFFF is the broadcast channel, used to allocate channels.
    public static let broadcastChannel: UInt32 = 0xFFFF_FFFF
    /// §11.2.3: CID 0 is reserved.
    public static let reservedChannel: UInt32 = 0

    /// Parses a report; `nil` unless it is exactly 64 bytes.
    public init?(report: [UInt8]) {
        guard report.count == Self.reportSize else { return nil }
        let channel = UInt32(report[0]) << 24 | UInt32(report[1]) << 16 | UInt32(report[2]) << 8 | UInt32(report[3])
        let typeByte = report[4]
        // §11.2.4: bit 7 of the fifth byte distinguishes initialization from continuation packets.
        if typeByte & 0x80 != 0 {
            let length = Int(report[5]) << 8 | Int(report[6])
            self = .initialization(channel: channel, command: typeByte & 0x7F,
                                   declaredLength: length, data: Array(report[7...]))
        } else {
            self = .continuation(channel: channel, sequence: typeByte, data: Array(report[5...]))
        }
    }

    public var channel: UInt32 {
        switch self {
        case .initialization(let channel, _, _, _), .continuation(let channel, _, _): return channel
        }
    }

    /// The 64-byte report, zero-padded. Traps if `data` does not fit the packet,
    /// if the declared length exceeds 0xFFFF, or if the sequence exceeds 0x7F.
    public var report: [UInt8] {
        var report = [UInt8](repeating: 0, count: Self.reportSize)
        Self.writeChannel(channel, into: &report)
        switch self {
        case let .initialization(_, command, declaredLength, data):
            precondition(data.count <= Self.initializationDataSize, "initialization data exceeds 57 bytes")
            precondition((0...0xFFFF).contains(declaredLength), "declared length out of range")
            report[4] = command | 0x80
            report[5] = UInt8(truncatingIfNeeded: declaredLength >> 8)
            report[6] = UInt8(truncatingIfNeeded: declaredLength)
            report.replaceSubrange(7..<(7 + data.count), with: data)
        case let .continuation(_, sequence, data):
            precondition(data.count <= Self.continuationDataSize, "continuation data exceeds 59 bytes")
            precondition(sequence <= Self.maxSequence, "sequence exceeds 0x7F")
            report[4] = sequence
            report.replaceSubrange(5..<(5 + data.count), with: data)
        }
        return report
    }

    static func writeChannel(_ channel: UInt32, into report: inout [UInt8]) {
        report[0] = UInt8(truncatingIfNeeded: channel >> 24)
        report[1] = UInt8(truncatingIfNeeded: channel >> 16)
        report[2] = UInt8(truncatingIfNeeded: channel >> 8)
        report[3] = UInt8(truncatingIfNeeded: channel)
    }
}

/// A report's header, read without copying its data: the key's and the clients' receive paths
/// parse every report with it (a `CTAPHIDPacket` copies its data bytes into an array of its own).
struct CTAPHIDReportHeader {
    let channel: UInt32
    /// Bit 7 of the fifth byte (§11.2.4).
    let isInitialization: Bool
    /// The command without the 0x80 bit (initialization) or the sequence number (continuation).
    let commandOrSequence: UInt8
    /// The message length an initialization packet declares; 0 for a continuation.
    let declaredLength: Int
    /// Where the data bytes start in the report: 7 or 5.
    let dataStart: Int

    /// `nil` unless `report` is exactly 64 bytes, as `CTAPHIDPacket(report:)`.
    init?(report: [UInt8]) {
        guard report.count == CTAPHIDPacket.reportSize else { return nil }
        channel = UInt32(report[0]) << 24 | UInt32(report[1]) << 16 | UInt32(report[2]) << 8 | UInt32(report[3])
        let typeByte = report[4]
        isInitialization = typeByte & 0x80 != 0
        if isInitialization {
            commandOrSequence = typeByte & 0x7F
            declaredLength = Int(report[5]) << 8 | Int(report[6])
            dataStart = 7
        } else {
            commandOrSequence = typeByte
            declaredLength = 0
            dataStart = 5
        }
    }

    init(_ packet: CTAPHIDPacket) {
        switch packet {
        case let .initialization(channel, command, declaredLength, _):
            self.channel = channel
            isInitialization = true
            commandOrSequence = command
            self.declaredLength = declaredLength
            dataStart = 7
        case let .continuation(channel, sequence, _):
            self.channel = channel
            isInitialization = false
            commandOrSequence = sequence
            declaredLength = 0
            dataStart = 5
        }
    }
}

