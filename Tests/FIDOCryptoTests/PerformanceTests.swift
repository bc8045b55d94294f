import XCTest
import FIDOCrypto

/// Prints rough timings (no assertions: shared CI machines are noisy, and this
/// is usually a debug build).
final class PerformanceTests: XCTestCase {
    func testPrintTimings() throws {
        let key = try P256.Signing.PrivateKey()
        let raw = key.rawRepresentation.copyBytes()
        let digest = SHA256.hash([1, 2, 3])
        let message = [UInt8](repeating: 7, count: 100)
        let edKey = try Ed25519.PrivateKey()
        let agreement = try P256.KeyAgreement.PrivateKey()
        let peer = try P256.KeyAgreement.PrivateKey().publicKey
        let signature = try key.signature(for: message)
        let gcmKey = SecretBytes(randomCount: 32)
        let nonce = SecureRandom.bytes(count: 12)
        _ = try key.signature(forDigest: digest)   // warm the reused context

        let timings: [(String, Double)] = [
            ("P-256 sign (prehashed, existing key)", try microsecondsPerIteration(500) { _ = try key.signature(forDigest: digest) }),
            ("P-256 sign (hash + sign, 100 B)", try microsecondsPerIteration(500) { _ = try key.signature(for: message) }),
            ("P-256 key from raw scalar", try microsecondsPerIteration(500) { _ = try P256.Signing.PrivateKey(rawRepresentation: raw) }),
            ("P-256 key from raw + sign", try microsecondsPerIteration(500) {
                _ = try P256.Signing.PrivateKey(rawRepresentation: raw).signature(forDigest: digest)
            }),
            ("P-256 key from raw + publicKey", try microsecondsPerIteration(200) {
                _ = try P256.Signing.PrivateKey(rawRepresentation: raw).publicKey
            }),
            ("P-256 generate", try microsecondsPerIteration(200) { _ = try P256.Signing.PrivateKey() }),
            ("P-256 verify", microsecondsPerIteration(200) { _ = key.publicKey.isValidSignature(signature, for: message) }),
            ("P-256 ECDH", try microsecondsPerIteration(200) { _ = try agreement.sharedSecretX(with: peer) }),
            ("Ed25519 sign (100 B)", try microsecondsPerIteration(200) { _ = try edKey.signature(for: message) }),
            ("SHA-256 (100 B)", microsecondsPerIteration(2000) { _ = SHA256.hash(message) }),
            ("HMAC-SHA-256 (100 B)", microsecondsPerIteration(2000) { _ = HMACSHA256.authenticationCode(key: digest, data: message) }),
            ("HKDF-SHA-256 (32 B out)", microsecondsPerIteration(1000) {
                _ = HKDFSHA256.deriveKey(inputKeyMaterial: digest, salt: [], info: message, outputByteCount: 32)
            }),
            ("AES-256-GCM seal (100 B)", try microsecondsPerIteration(2000) {
                _ = try AES256GCM.seal(message, key: gcmKey, nonce: nonce, authenticating: digest)
            }),
        ]
        for (name, microseconds) in timings {
            print("FIDOCrypto timing: \(name): \((microseconds * 10).rounded() / 10) µs")
        }
    }
}
