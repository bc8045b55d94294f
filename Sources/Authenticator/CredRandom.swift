import FIDOCrypto

/// A credential's hmac-secret CredRandom values (CTAP 2.1 §12.5): one for assertions with user
/// verification, one for those without, so the two never give the same output.
struct CredRandom {
    let withUV: SecretBytes
    let withoutUV: SecretBytes

    /// The value an assertion uses: "If uv bit is set to 1 in the response, let CredRandom be
    /// CredRandomWithUV", else CredRandomWithoutUV.
    func value(userVerified: Bool) -> SecretBytes { userVerified ? withUV : withoutUV }

    /// Fresh random values, stored with a discoverable credential.
    static func generate(random: RandomSource) -> CredRandom {
        CredRandom(withUV: random.secret(count: 32), withoutUV: random.secret(count: 32))
    }

    /// The values of a resident credential, if it was created with hmac-secret.
    init?(_ credential: ResidentCredential) {
        guard let withUV = credential.hmacSecretWithUV, let withoutUV = credential.hmacSecretWithoutUV else { return nil }
        self.init(withUV: withUV, withoutUV: withoutUV)
    }

    init(withUV: SecretBytes, withoutUV: SecretBytes) {
        self.withUV = withUV
        self.withoutUV = withoutUV
    }

    /// Non-discoverable credentials store nothing, so their values are derived from the
    /// wrapping key and the credential ID:
    /// `key = HKDF-SHA-256(IKM = wrappingKey, salt = none, info = "latchkey hmac-secret", 32)`,
    /// `CredRandomWithUV = HMAC-SHA-256(key, 0x01 ‖ credentialID)`,
    /// `CredRandomWithoutUV = HMAC-SHA-256(key, 0x00 ‖ credentialID)`.
    /// They change when reset replaces the wrapping key, as the credential itself stops opening.
    static func derived(wrappingKey: SecretBytes, credentialID: [UInt8]) -> CredRandom {
        var ikm = wrappingKey.copyBytes()
        var key = HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: [], info: Array("latchkey hmac-secret".utf8),
                                       outputByteCount: 32)
        defer { ikm.wipe(); key.wipe() }
        return CredRandom(withUV: SecretBytes(wiping: HMACSHA256.authenticationCode(key: key, data: [0x01] + credentialID)),
                          withoutUV: SecretBytes(wiping: HMACSHA256.authenticationCode(key: key, data: [0x00] + credentialID)))
    }
}
