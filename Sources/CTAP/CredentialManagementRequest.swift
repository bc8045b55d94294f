import CBOR

/// authenticatorCredentialManagement subcommands (CTAP 2.1 §6.8, "subCommand" 0x01). The
/// preview command 0x41 uses the same numbers.
public enum CredentialManagementSubcommand: UInt64, Sendable, CaseIterable {
    /// getCredsMetadata (0x01)
    case getCredsMetadata = 0x01
    /// enumerateRPsBegin (0x02)
    case enumerateRPsBegin = 0x02
    /// enumerateRPsGetNextRP (0x03), no pinUvAuthParam
    case enumerateRPsGetNextRP = 0x03
    /// enumerateCredentialsBegin (0x04)
    case enumerateCredentialsBegin = 0x04
    /// enumerateCredentialsGetNextCredential (0x05), no pinUvAuthParam
    case enumerateCredentialsGetNextCredential = 0x05
    /// deleteCredential (0x06)
    case deleteCredential = 0x06
    /// updateUserInformation (0x07)
    case updateUserInformation = 0x07
}

/// authenticatorCredentialManagement (0x0A / 0x41) parameters (CTAP 2.1 §6.8).
///
/// `subCommandParams` is kept as sent (the decoder only accepts canonical CBOR, so its
/// encoding is the bytes the platform authenticated); its members are also parsed.
public struct CredentialManagementRequest: Sendable, Equatable {
    /// subCommand (0x01), required; kept raw so that an unknown one is the authenticator's call.
    public var subCommand: UInt64
    /// subCommandParams (0x02)
    public var subCommandParams: CBORValue?
    /// pinUvAuthProtocol (0x03)
    public var pinUvAuthProtocol: UInt64?
    /// pinUvAuthParam (0x04)
    public var pinUvAuthParam: [UInt8]?

    /// subCommandParams rpIDHash (0x01)
    public var rpIDHash: [UInt8]?
    /// subCommandParams credentialID (0x02): a PublicKeyCredentialDescriptor
    public var credentialID: CredentialDescriptor?
    /// subCommandParams user (0x03): a PublicKeyCredentialUserEntity
    public var user: UserEntity?

    /// A request whose subCommandParams are built from the typed members.
    public init(subCommand: UInt64, rpIDHash: [UInt8]? = nil, credentialID: CredentialDescriptor? = nil,
                user: UserEntity? = nil, pinUvAuthProtocol: UInt64? = nil, pinUvAuthParam: [UInt8]? = nil) {
        self.subCommand = subCommand
        self.rpIDHash = rpIDHash; self.credentialID = credentialID; self.user = user
        var params: [CBORValue: CBORValue] = [:]
        if let rpIDHash { params[1] = .byteString(rpIDHash) }
        if let credentialID { params[2] = credentialID.cborValue }
        if let user { params[3] = user.cborValue(includeIdentifyingInfo: true) }
        self.subCommandParams = params.isEmpty ? nil : .map(params)
        self.pinUvAuthProtocol = pinUvAuthProtocol
        self.pinUvAuthParam = pinUvAuthParam
    }

    public init(subCommand: CredentialManagementSubcommand, rpIDHash: [UInt8]? = nil,
                credentialID: CredentialDescriptor? = nil, user: UserEntity? = nil,
                pinUvAuthProtocol: UInt64? = nil, pinUvAuthParam: [UInt8]? = nil) {
        self.init(subCommand: subCommand.rawValue, rpIDHash: rpIDHash, credentialID: credentialID, user: user,
                  pinUvAuthProtocol: pinUvAuthProtocol, pinUvAuthParam: pinUvAuthParam)
    }

    /// The subcommand, if it is one CTAP 2.1 defines.
    public var subcommand: CredentialManagementSubcommand? { CredentialManagementSubcommand(rawValue: subCommand) }

    /// Parse the request map (`SubcommandRequestMap`: unknown keys ignored, in subCommandParams
    /// too; a missing subCommand CTAP2_ERR_MISSING_PARAMETER; wrong types
    /// CTAP2_ERR_CBOR_UNEXPECTED_TYPE). Which parameters a subcommand needs is checked by the
    /// authenticator.
    public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
        let map = try SubcommandRequestMap(cbor: value)
        self.subCommand = map.subCommand
        self.subCommandParams = map.subCommandParams
        self.pinUvAuthProtocol = map.pinUvAuthProtocol
        self.pinUvAuthParam = map.pinUvAuthParam
        let params = map.subCommandParams?.mapValue ?? [:]
        self.rpIDHash = try params[1].optionalBytes()
        self.credentialID = try params[2].map { value throws(CTAP2StatusCode) in try CredentialDescriptor(parsing: value) }
        self.user = try params[3].map { value throws(CTAP2StatusCode) in try UserEntity(parsing: value) }
    }

    /// The request map (clients and tests use this).
    public var cborValue: CBORValue {
        SubcommandRequestMap(subCommand: subCommand, subCommandParams: subCommandParams,
                             pinUvAuthProtocol: pinUvAuthProtocol, pinUvAuthParam: pinUvAuthParam).cborValue
    }

    /// What pinUvAuthParam authenticates (CTAP 2.1 §6.8.2–§6.8.6): the subcommand byte, then
    /// CBOR(subCommandParams) for the subcommands that take parameters.
    public var authenticatedMessage: [UInt8] {
        let byte = UInt8(truncatingIfNeeded: subCommand)
        switch subcommand {
        case .getCredsMetadata, .enumerateRPsBegin: return [byte]
        default: return [byte] + (subCommandParams?.encoded() ?? [])
        }
    }
}

/// authenticatorCredentialManagement response map (CTAP 2.1 §6.8). Subcommands without
/// output (deleteCredential, updateUserInformation) answer with the status byte alone.
public struct CredentialManagementResponse: Sendable, Equatable {
    /// existingResidentCredentialsCount (0x01)
    public var existingResidentCredentialsCount: Int?
    /// maxPossibleRemainingResidentCredentialsCount (0x02)
    public var maxPossibleRemainingResidentCredentialsCount: Int?
    /// rp (0x03): PublicKeyCredentialRpEntity
    public var rp: RelyingPartyEntity?
    /// rpIDHash (0x04)
    public var rpIDHash: [UInt8]?
    /// totalRPs (0x05), in enumerateRPsBegin only
    public var totalRPs: Int?
    /// user (0x06): PublicKeyCredentialUserEntity
    public var user: UserEntity?
    /// credentialID (0x07): PublicKeyCredentialDescriptor
    public var credentialID: CredentialDescriptor?
    /// publicKey (0x08): COSE_Key
    public var publicKey: CBORValue?
    /// totalCredentials (0x09), in enumerateCredentialsBegin only
    public var totalCredentials: Int?
    /// credProtect (0x0A)
    public var credProtect: CredentialProtectionPolicy?
    /// largeBlobKey (0x0B)
    public var largeBlobKey: [UInt8]?
    /// thirdPartyPayment (0x0C, CTAP 2.3 beside 2.2's extension): whether the credential is a
    /// payment one.
    public var thirdPartyPayment: Bool?

    public init(existingResidentCredentialsCount: Int? = nil, maxPossibleRemainingResidentCredentialsCount: Int? = nil,
                rp: RelyingPartyEntity? = nil, rpIDHash: [UInt8]? = nil, totalRPs: Int? = nil,
                user: UserEntity? = nil, credentialID: CredentialDescriptor? = nil, publicKey: CBORValue? = nil,
                totalCredentials: Int? = nil, credProtect: CredentialProtectionPolicy? = nil, largeBlobKey: [UInt8]? = nil) {
        self.existingResidentCredentialsCount = existingResidentCredentialsCount
        self.maxPossibleRemainingResidentCredentialsCount = maxPossibleRemainingResidentCredentialsCount
        self.rp = rp; self.rpIDHash = rpIDHash; self.totalRPs = totalRPs
        self.user = user; self.credentialID = credentialID; self.publicKey = publicKey
        self.totalCredentials = totalCredentials; self.credProtect = credProtect; self.largeBlobKey = largeBlobKey
    }

    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [:]
        if let existingResidentCredentialsCount { map[0x01] = CBORValue(existingResidentCredentialsCount) }
        if let maxPossibleRemainingResidentCredentialsCount {
            map[0x02] = CBORValue(maxPossibleRemainingResidentCredentialsCount)
        }
        if let rp { map[0x03] = rp.cborValue }
        if let rpIDHash { map[0x04] = .byteString(rpIDHash) }
        if let totalRPs { map[0x05] = CBORValue(totalRPs) }
        if let user { map[0x06] = user.cborValue(includeIdentifyingInfo: true) }
        if let credentialID { map[0x07] = credentialID.cborValue }
        if let publicKey { map[0x08] = publicKey }
        if let totalCredentials { map[0x09] = CBORValue(totalCredentials) }
        if let credProtect { map[0x0A] = .unsignedInt(UInt64(credProtect.rawValue)) }
        if let largeBlobKey { map[0x0B] = .byteString(largeBlobKey) }
        if let thirdPartyPayment { map[0x0C] = .boolean(thirdPartyPayment) }
        return .map(map)
    }
}
