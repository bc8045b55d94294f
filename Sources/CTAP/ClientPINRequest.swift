import CBOR

/// authenticatorClientPIN (0x06) parameters (CTAP 2.1 §6.5.5).
///
/// The subcommand is kept as its raw number: an unknown one is not a parsing error but
/// CTAP2_ERR_INVALID_SUBCOMMAND, which the authenticator decides.
public struct ClientPINRequest: Sendable, Equatable {
    /// pinUvAuthProtocol (0x01)
    public var pinUvAuthProtocol: UInt64?
    /// subCommand (0x02), required
    public var subCommand: UInt64
    /// keyAgreement (0x03): the platform's key-agreement key as a COSE_Key map
    public var keyAgreement: CBORValue?
    /// pinUvAuthParam (0x04)
    public var pinUvAuthParam: [UInt8]?
    /// newPinEnc (0x05)
    public var newPinEnc: [UInt8]?
    /// pinHashEnc (0x06)
    public var pinHashEnc: [UInt8]?
    /// permissions (0x09), as sent: undefined bits are kept so the authenticator can judge them
    public var permissions: UInt64?
    /// rpId (0x0A)
    public var rpID: String?

    public init(pinUvAuthProtocol: UInt64? = nil, subCommand: UInt64, keyAgreement: CBORValue? = nil,
                pinUvAuthParam: [UInt8]? = nil, newPinEnc: [UInt8]? = nil, pinHashEnc: [UInt8]? = nil,
                permissions: UInt64? = nil, rpID: String? = nil) {
        self.pinUvAuthProtocol = pinUvAuthProtocol; self.subCommand = subCommand
        self.keyAgreement = keyAgreement; self.pinUvAuthParam = pinUvAuthParam
        self.newPinEnc = newPinEnc; self.pinHashEnc = pinHashEnc
        self.permissions = permissions; self.rpID = rpID
    }

    public init(pinUvAuthProtocol: UInt64? = nil, subCommand: ClientPINSubcommand, keyAgreement: CBORValue? = nil,
                pinUvAuthParam: [UInt8]? = nil, newPinEnc: [UInt8]? = nil, pinHashEnc: [UInt8]? = nil,
                permissions: UInt64? = nil, rpID: String? = nil) {
        self.init(pinUvAuthProtocol: pinUvAuthProtocol, subCommand: subCommand.rawValue, keyAgreement: keyAgreement,
                  pinUvAuthParam: pinUvAuthParam, newPinEnc: newPinEnc, pinHashEnc: pinHashEnc,
                  permissions: permissions, rpID: rpID)
    }

    /// The subcommand, if it is one CTAP 2.1 defines.
    public var subcommand: ClientPINSubcommand? { ClientPINSubcommand(rawValue: subCommand) }

    /// Parse the request map. Unknown keys are ignored; a missing subCommand is
    /// CTAP2_ERR_MISSING_PARAMETER; wrong types CTAP2_ERR_CBOR_UNEXPECTED_TYPE. Which of the
    /// other parameters are mandatory depends on the subcommand and is checked there.
    public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        self.pinUvAuthProtocol = try map[1].optionalUnsigned()
        guard let subCommandValue = map[2] else { throw .missingParameter }
        guard case let .unsignedInt(subCommand) = subCommandValue else { throw .cborUnexpectedType }
        self.subCommand = subCommand
        if let keyAgreement = map[3] {
            guard keyAgreement.mapValue != nil else { throw .cborUnexpectedType }
            self.keyAgreement = keyAgreement
        } else {
            self.keyAgreement = nil
        }
        self.pinUvAuthParam = try map[4].optionalBytes()
        self.newPinEnc = try map[5].optionalBytes()
        self.pinHashEnc = try map[6].optionalBytes()
        self.permissions = try map[9].optionalUnsigned()
        self.rpID = try map[10].optionalText()
    }

    /// The request map (clients and tests use this).
    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [2: .unsignedInt(subCommand)]
        if let pinUvAuthProtocol { map[1] = .unsignedInt(pinUvAuthProtocol) }
        if let keyAgreement { map[3] = keyAgreement }
        if let pinUvAuthParam { map[4] = .byteString(pinUvAuthParam) }
        if let newPinEnc { map[5] = .byteString(newPinEnc) }
        if let pinHashEnc { map[6] = .byteString(pinHashEnc) }
        if let permissions { map[9] = .unsignedInt(permissions) }
        if let rpID { map[10] = .textString(rpID) }
        return .map(map)
    }
}
