import Encoding
import Foundation

/// The CLI's only way to the terminal. Everything a command prints goes through
/// `TerminalText`, so no text that came from a socket, a file, a device or a website can act on
/// the terminal (write its clipboard, overwrite a line, reverse what is shown), whichever path
/// it took into a message. JSON goes through `json`, which escapes the JSON way and so keeps the
/// document valid. A source check (`ConsoleTests`) keeps `print` and direct writes out of the
/// CLI module.
enum Console {
    /// A line (or lines) on standard output.
    static func out(_ text: String) {
        write(TerminalText.lines(text) + "\n", to: .standardOutput)
    }

    /// A line (or lines) on standard error.
    static func err(_ text: String) {
        write(TerminalText.lines(text) + "\n", to: .standardError)
    }

    /// A JSON document on standard output.
    static func json(_ text: String) {
        write(TerminalText.json(text) + "\n", to: .standardOutput)
    }

    /// A file's bytes on standard output as they are (`export -o -`): for a pipe or a file, never
    /// shown as text (the commands that do this refuse a terminal first).
    static func raw(_ data: Data) {
        FileHandle.standardOutput.write(data)
    }

    private static func write(_ text: String, to handle: FileHandle) {
        handle.write(Data(text.utf8))
    }
}
