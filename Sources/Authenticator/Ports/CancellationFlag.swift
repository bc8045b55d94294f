import Synchronization

/// Set by the transport when a request must stop (CTAPHID_CANCEL, the client went away);
/// read by the authenticator and by blocking presence providers.
public final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    public init() {}
    public func cancel() { flag.store(true, ordering: .releasing) }
    public var isCancelled: Bool { flag.load(ordering: .acquiring) }
}
