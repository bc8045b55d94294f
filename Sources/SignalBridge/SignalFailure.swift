import FIDOClient
import Encoding

/// Why a signal was refused, named as the host's reply names it (docs/native-host.md): the DOMException names a page would see for the same fault.
public enum SignalFailure: Error, Equatable, Sendable {
    /// The origin is not secure, or the RP ID is not the origin's host or a registrable suffix
    /// of it, or it is a public suffix.
    case security(String)
    /// A member is missing, of the wrong type, or not base64url.
    case type(String)
    /// The store holds no credential the signal names; nothing changed.
    case notFound(String)
    /// Over the per-origin rate limit; nothing was done.
    case quotaExceeded(String)
    /// The host could not do its part (the store or the public suffix list).
    case `internal`(String)
    /// A passkey request the user or the key refused, that timed out, or that the key cannot
    /// serve (WebAuthn's catch-all, which says no more to the page than that).
    case notAllowed(String)
    /// makeCredential found one of excludeCredentials on the key.
    case invalidState(String)
    /// None of pubKeyCredParams is an algorithm the key makes.
    case notSupported(String)
    /// The ceremony needs the key's PIN and none (or a wrong one) was given: the reply carries
    /// `pin` so the extension's window can ask for it. A page sees NotAllowedError only if the
    /// person gives up.
    case pin(PINNeed)

    /// The reply's `error` member.
    public var name: String {
        switch self {
        case .security: "SecurityError"
        case .type: "TypeError"
        case .notFound: "NotFoundError"
        case .quotaExceeded: "QuotaExceededError"
        case .internal: "InternalError"
        case .notAllowed: "NotAllowedError"
        case .invalidState: "InvalidStateError"
        case .notSupported: "NotSupportedError"
        case .pin: "NotAllowedError"
        }
    }

    public var message: String {
        switch self {
        case .security(let text), .type(let text), .notFound(let text), .quotaExceeded(let text), .internal(let text),
             .notAllowed(let text), .invalidState(let text), .notSupported(let text): text
        case .pin(let need): need.message
        }
    }
}

/// What the passkey provider's window needs to ask for the key's PIN (docs/native-host.md).
public struct PINNeed: Equatable, Sendable {
    public enum State: String, Sendable {
        /// The key has a PIN and the ceremony verifies the user: no PIN was given.
        case required
        /// The PIN given was wrong (`retries` left).
        case wrong
        /// The PIN given is shorter than the key's minimum (nothing was sent; no retry used).
        case tooShort
        /// Three wrong PINs in a row: the key takes none until it is power-cycled (restarted).
        case powerCycle
        /// No retries left: only a reset of the key (which deletes its passkeys) unblocks it.
        case blocked
    }

    public var state: State
    public var retries: Int?
    public var minimumLength: Int?

    public init(state: State, retries: Int? = nil, minimumLength: Int? = nil) {
        self.state = state; self.retries = retries; self.minimumLength = minimumLength
    }

    /// Can the person try a PIN now?
    public var canRetry: Bool { state == .required || state == .wrong || state == .tooShort }

    public var message: String {
        let left = retries.map { " (\($0) attempt\($0 == 1 ? "" : "s") left before the key blocks its PIN)" } ?? ""
        switch state {
        case .required: return "the key wants its PIN\(left)"
        case .wrong: return "wrong PIN\(left)"
        case .tooShort: return "the key's PIN has at least \(minimumLength ?? PIN.defaultMinimumLength) characters"
        case .powerCycle: return "the key takes no more PIN attempts until it is restarted (three wrong PINs in a row)"
        case .blocked: return "the key's PIN is blocked: only a reset of the key, which deletes its passkeys, unblocks it"
        }
    }

    /// The reply's `pin` member: `{"state", "retries"?, "minLength"?}`.
    var json: JSONValue.Object {
        var reply = JSONValue.Object()
        reply.add("state", state.rawValue)
        if let retries { reply.add("retries", Int64(retries)) }
        if let minimumLength { reply.add("minLength", Int64(minimumLength)) }
        return reply
    }
}
