import Foundation
import FIDOCrypto
import SystemIO

/// The process's controlling terminal, `/dev/tty`, opened for each question so that standard
/// input and output stay free for data (`latchkey credentials list --json > file` still asks on
/// the terminal). Secrets are read with echo off; SystemIO's `Terminal` puts the settings back
/// afterwards, also when a signal arrives mid-prompt.
public struct ControllingTerminal: UserTerminal {
    public let path: String

    /// nil when there is no terminal to open (a daemon, CI, `setsid`).
    public static func open(path: String = "/dev/tty") -> ControllingTerminal? {
        Terminal.isAvailable(path: path) ? ControllingTerminal(path: path) : nil
    }

    public func confirm(_ prompt: String) -> Bool {
        guard let terminal = try? Terminal(path: path) else { return false }
        terminal.discardPendingInput()
        terminal.write(prompt)
        guard var line = terminal.readLine() else { return false }
        defer { line.wipe() }
        let answer = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
        return answer == "y" || answer == "yes"
    }

    public func readSecret(_ prompt: String) -> [UInt8]? {
        guard let terminal = try? Terminal(path: path) else { return nil }
        return terminal.withEchoDisabled {
            terminal.write(prompt)
            return terminal.readLine()
        }
    }
}
