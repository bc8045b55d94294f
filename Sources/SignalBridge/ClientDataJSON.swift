import Encoding

/// The client data a WebAuthn client signs over (WebAuthn L3 §5.8.1), serialized as §5.8.1.1
/// says: `{"type":…,"challenge":…,"origin":…,"crossOrigin":…}` in that order, with strings
/// written by CCDToString. A relying party may check the prefix byte for byte (the "limited
/// verification algorithm" of §5.8.1.2), so members are never reordered or padded.
public enum ClientDataJSON {
    public enum Ceremony: String, Sendable {
        case create = "webauthn.create"
        case get = "webauthn.get"
    }

    /// The UTF-8 bytes. `topOrigin` is written only for a cross-origin call, as the
    /// specification has it (Latchkey's provider answers top-level frames only, so never yet).
    public static func serialize(_ ceremony: Ceremony, challenge: [UInt8], origin: String,
                                 crossOrigin: Bool = false, topOrigin: String? = nil) -> [UInt8] {
        var out = "{\"type\":" + ccdToString(ceremony.rawValue)
        out += ",\"challenge\":" + ccdToString(Base64URL.encode(challenge))
        out += ",\"origin\":" + ccdToString(origin)
        out += ",\"crossOrigin\":" + (crossOrigin ? "true" : "false")
        if crossOrigin, let topOrigin { out += ",\"topOrigin\":" + ccdToString(topOrigin) }
        return Array((out + "}").utf8)
    }

    /// CCDToString (§5.8.1.1): a quote, then each code point — U+0020, U+0021, U+0023–U+005B and
    /// U+005D–U+10FFFF as themselves, `"` and `\` escaped with a backslash, everything else
    /// (the C0 controls) as `\u` and four lowercase hex digits — then a quote. Unlike a JSON
    /// encoder it leaves U+007F and every non-ASCII character alone and never writes `\n`.
    public static func ccdToString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x20...: out.unicodeScalars.append(scalar)
            default:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return out + "\""
    }
}
