import Glibc

/// `poll(2)` for the key's event loop and every other wait on descriptors.
public enum Poller {
    /// Waits until one of `fds` is readable, hung up or in error, or the
    /// timeout passes (−1: no timeout); returns those descriptors (empty on
    /// timeout), in the order given. EINTR is retried with the time left.
    /// Negative entries in `fds` are ignored, as poll(2) does.
    public static func wait(for fds: [Int32], timeoutMilliseconds: Int32) throws(Errno) -> [Int32] {
        var set = PollSet()
        return try set.wait(for: fds, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Waits until `fd` has one of `events` (POLLIN, POLLOUT, …) or the timeout passes; returns
    /// the `revents` poll(2) reported (0 on timeout). EINTR is retried with the time left.
    public static func wait(for fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(Errno) -> Int16 {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        let deadline = timeoutMilliseconds >= 0 ? monotonicMilliseconds() + Int64(timeoutMilliseconds) : nil
        var timeout = timeoutMilliseconds
        while true {
            let ready = poll(&entry, 1, timeout)
            if ready >= 0 { return ready == 0 ? 0 : entry.revents }
            let error = Errno.current
            guard error == .interrupted else { throw error }
            if let deadline { timeout = Int32(clamping: max(0, deadline - monotonicMilliseconds())) }
        }
    }

    /// poll(2) on `entries` as given (each with its own `events`), filling in `revents`; EINTR
    /// is retried with the time left. For loops that wait for writability too (the uhid broker).
    public static func wait(_ entries: inout [pollfd], timeoutMilliseconds: Int32) throws(Errno) {
        let deadline = timeoutMilliseconds >= 0 ? monotonicMilliseconds() + Int64(timeoutMilliseconds) : nil
        var timeout = timeoutMilliseconds
        while true {
            if poll(&entries, nfds_t(entries.count), timeout) >= 0 { return }
            let error = Errno.current
            guard error == .interrupted else { throw error }
            if let deadline { timeout = Int32(clamping: max(0, deadline - monotonicMilliseconds())) }
        }
    }

    private static func monotonicMilliseconds() -> Int64 { Int64(MonotonicClock.milliseconds()) }
}

/// A poll loop's reusable waiting set: the `pollfd` entries and the ready list are kept from one
/// wait to the next, so a turn of the loop allocates nothing while its descriptors stay the same.
public struct PollSet {
    private var entries: [pollfd] = []
    private var ready: [Int32] = []

    public init() {}

    /// Waits until one of `descriptors` (then `extra`, if given) is readable, hung up or in
    /// error, or the timeout passes (−1: no timeout); returns those descriptors (empty on
    /// timeout), in that order. EINTR is retried with the time left. Negative descriptors are
    /// ignored, as poll(2) does.
    public mutating func wait(for descriptors: [Int32], and extra: Int32? = nil,
                              timeoutMilliseconds: Int32) throws(Errno) -> [Int32] {
        entries.removeAll(keepingCapacity: true)
        for descriptor in descriptors { entries.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)) }
        if let extra { entries.append(pollfd(fd: extra, events: Int16(POLLIN), revents: 0)) }
        try Poller.wait(&entries, timeoutMilliseconds: timeoutMilliseconds)
        let wanted = Int16(POLLIN | POLLHUP | POLLERR | POLLNVAL)
        ready.removeAll(keepingCapacity: true)
        for entry in entries where entry.revents & wanted != 0 { ready.append(entry.fd) }
        return ready
    }
}
