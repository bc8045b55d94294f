import CTAP
import FIDOCrypto

/// The hmac-secret input checks shared by getAssertion (hmac-secret) and makeCredential
/// (hmac-secret-mc).
extension Authenticator {
    /// Check the hmac-secret input of getAssertion (CTAP 2.1 §12.5) and decrypt its salts. Done
    /// before asking for presence, so a malformed request never costs the user a touch.
    func hmacSecretRequest(_ input: HMACSecretInput, userPresence: Bool) throws(CTAP2StatusCode) -> HMACSecretRequest {
        // "If "up" is set to false, authenticator returns CTAP2_ERR_UNSUPPORTED_OPTION": the
        // secret is released only after a touch.
        guard userPresence else { throw .unsupportedOption }
        // pinUvAuthProtocol absent means protocol one.
        let pinUvAuthProtocol = try supportedPinUvAuthProtocol(input.pinUvAuthProtocol ?? PinUvAuthProtocol.one.rawValue)
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
}
