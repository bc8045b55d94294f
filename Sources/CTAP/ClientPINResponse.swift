import CBOR

/// authenticatorClientPIN (0x06) response map (CTAP 2.1 §6.5.5). Subcommands without output
/// (setPIN, changePIN) answer with the status byte alone.
public struct ClientPINResponse: Sendable, Equatable {
    /// keyAgreement (0x01): the authenticator's key-agreement key, a COSE_Key
    public var keyAgreement: COSEKey?
    /// pinUvAuthToken (0x02): the token encrypted with the shared secret
    public var pinUvAuthToken: [UInt8]?
    /// pinRetries (0x03)
    public var pinRetries: Int?
    /// powerCycleState (0x04): true when the key needs a power cycle before the next PIN attempt
    public var powerCycleState: Bool?
    /// uvRetries (0x05)
    public var uvRetries: Int?

    public init(keyAgreement: COSEKey? = nil, pinUvAuthToken: [UInt8]? = nil, pinRetries: Int? = nil,
                powerCycleState: Bool? = nil, uvRetries: Int? = nil) {
        self.keyAgreement = keyAgreement; self.pinUvAuthToken = pinUvAuthToken
        self.pinRetries = pinRetries; self.powerCycleState = powerCycleState; self.uvRetries = uvRetries
    }

    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [:]
        if let keyAgreement { map[1] = keyAgreement.cborValue }
        if let pinUvAuthToken { map[2] = .byteString(pinUvAuthToken) }
        if let pinRetries { map[3] = CBORValue(pinRetries) }
        if let powerCycleState { map[4] = .boolean(powerCycleState) }
        if let uvRetries { map[5] = CBORValue(uvRetries) }
        return .map(map)
    }

    /// Parse a response map (clients, tests and the diagnostics CLI use this).
    public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        if let key = map[1] {
            guard let parsed = COSEKey(key) else { throw .invalidParameter }
            keyAgreement = parsed
        } else {
            keyAgreement = nil
        }
        pinUvAuthToken = try map[2].optionalBytes()
        pinRetries = try map[3].optionalUnsigned().map { Int(clamping: $0) }
        if let state = map[4] {
            guard let flag = state.boolValue else { throw .cborUnexpectedType }
            powerCycleState = flag
        } else {
            powerCycleState = nil
        }
        uvRetries = try map[5].optionalUnsigned().map { Int(clamping: $0) }
    }
}
