import Authenticator
import SystemIO

/// `--presence auto`: every request is approved at once. For test rigs only; `latchkey serve`
/// says so in its log at start.
public struct AutoPresence: UserPresence {
    let logger: Logger
    public var answersImmediately: Bool { true }
    public var selectsForUser: Bool { true }
    public init(logger: Logger) { self.logger = logger }
    public func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult {
        if cancellation.isCancelled { return .cancelled }
        logger.debug("presence auto-approved: \(request.operation.rawValue)")
        return .approved
    }
}

/// `--presence deny`: every request is refused (tests of the denial paths).
public struct DenyPresence: UserPresence {
    let logger: Logger
    public var answersImmediately: Bool { true }
    public init(logger: Logger) { self.logger = logger }
    public func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult {
        if cancellation.isCancelled { return .cancelled }
        logger.debug("presence denied by policy: \(request.operation.rawValue)")
        return .denied
    }
}
