import CBOR

/// COSE algorithm identifiers Latchkey knows (IANA COSE Algorithms registry).
public enum COSEAlgorithm: Int, Sendable, CaseIterable {
    /// ECDSA w/ SHA-256 on P-256 (-7)
    case es256 = -7
    /// EdDSA, Ed25519 (-8)
    case edDSA = -8
    /// ECDH-ES + HKDF-256, the PIN/UV key-agreement algorithm identifier (-25)
    case ecdhESHKDF256 = -25
}

/// A COSE_Key public key (RFC 9052 §7, RFC 9053 §7), as carried in attested credential data
/// and in clientPIN key agreement.
public enum COSEKey: Sendable, Equatable {
    /// EC2 key on P-256 with the given algorithm (ES256 or ECDH-ES+HKDF-256).
    case ec2P256(algorithm: COSEAlgorithm, x: [UInt8], y: [UInt8])
    /// OKP key on Ed25519.
    case okpEd25519(x: [UInt8])

    /// The COSE_Key map: {1: kty, 3: alg, -1: crv, -2: x, -3: y}.
    public var cborValue: CBORValue {
        switch self {
        case let .ec2P256(algorithm, x, y):
            // RFC 9053: kty EC2 = 2, crv P-256 = 1.
            return .map([1: 2, 3: CBORValue(algorithm.rawValue), -1: 1,
                         -2: .byteString(x), -3: .byteString(y)])
        case let .okpEd25519(x):
            // RFC 9053: kty OKP = 1, crv Ed25519 = 6.
            return .map([1: 1, 3: CBORValue(COSEAlgorithm.edDSA.rawValue), -1: 6, -2: .byteString(x)])
        }
    }

    /// Parse a COSE_Key of a shape Latchkey accepts; `nil` for anything else.
    public init?(_ value: CBORValue) {
        guard let kty = value[1]?.intValue, let crv = value[-1]?.intValue,
              let x = value[-2]?.bytesValue, x.count == 32 else { return nil }
        switch (kty, crv) {
        case (2, 1):
            guard let y = value[-3]?.bytesValue, y.count == 32 else { return nil }
            let alg = value[3]?.intValue.flatMap(COSEAlgorithm.init(rawValue:)) ?? .es256
            self = .ec2P256(algorithm: alg, x: x, y: y)
        case (1, 6):
            self = .okpEd25519(x: x)
        default:
            return nil
        }
    }
}
