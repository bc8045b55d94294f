import CTAPHID
import Glibc
import LinuxHID
import SystemIO

/// The host side of CTAPHID (CTAP 2.1 §11.2) over any report link — a hidraw
/// node, a key's socket, or a test's in-memory fake: channel allocation
/// (INIT), PING, WINK and CBOR requests, each fragmented with
/// `MessageFragmenter` and reassembled with `MessageAssembler`.
///
/// Every wait is bounded: no report for `replyTimeoutMilliseconds` is
/// `.noReply`; KEEPALIVEs (the device is busy or waiting for a touch) extend
/// the wait up to `keepaliveLimitMilliseconds` in all. Reports for other
/// channels (other programs using the same device) are ignored.
public final class CTAPHIDClient {
    /// The INIT response (§11.2.9.1.3).
    public struct InitResponse: Sendable, Equatable {
        public var channel: UInt32
        public var protocolVersion: UInt8
        public var deviceVersion: [UInt8]   // major, minor, build
        public var capabilities: UInt8

        public var supportsWink: Bool { capabilities & CTAPHIDConfiguration.capabilityWink != 0 }
        public var supportsLock: Bool { capabilities & CTAPHIDConfiguration.capabilityLock != 0 }
        public var supportsCBOR: Bool { capabilities & CTAPHIDConfiguration.capabilityCBOR != 0 }
        /// NMSG clear: CTAPHID_MSG (CTAP1/U2F) is implemented.
        public var supportsMSG: Bool { capabilities & CTAPHIDConfiguration.capabilityNoMSG == 0 }

        /// Capability flag names: WINK, LOCK, CBOR, NMSG (and unknown bits as 0xNN).
        public var capabilityNames: [String] {
            var names: [String] = []
            let known: [(UInt8, String)] = [(0x01, "WINK"), (0x02, "LOCK"), (0x04, "CBOR"), (0x08, "NMSG")]
            for (bit, name) in known where capabilities & bit != 0 { names.append(name) }
            let unknown = capabilities & 0xF0
            if unknown != 0 { names.append("0x" + hexByte(unknown)) }
            return names
        }
    }

    public let link: ClientReportTransport
    public let replyTimeoutMilliseconds: Int32
    public let keepaliveLimitMilliseconds: UInt64
    /// A pause after each report of a multi-report request (0: back to back, as browsers and
    /// libfido2 send them). `probe` retries with a pause to tell a device that loses bursts of
    /// reports (a uhid key that reads slower than the kernel's 32-event queue fills) from one that
    /// cannot echo at all.
    public var interReportDelayMicroseconds: UInt32 = 0
    /// The channel INIT allocated, once it has.
    public private(set) var channel: UInt32?
    /// The KEEPALIVE statuses seen during the last transaction (1 processing, 2 user presence needed).
    public private(set) var keepalives: [UInt8] = []
    private let clock: () -> UInt64
    private let nonceSource: () -> [UInt8]

    /// - Parameters:
    ///   - clock: monotonic nanoseconds (tests pass a manual clock).
    ///   - nonceSource: the 8-byte INIT nonce (tests pass a fixed one).
    public init(link: ClientReportTransport, replyTimeoutMilliseconds: Int32 = 1_000,
                keepaliveLimitMilliseconds: UInt64 = 30_000,
                clock: @escaping () -> UInt64 = MonotonicClock.nanoseconds,
                nonceSource: @escaping () -> [UInt8] = { (0..<8).map { _ in UInt8.random(in: 0...255) } }) {
        self.link = link
        self.replyTimeoutMilliseconds = replyTimeoutMilliseconds
        self.keepaliveLimitMilliseconds = keepaliveLimitMilliseconds
        self.clock = clock
        self.nonceSource = nonceSource
    }

    /// CTAPHID_INIT on the broadcast channel: allocates this client's channel.
    /// §11.2.9.1.3: the reply echoes our nonce; replies with another nonce
    /// (another program's INIT: every hidraw opener sees every input report) are skipped.
    @discardableResult
    public func initialize() throws(CTAPHIDClientError) -> InitResponse {
        var nonce = nonceSource()
        if nonce.count != 8 { nonce = Array((nonce + [UInt8](repeating: 0, count: 8)).prefix(8)) }
        let broadcast = CTAPHIDPacket.broadcastChannel
        try send(channel: broadcast, command: CTAPHIDCommand.initialize.rawValue, payload: nonce)
        let payload = try receive(channel: broadcast, command: CTAPHIDCommand.initialize.rawValue, name: CTAPHIDCommand.initialize.name) { payload in
            payload.count >= 8 && Array(payload[0..<8]) == nonce
        }
        guard payload.count >= 17 else {
            throw .malformedReply(command: "INIT", detail: "\(payload.count) bytes, expected 17")
        }
        let allocated = UInt32(payload[8]) << 24 | UInt32(payload[9]) << 16 | UInt32(payload[10]) << 8 | UInt32(payload[11])
        guard allocated != broadcast, allocated != CTAPHIDPacket.reservedChannel else {
            throw .malformedReply(command: "INIT", detail: "the device allocated channel \(hexChannel(allocated))")
        }
        channel = allocated
        return InitResponse(channel: allocated, protocolVersion: payload[12],
                            deviceVersion: [payload[13], payload[14], payload[15]], capabilities: payload[16])
    }

    /// CTAPHID_PING: the device echoes `data` (up to 7609 bytes).
    public func ping(_ data: [UInt8]) throws(CTAPHIDClientError) -> [UInt8] {
        try transact(.ping, payload: data)
    }

    /// CTAPHID_WINK: the device signals the user (Latchkey logs "wink").
    public func wink() throws(CTAPHIDClientError) {
        _ = try transact(.wink, payload: [])
    }

    /// CTAPHID_CBOR: a CTAP2 request (command byte + CBOR); the response is the
    /// status byte followed by the CBOR body.
    public func cbor(_ request: [UInt8]) throws(CTAPHIDClientError) -> [UInt8] {
        let response = try transact(.cbor, payload: request)
        guard !response.isEmpty else {
            throw .malformedReply(command: "CBOR", detail: "an empty response (no status byte)")
        }
        return response
    }

    /// One request on this client's channel and its response payload.
    public func transact(_ command: CTAPHIDCommand, payload: [UInt8]) throws(CTAPHIDClientError) -> [UInt8] {
        guard let channel else { throw .notInitialized }
        guard payload.count <= CTAPHIDPacket.maxMessageLength else {
            throw .payloadTooLong(payload.count)
        }
        try send(channel: channel, command: command.rawValue, payload: payload)
        return try receive(channel: channel, command: command.rawValue, name: command.name) { _ in true }
    }

    /// One vendor command (CTAPHID 0x40…0x7F) on this client's channel and its response payload.
    public func transact(vendor command: UInt8, payload: [UInt8]) throws(CTAPHIDClientError) -> [UInt8] {
        guard let channel else { throw .notInitialized }
        precondition(CTAPHIDCommand.isVendor(command), "not a vendor command")
        guard payload.count <= CTAPHIDPacket.maxMessageLength else {
            throw .payloadTooLong(payload.count)
        }
        try send(channel: channel, command: command, payload: payload)
        return try receive(channel: channel, command: command, name: String(format: "vendor 0x%02x", command)) { _ in true }
    }

    /// Reads and drops whatever the device still sends within `quietMilliseconds` of silence
    /// (leftovers of a failed transaction); returns how many reports were dropped.
    @discardableResult
    public func drain(quietMilliseconds: Int32 = 100, maximum: Int = 512) -> Int {
        var dropped = 0
        while dropped < maximum, let report = try? link.receiveReport(timeoutMilliseconds: quietMilliseconds) {
            _ = report
            dropped += 1
        }
        return dropped
    }

    // MARK: - Framing

    private func send(channel: UInt32, command: UInt8, payload: [UInt8]) throws(CTAPHIDClientError) {
        keepalives = []
        let reports = MessageFragmenter.reports(channel: channel, command: command, payload: payload)
        for (index, report) in reports.enumerated() {
            do {
                try link.sendReport(report)
            } catch {
                throw .transport(error)
            }
            if interReportDelayMicroseconds > 0 && index + 1 < reports.count {
                usleep(interReportDelayMicroseconds)
            }
        }
    }

    /// Reports on `channel` until a whole message for `command` that `accept`s.
    private func receive(channel: UInt32, command: UInt8, name: String,
                         accept: ([UInt8]) -> Bool) throws(CTAPHIDClientError) -> [UInt8] {
        var assembler = MessageAssembler(channel: channel)
        let started = clock()
        while true {
            if (clock() &- started) / 1_000_000 > keepaliveLimitMilliseconds {
                // Giving up: tell the device too (CTAP 2.1 §11.2.9.1.5), so a key waiting for a
                // touch stops asking its user. Best effort: the error says why we stopped either way.
                for report in MessageFragmenter.reports(channel: channel, command: CTAPHIDCommand.cancel.rawValue, payload: []) {
                    try? link.sendReport(report)
                }
                throw .keepaliveLimit(command: name, milliseconds: keepaliveLimitMilliseconds, statuses: keepalives)
            }
            let report: [UInt8]?
            do {
                report = try link.receiveReport(timeoutMilliseconds: replyTimeoutMilliseconds)
            } catch {
                throw .transport(error)
            }
            guard let report else {
                throw .noReply(command: name, milliseconds: Int(replyTimeoutMilliseconds),
                               partial: assembler.isAssembling, afterKeepalives: keepalives.count)
            }
            switch assembler.feed(report: report) {
            case .complete(let received, let payload):
                if received == CTAPHIDCommand.keepalive.rawValue {
                    // §11.2.9.1.5: KEEPALIVE does not end the transaction.
                    keepalives.append(payload.first ?? 0)
                    continue
                }
                if received == CTAPHIDCommand.error.rawValue {
                    throw .deviceError(command: name, code: payload.first ?? 0)
                }
                guard received == command else {
                    throw .unexpectedReply(command: name, received: received)
                }
                if accept(payload) { return payload }
            case .needMore, .ignored:
                continue
            case .error(let error):
                throw .malformedReply(command: name, detail: Self.describe(error))
            }
        }
    }

    private static func describe(_ error: CTAPHIDError) -> String {
        switch error {
        case .invalidSequence: "continuation packets out of order, or a new message interrupting one"
        case .invalidLength: "a declared length above 7609 bytes"
        default: "\(error)"
        }
    }
}

/// Why a CTAPHID exchange failed; `description` is a sentence for the user.
public enum CTAPHIDClientError: Error, Sendable, Equatable, CustomStringConvertible {
    case transport(TransportError)
    /// Nothing (more) arrived within the reply timeout.
    case noReply(command: String, milliseconds: Int, partial: Bool, afterKeepalives: Int)
    /// KEEPALIVEs kept coming for longer than the limit.
    case keepaliveLimit(command: String, milliseconds: UInt64, statuses: [UInt8])
    /// The device answered CTAPHID_ERROR with `code`.
    case deviceError(command: String, code: UInt8)
    /// A whole message with another command than the request's.
    case unexpectedReply(command: String, received: UInt8)
    case malformedReply(command: String, detail: String)
    case notInitialized
    case payloadTooLong(Int)

    public var description: String {
        switch self {
        case .transport(let error):
            return error.description
        case let .noReply(command, milliseconds, partial, keepalives):
            if partial {
                return "the reply to CTAPHID_\(command) stopped part-way: no further packet within \(milliseconds) ms"
            }
            if keepalives > 0 {
                return "no reply to CTAPHID_\(command) within \(milliseconds) ms of its last KEEPALIVE"
            }
            return "no reply to CTAPHID_\(command) within \(milliseconds) ms: the device is silent "
                + "(not a CTAPHID device, hung, or another program holds it; a Latchkey key logs every request at --log-level debug)"
        case let .keepaliveLimit(command, milliseconds, statuses):
            let waitingForTouch = statuses.contains(KeepaliveStatus.userPresenceNeeded.rawValue)
            return "CTAPHID_\(command) still running after \(milliseconds / 1000) s of KEEPALIVEs"
                + (waitingForTouch ? " (the device is waiting for a touch)" : "")
        case let .deviceError(command, code):
            return "the device answered CTAPHID_\(command) with CTAPHID_ERROR \(Self.errorName(code))"
        case let .unexpectedReply(command, received):
            return "the device answered CTAPHID_\(command) with command 0x\(hexByte(received))"
        case let .malformedReply(command, detail):
            return "a malformed reply to CTAPHID_\(command): \(detail)"
        case .notInitialized:
            return "no CTAPHID channel yet: INIT first"
        case .payloadTooLong(let count):
            return "a \(count)-byte message does not fit CTAPHID (at most 7609 bytes)"
        }
    }

    /// "ERR_CHANNEL_BUSY (0x06)".
    public static func errorName(_ code: UInt8) -> String {
        "\(CTAPHIDError(rawValue: code)?.name ?? "unknown error") (0x\(hexByte(code)))"
    }
}

/// Two lower-case hex digits.
public func hexByte(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16)
    return digits.count == 1 ? "0" + digits : digits
}

/// "0x0000abcd".
public func hexChannel(_ channel: UInt32) -> String {
    let digits = String(channel, radix: 16)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}
