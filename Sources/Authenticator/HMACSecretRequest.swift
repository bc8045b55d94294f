import CTAP
import FIDOCrypto

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
