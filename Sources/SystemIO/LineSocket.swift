import Glibc

/// Blocking helpers for a line protocol over a UNIX stream socket, at both ends: the key's
/// control socket and the rig's control API (a request is one line; answers are lines).
public enum LineSocket {
    /// Reads until a newline (returned without it), end of stream, the size limit or the timeout.
    public static func readLine(from descriptor: FileDescriptor, timeoutMilliseconds: Int32,
                                maximumLength: Int) -> [UInt8]? {
        var line: [UInt8] = []
        let deadline = MonotonicClock.milliseconds() + UInt64(max(timeoutMilliseconds, 0))
        while line.count <= maximumLength {
            let now = MonotonicClock.milliseconds()
            guard now < deadline,
                  let events = try? Poller.wait(for: descriptor.rawValue, events: Int16(POLLIN),
                                                timeoutMilliseconds: Int32(clamping: deadline - now)), events != 0,
                  let chunk = try? descriptor.receive(upToCount: 512), !chunk.isEmpty else { return nil }
            // Read no further than the first newline's packet; a request is one line.
            if let newline = chunk.firstIndex(of: UInt8(ascii: "\n")) {
                return line + chunk[..<newline]
            }
            line += chunk
        }
        return nil
    }

    /// Writes all of `bytes` (MSG_NOSIGNAL: a vanished peer is an error, not SIGPIPE).
    @discardableResult
    public static func write(_ bytes: [UInt8], to descriptor: FileDescriptor) -> Bool {
        var written = 0
        while written < bytes.count {
            guard let count = try? descriptor.send(Array(bytes[written...]), flags: Int32(MSG_NOSIGNAL)) else { return false }
            written += count
        }
        return true
    }

    /// Whether the peer has closed its end (EOF or an error on the socket), without consuming input.
    public static func peerClosed(_ descriptor: FileDescriptor) -> Bool {
        guard let events = try? Poller.wait(for: descriptor.rawValue, events: Int16(POLLIN), timeoutMilliseconds: 0),
              events != 0 else { return false }
        if events & Int16(POLLERR | POLLNVAL) != 0 { return true }
        do {
            return try descriptor.receive(upToCount: 1, flags: Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)).isEmpty
        } catch {
            return error != .wouldBlock
        }
    }
}
