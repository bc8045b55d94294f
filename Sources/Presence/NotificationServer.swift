import Foundation
import SystemIO

/// What the desktop's notification server can do, asked once when `--presence notify` starts
/// (org.freedesktop.Notifications.GetCapabilities, through `dbus-send`, which every desktop with
/// a session bus has). A server without the `actions` capability shows no buttons and reports
/// no clicks, so an Approve/Deny notification there could only ever time out; the key then says
/// so and asks where it can be answered instead (KeyHost).
public enum NotificationServer {
    /// The capabilities the server reports; nil when they cannot be asked (no dbus-send, or no
    /// server answers on the session bus), with the reason.
    public static func capabilities(
        run: (String, [String]) -> (status: Int32, output: String)? = Self.run
    ) -> Result<[String], Failure> {
        guard let answer = run("dbus-send", ["--session", "--print-reply", "--reply-timeout=3000",
                                             "--dest=org.freedesktop.Notifications", "/org/freedesktop/Notifications",
                                             "org.freedesktop.Notifications.GetCapabilities"]) else {
            return .failure(Failure(description: "dbus-send is not installed (Debian: dbus), so the notification server's "
                                    + "capabilities were not checked"))
        }
        guard answer.status == 0 else {
            return .failure(Failure(description: "no notification server answered GetCapabilities on the session bus ("
                                    + answer.output.trimmingCharacters(in: .whitespacesAndNewlines).prefix(200) + ")"))
        }
        return .success(parseCapabilities(answer.output))
    }

    public struct Failure: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// The strings of `dbus-send --print-reply`'s array: lines `string "actions"`.
    static func parseCapabilities(_ output: String) -> [String] {
        output.split(whereSeparator: \.isNewline).compactMap { line -> String? in
            let text = line.trimmingCharacters(in: .whitespaces)
            guard text.hasPrefix("string \""), text.hasSuffix("\""), text.count >= 9 else { return nil }
            return String(text.dropFirst(8).dropLast())
        }
    }

    /// Runs `command` from PATH with a bounded wait; nil when it cannot be started.
    public static func run(_ command: String, _ arguments: [String]) -> (status: Int32, output: String)? {
        guard let path = ChildProcessRunner.locate(command) else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
