import Encoding
import Glibc
import Synchronization

/// Leveled logging to standard error. Messages name commands, status codes, sizes and request
/// ids, never key material, PINs, tokens, salts, request payloads — nor RP IDs or user names:
/// a log is kept, rotated and shared for debugging, and where a user signs in is theirs
/// (issue 16's secrets scan). `latchkey presence status` shows the RP to whoever holds the
/// control socket.
public final class Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case error = 0, warning, info, debug, trace
        public init?(name: String) {
            switch name.lowercased() {
            case "error": self = .error
            case "warning", "warn": self = .warning
            case "info": self = .info
            case "debug": self = .debug
            case "trace": self = .trace
            default: return nil
            }
        }
        public var name: String {
            switch self {
            case .error: "error"
            case .warning: "warning"
            case .info: "info"
            case .debug: "debug"
            case .trace: "trace"
            }
        }
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public let level: Level
    private let sink: @Sendable (String) -> Void
    private let lock = Mutex(())

    public init(level: Level = .info, sink: (@Sendable (String) -> Void)? = nil) {
        self.level = level
        self.sink = sink ?? { line in Self.writeStandardError(line + "\n") }
    }

    public func log(_ messageLevel: Level, _ message: @autoclosure () -> String) {
        guard messageLevel <= level else { return }
        let stamp = Self.timestamp()
        // One line per message, nothing a terminal acts on: messages carry paths, errors and
        // names from outside, and a log is read on terminals.
        let line = "\(stamp) latchkey[\(messageLevel.name)] \(TerminalText.line(message()))"
        lock.withLock { _ in sink(line) }
    }

    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }
    public func warning(_ message: @autoclosure () -> String) { log(.warning, message()) }
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
    public func trace(_ message: @autoclosure () -> String) { log(.trace, message()) }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return twoDigits(parts.tm_hour) + ":" + twoDigits(parts.tm_min) + ":" + twoDigits(parts.tm_sec) + "."
            + String(String(1000 + Int(now.tv_nsec / 1_000_000)).dropFirst())
    }

    private static func twoDigits(_ value: Int32) -> String {
        value < 10 ? "0" + String(value) : String(value)
    }

    /// The default sink: the whole line in one write(2) where it fits, so lines of concurrent
    /// writers do not interleave; standard error that is gone is not an error worth a crash.
    private static func writeStandardError(_ line: String) {
        let bytes = Array(line.utf8)
        var offset = 0
        while offset < bytes.count {
            let start = offset
            guard let written = try? Errno.retryingInterrupts({
                bytes.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress! + start, $0.count - start) }
            }), written > 0 else { return }
            offset += written
        }
    }
}
