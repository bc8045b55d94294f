import CBOR

/// The extension inputs of authenticatorMakeCredential (CTAP 2.1 §12; hmac-secret-mc is CTAP
/// 2.2 §12.7), decoded with the request from its extensions map (0x06).
///
/// Decoding is strict on the types of the extensions this key knows and ignores every other
/// entry (CTAP 2.1 §12: unknown extensions are ignored). What depends on the rest of the request
/// or on the key (largeBlobKey only for discoverable credentials, the hmac-secret-mc secret
/// itself) is the handler's to check.
public struct MakeCredentialExtensions: ExtensionInputs {
    /// credProtect (§12.1): the level asked for; absent leaves the default and is not echoed.
    public var credProtect: CredentialProtectionPolicy?
    /// credBlob (§12.2): a small blob to keep with a discoverable credential.
    public var credBlob: [UInt8]?
    /// hmac-secret (§12.5): whether the credential gets CredRandom values.
    public var hmacSecret: Bool?
    /// hmac-secret-mc (CTAP 2.2 §12.7): getAssertion's hmac-secret input, answered at registration.
    public var hmacSecretMC: HMACSecretInput?
    /// largeBlobKey (§12.3): whether the credential gets a large-blob key.
    public var largeBlobKey: Bool?
    /// minPinLength (§12.4): whether the current minimum PIN length is reported.
    public var minPinLength: Bool?
    /// thirdPartyPayment (CTAP 2.2 §12.9): whether the credential may be used for third-party
    /// payments.
    public var thirdPartyPayment: Bool?
    /// previewSign (the WebAuthn signing extension, v4): a signing key to generate.
    public var previewSign: PreviewSign.GenerateKey?

    public init(credProtect: CredentialProtectionPolicy? = nil, credBlob: [UInt8]? = nil, hmacSecret: Bool? = nil,
                hmacSecretMC: HMACSecretInput? = nil, largeBlobKey: Bool? = nil, minPinLength: Bool? = nil,
                thirdPartyPayment: Bool? = nil, previewSign: PreviewSign.GenerateKey? = nil) {
        self.credProtect = credProtect; self.credBlob = credBlob; self.hmacSecret = hmacSecret
        self.hmacSecretMC = hmacSecretMC; self.largeBlobKey = largeBlobKey; self.minPinLength = minPinLength
        self.thirdPartyPayment = thirdPartyPayment; self.previewSign = previewSign
    }

    /// Decode the extensions map, in this order: credProtect, credBlob, hmac-secret,
    /// hmac-secret-mc, largeBlobKey, minPinLength, thirdPartyPayment, previewSign. A known extension with the wrong type is
    /// CTAP2_ERR_CBOR_UNEXPECTED_TYPE; a credProtect that is no level, or hmac-secret-mc without
    /// hmac-secret: true, is CTAP2_ERR_INVALID_OPTION. hmac-secret-mc's own members fail as
    /// `HMACSecretInput` says.
    public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        if let value = map["credProtect"] {
            guard let level = value.uint64Value else { throw .cborUnexpectedType }
            guard let policy = UInt8(exactly: level).flatMap(CredentialProtectionPolicy.init(rawValue:)) else {
                throw .invalidOption
            }
            self.credProtect = policy
        }
        self.credBlob = try map["credBlob"].optionalBytes()
        self.hmacSecret = try map["hmac-secret"].optionalBool()
        if let value = map["hmac-secret-mc"] {
            // CTAP 2.2 §12.7: only next to hmac-secret: true; checked before the input itself.
            guard hmacSecret == true else { throw .invalidOption }
            self.hmacSecretMC = try HMACSecretInput(cbor: value)
        }
        self.largeBlobKey = try map["largeBlobKey"].optionalBool()
        self.minPinLength = try map["minPinLength"].optionalBool()
        self.thirdPartyPayment = try map["thirdPartyPayment"].optionalBool()
        self.previewSign = try map["previewSign"].map(PreviewSign.GenerateKey.init(cbor:))
    }

    /// No extension asked for (the request then carries no extensions map).
    public var isEmpty: Bool { self == MakeCredentialExtensions() }

    /// The extensions map: each present input under its identifier.
    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [:]
        if let credProtect { map["credProtect"] = .unsignedInt(UInt64(credProtect.rawValue)) }
        if let credBlob { map["credBlob"] = .byteString(credBlob) }
        if let hmacSecret { map["hmac-secret"] = .boolean(hmacSecret) }
        if let hmacSecretMC { map["hmac-secret-mc"] = hmacSecretMC.cborValue }
        if let largeBlobKey { map["largeBlobKey"] = .boolean(largeBlobKey) }
        if let minPinLength { map["minPinLength"] = .boolean(minPinLength) }
        if let thirdPartyPayment { map["thirdPartyPayment"] = .boolean(thirdPartyPayment) }
        if let previewSign { map["previewSign"] = previewSign.cborValue }
        return .map(map)
    }
}
