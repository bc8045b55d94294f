/// Text from relying parties and websites — RP IDs, user names, display names —, made safe to
/// show a person on a terminal, in a desktop notification or in the CLI's output (issue 14:
/// "what the user approves is what they see").
///
/// A site sets user names at registration and, through the Signal API, with no touch at all; a
/// name such as `"\u{1B}]52;c;…\u{07}"` written raw to a terminal sets its clipboard, and one with
/// a right-to-left override shows an RP or account other than the real one. So every control
/// character (C0, DEL, C1), line and paragraph separator, and bidirectional formatting character
/// is shown as a visible escape (`\x1B`, `\u{202E}`) instead of acting, and very long text is cut
/// (the RP ID comes first, so it is never pushed out of sight). JSON output needs none of this:
/// its encoder escapes every control character.
public enum DisplayText {
    /// The most characters of one field shown; longer text ends in "…".
    public static let maximumLength = 200

    /// `text` as it may be shown.
    public static func safe(_ text: String, limit: Int = maximumLength) -> String {
        var shown = ""
        var count = 0
        var scalars = 0
        for character in text {
            // Characters are counted as a person sees them; scalars too, or one character with a
            // thousand combining marks would draw over everything around it.
            scalars += character.unicodeScalars.count
            if count == limit || scalars > 4 * limit {
                shown += "…"
                break
            }
            count += 1
            // One escape per scalar that would act instead of showing; a character whose scalars
            // all show is kept whole (emoji sequences, combining marks).
            if character == "\\" {
                shown += "\\\\"   // so that no text can pass for an escape made here
            } else if character.unicodeScalars.contains(where: isActive) {
                for scalar in character.unicodeScalars { shown += isActive(scalar) ? escape(scalar) : String(scalar) }
            } else {
                shown.append(character)
            }
        }
        return shown
    }

    /// "register at example.com for alice": what a presence prompt, a notification and
    /// `latchkey approve` / `presence status` say of a request.
    public static func request(_ operation: String, rpID: String?, userName: String?) -> String {
        var text = safe(operation)
        if let rpID { text += " at " + safe(rpID) }
        if let userName, !userName.isEmpty { text += " for " + safe(userName) }
        return text
    }

    /// Control characters (C0, DEL, C1), line/paragraph separators, the bidirectional
    /// formatting characters (ALM, LRM, RLM, the embeddings and overrides, the isolates), and the
    /// invisible ones that make two names look alike (soft hyphen, zero-width space, word joiner
    /// and invisible operators, BOM, tag characters). Zero-width (non-)joiners inside a character
    /// (emoji sequences) are part of it; standing alone they are shown escaped.
    static func isActive(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        case 0x00AD, 0x200B, 0x2060...0x2064, 0xFEFF, 0xE0000...0xE007F: true
        default: false
        }
    }

    static func escape(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return scalar.value < 0x100 ? "\\x" + (hex.count == 1 ? "0" + hex : hex) : "\\u{" + hex + "}"
    }
}
