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
        // Every ordinary-heap copy of a salt or an output is wiped before it is freed, and the
        // capacity is reserved so that no append leaves an unwiped buffer behind.
        var plaintext: [UInt8] = []
        plaintext.reserveCapacity(salts.count)
        defer { plaintext.wipe() }
        salts.withUnsafeBytes { salts in
            for offset in stride(from: 0, to: salts.count, by: 32) {
                var salt = Array(salts[offset..<offset + 32])
                var output = HMACSHA256.authenticationCode(key: key, data: salt)
                plaintext += output
                salt.wipe()
                output.wipe()
            }
        }
        return try sharedSecret.encrypt(plaintext, random: random)
    }
}
