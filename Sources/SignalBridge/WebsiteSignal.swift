import CBOR
import CredentialStore
import Encoding

/// A website's signal as the host received it, every member checked (docs/native-host.md): `options` are the W3C dictionaries (WebAuthn L3 §5.1.10), IDs in
/// base64url without padding.
public enum WebsiteSignal: Equatable, Sendable {
    case unknownCredential(rpID: String, credentialID: [UInt8])
    case allAcceptedCredentials(rpID: String, userHandle: [UInt8], acceptedIDs: [[UInt8]])
    case currentUserDetails(rpID: String, userHandle: [UInt8], name: String, displayName: String)

    public var method: SignalMethod {
        switch self {
        case .unknownCredential: .unknownCredential
        case .allAcceptedCredentials: .allAcceptedCredentials
        case .currentUserDetails: .currentUserDetails
        }
    }

    public var rpID: String {
        switch self {
        case .unknownCredential(let rpID, _), .allAcceptedCredentials(let rpID, _, _), .currentUserDetails(let rpID, _, _, _): rpID
        }
    }

    /// The same signal for the RP ID the origin check settled on (its ASCII form).
    func with(rpID: String) -> WebsiteSignal {
        switch self {
        case .unknownCredential(_, let id): .unknownCredential(rpID: rpID, credentialID: id)
        case .allAcceptedCredentials(_, let user, let ids): .allAcceptedCredentials(rpID: rpID, userHandle: user, acceptedIDs: ids)
        case .currentUserDetails(_, let user, let name, let display):
            .currentUserDetails(rpID: rpID, userHandle: user, name: name, displayName: display)
        }
    }

    /// Limits beyond which a member is refused: a credential ID as CTAP bounds it, a user handle
    /// as WebAuthn does, names as the key's own user entity fields are kept.
    static let maximumCredentialIDBytes = 1023
    static let maximumUserHandleBytes = 64
    static let maximumNameBytes = 1024

    /// Reads `method` and `options` of a `signal` message; `TypeError` names the member at fault.
    init(method: JSONDocument?, options: JSONDocument?) throws(SignalFailure) {
        let name = try PasskeyJSON.string(method, "method")
        let options = JSONDocument.object(try PasskeyJSON.object(options, "options"))
        let rpID = try Self.string(options, "rpId", limit: 253 * 4)
        switch name {
        case SignalMethod.unknownCredential.rawValue:
            let id = try Self.base64url(options["credentialId"], "credentialId", limit: Self.maximumCredentialIDBytes)
            self = .unknownCredential(rpID: rpID, credentialID: id)
        case SignalMethod.allAcceptedCredentials.rawValue:
            let user = try Self.base64url(options["userId"], "userId", limit: Self.maximumUserHandleBytes)
            let list = try PasskeyJSON.array(options["allAcceptedCredentialIds"], "options.allAcceptedCredentialIds")
            var ids: [[UInt8]] = []
            ids.reserveCapacity(list.count)
            for (index, item) in list.enumerated() {
                ids.append(try Self.base64url(item, "allAcceptedCredentialIds[\(index)]", limit: Self.maximumCredentialIDBytes))
            }
            self = .allAcceptedCredentials(rpID: rpID, userHandle: user, acceptedIDs: ids)
        case SignalMethod.currentUserDetails.rawValue:
            let user = try Self.base64url(options["userId"], "userId", limit: Self.maximumUserHandleBytes)
            self = .currentUserDetails(rpID: rpID, userHandle: user,
                                       name: try Self.displayable(options, "name"),
                                       displayName: try Self.displayable(options, "displayName"))
        default:
            throw .type("method '\(name.prefix(60))' is not unknownCredential, allAcceptedCredentials or currentUserDetails")
        }
    }

    private static func string(_ options: JSONDocument, _ member: String, limit: Int) throws(SignalFailure) -> String {
        let value = try PasskeyJSON.string(options[member], "options.\(member)")
        guard value.utf8.count <= limit else { throw .type("options.\(member) is longer than \(limit) bytes") }
        return value
    }

    /// A name a site sets without any touch of the key, later shown in the key's presence prompt
    /// (a terminal, a notification) and by `latchkey credentials`: control characters (C0, DEL,
    /// C1: a carriage return or an escape sequence could redraw the prompt) and bidirectional
    /// overrides (which could reorder what the user reads) are refused.
    private static func displayable(_ options: JSONDocument, _ member: String) throws(SignalFailure) -> String {
        let value = try string(options, member, limit: maximumNameBytes)
        guard !value.unicodeScalars.contains(where: { scalar in
            scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
                || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
        }) else {
            throw .type("options.\(member) holds a control character or a bidirectional override")
        }
        return value
    }

    /// Base64url as WebAuthn's JSON writes it: the URL-safe alphabet, no padding, no spaces.
    private static func base64url(_ value: JSONDocument?, _ member: String, limit: Int) throws(SignalFailure) -> [UInt8] {
        let text = try PasskeyJSON.string(value, "options.\(member)")
        guard !text.isEmpty,
              text.utf8.allSatisfy({ Self.alphabet.contains($0) }),
              let bytes = Base64URL.decode(text) else {
            throw .type("options.\(member) is not base64url")
        }
        guard bytes.count <= limit else { throw .type("options.\(member) is longer than \(limit) bytes") }
        return bytes
    }

    private static let alphabet = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8))
}
