/// Splits a message into 64-byte reports (CTAP 2.1 §11.2.4): one
/// initialization packet with up to 57 data bytes, then continuation packets
/// with up to 59 bytes each and sequence numbers 0, 1, ... 127. The last
/// packet is padded with zeros.
///
/// Used by the device side (responses) and by client-side tools (requests).
public enum MessageFragmenter {
    private static let zeroReport = [UInt8](repeating: 0, count: CTAPHIDPacket.reportSize)

    /// - Parameters:
    ///   - command: the command without the 0x80 initialization bit (e.g. 0x10 for CBOR).
    ///   - payload: at most `CTAPHIDPacket.maxMessageLength` (7609) bytes; longer traps.
    public static func reports(channel: UInt32, command: UInt8, payload: [UInt8]) -> [[UInt8]] {
        var reports: [[UInt8]] = []
        reports.reserveCapacity(reportCount(payloadCount: payload.count))
        forEachReport(channel: channel, command: command, payload: payload) { reports.append($0) }
        return reports
    }

    /// How many reports a payload of `payloadCount` bytes takes.
    public static func reportCount(payloadCount: Int) -> Int {
        let initSize = CTAPHIDPacket.initializationDataSize
        let contSize = CTAPHIDPacket.continuationDataSize
        return 1 + (payloadCount <= initSize ? 0 : (payloadCount - initSize + contSize - 1) / contSize)
    }

    /// The reports of `reports(channel:command:payload:)`, each handed to `body` as it is made
    /// (no array of them in between: the key's reply path).
    public static func forEachReport(channel: UInt32, command: UInt8, payload: [UInt8], _ body: ([UInt8]) -> Void) {
        precondition(payload.count <= CTAPHIDPacket.maxMessageLength,
                     "CTAPHID message longer than \(CTAPHIDPacket.maxMessageLength) bytes")
        payload.withUnsafeBufferPointer { payload in
            var offset = 0
            var sequence: UInt8 = 0
            repeat {
                let isFirst = offset == 0
                let header = isFirst ? 7 : 5
                let end = min(payload.count, offset + CTAPHIDPacket.reportSize - header)
                // A copy of the zero report, written in place: an array made with
                // `repeating:count:` or `unsafeUninitializedCapacity:` costs a runtime metadata
                // lookup each time (the standard library's allocation for them is not specialized).
                var report = zeroReport
                report.withUnsafeMutableBufferPointer { bytes in
                    bytes[0] = UInt8(truncatingIfNeeded: channel >> 24)
                    bytes[1] = UInt8(truncatingIfNeeded: channel >> 16)
                    bytes[2] = UInt8(truncatingIfNeeded: channel >> 8)
                    bytes[3] = UInt8(truncatingIfNeeded: channel)
                    if isFirst {
                        bytes[4] = (command & 0x7F) | 0x80
                        bytes[5] = UInt8(truncatingIfNeeded: payload.count >> 8)
                        bytes[6] = UInt8(truncatingIfNeeded: payload.count)
                    } else {
                        bytes[4] = sequence
                    }
                    if end > offset {
                        _ = UnsafeMutableBufferPointer(rebasing: bytes[header..<(header + end - offset)])
                            .update(fromContentsOf: payload[offset..<end])
                    }
                }
                body(report)
                if !isFirst { sequence += 1 }
                offset = end
            } while offset < payload.count
        }
    }
}
