/// What the key is asking the user to confirm.
public struct PresenceRequest: Sendable, Equatable {
    public enum Operation: String, Sendable {
        case makeCredential = "register"
        case getAssertion = "sign in"
        case reset = "reset the key"
        case selection = "select this key"
        case u2fRegister = "U2F register"
        case u2fAuthenticate = "U2F sign in"
        case credentialExcluded = "confirm (already registered)"
        case touchProbe = "touch"
    }
    public var operation: Operation
    public var rpID: String?
    public var userName: String?
    /// How long to wait for the user before answering `.timedOut`.
    public var timeoutMilliseconds: UInt64

    public init(operation: Operation, rpID: String? = nil, userName: String? = nil, timeoutMilliseconds: UInt64) {
        self.operation = operation; self.rpID = rpID; self.userName = userName
        self.timeoutMilliseconds = timeoutMilliseconds
    }
}

/// The user's answer.
public enum PresenceResult: Sendable, Equatable {
    case approved
    case denied
    case timedOut
    case cancelled
}

/// The presence port: the "touch" of a hardware key. Implementations may block (a prompt,
/// a desktop notification, a control socket) and must return `.cancelled` promptly once
/// `cancellation` is set (CTAPHID_CANCEL, a client disconnecting).
public protocol UserPresence: Sendable {
    func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult
    /// True for providers that answer without waiting for anyone (`auto`, `deny`): the key then
    /// does not tell the client it is waiting for a touch (no KEEPALIVE UPNEEDED round).
    var answersImmediately: Bool { get }
}

extension UserPresence {
    public var answersImmediately: Bool { false }
}
