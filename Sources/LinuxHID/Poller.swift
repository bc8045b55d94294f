import Glibc

/// `poll(2)` for the key's event loop.
public enum Poller {
    /// Waits until one of `fds` is readable, hung up or in error, or the
    /// timeout passes (−1: no timeout); returns those descriptors (empty on
    /// timeout), in the order given. EINTR is retried with the time left.
    /// Negative entries in `fds` are ignored, as poll(2) does.
    public static func wait(for fds: [Int32], timeoutMilliseconds: Int32) throws(TransportError) -> [Int32] {
        var entries = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let deadline = timeoutMilliseconds >= 0
            ? monotonicMilliseconds() + Int64(timeoutMilliseconds) : nil
        var timeout = timeoutMilliseconds
        while true {
            let ready = poll(&entries, nfds_t(entries.count), timeout)
            if ready >= 0 { break }
            let error = Errno.current
            guard error == .interrupted else {
                throw TransportError(error, call: "poll")
            }
            if let deadline {
                timeout = Int32(clamping: max(0, deadline - monotonicMilliseconds()))
            }
        }
        let wanted = Int16(POLLIN | POLLHUP | POLLERR | POLLNVAL)
        return entries.filter { $0.revents & wanted != 0 }.map(\.fd)
    }

    private static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
