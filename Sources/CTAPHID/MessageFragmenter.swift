/// Splits a message into 64-byte reports (CTAP 2.1 §11.2.4): one
/// initialization packet with up to 57 data bytes, then continuation packets
/// with up to 59 bytes each and sequence numbers 0, 1, ... 127. The last
/// packet is padded with zeros.
///
/// Used by the device side (responses) and by client-side tools (requests).
public enum MessageFragmenter {
    /// - Parameters:
    ///   - command: the command without the 0x80 initialization bit (e.g. 0x10 for CBOR).
    ///   - payload: at most `CTAPHIDPacket.maxMessageLength` (7609) bytes; longer traps.
    public static func reports(channel: UInt32, command: UInt8, payload: [UInt8]) -> [[UInt8]] {
        precondition(payload.count <= CTAPHIDPacket.maxMessageLength,
                     "CTAPHID message longer than \(CTAPHIDPacket.maxMessageLength) bytes")
        let initSize = CTAPHIDPacket.initializationDataSize
        let contSize = CTAPHIDPacket.continuationDataSize
        let continuationCount = payload.count <= initSize ? 0 : (payload.count - initSize + contSize - 1) / contSize
        var reports: [[UInt8]] = []
        reports.reserveCapacity(1 + continuationCount)

        var report = [UInt8](repeating: 0, count: CTAPHIDPacket.reportSize)
        CTAPHIDPacket.writeChannel(channel, into: &report)
        report[4] = (command & 0x7F) | 0x80
        report[5] = UInt8(truncatingIfNeeded: payload.count >> 8)
        report[6] = UInt8(truncatingIfNeeded: payload.count)
        let firstEnd = min(payload.count, initSize)
        report.replaceSubrange(7..<(7 + firstEnd), with: payload[0..<firstEnd])
        reports.append(report)

        var offset = firstEnd
        var sequence: UInt8 = 0
        while offset < payload.count {
            let end = min(payload.count, offset + contSize)
            var report = [UInt8](repeating: 0, count: CTAPHIDPacket.reportSize)
            CTAPHIDPacket.writeChannel(channel, into: &report)
            report[4] = sequence
            report.replaceSubrange(5..<(5 + end - offset), with: payload[offset..<end])
            reports.append(report)
            offset = end
            sequence += 1
        }
        return reports
    }
}
