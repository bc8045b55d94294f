import CBOR
import CTAP
import FIDOCrypto

/// authenticatorCredentialManagement (0x0A, or the preview 0x41) with one pinUvAuthToken:
/// CTAP 2.1 §6.8. Every subcommand that takes auth sends
/// pinUvAuthParam = authenticate(token, subCommand ‖ CBOR(subCommandParams)); the GetNext
/// subcommands take none and follow their Begin directly.
public struct RemoteCredentialManager {
    public let authenticator: RemoteAuthenticator
    /// 0x0A, or 0x41 on keys that offer only credentialMgmtPreview.
    public let command: CTAPCommand
    let token: PinUvAuthToken

    /// One RP with discoverable credentials on the key.
    public struct RelyingParty: Sendable, Equatable {
        public var id: String
        public var name: String?
        public var idHash: [UInt8]
    }

    /// One discoverable credential as the key describes it.
    public struct Credential: Sendable, Equatable {
        public var rpID: String
        public var userHandle: [UInt8]
        public var userName: String?
        public var userDisplayName: String?
        public var credentialID: [UInt8]
        /// COSE algorithm of the public key (its key 3), when given.
        public var algorithm: Int?
        public var credProtect: Int?
        public var hasLargeBlobKey: Bool
    }

    public var label: String { authenticator.label }
    var commandName: String { command == .credentialManagement ? "credentialManagement" : "credentialManagement (0x41)" }

    /// Sends one subcommand; `authenticated` ones carry protocol and pinUvAuthParam.
    func send(_ subcommand: CredentialManagementSubcommand, parameters: CBORValue? = nil,
              authenticated: Bool = true) throws(DeviceError) -> CBORValue? {
        var map: [CBORValue: CBORValue] = [1: .unsignedInt(subcommand.rawValue)]
        if let parameters { map[2] = parameters }
        if authenticated {
            map[3] = .unsignedInt(token.pinUvAuthProtocol.rawValue)
            map[4] = .byteString(token.authenticate([UInt8(subcommand.rawValue)] + (parameters?.encoded() ?? [])))
        }
        // The spec's names are the case names ("enumerateRPsBegin", …).
        return try authenticator.request(command, .map(map), name: "\(commandName) \(subcommand)")
    }

    /// getCredsMetadata (0x01): stored discoverable credentials and room for more.
    public func metadata() throws(DeviceError) -> (existing: Int, remaining: Int) {
        let body = try send(.getCredsMetadata)
        guard let existing = body?[1]?.intValue, let remaining = body?[2]?.intValue else {
            throw .malformed("\(label) answered getCredsMetadata without its counts")
        }
        return (existing, remaining)
    }

    /// enumerateRPsBegin (0x02) and enumerateRPsGetNextRP (0x03); no RPs when the key says
    /// CTAP2_ERR_NO_CREDENTIALS.
    public func relyingParties() throws(DeviceError) -> [RelyingParty] {
        let first: CBORValue?
        do throws(DeviceError) {
            first = try send(.enumerateRPsBegin)
        } catch where error.statusCode == .noCredentials {
            return []
        }
        guard let first, let total = first[5]?.intValue, total >= 1 else {
            throw .malformed("\(label) answered enumerateRPsBegin without totalRPs")
        }
        var parties = [try relyingParty(first)]
        for _ in 1..<total {
            guard let next = try send(.enumerateRPsGetNextRP, authenticated: false) else {
                throw .malformed("\(label) answered enumerateRPsGetNextRP without a body")
            }
            parties.append(try relyingParty(next))
        }
        return parties
    }

    private func relyingParty(_ body: CBORValue) throws(DeviceError) -> RelyingParty {
        guard let id = body[3]?["id"]?.stringValue, let hash = body[4]?.bytesValue else {
            throw .malformed("\(label) described an RP without rp.id or rpIDHash")
        }
        return RelyingParty(id: id, name: body[3]?["name"]?.stringValue, idHash: hash)
    }

    /// enumerateCredentialsBegin (0x04) and …GetNextCredential (0x05) for one RP; none when the
    /// key says CTAP2_ERR_NO_CREDENTIALS.
    public func credentials(rpID: String) throws(DeviceError) -> [Credential] {
        let parameters: CBORValue = .map([1: .byteString(FIDOCrypto.SHA256.hash(Array(rpID.utf8)))])
        let first: CBORValue?
        do throws(DeviceError) {
            first = try send(.enumerateCredentialsBegin, parameters: parameters)
        } catch where error.statusCode == .noCredentials {
            return []
        }
        guard let first, let total = first[9]?.intValue, total >= 1 else {
            throw .malformed("\(label) answered enumerateCredentialsBegin without totalCredentials")
        }
        var credentials = [try credential(first, rpID: rpID)]
        for _ in 1..<total {
            guard let next = try send(.enumerateCredentialsGetNextCredential, authenticated: false) else {
                throw .malformed("\(label) answered enumerateCredentialsGetNextCredential without a body")
            }
            credentials.append(try credential(next, rpID: rpID))
        }
        return credentials
    }

    private func credential(_ body: CBORValue, rpID: String) throws(DeviceError) -> Credential {
        guard let user = body[6], let userHandle = user["id"]?.bytesValue,
              let credentialID = body[7]?["id"]?.bytesValue else {
            throw .malformed("\(label) described a credential without user.id or credentialID")
        }
        return Credential(rpID: rpID, userHandle: userHandle, userName: user["name"]?.stringValue,
                          userDisplayName: user["displayName"]?.stringValue, credentialID: credentialID,
                          algorithm: body[8]?[3]?.intValue, credProtect: body[0x0A]?.intValue,
                          hasLargeBlobKey: body[0x0B]?.bytesValue != nil)
    }

    /// Every discoverable credential on the key, RP by RP.
    public func allCredentials() throws(DeviceError) -> [Credential] {
        var all: [Credential] = []
        for party in try relyingParties() {
            all += try credentials(rpID: party.id)
        }
        return all
    }

    /// deleteCredential (0x06).
    public func delete(credentialID: [UInt8]) throws(DeviceError) {
        _ = try send(.deleteCredential, parameters: .map([2: Self.descriptor(credentialID)]))
    }

    /// updateUserInformation (0x07): the key replaces name and displayName with what is sent,
    /// and removes those that are absent or empty (CTAP 2.1 §6.8.6) — callers send both.
    public func updateUser(credentialID: [UInt8], userHandle: [UInt8], name: String?, displayName: String?) throws(DeviceError) {
        var user: [CBORValue: CBORValue] = ["id": .byteString(userHandle)]
        if let name, !name.isEmpty { user["name"] = .textString(name) }
        if let displayName, !displayName.isEmpty { user["displayName"] = .textString(displayName) }
        _ = try send(.updateUserInformation, parameters: .map([2: Self.descriptor(credentialID), 3: .map(user)]))
    }

    static func descriptor(_ credentialID: [UInt8]) -> CBORValue {
        .map(["id": .byteString(credentialID), "type": "public-key"])
    }
}

extension RemoteAuthenticator {
    /// Credential management with a fresh token for the `cm` permission.
    public func credentialManagement(pin: PIN) throws(DeviceError) -> RemoteCredentialManager {
        let info = try info()
        let command: CTAPCommand
        if info.options["credMgmt"] == true {
            command = .credentialManagement
        } else if info.options["credentialMgmtPreview"] == true {
            command = .credentialManagementPreview
        } else {
            throw .unsupported("\(label) does not support credential management (getInfo has neither credMgmt nor credentialMgmtPreview)")
        }
        let token = try pinUvAuthToken(pin: pin, permissions: .credentialManagement)
        return RemoteCredentialManager(authenticator: self, command: command, token: token)
    }
}
