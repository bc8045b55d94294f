/// The client's end of a CTAPHID link: something that sends 64-byte reports to
/// a key and receives its 64-byte reports, with a timeout on every receive.
/// A hidraw node (`HIDRawDevice`) and a key's socket (`SocketClient`) are both
/// one, so a CTAPHID client (`latchkey probe`) runs unchanged over either, and
/// tests drive it with an in-memory fake.
public protocol ClientReportTransport: AnyObject {
    /// What the user named: `/dev/hidraw3`, or the socket path.
    var path: String { get }
    /// Sends one 64-byte report (no report-ID byte).
    func sendReport(_ report: [UInt8]) throws(TransportError)
    /// The next report from the key, or nil when none arrives within
    /// `timeoutMilliseconds` (−1: wait forever). A transport may hand back a
    /// packet that is not 64 bytes (a misbehaving peer); callers drop it.
    func receiveReport(timeoutMilliseconds: Int32) throws(TransportError) -> [UInt8]?
}

extension SocketClient: ClientReportTransport {
    public func sendReport(_ report: [UInt8]) throws(TransportError) {
        try send(report)
    }

    public func receiveReport(timeoutMilliseconds: Int32) throws(TransportError) -> [UInt8]? {
        try receive(timeoutMilliseconds: timeoutMilliseconds)
    }
}
