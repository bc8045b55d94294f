import CBOR

/// The hmac-secret extension input of authenticatorGetAssertion (CTAP 2.1 §12.5):
/// `{1: keyAgreement, 2: saltEnc, 3: saltAuth, 4: pinUvAuthProtocol}`.
public struct HMACSecretInput: Sendable, Equatable {
    /// keyAgreement (0x01): the platform's key-agreement key, a COSE_Key map
    public var keyAgreement: CBORValue
    /// saltEnc (0x02): one or two 32-byte salts encrypted with the shared secret
    public var saltEnc: [UInt8]
    /// saltAuth (0x03): authenticate(shared secret, saltEnc)
    public var saltAuth: [UInt8]
    /// pinUvAuthProtocol (0x04); absent means protocol 1
    public var pinUvAuthProtocol: UInt64?

    public init(keyAgreement: CBORValue, saltEnc: [UInt8], saltAuth: [UInt8], pinUvAuthProtocol: UInt64? = nil) {
        self.keyAgreement = keyAgreement; self.saltEnc = saltEnc; self.saltAuth = saltAuth
        self.pinUvAuthProtocol = pinUvAuthProtocol
    }

    /// Parse the extension input. Missing members are CTAP2_ERR_MISSING_PARAMETER, wrong types
    /// CTAP2_ERR_CBOR_UNEXPECTED_TYPE.
    public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        guard let keyValue = map[1], let saltEncValue = map[2], let saltAuthValue = map[3] else {
            throw .missingParameter
        }
        guard keyValue.mapValue != nil, let saltEnc = saltEncValue.bytesValue, let saltAuth = saltAuthValue.bytesValue else {
            throw .cborUnexpectedType
        }
        self.keyAgreement = keyValue
        self.saltEnc = saltEnc
        self.saltAuth = saltAuth
        self.pinUvAuthProtocol = try map[4].optionalUnsigned()
    }

    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [1: keyAgreement, 2: .byteString(saltEnc), 3: .byteString(saltAuth)]
        if let pinUvAuthProtocol { map[4] = .unsignedInt(pinUvAuthProtocol) }
        return .map(map)
    }
}
