import Glibc

/// A terminal device (`/dev/tty`), opened O_RDWR | O_NOCTTY for one question: the text is
/// written and the answer read through it, with echo off for secrets (termios). The settings
/// come back afterwards, also when SIGINT, SIGTERM, SIGHUP or SIGQUIT arrives mid-question.
public final class Terminal {
    public let path: String
    private let descriptor: FileDescriptor

    /// Opens `path`; throws when there is no terminal (a daemon, CI, `setsid`).
    public init(path: String = "/dev/tty") throws(Errno) {
        self.path = path
        descriptor = try FileDescriptor.open(path, flags: O_RDWR | O_NOCTTY)
    }

    /// Whether a terminal can be opened at `path`.
    public static func isAvailable(path: String = "/dev/tty") -> Bool {
        (try? Terminal(path: path)) != nil
    }

    /// Drops input typed before the question (tcflush TCIFLUSH).
    public func discardPendingInput() {
        tcflush(descriptor.rawValue, TCIFLUSH)
    }

    /// Writes all of `text`; a terminal that went away is ignored (the answer read fails).
    public func write(_ text: String) {
        try? descriptor.writeAll(Array(text.utf8))
    }

    /// Bytes up to a newline (not included; a trailing CR is dropped too) or end of input;
    /// nil at end of input with nothing read. Read a byte at a time: nothing after the line
    /// is consumed.
    public func readLine() -> [UInt8]? {
        var line: [UInt8] = []
        while true {
            guard let byte = try? descriptor.read(upToCount: 1).first else {
                return line.isEmpty ? nil : line
            }
            if byte == 0x0A { break }
            line.append(byte)
        }
        if line.last == 0x0D { line.removeLast() }
        return line
    }

    /// Waits up to `timeoutMilliseconds` for input, then reads what is there (at most
    /// `capacity` bytes): nil when nothing came in time, an empty array at end of input.
    public func read(upToCount capacity: Int, timeoutMilliseconds: Int32) -> [UInt8]? {
        guard let events = try? Poller.wait(for: descriptor.rawValue, events: Int16(POLLIN),
                                           timeoutMilliseconds: timeoutMilliseconds), events != 0 else { return nil }
        return (try? descriptor.read(upToCount: capacity)) ?? []
    }

    /// Runs `body` with echo off (the Enter key still moves to a new line: ECHONL). Not a
    /// terminal (a file or pipe at `path`): `body` runs as it is.
    public func withEchoDisabled<Result>(_ body: () -> Result) -> Result {
        let fd = descriptor.rawValue
        var saved = termios()
        guard tcgetattr(fd, &saved) == 0 else { return body() }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO | ECHOE | ECHOK)
        quiet.c_lflag |= tcflag_t(ECHONL)
        EchoRestorer.arm(fd: fd, settings: saved)
        tcsetattr(fd, TCSAFLUSH, &quiet)
        defer {
            tcsetattr(fd, TCSAFLUSH, &saved)
            EchoRestorer.disarm()
        }
        return body()
    }
}

/// Puts the terminal's settings back if the process is killed by a signal while echo is off.
/// Signal handlers cannot capture context, so the settings live in process-wide state, written
/// only by the (single) prompting thread before the handlers are installed. The handler makes
/// only async-signal-safe calls (tcsetattr, write, signal, raise).
private enum EchoRestorer {
    nonisolated(unsafe) static var fd: Int32 = -1
    nonisolated(unsafe) static var settings = termios()
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    static func arm(fd: Int32, settings: termios) {
        Self.settings = settings
        Self.fd = fd
        for number in signals {
            signal(number) { received in
                if EchoRestorer.fd >= 0 {
                    tcsetattr(EchoRestorer.fd, TCSANOW, &EchoRestorer.settings)
                    _ = Glibc.write(EchoRestorer.fd, "\n", 1)
                }
                signal(received, SIG_DFL)
                raise(received)
            }
        }
    }

    static func disarm() {
        for number in signals { signal(number, SIG_DFL) }
        fd = -1
    }
}
