import CBOR

/// authenticatorConfig subcommands (CTAP 2.1 §6.11, "subCommand" 0x01).
public enum AuthenticatorConfigSubcommand: UInt64, Sendable, CaseIterable {
    /// enableEnterpriseAttestation (0x01)
    case enableEnterpriseAttestation = 0x01
    /// toggleAlwaysUv (0x02)
    case toggleAlwaysUv = 0x02
    /// setMinPINLength (0x03)
    case setMinPINLength = 0x03
    /// vendorPrototype (0xFF)
    case vendorPrototype = 0xFF
}

/// authenticatorConfig (0x0D) parameters (CTAP 2.1 §6.11).
public struct AuthenticatorConfigRequest: Sendable, Equatable {
    /// subCommand (0x01), required; kept raw so that an unknown one is the authenticator's call.
    public var subCommand: UInt64
    /// subCommandParams (0x02), as sent (authenticated as its canonical encoding).
    public var subCommandParams: CBORValue?
    /// pinUvAuthProtocol (0x03)
    public var pinUvAuthProtocol: UInt64?
    /// pinUvAuthParam (0x04)
    public var pinUvAuthParam: [UInt8]?

    public init(subCommand: UInt64, subCommandParams: CBORValue? = nil, pinUvAuthProtocol: UInt64? = nil,
                pinUvAuthParam: [UInt8]? = nil) {
        self.subCommand = subCommand; self.subCommandParams = subCommandParams
        self.pinUvAuthProtocol = pinUvAuthProtocol; self.pinUvAuthParam = pinUvAuthParam
    }

    public init(subCommand: AuthenticatorConfigSubcommand, subCommandParams: CBORValue? = nil,
                pinUvAuthProtocol: UInt64? = nil, pinUvAuthParam: [UInt8]? = nil) {
        self.init(subCommand: subCommand.rawValue, subCommandParams: subCommandParams,
                  pinUvAuthProtocol: pinUvAuthProtocol, pinUvAuthParam: pinUvAuthParam)
    }

    /// The subcommand, if it is one CTAP 2.1 defines.
    public var subcommand: AuthenticatorConfigSubcommand? { AuthenticatorConfigSubcommand(rawValue: subCommand) }

    /// Parse the request map (`SubcommandRequestMap`: unknown keys ignored, a missing
    /// subCommand CTAP2_ERR_MISSING_PARAMETER, wrong types CTAP2_ERR_CBOR_UNEXPECTED_TYPE).
    public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
        let map = try SubcommandRequestMap(cbor: value)
        self.init(subCommand: map.subCommand, subCommandParams: map.subCommandParams,
                  pinUvAuthProtocol: map.pinUvAuthProtocol, pinUvAuthParam: map.pinUvAuthParam)
    }

    public var cborValue: CBORValue {
        SubcommandRequestMap(subCommand: subCommand, subCommandParams: subCommandParams,
                             pinUvAuthProtocol: pinUvAuthProtocol, pinUvAuthParam: pinUvAuthParam).cborValue
    }

    /// What pinUvAuthParam authenticates (CTAP 2.1 §6.11 step 4.2):
    /// 32×0xff ‖ 0x0d ‖ uint8(subCommand) ‖ CBOR(subCommandParams).
    public var authenticatedMessage: [UInt8] {
        [UInt8](repeating: 0xFF, count: 32) + [CTAPCommand.config.rawValue, UInt8(truncatingIfNeeded: subCommand)]
            + (subCommandParams?.encoded() ?? [])
    }
}

/// setMinPINLength's subCommandParams (CTAP 2.1 §6.11.4).
public struct SetMinPINLengthParameters: Sendable, Equatable {
    /// newMinPINLength (0x01), in Unicode code points
    public var newMinPINLength: UInt64?
    /// minPinLengthRPIDs (0x02): RPs allowed to read the minimum through the minPinLength extension
    public var minPinLengthRPIDs: [String]?
    /// forceChangePin (0x03)
    public var forceChangePin: Bool?

    public init(newMinPINLength: UInt64? = nil, minPinLengthRPIDs: [String]? = nil, forceChangePin: Bool? = nil) {
        self.newMinPINLength = newMinPINLength; self.minPinLengthRPIDs = minPinLengthRPIDs
        self.forceChangePin = forceChangePin
    }

    /// Parse subCommandParams; absent params are all-absent. Wrong types are
    /// CTAP2_ERR_CBOR_UNEXPECTED_TYPE.
    public init(cbor value: CBORValue?) throws(CTAP2StatusCode) {
        guard let value else { self.init(); return }
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        var rpIDs: [String]?
        if let list = try map[2].optionalArray() {
            var names: [String] = []
            for entry in list {
                guard let rpID = entry.stringValue else { throw .cborUnexpectedType }
                names.append(rpID)
            }
            rpIDs = names
        }
        var forceChangePin: Bool?
        if let flag = map[3] {
            guard let bool = flag.boolValue else { throw .cborUnexpectedType }
            forceChangePin = bool
        }
        self.init(newMinPINLength: try map[1].optionalUnsigned(), minPinLengthRPIDs: rpIDs, forceChangePin: forceChangePin)
    }

    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [:]
        if let newMinPINLength { map[1] = .unsignedInt(newMinPINLength) }
        if let minPinLengthRPIDs { map[2] = .array(minPinLengthRPIDs.map { .textString($0) }) }
        if let forceChangePin { map[3] = .boolean(forceChangePin) }
        return .map(map)
    }
}
