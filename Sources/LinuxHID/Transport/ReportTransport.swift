/// A source and sink of 64-byte CTAPHID reports driven by the caller's poll
/// loop: the loop waits on `pollDescriptors` (see `Poller`), calls
/// `readEvents(from:)` for each readable one and `send(_:to:)` for replies.
/// Implementations never block: a slow reader loses reports instead. They
/// are not thread-safe: one poll-loop thread owns a transport (worker threads
/// wake that loop with a `WakeupEvent`).
public protocol ReportTransport: AnyObject {
    /// File descriptors the poll loop should wait on for input.
    var pollDescriptors: [Int32] { get }
    /// Called when `fd` is readable: read everything available without
    /// blocking, return events. An `fd` that is not the transport's gives [].
    func readEvents(from fd: Int32) -> [TransportEvent]
    /// Send one 64-byte report to a connection (uhid: UHID_INPUT2). Must not
    /// block indefinitely: a socket client that does not read may lose
    /// reports (log-worthy) but never stalls the key.
    func send(_ report: [UInt8], to connection: TransportConnection)
    /// Send several reports to one connection, in order (a reply's fragments). Transports that
    /// can hand the kernel a batch in one call do (the socket: sendmmsg); the default sends each.
    func send(reports: [[UInt8]], to connection: TransportConnection)
    /// When the transport next wants `sendPending` called (CLOCK_MONOTONIC nanoseconds); nil
    /// while it holds nothing back. The poll loop waits no longer than this.
    var pendingSendDeadline: UInt64? { get }
    /// Hands over whatever pacing held back and is now due (uhid: the tail of a long reply).
    func sendPending(nowNanoseconds: UInt64)
    /// Close every descriptor (uhid: UHID_DESTROY first; socket: close
    /// clients, close + unlink the listening socket). Safe to call twice.
    func shutdown()
}

extension ReportTransport {
    public func send(reports: [[UInt8]], to connection: TransportConnection) {
        for report in reports { send(report, to: connection) }
    }

    public var pendingSendDeadline: UInt64? { nil }

    public func sendPending(nowNanoseconds: UInt64) {}
}

/// The size of every report, in both directions (CTAPHID packet size of a
/// full-speed USB HID device; docs/socket-transport.md: "exactly 64 bytes").
let reportSize = 64
