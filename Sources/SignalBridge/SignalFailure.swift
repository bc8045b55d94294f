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
        }
    }

    public var message: String {
        switch self {
        case .security(let text), .type(let text), .notFound(let text), .quotaExceeded(let text), .internal(let text),
             .notAllowed(let text), .invalidState(let text), .notSupported(let text): text
        }
    }
}
