import CBOR

/// The extension inputs of authenticatorGetAssertion (CTAP 2.1 §12), decoded with the request
/// from its extensions map (0x04).
///
/// Decoding is strict on the types of the extensions this key knows and ignores every other
/// entry (CTAP 2.1 §12: unknown extensions are ignored). The hmac-secret input is only decoded
/// here; its key agreement, MAC and salts are the handler's to check.
public struct GetAssertionExtensions: ExtensionInputs {
    /// credBlob (§12.2): whether the credential's blob is returned.
    public var credBlob: Bool?
    /// largeBlobKey (§12.3): whether the credential's large-blob key is returned.
    public var largeBlobKey: Bool?
    /// hmac-secret (§12.5): the platform's key agreement and encrypted salts.
    public var hmacSecret: HMACSecretInput?
    /// thirdPartyPayment (CTAP 2.2 §12.9): whether to report if the credential is one for
    /// third-party payments.
    public var thirdPartyPayment: Bool?
    /// previewSign (the WebAuthn signing extension, v4): data to sign with a generated key.
    public var previewSign: PreviewSign.Sign?

    public init(credBlob: Bool? = nil, largeBlobKey: Bool? = nil, hmacSecret: HMACSecretInput? = nil,
                thirdPartyPayment: Bool? = nil, previewSign: PreviewSign.Sign? = nil) {
        self.credBlob = credBlob; self.largeBlobKey = largeBlobKey; self.hmacSecret = hmacSecret
        self.thirdPartyPayment = thirdPartyPayment; self.previewSign = previewSign
    }

    /// Decode the extensions map, in this order: credBlob, largeBlobKey, thirdPartyPayment, hmac-secret, previewSign. A known
    /// extension with the wrong type is CTAP2_ERR_CBOR_UNEXPECTED_TYPE; hmac-secret's own
    /// members fail as `HMACSecretInput` says.
    public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        self.credBlob = try map["credBlob"].optionalBool()
        self.largeBlobKey = try map["largeBlobKey"].optionalBool()
        self.thirdPartyPayment = try map["thirdPartyPayment"].optionalBool()
        self.hmacSecret = try map["hmac-secret"].map(HMACSecretInput.init(cbor:))
        self.previewSign = try map["previewSign"].map(PreviewSign.Sign.init(cbor:))
    }

    /// No extension asked for (the request then carries no extensions map).
    public var isEmpty: Bool { self == GetAssertionExtensions() }

    /// The extensions map: each present input under its identifier.
    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [:]
        if let credBlob { map["credBlob"] = .boolean(credBlob) }
        if let largeBlobKey { map["largeBlobKey"] = .boolean(largeBlobKey) }
        if let hmacSecret { map["hmac-secret"] = hmacSecret.cborValue }
        if let thirdPartyPayment { map["thirdPartyPayment"] = .boolean(thirdPartyPayment) }
        if let previewSign { map["previewSign"] = previewSign.cborValue }
        return .map(map)
    }
}
