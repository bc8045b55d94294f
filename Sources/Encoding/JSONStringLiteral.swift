/// A JSON string literal (RFC 8259 §7): quote, backslash and the C0 control characters escaped,
/// everything else as is. CBOR diagnostic notation writes text strings this way (RFC 8949 §8),
/// and so does the CLI's `--json` output (Service/JSONValue).
public enum JSONStringLiteral {
    /// Appends `text` quoted to `out`; `escapingDelete` also writes U+007F as \u007f (the
    /// diagnostic notation does, for terminals).
    public static func append(_ text: String, to out: inout String, escapingDelete: Bool = false) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || (escapingDelete && scalar.value == 0x7f) {
                    out += "\\u00"
                    out += hexDigits[Int(scalar.value >> 4)]
                    out += hexDigits[Int(scalar.value & 0x0f)]
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }

    public static let hexDigits: [String] = [
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f",
    ]
}
