import CBOR
import CTAP
import FIDOCrypto

/// The PIN/UV auth protocols (FIDOCrypto's, shared with the platform side), as the
/// authenticator takes them from requests (CTAP 2.1 §6.5.6 and §6.5.7).
extension PinUvAuthProtocol {
    /// getInfo 0x06, most preferred first (CTAP 2.1 §6.4: platforms take the first they share).
    static let preferenceOrder: [PinUvAuthProtocol] = [.two, .one]

    /// The protocol a request names. CTAP 2.1 §6.1.2 step 2, §6.2.2 step 2, §6.5.5: missing →
    /// CTAP2_ERR_MISSING_PARAMETER, unsupported → CTAP1_ERR_INVALID_PARAMETER.
    init(requested value: UInt64?) throws(CTAP2StatusCode) {
        guard let value else { throw .missingParameter }
        guard let known = PinUvAuthProtocol(rawValue: value) else { throw .invalidParameter }
        self = known
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

extension PinUvAuthSharedSecret {
    /// encrypt(key, demPlaintext), protocol two's IV from the key's random source.
    func encrypt(_ plaintext: [UInt8], random: RandomSource) throws(CTAP2StatusCode) -> [UInt8] {
        do {
            return try encrypt(plaintext, iv: random.bytes(count: 16))
        } catch {
            throw .other
        }
    }
}
