import Encoding

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

    static func isActive(_ scalar: Unicode.Scalar) -> Bool { TerminalText.isActive(scalar) }

    static func escape(_ scalar: Unicode.Scalar) -> String { TerminalText.escape(scalar) }
}
