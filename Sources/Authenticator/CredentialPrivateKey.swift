import CTAP
import FIDOCrypto

/// A credential's signing key, typed by algorithm.
enum CredentialPrivateKey {
    case es256(P256.Signing.PrivateKey)
    case ed25519(Ed25519.PrivateKey)

    static func generate(_ algorithm: COSEAlgorithm, random: RandomSource) throws(CTAP2StatusCode) -> CredentialPrivateKey {
        if random.derivesKeys { return try derive(algorithm, random: random) }
        do {
            switch algorithm {
            case .es256: return .es256(try P256.Signing.PrivateKey())
            case .edDSA: return .ed25519(try Ed25519.PrivateKey())
            case .ecdhESHKDF256: throw CTAP2StatusCode.unsupportedAlgorithm
            }
        } catch let error as CTAP2StatusCode {
            throw error
        } catch {
            throw .other
        }
    }

    /// A key from the random source's bytes (a reproducible rig key): an Ed25519 seed as it
    /// comes, a P-256 scalar by rejection (a 32-byte value ≥ n, or 0, is drawn again).
    private static func derive(_ algorithm: COSEAlgorithm, random: RandomSource) throws(CTAP2StatusCode) -> CredentialPrivateKey {
        switch algorithm {
        case .es256:
            for _ in 0..<64 {
                if let key = try? P256.Signing.PrivateKey(secret: random.secret(count: 32)) { return .es256(key) }
            }
            throw .other
        case .edDSA:
            guard let key = try? Ed25519.PrivateKey(secret: random.secret(count: 32)) else { throw .other }
            return .ed25519(key)
        case .ecdhESHKDF256:
            throw .unsupportedAlgorithm
        }
    }

    /// The key held in `secret` (a stored credential's), without copying it out of there.
    init?(algorithm: COSEAlgorithm, secret: SecretBytes) {
        switch algorithm {
        case .es256:
            guard let key = try? P256.Signing.PrivateKey(secret: secret) else { return nil }
            self = .es256(key)
        case .edDSA:
            guard let key = try? Ed25519.PrivateKey(secret: secret) else { return nil }
            self = .ed25519(key)
        case .ecdhESHKDF256:
            return nil
        }
    }

    var algorithm: COSEAlgorithm {
        switch self {
        case .es256: .es256
        case .ed25519: .edDSA
        }
    }

    var rawRepresentation: SecretBytes {
        switch self {
        case let .es256(key): key.rawRepresentation
        case let .ed25519(key): key.rawRepresentation
        }
    }

    /// Whether this is the key held in `secret` for COSE algorithm `algorithm` (the bytes
    /// compared in constant time).
    func isKey(_ secret: SecretBytes, algorithm: Int) -> Bool {
        self.algorithm.rawValue == algorithm && constantTimeEquals(rawRepresentation, secret)
    }

    var cosePublicKey: COSEKey {
        switch self {
        case let .es256(key):
            let pub = key.publicKey
            return .ec2P256(algorithm: .es256, x: pub.x, y: pub.y)
        case let .ed25519(key):
            return .okpEd25519(x: key.publicKey.rawRepresentation)
        }
    }

    /// ES256: DER ECDSA over SHA-256(message); EdDSA: the 64-byte Ed25519 signature.
    func signature(for message: [UInt8]) throws(CTAP2StatusCode) -> [UInt8] {
        do {
            switch self {
            case let .es256(key): return try key.signature(for: message)
            case let .ed25519(key): return try key.signature(for: message)
            }
        } catch {
            throw .other
        }
    }
}
