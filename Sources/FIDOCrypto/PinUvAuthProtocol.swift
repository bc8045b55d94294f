/// PIN/UV auth protocols one and two (CTAP 2.1 §6.5.6, §6.5.7): what the authenticator and the
/// platform both do with a pinUvAuthToken and with the secret they share after ECDH. One
/// implementation for both sides; each side parses the other's COSE key itself.
public enum PinUvAuthProtocol: UInt64, CaseIterable, Sendable {
    /// Protocol one: SHA-256(Z) is both keys; AES-256-CBC with a zero IV; 16-byte MACs.
    case one = 1
    /// Protocol two: HKDF-SHA-256 HMAC and AES keys; AES-256-CBC with a random IV that is
    /// prepended; 32-byte MACs.
    case two = 2

    /// Length of `authenticate` output: LEFT(HMAC, 16) for protocol one, the whole HMAC for two.
    public var macLength: Int {
        switch self {
        case .one: 16
        case .two: 32
        }
    }

    /// authenticate(key, message): with a pinUvAuthToken as the key (pinUvAuthParam).
    public func authenticate(key: SecretBytes, message: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.authenticationCode(key: key, data: message).prefix(macLength))
    }

    /// verify(key, message, signature): the signature must have this protocol's MAC length and
    /// match, compared in constant time.
    public func verify(key: SecretBytes, message: [UInt8], signature: [UInt8]) -> Bool {
        guard signature.count == macLength else { return false }
        return constantTimeEquals(authenticate(key: key, message: message), signature)
    }
}

/// The secret one PIN/UV auth protocol exchange shares, after the protocol's KDF over the ECDH
/// x-coordinate Z: its encrypt, decrypt, authenticate and verify. Keys are typed by purpose and
/// stay in `SecretBytes`.
public struct PinUvAuthSharedSecret: Sendable {
    public let pinUvAuthProtocol: PinUvAuthProtocol
    private let hmacKey: SecretBytes
    private let aesKey: SecretBytes

    public init(protocol pinUvAuthProtocol: PinUvAuthProtocol, z: SecretBytes) {
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
        SecretBytes(wiping: HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: salt, info: Array(info.utf8), outputByteCount: 32))
    }

    /// encrypt(key, demPlaintext): protocol one with a zero IV; protocol two with `iv` (16 fresh
    /// random bytes, the caller's to draw), prepended. `plaintext.count` must be a multiple of 16.
    public func encrypt(_ plaintext: [UInt8], iv: @autoclosure () -> [UInt8]) throws(CryptoError) -> [UInt8] {
        var key = aesKey.copyBytes()
        defer { key.wipe() }
        switch pinUvAuthProtocol {
        case .one:
            return try AES256CBC.encrypt(plaintext, key: key, iv: [UInt8](repeating: 0, count: 16))
        case .two:
            let iv = iv()
            return iv + (try AES256CBC.encrypt(plaintext, key: key, iv: iv))
        }
    }

    /// decrypt(key, demCiphertext); nil when the ciphertext is not whole AES blocks (for
    /// protocol two: after its 16-byte IV, §6.5.7 "if demCiphertext is less than 16 bytes in
    /// length, return an error").
    public func decrypt(_ ciphertext: [UInt8]) -> [UInt8]? {
        var key = aesKey.copyBytes()
        defer { key.wipe() }
        switch pinUvAuthProtocol {
        case .one:
            return try? AES256CBC.decrypt(ciphertext, key: key, iv: [UInt8](repeating: 0, count: 16))
        case .two:
            guard ciphertext.count >= 16 else { return nil }
            return try? AES256CBC.decrypt(Array(ciphertext[16...]), key: key, iv: Array(ciphertext[..<16]))
        }
    }

    /// authenticate(shared secret, message).
    public func authenticate(_ message: [UInt8]) -> [UInt8] {
        pinUvAuthProtocol.authenticate(key: hmacKey, message: message)
    }

    /// verify(shared secret, message, signature).
    public func verify(_ message: [UInt8], signature: [UInt8]) -> Bool {
        pinUvAuthProtocol.verify(key: hmacKey, message: message, signature: signature)
    }
}
