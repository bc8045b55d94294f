import CBOR
import CTAP
import FIDOCrypto

/// The platform (client) side of PIN/UV auth protocols one and two (CTAP 2.1 §6.5.6, §6.5.7):
/// what `latchkey pin` and the device commands use to talk clientPIN to any key. The protocol
/// itself is FIDOCrypto's, the one the authenticator uses too.
public typealias PlatformPinUvAuthProtocol = PinUvAuthProtocol

extension PinUvAuthProtocol {
    /// The protocol to use with a key that lists `supported` (getInfo 0x06, most preferred
    /// first): CTAP 2.1 §6.5.4, the first one the platform also speaks. A key that lists none
    /// (CTAP 2.0 without the field) speaks protocol one.
    public static func negotiate(_ supported: [Int]?) -> PinUvAuthProtocol? {
        guard let supported, !supported.isEmpty else { return .one }
        for value in supported {
            if let known = PinUvAuthProtocol(rawValue: UInt64(clamping: max(value, 0))) { return known }
        }
        return nil
    }

    /// encapsulate(peerCoseKey): a fresh ECDH key (or `ephemeral`, for known-answer tests), the
    /// COSE_Key to send as keyAgreement, and the shared secret from this protocol's KDF.
    public func encapsulate(_ authenticatorKey: CBORValue,
                            ephemeral: P256.KeyAgreement.PrivateKey? = nil) throws(PlatformPinUvAuthError) -> PlatformPinUvAuthSession {
        // §6.5.6: the peer key must be a P-256 COSE_Key (kty 2, crv 1) on the curve.
        guard case let .ec2P256(_, x, y)? = COSEKey(authenticatorKey),
              let peer = try? P256.KeyAgreement.PublicKey(x: x, y: y) else {
            throw .malformedKeyAgreement
        }
        let key: P256.KeyAgreement.PrivateKey
        if let ephemeral {
            key = ephemeral
        } else {
            guard let generated = try? P256.KeyAgreement.PrivateKey() else { throw .crypto }
            key = generated
        }
        guard let z = try? key.sharedSecretX(with: peer) else { throw .malformedKeyAgreement }
        // COSE_Key {1: 2 (EC2), 3: -25 (ECDH-ES+HKDF-256), -1: 1 (P-256), -2: x, -3: y}.
        let platformKey = COSEKey.ec2P256(algorithm: .ecdhESHKDF256, x: key.publicKey.x, y: key.publicKey.y).cborValue
        return PlatformPinUvAuthSession(platformKey: platformKey, secret: PinUvAuthSharedSecret(protocol: self, z: z))
    }
}

/// One encapsulate(): the key agreement to send and the shared secret's operations.
public struct PlatformPinUvAuthSession: Sendable {
    /// The platform's COSE_Key, sent as clientPIN keyAgreement (0x03).
    public let platformKey: CBORValue
    let secret: PinUvAuthSharedSecret

    public var pinUvAuthProtocol: PinUvAuthProtocol { secret.pinUvAuthProtocol }

    /// encrypt(key, demPlaintext): protocol one with a zero IV; protocol two with a random IV
    /// (or `iv`, for known-answer tests) that is prepended. Whole 16-byte blocks only.
    public func encrypt(_ plaintext: [UInt8], iv fixedIV: [UInt8]? = nil) throws(PlatformPinUvAuthError) -> [UInt8] {
        do {
            return try secret.encrypt(plaintext, iv: fixedIV ?? SecureRandom.bytes(count: 16))
        } catch {
            throw .crypto
        }
    }

    /// decrypt(key, demCiphertext); protocol two takes the IV from the first 16 bytes.
    public func decrypt(_ ciphertext: [UInt8]) throws(PlatformPinUvAuthError) -> [UInt8] {
        if pinUvAuthProtocol == .two, ciphertext.count < 16 { throw .malformedReply("a ciphertext shorter than its IV") }
        guard let plaintext = secret.decrypt(ciphertext) else { throw .malformedReply("a ciphertext that is not whole AES blocks") }
        return plaintext
    }

    /// authenticate(shared secret, message).
    public func authenticate(_ message: [UInt8]) -> [UInt8] {
        secret.authenticate(message)
    }

    // MARK: clientPIN payloads

    /// newPinEnc: the PIN's UTF-8 padded with zeros to 64 bytes, encrypted (§6.5.5.5).
    public func newPinEnc(_ pin: PIN) throws(PlatformPinUvAuthError) -> [UInt8] {
        var padded = pin.paddedBytes()
        defer { padded.wipe() }
        return try encrypt(padded)
    }

    /// pinHashEnc: LEFT(SHA-256(PIN), 16), encrypted (§6.5.5.6, §6.5.5.7).
    public func pinHashEnc(_ pin: PIN) throws(PlatformPinUvAuthError) -> [UInt8] {
        var hash = pin.leftHash()
        defer { hash.wipe() }
        return try encrypt(hash)
    }

    /// The pinUvAuthToken from a clientPIN response (decrypt(shared secret, pinUvAuthToken)).
    /// Protocol two tokens are 32 bytes; protocol one tokens 16 or 32 (CTAP 2.0 keys use 16).
    public func token(fromEncrypted encrypted: [UInt8]) throws(PlatformPinUvAuthError) -> PinUvAuthToken {
        var bytes = try decrypt(encrypted)
        defer { bytes.wipe() }
        let valid = pinUvAuthProtocol == .two ? bytes.count == 32 : (bytes.count == 16 || bytes.count == 32)
        guard valid else { throw .malformedReply("a \(bytes.count)-byte pinUvAuthToken") }
        return PinUvAuthToken(protocol: pinUvAuthProtocol, key: SecretBytes(bytes))
    }
}

/// A pinUvAuthToken and the protocol it was obtained with.
public struct PinUvAuthToken: Sendable {
    public let pinUvAuthProtocol: PlatformPinUvAuthProtocol
    let key: SecretBytes

    public init(protocol pinUvAuthProtocol: PlatformPinUvAuthProtocol, key: SecretBytes) {
        self.pinUvAuthProtocol = pinUvAuthProtocol
        self.key = key
    }

    /// pinUvAuthParam = authenticate(pinUvAuthToken, message).
    public func authenticate(_ message: [UInt8]) -> [UInt8] {
        pinUvAuthProtocol.authenticate(key: key, message: message)
    }
}

public enum PlatformPinUvAuthError: Error, Equatable, Sendable {
    /// The key's keyAgreement is not a P-256 COSE_Key on the curve.
    case malformedKeyAgreement
    case malformedReply(String)
    /// libcrypto failed (key generation, cipher).
    case crypto

    public var message: String {
        switch self {
        case .malformedKeyAgreement: "the key's clientPIN keyAgreement is not a P-256 public key"
        case .malformedReply(let what): "the key answered clientPIN with \(what)"
        case .crypto: "a cryptographic operation failed (libcrypto)"
        }
    }
}
