/// A JSON string literal (RFC 8259 §7): quote, backslash and every scalar a terminal would act
/// on (`TerminalText.isActive`: C0, DEL, C1, bidirectional and invisible formatting) escaped,
/// everything else as is — so JSON printed to a terminal is safe as it is. CBOR diagnostic
/// notation writes text strings this way (RFC 8949 §8), and so does the CLI's `--json` output.
public enum JSONStringLiteral {
    /// Appends `text` quoted to `out`.
    public static func append(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if TerminalText.isActive(scalar) {
                    out += TerminalText.jsonEscape(scalar)
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
