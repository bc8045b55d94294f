import CBOR
import COpenSSL
import FIDOCrypto

/// The platform side of PIN/UV auth protocols one and two (CTAP 2.1 §6.5.6, §6.5.7), written
/// from the spec for the tests. Only ECDH comes from FIDOCrypto; SHA-256, HMAC, HKDF and
/// AES-256-CBC go to libcrypto directly (`PlatformCrypto`), so a test does not check the
/// authenticator's protocol code with itself.
struct PlatformPinProtocol {
    let version: UInt64

    static let one = PlatformPinProtocol(version: 1)
    static let two = PlatformPinProtocol(version: 2)
    static let both = [one, two]

    /// One encapsulate(): the platform key sent as keyAgreement and the shared secret.
    struct Session {
        let version: UInt64
        /// The platform's COSE_Key {1: 2, 3: -25, -1: 1, -2: x, -3: y}.
        let platformKey: CBORValue
        /// Protocol one: SHA-256(Z). Protocol two: HMAC key (32) ‖ AES key (32).
        let sharedSecret: [UInt8]

        var hmacKey: [UInt8] { version == 1 ? sharedSecret : Array(sharedSecret[0..<32]) }
        var aesKey: [UInt8] { version == 1 ? sharedSecret : Array(sharedSecret[32..<64]) }

        /// encrypt(): protocol one with a zero IV; protocol two with a random IV prepended.
        func encrypt(_ plaintext: [UInt8]) -> [UInt8] {
            if version == 1 {
                return PlatformCrypto.aes256CBC(encrypting: true, key: aesKey, iv: [UInt8](repeating: 0, count: 16), plaintext)!
            }
            let iv = SecureRandom.bytes(count: 16)
            return iv + PlatformCrypto.aes256CBC(encrypting: true, key: aesKey, iv: iv, plaintext)!
        }

        func decrypt(_ ciphertext: [UInt8]) -> [UInt8]? {
            if version == 1 {
                return PlatformCrypto.aes256CBC(encrypting: false, key: aesKey, iv: [UInt8](repeating: 0, count: 16), ciphertext)
            }
            guard ciphertext.count >= 16 else { return nil }
            return PlatformCrypto.aes256CBC(encrypting: false, key: aesKey, iv: Array(ciphertext[0..<16]), Array(ciphertext[16...]))
        }

        /// authenticate(shared secret, message).
        func authenticate(_ message: [UInt8]) -> [UInt8] {
            PlatformPinProtocol(version: version).authenticate(key: hmacKey, message)
        }
    }

    /// authenticate(key, message): protocol one LEFT(HMAC-SHA-256, 16), two the whole HMAC.
    func authenticate(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        let mac = PlatformCrypto.hmacSHA256(key: key, message)
        return version == 1 ? Array(mac.prefix(16)) : mac
    }

    /// encapsulate(peerCoseKey) against the authenticator's keyAgreement COSE_Key.
    func encapsulate(_ authenticatorKey: CBORValue) throws -> Session {
        guard let x = authenticatorKey[-2]?.bytesValue, let y = authenticatorKey[-3]?.bytesValue else {
            throw PlatformError.malformedKey
        }
        let peer = try P256.KeyAgreement.PublicKey(x: x, y: y)
        let ephemeral = try P256.KeyAgreement.PrivateKey()
        let z = try ephemeral.sharedSecretX(with: peer).copyBytes()
        let secret: [UInt8]
        if version == 1 {
            secret = PlatformCrypto.sha256(z)
        } else {
            let salt = [UInt8](repeating: 0, count: 32)
            secret = PlatformCrypto.hkdfSHA256(ikm: z, salt: salt, info: Array("CTAP2 HMAC key".utf8), length: 32)
                + PlatformCrypto.hkdfSHA256(ikm: z, salt: salt, info: Array("CTAP2 AES key".utf8), length: 32)
        }
        let key: CBORValue = .map([1: 2, 3: -25, -1: 1, -2: .byteString(ephemeral.publicKey.x),
                                   -3: .byteString(ephemeral.publicKey.y)])
        return Session(version: version, platformKey: key, sharedSecret: secret)
    }

    enum PlatformError: Error { case malformedKey }
}

/// SHA-256, HMAC-SHA-256, HKDF-SHA-256 (RFC 5869, by hand over HMAC) and AES-256-CBC without
/// padding, straight from libcrypto.
enum PlatformCrypto {
    static func sha256(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        precondition(EVP_Digest(data, data.count, &out, &length, EVP_sha256(), nil) == 1)
        return out
    }

    static func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let keyBytes = key.isEmpty ? [0] : key
        precondition(HMAC(EVP_sha256(), keyBytes, Int32(key.count), data, data.count, &out, &length) != nil)
        return out
    }

    /// RFC 5869 §2.2 extract, §2.3 expand.
    static func hkdfSHA256(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        let prk = hmacSHA256(key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, ikm)
        var okm: [UInt8] = []
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while okm.count < length {
            previous = hmacSHA256(key: prk, previous + info + [counter])
            okm += previous
            counter += 1
        }
        return Array(okm.prefix(length))
    }

    static func aes256CBC(encrypting: Bool, key: [UInt8], iv: [UInt8], _ input: [UInt8]) -> [UInt8]? {
        guard key.count == 32, iv.count == 16, input.count % 16 == 0 else { return nil }
        if input.isEmpty { return [] }
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        guard EVP_CipherInit_ex(context, EVP_aes_256_cbc(), nil, key, iv, encrypting ? 1 : 0) == 1,
              EVP_CIPHER_CTX_set_padding(context, 0) == 1 else { return nil }
        var out = [UInt8](repeating: 0, count: input.count + 16)
        var length: Int32 = 0
        guard EVP_CipherUpdate(context, &out, &length, input, Int32(input.count)) == 1 else { return nil }
        var finalLength: Int32 = 0
        let ok = out.withUnsafeMutableBufferPointer { buffer in
            EVP_CipherFinal_ex(context, buffer.baseAddress! + Int(length), &finalLength)
        }
        guard ok == 1 else { return nil }
        return Array(out.prefix(Int(length + finalLength)))
    }
}
