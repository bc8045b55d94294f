import CBOR

/// COSE algorithm identifiers Latchkey knows (IANA COSE Algorithms registry).
public enum COSEAlgorithm: Int, Sendable, CaseIterable {
    /// ECDSA w/ SHA-256 on P-256 (-7)
    case es256 = -7
    /// EdDSA, Ed25519 (-8)
    case edDSA = -8
    /// ECDH-ES + HKDF-256, the PIN/UV key-agreement algorithm identifier (-25)
    case ecdhESHKDF256 = -25
    /// ECDSA w/ SHA-384 on P-384 (-35)
    case es384 = -35
    /// ECDSA w/ SHA-512 on P-521 (-36)
    case es512 = -36
    /// ECDSA w/ SHA-256 on secp256k1 (-47, RFC 8812)
    case es256K = -47
    /// RSASSA-PSS w/ SHA-256 (-37, RFC 8230)
    case ps256 = -37
    /// RSASSA-PKCS1-v1_5 w/ SHA-256 (-257, RFC 8812)
    case rs256 = -257
    /// ML-DSA-44, -65, -87 (FIPS 204; COSE numbers of draft-ietf-cose-dilithium, as python-fido2
    /// and the IANA registry's early allocation have them): key type AKP.
    case mlDSA44 = -48
    case mlDSA65 = -49
    case mlDSA87 = -50

    /// The signature algorithms a credential can have, in Latchkey's order of preference:
    /// ES256 and EdDSA first, as every security key lists them; RSA, then ML-DSA last.
    public static let credentialAlgorithms: [COSEAlgorithm] = [.es256, .edDSA, .es384, .es512, .es256K, .rs256, .ps256,
                                                               .mlDSA44, .mlDSA65, .mlDSA87]

    /// What a key makes unless told otherwise (getInfo `algorithms`): all but RSA and ML-DSA. An
    /// RSA key fits in no credential ID, so every RSA credential, a non-discoverable one too,
    /// takes a slot in the store; and making one takes 50 ms to a second. ML-DSA waits until
    /// browsers take it: a site that lists it beside ES256 would otherwise get a credential whose
    /// 1.3–2.6 KB public key and 2.4–4.6 KB signatures its library may not verify. A key offers
    /// them only when its `--algorithms` (a rig's `algorithms`) names them.
    public static let defaultCredentialAlgorithms = credentialAlgorithms.filter { $0.isECOrEdDSA }

    /// ES256, EdDSA, ES384, ES512, ES256K: the algorithms a key makes by default.
    public var isECOrEdDSA: Bool {
        switch self {
        case .es256, .edDSA, .es384, .es512, .es256K: true
        case .ecdhESHKDF256, .rs256, .ps256, .mlDSA44, .mlDSA65, .mlDSA87: false
        }
    }

    /// Whether this is ML-DSA-44, -65 or -87.
    public var isMLDSA: Bool { self == .mlDSA44 || self == .mlDSA65 || self == .mlDSA87 }

    /// The COSE name ("ES256", "EdDSA", …).
    public var name: String {
        switch self {
        case .es256: "ES256"
        case .edDSA: "EdDSA"
        case .ecdhESHKDF256: "ECDH-ES+HKDF-256"
        case .es384: "ES384"
        case .es512: "ES512"
        case .es256K: "ES256K"
        case .ps256: "PS256"
        case .rs256: "RS256"
        case .mlDSA44: "ML-DSA-44"
        case .mlDSA65: "ML-DSA-65"
        case .mlDSA87: "ML-DSA-87"
        }
    }

    /// Credential algorithms by name or number (`--algorithms ES256,ES384`, a rig's `algorithms`),
    /// in the order given, which is the key's order of preference. Each at most once.
    public static func credentialAlgorithms(named names: [String]) throws(AlgorithmListError) -> [COSEAlgorithm] {
        guard !names.isEmpty else { throw AlgorithmListError(message: "name at least one algorithm") }
        var algorithms: [COSEAlgorithm] = []
        for name in names {
            guard let algorithm = COSEAlgorithm(credentialName: name.trimmingSpaces) else {
                throw AlgorithmListError(message: "unknown algorithm '\(name)': the key makes "
                                         + credentialAlgorithms.map(\.name).joined(separator: ", "))
            }
            guard !algorithms.contains(algorithm) else { throw AlgorithmListError(message: "\(algorithm.name) is named twice") }
            algorithms.append(algorithm)
        }
        return algorithms
    }

    /// A credential algorithm by its COSE name (any case; "MLDSA44" as python-fido2 spells it, or
    /// "ML-DSA-44") or number, for command lines.
    public init?<Text: StringProtocol>(credentialName text: Text) {
        let folded = text.lowercased().filter { $0 != "-" }
        let found = Self.credentialAlgorithms.first {
            $0.name.lowercased().filter { $0 != "-" } == folded || String($0.rawValue) == text
        }
        guard let found else { return nil }
        self = found
    }
}

extension COSEAlgorithm {
    /// FIPS 204's public key length: 1,312, 1,952, 2,592 bytes; 0 for other algorithms.
    public var mlDSAPublicKeyByteCount: Int {
        switch self {
        case .mlDSA44: 1312
        case .mlDSA65: 1952
        case .mlDSA87: 2592
        default: 0
        }
    }
}

/// What is wrong with a list of algorithm names.
public struct AlgorithmListError: Error, CustomStringConvertible, Equatable {
    public let message: String
    public var description: String { message }
}

private extension String {
    var trimmingSpaces: Substring {
        var text = Substring(self)
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return text
    }
}

/// COSE elliptic curves of EC2 keys (IANA COSE Elliptic Curves registry).
public enum COSECurve: Int, Sendable {
    case p256 = 1
    case p384 = 2
    case p521 = 3
    case secp256k1 = 8

    /// Bytes of each affine coordinate.
    public var coordinateByteCount: Int {
        switch self {
        case .p256, .secp256k1: 32
        case .p384: 48
        case .p521: 66
        }
    }
}

/// A COSE_Key public key (RFC 9052 §7, RFC 9053 §7), as carried in attested credential data
/// and in clientPIN key agreement.
public enum COSEKey: Sendable, Equatable {
    /// EC2 key on P-256 with the given algorithm (ES256 or ECDH-ES+HKDF-256): the only shape
    /// the PIN/UV protocols take.
    case ec2P256(algorithm: COSEAlgorithm, x: [UInt8], y: [UInt8])
    /// EC2 key on another curve (ES384 on P-384, ES512 on P-521, ES256K on secp256k1).
    case ec2(curve: COSECurve, algorithm: COSEAlgorithm, x: [UInt8], y: [UInt8])
    /// OKP key on Ed25519.
    case okpEd25519(x: [UInt8])
    /// RSA key (RS256 or PS256): big-endian modulus n and public exponent e.
    case rsa(algorithm: COSEAlgorithm, n: [UInt8], e: [UInt8])
    /// AKP ("algorithm key pair") key of an ML-DSA algorithm: its encoded public key.
    case akp(algorithm: COSEAlgorithm, publicKey: [UInt8])

    /// The COSE_Key map: {1: kty, 3: alg, -1: crv, -2: x, -3: y}.
    public var cborValue: CBORValue {
        switch self {
        case let .ec2P256(algorithm, x, y):
            // RFC 9053: kty EC2 = 2, crv P-256 = 1.
            return .map([1: 2, 3: CBORValue(algorithm.rawValue), -1: 1,
                         -2: .byteString(x), -3: .byteString(y)])
        case let .ec2(curve, algorithm, x, y):
            return .map([1: 2, 3: CBORValue(algorithm.rawValue), -1: CBORValue(curve.rawValue),
                         -2: .byteString(x), -3: .byteString(y)])
        case let .okpEd25519(x):
            // RFC 9053: kty OKP = 1, crv Ed25519 = 6.
            return .map([1: 1, 3: CBORValue(COSEAlgorithm.edDSA.rawValue), -1: 6, -2: .byteString(x)])
        case let .rsa(algorithm, n, e):
            // RFC 8230 §4: kty RSA = 3, n = -1, e = -2.
            return .map([1: 3, 3: CBORValue(algorithm.rawValue), -1: .byteString(n), -2: .byteString(e)])
        case let .akp(algorithm, publicKey):
            // draft-ietf-cose-dilithium: kty AKP = 7, pub = -1 (the FIPS 204 pkEncode bytes).
            return .map([1: 7, 3: CBORValue(algorithm.rawValue), -1: .byteString(publicKey)])
        }
    }

    /// `cborValue.encoded()` written without the map: every shape's labels 1, 3, -1, -2, -3
    /// come in that order, which is CTAP2 canonical order (0x01, 0x03, 0x20, 0x21, 0x22).
    public func encode(into output: inout [UInt8]) {
        func bytes(_ value: [UInt8]) {
            CBORValue.appendHead(major: 2, argument: UInt64(value.count), into: &output)
            output += value
        }
        func integer(_ value: Int) { CBORValue(value).encode(into: &output) }
        switch self {
        case let .ec2P256(algorithm, x, y):
            output.append(0xA5)
            output.append(0x01); integer(2); output.append(0x03); integer(algorithm.rawValue)
            output.append(0x20); integer(1); output.append(0x21); bytes(x); output.append(0x22); bytes(y)
        case let .ec2(curve, algorithm, x, y):
            output.append(0xA5)
            output.append(0x01); integer(2); output.append(0x03); integer(algorithm.rawValue)
            output.append(0x20); integer(curve.rawValue); output.append(0x21); bytes(x); output.append(0x22); bytes(y)
        case let .okpEd25519(x):
            output.append(0xA4)
            output.append(0x01); integer(1); output.append(0x03); integer(COSEAlgorithm.edDSA.rawValue)
            output.append(0x20); integer(6); output.append(0x21); bytes(x)
        case let .rsa(algorithm, n, e):
            output.append(0xA4)
            output.append(0x01); integer(3); output.append(0x03); integer(algorithm.rawValue)
            output.append(0x20); bytes(n); output.append(0x21); bytes(e)
        case let .akp(algorithm, publicKey):
            output.append(0xA3)
            output.append(0x01); integer(7); output.append(0x03); integer(algorithm.rawValue)
            output.append(0x20); bytes(publicKey)
        }
    }

    /// Parse a COSE_Key of a shape Latchkey accepts; `nil` for anything else.
    public init?(_ value: CBORValue) {
        if value[1]?.intValue == 7 {
            guard let alg = value[3]?.intValue.flatMap(COSEAlgorithm.init(rawValue:)), alg.isMLDSA,
                  let publicKey = value[-1]?.bytesValue, publicKey.count == alg.mlDSAPublicKeyByteCount else { return nil }
            self = .akp(algorithm: alg, publicKey: publicKey)
            return
        }
        if value[1]?.intValue == 3 {
            guard let alg = value[3]?.intValue.flatMap(COSEAlgorithm.init(rawValue:)), alg == .rs256 || alg == .ps256,
                  let n = value[-1]?.bytesValue, !n.isEmpty, let e = value[-2]?.bytesValue, !e.isEmpty else { return nil }
            self = .rsa(algorithm: alg, n: n, e: e)
            return
        }
        guard let kty = value[1]?.intValue, let crv = value[-1]?.intValue,
              let x = value[-2]?.bytesValue else { return nil }
        switch (kty, crv) {
        case (2, 1):
            guard x.count == 32, let y = value[-3]?.bytesValue, y.count == 32 else { return nil }
            let alg = value[3]?.intValue.flatMap(COSEAlgorithm.init(rawValue:)) ?? .es256
            self = .ec2P256(algorithm: alg, x: x, y: y)
        case (2, _):
            // Other curves carry their algorithm: an EC2 key without one is not a credential's.
            guard let curve = COSECurve(rawValue: crv), curve != .p256,
                  let alg = value[3]?.intValue.flatMap(COSEAlgorithm.init(rawValue:)),
                  x.count == curve.coordinateByteCount,
                  let y = value[-3]?.bytesValue, y.count == curve.coordinateByteCount else { return nil }
            self = .ec2(curve: curve, algorithm: alg, x: x, y: y)
        case (1, 6):
            guard x.count == 32 else { return nil }
            self = .okpEd25519(x: x)
        default:
            return nil
        }
    }
}
