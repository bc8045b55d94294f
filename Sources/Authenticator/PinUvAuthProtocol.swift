import CBOR
import CTAP
import FIDOCrypto

/// The PIN/UV auth protocols this key speaks, authenticator side (CTAP 2.1 §6.5.6 and §6.5.7).
enum PinUvAuthProtocol: UInt64, CaseIterable, Sendable {
    /// PIN/UV auth protocol one: SHA-256(Z), AES-256-CBC with a zero IV, 16-byte MACs.
    case one = 1
    /// PIN/UV auth protocol two: HKDF-SHA-256 keys, AES-256-CBC with a random IV, 32-byte MACs.
    case two = 2

    /// getInfo 0x06, most preferred first (CTAP 2.1 §6.4: platforms take the first they share).
    static let preferenceOrder: [PinUvAuthProtocol] = [.two, .one]

    /// The protocol a request names. CTAP 2.1 §6.1.2 step 2, §6.2.2 step 2, §6.5.5: missing →
    /// CTAP2_ERR_MISSING_PARAMETER, unsupported → CTAP1_ERR_INVALID_PARAMETER.
    init(requested value: UInt64?) throws(CTAP2StatusCode) {
        guard let value else { throw .missingParameter }
        guard let known = PinUvAuthProtocol(rawValue: value) else { throw .invalidParameter }
        self = known
    }

    /// Length of `authenticate` output: LEFT(HMAC, 16) for protocol one, the whole HMAC for two.
    var macLength: Int {
        switch self {
        case .one: 16
        case .two: 32
        }
    }

    /// authenticate(key, message) with a pinUvAuthToken as the key.
    func authenticate(token: SecretBytes, message: [UInt8]) -> [UInt8] {
        Array(HMACSHA256.authenticationCode(key: token, data: message).prefix(macLength))
    }

    /// verify(key, message, signature): the signature must have this protocol's MAC length and
    /// match, compared in constant time.
    func verify(token: SecretBytes, message: [UInt8], signature: [UInt8]) -> Bool {
        guard signature.count == macLength else { return false }
        return constantTimeEquals(authenticate(token: token, message: message), signature)
    }

    /// decapsulate(peerCoseKey): ECDH with the platform's key, then this protocol's KDF.
    /// A key that is not a P-256 point is CTAP1_ERR_INVALID_PARAMETER (§6.5.5.4 ff.).
    func decapsulate(_ platformKey: CBORValue, with key: P256.KeyAgreement.PrivateKey) throws(CTAP2StatusCode) -> PinUvAuthSharedSecret {
        guard case let .ec2P256(_, x, y)? = COSEKey(platformKey),
              let peer = try? P256.KeyAgreement.PublicKey(x: x, y: y),
              let z = try? key.sharedSecretX(with: peer) else {
            throw .invalidParameter
        }
        return PinUvAuthSharedSecret(protocol: self, z: z)
    }
}
