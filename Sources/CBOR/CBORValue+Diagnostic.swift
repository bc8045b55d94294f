import Encoding
// CBOR diagnostic notation (RFC 8949 §8) for human-readable traces.
// Map entries are printed in canonical key order so output is deterministic.

extension CBORValue: CustomStringConvertible {
    public var description: String {
        var out = ""
        writeDiagnostic(into: &out)
        return out
    }

    private func writeDiagnostic(into out: inout String) {
        switch self {
        case .unsignedInt(let n):
            out += String(n)
        case .negativeInt(let n):
            // -1 - n; for n == UInt64.max this is -2^64, which no Swift integer holds.
            out += n == .max ? "-18446744073709551616" : "-" + String(n + 1)
        case .byteString(let bytes):
            out += "h'"
            for byte in bytes {
                out += JSONStringLiteral.hexDigits[Int(byte >> 4)]
                out += JSONStringLiteral.hexDigits[Int(byte & 0x0f)]
            }
            out += "'"
        case .textString(let text):
            JSONStringLiteral.append(text, to: &out)
        case .array(let elements):
            out += "["
            for (i, element) in elements.enumerated() {
                if i > 0 { out += ", " }
                element.writeDiagnostic(into: &out)
            }
            out += "]"
        case .map(let entries):
            let sorted = entries.map { (key: $0.key.encoded(), entry: $0) }
                .sorted { CBORValue.canonicalKeyPrecedes($0.key, $1.key) }
            out += "{"
            for (i, item) in sorted.enumerated() {
                if i > 0 { out += ", " }
                item.entry.key.writeDiagnostic(into: &out)
                out += ": "
                item.entry.value.writeDiagnostic(into: &out)
            }
            out += "}"
        case .boolean(let b):
            out += b ? "true" : "false"
        case .null:
            out += "null"
        case .undefined:
            out += "undefined"
        case .simple(let v):
            out += "simple(\(v))"
        case .float(let d):
            out += CBORValue.diagnosticFloat(d)
        }
    }

    /// Floats as in RFC 8949 Appendix A: "1.5", "1.0e+300", "5.960464477539063e-8",
    /// "Infinity", "-Infinity", "NaN".
    private static func diagnosticFloat(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        let text = d.description
        guard let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) else {
            return text.contains(".") ? text : text + ".0"
        }
        var mantissa = String(text[..<e])
        if !mantissa.contains(".") { mantissa += ".0" }
        var exponent = Substring(text[text.index(after: e)...])
        var sign = ""
        if let first = exponent.first, first == "+" || first == "-" {
            sign = String(first)
            exponent = exponent.dropFirst()
        }
        let digits = exponent.drop(while: { $0 == "0" })
        return mantissa + "e" + sign + (digits.isEmpty ? "0" : String(digits))
    }
}
