/// One open handle on the key: the uhid transport has a single connection,
/// 0 (the kernel merges every hidraw opener into it); the socket transport
/// numbers its accepted clients 1, 2, 3… and never reuses a number.
public typealias TransportConnection = Int

/// What a transport saw when its descriptor became readable.
public enum TransportEvent: Sendable, Equatable {
    /// One CTAPHID report: exactly 64 bytes, no report-ID byte.
    case report([UInt8], from: TransportConnection)
    case connectionOpened(TransportConnection)
    /// The client hung up (socket) or the last hidraw opener closed the node
    /// (uhid CLOSE): the caller cancels that connection's pending work.
    case connectionClosed(TransportConnection)
    /// A packet or output report of the wrong size was discarded; `size` is
    /// its true length. The caller logs it; the connection keeps working.
    case droppedPacket(size: Int, from: TransportConnection)
    /// A client was turned away (the socket transport's connection cap, or no file descriptor
    /// left to take it with): it sees end of stream at once instead of hanging in connect.
    /// `reason` is a phrase for the log.
    case connectionRefused(reason: String)
    /// The transport itself is gone and will not come back (the uhid broker hung up: it
    /// stopped, or refused what the key sent): the key stops, and exits with a failure so that
    /// its service manager starts it again. `reason` is a sentence for the log.
    case transportLost(reason: String)
    /// The transport went and came back at once (the uhid broker restarted while systemd kept
    /// its socket): the device is a new one, so every client's channels are gone, as after a
    /// replug (a `connectionClosed` comes first). `reason` is a sentence for the log.
    case transportRestored(reason: String)
    /// uhid START: a HID driver bound to the device.
    case deviceStarted
    /// uhid STOP: the HID driver let go of the device.
    case deviceStopped
}
