import CBOR
import CTAP
import CTAPHID
import Foundation

/// How the decoder prints CBOR, authenticator data and the names of CTAPHID and U2F codes.
extension TraceDecoder {
    // MARK: CBOR and authenticator data

    /// CBOR diagnostic notation (RFC 8949 §8) of `node`, with redacted byte spans as
    /// `<redacted N bytes>`; map entries in wire order.
    static func diagnostic(_ node: CBORLayout, in bytes: [UInt8], redactions: [TraceRedaction], full: Bool) -> String {
        switch node.kind {
        case .bytes:
            return bytesText(bytes, node.content, redactions: redactions, full: full)
        case .text:
            if redactions.contains(where: { $0.range.overlaps(node.content) }) {
                return "<redacted \(node.content.count) bytes>"
            }
            return (try? CBORDecoder.decode(Array(bytes[node.range])))?.description ?? "h'\(Hex.encode(Array(bytes[node.range])))'"
        case .array:
            return "[" + node.children.map { diagnostic($0, in: bytes, redactions: redactions, full: full) }
                .joined(separator: ", ") + "]"
        case .map:
            return "{" + node.entries.map {
                diagnostic($0.key, in: bytes, redactions: redactions, full: full) + ": "
                    + diagnostic($0.value, in: bytes, redactions: redactions, full: full)
            }.joined(separator: ", ") + "}"
        case .unsigned, .negative, .other:
            return (try? CBORDecoder.decode(Array(bytes[node.range])))?.description ?? "h'\(Hex.encode(Array(bytes[node.range])))'"
        }
    }

    /// A byte string: `h'…'`, `<redacted N bytes>`, or both in order when partly redacted.
    static func bytesText(_ bytes: [UInt8], _ range: Range<Int>, redactions: [TraceRedaction], full: Bool) -> String {
        var parts: [String] = []
        var position = range.lowerBound
        let spans = redactions.map { $0.range.clamped(to: range) }.filter { !$0.isEmpty }
            .sorted { $0.lowerBound < $1.lowerBound }
        for span in spans where span.upperBound > position {
            if span.lowerBound > position { parts.append(hexText(bytes[position..<span.lowerBound], full: full)) }
            let start = max(span.lowerBound, position)
            parts.append("<redacted \(span.upperBound - start) bytes>")
            position = span.upperBound
        }
        if position < range.upperBound || parts.isEmpty { parts.append(hexText(bytes[position..<range.upperBound], full: full)) }
        return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: " ") + ")"
    }

    private static func hexText(_ bytes: ArraySlice<UInt8>, full: Bool) -> String {
        if full || bytes.count <= shortByteStringLimit { return "h'\(Hex.encode(Array(bytes)))'" }
        return "h'\(Hex.encode(Array(bytes.prefix(16))))…'(\(bytes.count) bytes)"
    }

    /// WebAuthn §6.1 authenticator data: rpIdHash, flags, signCount, attested credential data,
    /// extensions.
    static func describeAuthData(_ bytes: [UInt8], _ range: Range<Int>, redactions: [TraceRedaction], full: Bool) -> String {
        guard range.count >= 37 else { return "too short (\(range.count) bytes)" }
        let start = range.lowerBound
        let flags = bytes[start + 32]
        let flagNames = [(0x01, "UP"), (0x04, "UV"), (0x08, "BE"), (0x10, "BS"), (0x40, "AT"), (0x80, "ED")]
            .filter { Int(flags) & $0.0 != 0 }.map(\.1)
        let counter = bytes[(start + 33)..<(start + 37)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var parts = ["rpIdHash \(hexText(bytes[start..<(start + 32)], full: false))",
                     "flags \(flagNames.joined(separator: " ")) (\(String(format: "0x%02x", flags)))",
                     "signCount \(counter)"]
        var position = start + 37
        if flags & 0x40 != 0 {
            guard range.upperBound - position >= 18 else { return parts.joined(separator: ", ") + ", truncated attested credential data" }
            let aaguid = Hex.encode(Array(bytes[position..<(position + 16)]))
            let idLength = Int(bytes[position + 16]) << 8 | Int(bytes[position + 17])
            position += 18
            guard range.upperBound - position >= idLength else { return parts.joined(separator: ", ") + ", truncated credential ID" }
            parts.append("aaguid \(aaguid)")
            let credentialID = bytes[position..<(position + idLength)]
            parts.append("credentialId \(hexText(credentialID, full: full))"
                         + (full || idLength <= shortByteStringLimit ? " (\(idLength) bytes)" : ""))
            position += idLength
            guard let key = CBORLayout.parse(Array(bytes[..<range.upperBound]), at: position) else {
                return parts.joined(separator: ", ") + ", undecodable credential public key"
            }
            parts.append("credentialPublicKey \(diagnostic(key, in: bytes, redactions: redactions, full: full))")
            position = key.range.upperBound
        }
        if flags & 0x80 != 0 {
            if let extensions = CBORLayout.parse(Array(bytes[..<range.upperBound]), at: position) {
                parts.append("extensions \(diagnostic(extensions, in: bytes, redactions: redactions, full: full))")
                position = extensions.range.upperBound
            } else {
                parts.append("extensions " + bytesText(bytes, position..<range.upperBound, redactions: redactions, full: full))
                position = range.upperBound
            }
        }
        if position < range.upperBound { parts.append("\(range.upperBound - position) trailing bytes") }
        return parts.joined(separator: ", ")
    }

    // MARK: Names

    static func hidCommandName(_ command: UInt8) -> String {
        if let known = CTAPHIDCommand(rawValue: command) { return known.name }
        return CTAPHIDCommand.isVendor(command) ? String(format: "VENDOR 0x%02x", command) : String(format: "0x%02x", command)
    }

    static func hidErrorName(_ code: UInt8) -> String {
        CTAPHIDError(rawValue: code)?.name ?? String(format: "error 0x%02x", code)
    }

    static func keepaliveName(_ status: UInt8?) -> String {
        switch status.flatMap(KeepaliveStatus.init(rawValue:)) {
        case .processing: "PROCESSING"
        case .userPresenceNeeded: "UPNEEDED"
        case nil: status.map { String(format: "status 0x%02x", $0) } ?? "(no status)"
        }
    }

    static func statusWordName(_ word: UInt16) -> String? {
        switch U2FStatusWord(rawValue: word) {
        case .noError: "SW_NO_ERROR"
        case .conditionsNotSatisfied: "SW_CONDITIONS_NOT_SATISFIED"
        case .wrongData: "SW_WRONG_DATA"
        case .wrongLength: "SW_WRONG_LENGTH"
        case .claNotSupported: "SW_CLA_NOT_SUPPORTED"
        case .insNotSupported: "SW_INS_NOT_SUPPORTED"
        case nil: nil
        }
    }
}
