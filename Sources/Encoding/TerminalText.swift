/// Text made safe for a terminal: the one rule for everything Latchkey prints that it did not
/// write itself (names from websites, answers from sockets, fields of files).
///
/// A terminal acts on control characters: `ESC ] 52 ; c ; … BEL` writes the clipboard, `CR` and
/// `ESC [ 2K` overwrite what was shown, a right-to-left override shows an RP other than the real
/// one. So every such scalar is written as a visible escape instead of acting.
public enum TerminalText {
    /// Control characters (C0, DEL, C1), line/paragraph separators, the bidirectional
    /// formatting characters (ALM, LRM, RLM, the embeddings and overrides, the isolates), and the
    /// invisible ones that make two names look alike (soft hyphen, zero-width space, word joiner
    /// and invisible operators, BOM, tag characters).
    public static func isActive(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        case 0x00AD, 0x200B, 0x2060...0x2064, 0xFEFF, 0xE0000...0xE007F: true
        default: false
        }
    }

    /// `\x1B` below U+0100, `\u{202E}` above: what a Swift or Rust string literal would say.
    public static func escape(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return scalar.value < 0x100 ? "\\x" + (hex.count == 1 ? "0" + hex : hex) : "\\u{" + hex + "}"
    }

    /// A whole message or listing as it may reach a terminal: line feeds and tabs kept (the
    /// message's own layout), every other active scalar escaped. Backslashes are kept as they
    /// are (paths, JSON); text from outside that must not pass for an escape is quoted field by
    /// field before it is put into a message (`DisplayText.safe` in Authenticator).
    public static func lines(_ text: String) -> String {
        replacingActive(in: text, keeping: ["\n", "\t"], with: escape)
    }

    /// One line as it may reach a terminal or a log: like `lines`, but a line feed is escaped
    /// too, so a message cannot fake a line of its own.
    public static func line(_ text: String) -> String {
        replacingActive(in: text, keeping: ["\t"], with: escape)
    }

    /// JSON text as it may reach a terminal: every active scalar but line feed and tab written
    /// as a JSON escape (`\u001b`, `\u202e`, a surrogate pair above U+FFFF). In valid JSON such
    /// scalars can only stand inside strings, where the escape means the same scalar, so the
    /// document's meaning is unchanged.
    public static func json(_ text: String) -> String {
        replacingActive(in: text, keeping: ["\n", "\t"], with: jsonEscape)
    }

    /// `text` with every active scalar not in `kept` replaced by `replacement`'s text.
    static func replacingActive(in text: String, keeping kept: Set<Unicode.Scalar>,
                                with replacement: (Unicode.Scalar) -> String) -> String {
        guard text.unicodeScalars.contains(where: { isActive($0) && !kept.contains($0) }) else { return text }
        var shown = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isActive(scalar) && !kept.contains(scalar) {
                shown.append(contentsOf: replacement(scalar).unicodeScalars)
            } else {
                shown.append(scalar)
            }
        }
        return String(shown)
    }

    /// `\u001b`; two escapes (a surrogate pair) above U+FFFF.
    public static func jsonEscape(_ scalar: Unicode.Scalar) -> String {
        func unit(_ value: UInt32) -> String {
            let hex = String(value, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
        guard scalar.value > 0xFFFF else { return unit(scalar.value) }
        let value = scalar.value - 0x10000
        return unit(0xD800 + (value >> 10)) + unit(0xDC00 + (value & 0x3FF))
    }
}
