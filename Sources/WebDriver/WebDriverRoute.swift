/// What the intermediary does with one WebDriver request: the commands it answers itself (the
/// WebAuthn extension's, WebAuthn Level 3 §11.4–11.11, and Chromium's Set Credential Properties),
/// the two it watches on their way to the driver (New Session, Delete Session: a session's keys
/// live and die with it), and everything else, passed on unchanged.
public enum WebDriverRoute: Equatable, Sendable {
    case newSession
    case deleteSession(String)
    case virtualAuthenticator(session: String, VirtualAuthenticatorCommand)
    /// A path under `/session/{id}/webauthn/` that names no command, or names one with another method.
    case unknownWebAuthn(session: String, methodAllowed: Bool)
    /// `POST /session/{id}/latchkey/rig`: a rig request on one of the session's keys (Latchkey's
    /// vendor extension command, as `goog/…` and `moz/…` are Chromium's and Firefox's).
    case rigRequest(session: String)
    case forward

    public init(method: String, segments: [String]) {
        switch (method, segments.count) {
        case ("POST", 1) where segments[0] == "session":
            self = .newSession
            return
        case ("DELETE", 2) where segments[0] == "session":
            self = .deleteSession(segments[1])
            return
        default:
            break
        }
        if segments.count == 4, segments[0] == "session", segments[2] == "latchkey", segments[3] == "rig" {
            self = method == "POST" ? .rigRequest(session: segments[1]) : .unknownWebAuthn(session: segments[1], methodAllowed: true)
            return
        }
        guard segments.count >= 3, segments[0] == "session", segments[2] == "webauthn" else {
            self = .forward
            return
        }
        let session = segments[1]
        switch Self.command(Array(segments.dropFirst(3)), method: method) {
        case .some(.some(let command)): self = .virtualAuthenticator(session: session, command)
        case .some(.none): self = .unknownWebAuthn(session: session, methodAllowed: true)
        case .none: self = .unknownWebAuthn(session: session, methodAllowed: false)
        }
    }

    /// The command a path under `webauthn/` names with `method`: nil when the path names none,
    /// `.some(nil)` when it names one that takes another method.
    private static func command(_ rest: [String], method: String) -> VirtualAuthenticatorCommand?? {
        guard rest.first == "authenticator" else { return nil }
        func expecting(_ wanted: String, _ command: VirtualAuthenticatorCommand) -> VirtualAuthenticatorCommand?? {
            .some(method == wanted ? command : nil)
        }
        switch (rest.count, rest.count > 2 ? rest[2] : "") {
        case (1, _): return expecting("POST", .addAuthenticator)
        case (2, _): return expecting("DELETE", .removeAuthenticator(rest[1]))
        case (3, "credential"): return expecting("POST", .addCredential(rest[1]))
        case (3, "uv"): return expecting("POST", .setUserVerified(rest[1]))
        case (3, "credentials"):
            // The one path two commands share.
            switch method {
            case "GET": return .some(.getCredentials(rest[1]))
            case "DELETE": return .some(.removeAllCredentials(rest[1]))
            default: return .some(nil)
            }
        case (4, "credentials"): return expecting("DELETE", .removeCredential(rest[1], credentialID: rest[3]))
        case (5, "credentials") where rest[4] == "props":
            return expecting("POST", .setCredentialProperties(rest[1], credentialID: rest[3]))
        default: return nil
        }
    }
}

/// The WebAuthn extension commands (WebAuthn Level 3 §11.4–11.11), each naming its authenticator.
public enum VirtualAuthenticatorCommand: Equatable, Sendable {
    case addAuthenticator
    case removeAuthenticator(String)
    case addCredential(String)
    case getCredentials(String)
    case removeCredential(String, credentialID: String)
    case removeAllCredentials(String)
    case setUserVerified(String)
    /// Chromium's extension command (also in Level 3's Set Credential Properties).
    case setCredentialProperties(String, credentialID: String)

    /// The authenticator the command names (none for Add Virtual Authenticator).
    public var authenticatorID: String? {
        switch self {
        case .addAuthenticator: nil
        case .removeAuthenticator(let id), .addCredential(let id), .getCredentials(let id), .removeAllCredentials(let id),
             .setUserVerified(let id), .removeCredential(let id, _), .setCredentialProperties(let id, _): id
        }
    }
}
