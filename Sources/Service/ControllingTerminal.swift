import Foundation
import FIDOCrypto

/// The process's controlling terminal, `/dev/tty`, opened for each question so that standard
/// input and output stay free for data (`latchkey credentials list --json > file` still asks on
/// the terminal). Secrets are read with echo off (termios); the terminal's settings come back
/// afterwards, also when SIGINT, SIGTERM or SIGHUP arrives mid-prompt.
public struct ControllingTerminal: UserTerminal {
    public let path: String

    /// nil when there is no terminal to open (a daemon, CI, `setsid`).
    public static func open(path: String = "/dev/tty") -> ControllingTerminal? {
        let fd = Glibc.open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        Glibc.close(fd)
        return ControllingTerminal(path: path)
    }

    public func confirm(_ prompt: String) -> Bool {
        let fd = Glibc.open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        tcflush(fd, TCIFLUSH)
        Self.write(fd, Array(prompt.utf8))
        guard var line = Self.readLine(fd) else { return false }
        defer { line.wipe() }
        let answer = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
        return answer == "y" || answer == "yes"
    }

    public func readSecret(_ prompt: String) -> [UInt8]? {
        let fd = Glibc.open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var saved = termios()
        let isTerminal = tcgetattr(fd, &saved) == 0
        if isTerminal {
            var quiet = saved
            // Echo off, but the Enter key still moves to a new line (ECHONL).
            quiet.c_lflag &= ~tcflag_t(ECHO | ECHOE | ECHOK)
            quiet.c_lflag |= tcflag_t(ECHONL)
            EchoRestorer.arm(fd: fd, settings: saved)
            tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer {
            if isTerminal {
                tcsetattr(fd, TCSAFLUSH, &saved)
                EchoRestorer.disarm()
            }
        }
        Self.write(fd, Array(prompt.utf8))
        return Self.readLine(fd)
    }

    /// Bytes up to a newline (not included) or end of input; nil at end of input with nothing read.
    static func readLine(_ fd: Int32) -> [UInt8]? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = Glibc.read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return line.isEmpty ? nil : line }
            if byte == 0x0A { break }
            line.append(byte)
        }
        if line.last == 0x0D { line.removeLast() }
        return line
    }

    static func write(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }
}

/// Puts the terminal's settings back if the process is killed by a signal while echo is off.
/// Signal handlers cannot capture context, so the settings live in process-wide state, written
/// only by the (single) prompting thread before the handlers are installed.
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
