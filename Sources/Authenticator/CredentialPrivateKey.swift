import CTAP
import FIDOCrypto

/// A credential's signing key, typed by algorithm.
enum CredentialPrivateKey {
    /// ES256, ES384, ES512 or ES256K.
    case ecdsa(COSEAlgorithm, ECDSA.PrivateKey)
    case ed25519(Ed25519.PrivateKey)
    /// RS256 or PS256.
    case rsa(COSEAlgorithm, RSA.PrivateKey)
    /// ML-DSA-44, -65 or -87, held as its 32-byte seed.
    case mlDSA(COSEAlgorithm, MLDSA.PrivateKey)
    /// ES256 kept by a device (a TPM): only its public point and the device's blob are here.
    case device(DeviceKey, any CredentialKeyDevice)

    /// Bytes of the stored key: the ECDSA scalar (32, 48 for P-384, 66 for P-521), the Ed25519
    /// seed (32), the ML-DSA seed ξ (32: FIPS 204 keys are expanded from it, so a credential ID
    /// carries an ML-DSA key as it carries an Ed25519 one); nil for RSA (its DER is over a
    /// kilobyte: no credential ID carries it) and for an algorithm no credential has.
    static func secretByteCount(_ algorithm: COSEAlgorithm) -> Int? {
        if let suite = algorithm.ecdsaSuite { return suite.curve.scalarByteCount }
        if algorithm.mlDSAParameterSet != nil { return MLDSA.seedByteCount }
        return algorithm == .edDSA ? Ed25519.keyByteCount : nil
    }

    static func generate(_ algorithm: COSEAlgorithm, random: RandomSource,
                         device: (any CredentialKeyDevice)? = nil) throws(CTAP2StatusCode) -> CredentialPrivateKey {
        if let device {
            // A key with a key device makes ES256 only (Authenticator.init) and never in software.
            guard algorithm == .es256 else { throw .unsupportedAlgorithm }
            return .device(try device.makeP256Key(), device)
        }
        do {
            if let suite = algorithm.ecdsaSuite {
                // A reproducible rig key draws its scalar from the random source (by rejection).
                let key = random.derivesKeys ? try ECDSA.PrivateKey.derived(suite: suite, draw: random.secret(count:))
                                             : try ECDSA.PrivateKey(suite: suite)
                return .ecdsa(algorithm, key)
            }
            if algorithm.rsaPadding != nil {
                // RSA primes cannot be drawn reproducibly from the random source: a key that
                // derives its keys does not offer RSA (Authenticator.init), and is refused here
                // should one ask all the same.
                guard !random.derivesKeys else { throw CTAP2StatusCode.unsupportedAlgorithm }
                return .rsa(algorithm, try RSA.PrivateKey())
            }
            if let parameterSet = algorithm.mlDSAParameterSet {
                // A reproducible rig key takes its seed from the random source, as Ed25519 does.
                return .mlDSA(algorithm, random.derivesKeys
                    ? try MLDSA.PrivateKey(parameterSet: parameterSet, seed: random.secret(count: MLDSA.seedByteCount))
                    : MLDSA.PrivateKey(parameterSet: parameterSet))
            }
            guard algorithm == .edDSA else { throw CTAP2StatusCode.unsupportedAlgorithm }
            // A reproducible Ed25519 key is its seed as the random source gives it.
            return .ed25519(random.derivesKeys ? try Ed25519.PrivateKey(secret: random.secret(count: Ed25519.keyByteCount))
                                               : try Ed25519.PrivateKey())
        } catch let error as CTAP2StatusCode {
            throw error
        } catch {
            throw .other
        }
    }

    /// The key held in `secret` (a stored credential's), without copying it out of there. A
    /// device's key (`DeviceKey`) needs that device: without it (a store copied to a key
    /// started without `--keys tpm`) the credential has no key here.
    init?(algorithm: COSEAlgorithm, secret: SecretBytes, device: (any CredentialKeyDevice)? = nil) {
        if let key = DeviceKey(stored: secret) {
            guard algorithm == .es256, let device, device.holds(blob: key.blob) else { return nil }
            self = .device(key, device)
        } else if let suite = algorithm.ecdsaSuite {
            guard let key = try? ECDSA.PrivateKey(secret: secret, suite: suite) else { return nil }
            self = .ecdsa(algorithm, key)
        } else if algorithm == .edDSA {
            guard let key = try? Ed25519.PrivateKey(secret: secret) else { return nil }
            self = .ed25519(key)
        } else if algorithm.rsaPadding != nil {
            guard let key = try? RSA.PrivateKey(secret: secret) else { return nil }
            self = .rsa(algorithm, key)
        } else if let parameterSet = algorithm.mlDSAParameterSet {
            guard let key = try? MLDSA.PrivateKey(parameterSet: parameterSet, seed: secret) else { return nil }
            self = .mlDSA(algorithm, key)
        } else {
            return nil
        }
    }

    var algorithm: COSEAlgorithm {
        switch self {
        case let .ecdsa(algorithm, _): algorithm
        case .ed25519: .edDSA
        case let .rsa(algorithm, _): algorithm
        case let .mlDSA(algorithm, _): algorithm
        case .device: .es256
        }
    }

    var rawRepresentation: SecretBytes {
        switch self {
        case let .ecdsa(_, key): key.rawRepresentation
        case let .ed25519(key): key.rawRepresentation
        case let .rsa(_, key): key.rawRepresentation
        case let .mlDSA(_, key): key.seed
        case let .device(key, _): key.stored
        }
    }

    /// Whether this is the key held in `secret` for COSE algorithm `algorithm` (the bytes
    /// compared in constant time).
    func isKey(_ secret: SecretBytes, algorithm: Int) -> Bool {
        self.algorithm.rawValue == algorithm && constantTimeEquals(rawRepresentation, secret)
    }

    var cosePublicKey: COSEKey {
        switch self {
        case let .ecdsa(algorithm, key):
            let pub = key.publicKey
            switch algorithm {
            case .es384: return .ec2(curve: .p384, algorithm: algorithm, x: pub.x, y: pub.y)
            case .es512: return .ec2(curve: .p521, algorithm: algorithm, x: pub.x, y: pub.y)
            case .es256K: return .ec2(curve: .secp256k1, algorithm: algorithm, x: pub.x, y: pub.y)
            default: return .ec2P256(algorithm: algorithm, x: pub.x, y: pub.y)
            }
        case let .ed25519(key):
            return .okpEd25519(x: key.publicKey.rawRepresentation)
        case let .rsa(algorithm, key):
            return .rsa(algorithm: algorithm, n: key.publicKey.modulus, e: key.publicKey.exponent)
        case let .mlDSA(algorithm, key):
            return .akp(algorithm: algorithm, publicKey: key.publicKey.rawRepresentation)
        case let .device(key, _):
            return key.cosePublicKey
        }
    }

    /// ECDSA: DER over the suite's hash of `message`; EdDSA: the 64-byte Ed25519 signature;
    /// ML-DSA: a hedged FIPS 204 signature of `message` itself (pure ML-DSA, empty context, as
    /// WebAuthn verifies it).
    func signature(for message: [UInt8]) throws(CTAP2StatusCode) -> [UInt8] {
        do {
            switch self {
            case let .ecdsa(_, key): return try key.signature(for: message)
            case let .ed25519(key): return try key.signature(for: message)
            case let .rsa(algorithm, key): return try key.signature(for: message, padding: algorithm == .ps256 ? .pss : .pkcs1v15)
            case let .mlDSA(_, key): return try key.signature(for: message)
            case let .device(key, device): return try device.signature(blob: key.blob, for: message)
            }
        } catch let error as CTAP2StatusCode {
            throw error
        } catch {
            throw .other
        }
    }
}

extension COSEAlgorithm {
    /// Whether this machine's libcrypto can make it: every ECDSA curve is optional in an OpenSSL
    /// build (`ECCurve.isAvailable`); asked without touching the curve's shared instance.
    public var isAvailableInLibcrypto: Bool {
        switch self {
        case .es256: ECCurve.isAvailable(groupName: "prime256v1")
        case .es384: ECCurve.isAvailable(groupName: "secp384r1")
        case .es512: ECCurve.isAvailable(groupName: "secp521r1")
        case .es256K: ECCurve.isAvailable(groupName: "secp256k1")
        case .edDSA, .ecdhESHKDF256, .rs256, .ps256, .mlDSA44, .mlDSA65, .mlDSA87: true
        }
    }

    /// The ECDSA suite behind a COSE algorithm (RFC 9053 §2.1, RFC 8812 §3.2); nil for others.
    public var ecdsaSuite: ECDSA.Suite? {
        switch self {
        case .es256: .es256
        case .es384: .es384
        case .es512: .es512
        case .es256K: .es256K
        case .edDSA, .ecdhESHKDF256, .rs256, .ps256, .mlDSA44, .mlDSA65, .mlDSA87: nil
        }
    }

    /// FIPS 204's parameter set behind an ML-DSA algorithm; nil for others.
    public var mlDSAParameterSet: MLDSA.ParameterSet? {
        MLDSA.ParameterSet(rawValue: rawValue)
    }

    /// RS256: PKCS#1 v1.5; PS256: PSS; nil for the others.
    public var rsaPadding: RSA.Padding? {
        switch self {
        case .rs256: .pkcs1v15
        case .ps256: .pss
        default: nil
        }
    }

    /// How a credential key of this algorithm travels as PKCS#8; nil for no credential's.
    public var pkcs8Algorithm: PKCS8PrivateKey.Algorithm? {
        if let suite = ecdsaSuite { return .ec(suite.curve) }
        if rsaPadding != nil { return .rsa }
        if let parameterSet = mlDSAParameterSet { return .mlDSA(parameterSet) }
        return self == .edDSA ? .ed25519 : nil
    }

    /// The credential algorithm of a PKCS#8 key (a rig's addCredential): an EC key's curve
    /// names it, since each curve has one COSE ECDSA algorithm; an RSA key is RS256, as in
    /// Chromium's virtual authenticator (PKCS#8 does not say which padding a key signs with; a
    /// rig key that makes PS256 but not RS256 takes it as PS256).
    public init?(pkcs8 algorithm: PKCS8PrivateKey.Algorithm) {
        guard let found = Self.credentialAlgorithms.first(where: { $0.pkcs8Algorithm == algorithm }) else { return nil }
        self = found
    }
}
