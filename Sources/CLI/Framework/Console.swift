import Encoding
import FIDOClient
import Foundation
import Synchronization

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

    /// Whether the command was run with `--json`: then an error is also a JSON document on
    /// standard output, `{"error": {"code": "usage"|"failure", "message": …}}`, so a script that
    /// parses stdout gets one whatever happened (the exit status is the same: 64 or 1).
    static let jsonErrors = Mutex<Bool>(false)

    /// An error: `Error: message` (and the usage line, for a usage error) on standard error,
    /// and with `--json` the error document on standard output too.
    static func error(_ message: String, usage: String? = nil) {
        err("Error: \(message)" + (usage.map { "\n" + $0 } ?? ""))
        if jsonErrors.withLock({ $0 }) { json(errorDocument(message, usage: usage != nil)) }
    }

    static func errorDocument(_ message: String, usage: Bool) -> String {
        JSONValue.object([("error", .object([("code", .string(usage ? "usage" : "failure")),
                                             ("message", .string(message))]))]).rendered
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
