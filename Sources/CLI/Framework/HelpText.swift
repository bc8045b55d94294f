import Foundation

/// Help text laid out for a terminal: paragraphs wrapped at word boundaries, and two-column lists
/// (options, commands, examples) whose right column is wrapped beside — or, for a long left
/// entry, under — its left one, as click and clap lay them out.
public struct HelpText: Sendable {
    public var width: Int

    public init(width: Int = 80) { self.width = max(40, width) }

    /// The width help is laid out for: `COLUMNS` when it is a number (as git and less honour it),
    /// else the terminal's on standard output, else 80 (a pipe, a file, a man page). At most 100:
    /// longer lines are harder to read, not easier.
    public static func preferredWidth(environment: [String: String] = ProcessInfo.processInfo.environment,
                                      output: Int32 = STDOUT_FILENO) -> Int {
        if let text = environment["COLUMNS"], let columns = Int(text), columns > 0 { return min(max(columns, 40), 100) }
        var size = winsize()
        if isatty(output) == 1, ioctl(output, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            return min(max(Int(size.ws_col), 40), 100)
        }
        return 80
    }

    /// `text` wrapped to the width, every line starting with `indent` spaces (the first with
    /// `firstIndent`, when given). A word longer than a line stays whole on a line of its own.
    public func wrap(_ text: String, indent: Int = 0, firstIndent: Int? = nil) -> [String] {
        var lines: [String] = []
        var line = String(repeating: " ", count: firstIndent ?? indent)
        var lineHasWord = false
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            if lineHasWord, line.count + 1 + word.count > width {
                lines.append(line)
                line = String(repeating: " ", count: indent)
                lineHasWord = false
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        if lineHasWord || lines.isEmpty { lines.append(line) }
        return lines
    }

    /// Two columns: each left entry at two spaces, its right text wrapped in a column that starts
    /// after the longest left entry up to `maximumLeft` characters; a longer left entry has its
    /// text on the lines under it, in the same column.
    public func columns(_ rows: [(left: String, right: String)], maximumLeft: Int = 26) -> [String] {
        let leftWidth = min(rows.map(\.left.count).max() ?? 0, maximumLeft, width / 3)
        let column = 2 + leftWidth + 2
        var lines: [String] = []
        for row in rows {
            let left = "  " + row.left
            if row.right.isEmpty {
                lines.append(left)
            } else if row.left.count <= leftWidth {
                let padded = left.padding(toLength: column, withPad: " ", startingAt: 0)
                var wrapped = wrap(row.right, indent: column, firstIndent: column)
                wrapped[0] = padded + wrapped[0].dropFirst(column)
                lines += wrapped
            } else {
                lines.append(left)
                lines += wrap(row.right, indent: column)
            }
        }
        return lines
    }
}
