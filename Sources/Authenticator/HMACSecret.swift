import CBOR
import CTAP
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
    static func generate() -> CredRandom {
        CredRandom(withUV: SecretBytes(randomCount: 32), withoutUV: SecretBytes(randomCount: 32))
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
        return CredRandom(withUV: SecretBytes(HMACSHA256.authenticationCode(key: key, data: [0x01] + credentialID)),
                          withoutUV: SecretBytes(HMACSHA256.authenticationCode(key: key, data: [0x00] + credentialID)))
    }
}

/// A verified hmac-secret getAssertion input: the shared secret and the decrypted salts.
struct HMACSecretRequest {
    let sharedSecret: PinUvAuthSharedSecret
    /// salt1, or salt1 ‖ salt2: 32 or 64 bytes.
    let salts: SecretBytes

    /// The extension output: encrypt(shared secret, HMAC-SHA-256(CredRandom, salt1)
    /// [‖ HMAC-SHA-256(CredRandom, salt2)]).
    func output(credRandom: CredRandom, userVerified: Bool, random: RandomSource) throws(CTAP2StatusCode) -> [UInt8] {
        let key = credRandom.value(userVerified: userVerified)
        var plaintext = salts.withUnsafeBytes { salts in
            stride(from: 0, to: salts.count, by: 32).flatMap { offset in
                HMACSHA256.authenticationCode(key: key, data: Array(salts[offset..<offset + 32]))
            }
        }
        defer { plaintext.wipe() }
        return try sharedSecret.encrypt(plaintext, random: random)
    }
}

extension Authenticator {
    /// Decode and check the hmac-secret input of getAssertion (CTAP 2.1 §12.5). Done before
    /// asking for presence, so a malformed request never costs the user a touch.
    func hmacSecretRequest(_ value: CBORValue, userPresence: Bool) throws(CTAP2StatusCode) -> HMACSecretRequest {
        let input = try HMACSecretInput(cbor: value)
        // "If "up" is set to false, authenticator returns CTAP2_ERR_UNSUPPORTED_OPTION": the
        // secret is released only after a touch.
        guard userPresence else { throw .unsupportedOption }
        // pinUvAuthProtocol absent means protocol one.
        let pinUvAuthProtocol = try PinUvAuthProtocol(requested: input.pinUvAuthProtocol ?? PinUvAuthProtocol.one.rawValue)
        let sharedSecret = try pinUvAuthProtocol.decapsulate(input.keyAgreement,
                                                             with: try pinUvAuth.keyAgreementKey(for: pinUvAuthProtocol))
        // "verify(shared secret, saltEnc, saltAuth) — if the verification fails, return
        // CTAP2_ERR_PIN_AUTH_INVALID."
        guard sharedSecret.verify(input.saltEnc, signature: input.saltAuth) else { throw .pinAuthInvalid }
        // "If the decryption fails, or if the result is not 32 or 64 bytes long, return
        // CTAP1_ERR_INVALID_PARAMETER."
        guard var salts = sharedSecret.decrypt(input.saltEnc), salts.count == 32 || salts.count == 64 else {
            throw .invalidParameter
        }
        defer { salts.wipe() }
        return HMACSecretRequest(sharedSecret: sharedSecret, salts: SecretBytes(salts))
    }

    /// The CredRandom values of an assertion candidate; nil if it was created without hmac-secret.
    func credRandom(for candidate: AssertionCandidate) -> CredRandom? {
        if let resident = candidate.resident { return CredRandom(resident) }
        guard candidate.hasHMACSecret else { return nil }
        return CredRandom.derived(wrappingKey: secrets.wrappingKey, credentialID: candidate.credentialID)
    }
}
