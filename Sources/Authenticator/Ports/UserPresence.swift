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
    public var timeoutMilliseconds: UInt64
    /// SHA-256 of the RP ID — or, for U2F, the application parameter (which clients make the
    /// SHA-256 of the RP ID or AppID): what `latchkey approve --rp` matches.
    public var rpIDHash: [UInt8]?
    /// SHA-256 of what makes this request this one (U2F: the APDU data, challenge and
    /// application included; CTAP2: the clientDataHash). A U2F client polls by sending the same
    /// APDU again: the same fingerprint is the same request, another is another app's request.
    public var fingerprint: [UInt8]?

    public init(operation: Operation, rpID: String? = nil, userName: String? = nil, timeoutMilliseconds: UInt64,
                rpIDHash: [UInt8]? = nil, fingerprint: [UInt8]? = nil) {
        self.operation = operation; self.rpID = rpID; self.userName = userName
        self.timeoutMilliseconds = timeoutMilliseconds
        self.rpIDHash = rpIDHash; self.fingerprint = fingerprint
    }

    /// Whether `other` is this request again (a U2F client's next poll): same operation, RP and
    /// fingerprint.
    public func isRepeated(by other: PresenceRequest) -> Bool {
        operation == other.operation && rpID == other.rpID && rpIDHash == other.rpIDHash && fingerprint == other.fingerprint
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
    /// True for a provider that stands in for its user altogether (`auto`): the key may then
    /// report the only account as selected on the key (getAssertion userSelected).
    var selectsForUser: Bool { get }
}

extension UserPresence {
    public var answersImmediately: Bool { false }
    public var selectsForUser: Bool { false }
}
