import CTAP
import FIDOCrypto

/// The shared secret of one PIN/UV auth protocol exchange, with the protocol's encrypt /
/// decrypt / authenticate / verify (CTAP 2.1 §6.5.6, §6.5.7). Keys are typed by purpose and
/// stay in `SecretBytes`.
struct PinUvAuthSharedSecret {
    let pinUvAuthProtocol: PinUvAuthProtocol
    private let hmacKey: SecretBytes
    private let aesKey: SecretBytes

    /// The protocol's KDF over the ECDH x-coordinate Z.
    init(protocol pinUvAuthProtocol: PinUvAuthProtocol, z: SecretBytes) {
        self.pinUvAuthProtocol = pinUvAuthProtocol
        switch pinUvAuthProtocol {
        case .one:
            // §6.5.6: kdf(Z) = SHA-256(Z), used both as the HMAC and the AES key.
            let key = SecretBytes(wiping: z.withUnsafeBytes { SHA256.hash($0) })
            hmacKey = key
            aesKey = key
        case .two:
            // §6.5.7: HKDF-SHA-256(salt = 32 zero bytes, IKM = Z, L = 32) with two infos.
            var ikm = z.copyBytes()
            defer { ikm.wipe() }
            let salt = [UInt8](repeating: 0, count: 32)
            hmacKey = Self.derive(ikm, salt: salt, info: "CTAP2 HMAC key")
            aesKey = Self.derive(ikm, salt: salt, info: "CTAP2 AES key")
        }
    }

    private static func derive(_ ikm: [UInt8], salt: [UInt8], info: String) -> SecretBytes {
        var okm = HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: salt, info: Array(info.utf8), outputByteCount: 32)
        defer { okm.wipe() }
        return SecretBytes(okm)
    }

    /// encrypt(key, demPlaintext): protocol one AES-256-CBC with a zero IV; protocol two with a
    /// random IV, which is prepended. `plaintext.count` must be a multiple of 16.
    func encrypt(_ plaintext: [UInt8], random: RandomSource) throws(CTAP2StatusCode) -> [UInt8] {
        var key = aesKey.copyBytes()
        defer { key.wipe() }
        do {
            switch pinUvAuthProtocol {
            case .one:
                return try AES256CBC.encrypt(plaintext, key: key, iv: [UInt8](repeating: 0, count: 16))
            case .two:
                let iv = random.bytes(count: 16)
                return iv + (try AES256CBC.encrypt(plaintext, key: key, iv: iv))
            }
        } catch {
            throw .other
        }
    }

    /// decrypt(key, demCiphertext); nil when the ciphertext is not whole AES blocks (for
    /// protocol two: after its 16-byte IV).
    func decrypt(_ ciphertext: [UInt8]) -> [UInt8]? {
        var key = aesKey.copyBytes()
        defer { key.wipe() }
        switch pinUvAuthProtocol {
        case .one:
            return try? AES256CBC.decrypt(ciphertext, key: key, iv: [UInt8](repeating: 0, count: 16))
        case .two:
            // §6.5.7: "If demCiphertext is less than 16 bytes in length, return an error."
            guard ciphertext.count >= 16 else { return nil }
            return try? AES256CBC.decrypt(Array(ciphertext[16...]), key: key, iv: Array(ciphertext[..<16]))
        }
    }

    /// authenticate(key, message) with the shared secret's HMAC key.
    func authenticate(_ message: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.authenticationCode(key: hmacKey, data: message).prefix(pinUvAuthProtocol.macLength))
    }

    /// verify(key, message, signature): length first (16 for protocol one, 32 for two), then
    /// the MAC, in constant time.
    func verify(_ message: [UInt8], signature: [UInt8]) -> Bool {
        guard signature.count == pinUvAuthProtocol.macLength else { return false }
        return constantTimeEquals(authenticate(message), signature)
    }
}
