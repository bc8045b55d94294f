import CBOR

/// The request map that authenticatorConfig (§6.11) and authenticatorCredentialManagement
/// (§6.8) share: subCommand (0x01), subCommandParams (0x02, a map), pinUvAuthProtocol (0x03),
/// pinUvAuthParam (0x04). Each request type adds its own meaning on top.
struct SubcommandRequestMap {
    var subCommand: UInt64
    var subCommandParams: CBORValue?
    var pinUvAuthProtocol: UInt64?
    var pinUvAuthParam: [UInt8]?

    init(subCommand: UInt64, subCommandParams: CBORValue?, pinUvAuthProtocol: UInt64?, pinUvAuthParam: [UInt8]?) {
        self.subCommand = subCommand; self.subCommandParams = subCommandParams
        self.pinUvAuthProtocol = pinUvAuthProtocol; self.pinUvAuthParam = pinUvAuthParam
    }

    /// Unknown keys are ignored; a missing subCommand is CTAP2_ERR_MISSING_PARAMETER; wrong
    /// types (subCommandParams that is not a map included) CTAP2_ERR_CBOR_UNEXPECTED_TYPE.
    init(cbor value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        guard let subCommandValue = map[1] else { throw .missingParameter }
        guard case let .unsignedInt(subCommand) = subCommandValue else { throw .cborUnexpectedType }
        self.subCommand = subCommand
        if let params = map[2] {
            guard params.mapValue != nil else { throw .cborUnexpectedType }
            self.subCommandParams = params
        }
        self.pinUvAuthProtocol = try map[3].optionalUnsigned()
        self.pinUvAuthParam = try map[4].optionalBytes()
    }

    var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [1: .unsignedInt(subCommand)]
        if let subCommandParams { map[2] = subCommandParams }
        if let pinUvAuthProtocol { map[3] = .unsignedInt(pinUvAuthProtocol) }
        if let pinUvAuthParam { map[4] = .byteString(pinUvAuthParam) }
        return .map(map)
    }
}
