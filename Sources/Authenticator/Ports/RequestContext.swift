/// What the transport tells the authenticator about one request, and how the authenticator
/// reports progress back (KEEPALIVE status).
public struct RequestContext: Sendable {
    /// The status the transport should put in KEEPALIVE packets.
    public enum Status: Sendable, Equatable {
        case processing
        case userPresenceNeeded
    }

    /// The CTAPHID channel (GetNextAssertion and credential-management GetNext state are
    /// bound to the channel that started them).
    public var channel: UInt32
    public var cancellation: CancellationFlag
    public var reportStatus: @Sendable (Status) -> Void

    public init(channel: UInt32, cancellation: CancellationFlag = CancellationFlag(),
                reportStatus: @escaping @Sendable (Status) -> Void = { _ in }) {
        self.channel = channel
        self.cancellation = cancellation
        self.reportStatus = reportStatus
    }
}
