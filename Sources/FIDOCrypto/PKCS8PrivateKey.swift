import COpenSSL

/// A credential private key in PKCS#8 `PrivateKeyInfo` DER (RFC 5208/5958): what WebDriver's
/// virtual-authenticator `addCredential` and `getCredentials` carry, and what WebCrypto's
/// `exportKey("pkcs8")` writes. Only the credential algorithms' keys: EC keys on P-256 (ES256),
/// P-384 (ES384), P-521 (ES512) and secp256k1 (ES256K), Ed25519, and RSA (RS256, PS256).
public enum PKCS8PrivateKey {
    public enum Algorithm: Sendable, Equatable {
        /// An EC key: its big-endian scalar, as long as the curve's order.
        case ec(ECCurve)
        /// The 32-byte seed.
        case ed25519
        /// An RSA key: its PKCS#1 RSAPrivateKey DER (2048–4096 bits).
        case rsa
        /// An ML-DSA key: its 32-byte seed (RFC 9881's `seed` form).
        case mlDSA(MLDSA.ParameterSet)

        /// A P-256 key (ES256).
        public static let p256 = Algorithm.ec(.p256)
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case notPKCS8
        case unsupportedKeyType(String)
        case invalidScalar
        case mlDSAWithoutSeed

        public var description: String {
            switch self {
            case .notPKCS8: "not a PKCS#8 PrivateKeyInfo (DER)"
            case let .unsupportedKeyType(type):
                "a \(type) key: only EC keys on P-256, P-384, P-521 or secp256k1, Ed25519 and RSA keys are credentials"
            case .invalidScalar: "an EC private scalar outside [1, n-1]"
            case .mlDSAWithoutSeed:
                "an ML-DSA key in its expanded form only: Latchkey keeps ML-DSA keys as their 32-byte seed "
                    + "(write the key with its seed, as OpenSSL 3.5 and the cryptography package do by default)"
            }
        }
    }

    /// The raw key (scalar or seed) of a PKCS#8 DER private key. The DER must be exactly one
    /// PrivateKeyInfo (no trailing bytes).
    public static func decode(_ der: [UInt8]) throws(Failure) -> (Algorithm, SecretBytes) {
        // OpenSSL 3.0 knows no ML-DSA: those are read here.
        if let mlDSA = try decodeMLDSA(der) { return mlDSA }
        let key: EVPPKey
        do throws(CryptoError) {
            key = try der.withBytes { (bytes) throws(CryptoError) -> EVPPKey in
                var cursor = bytes.uint8Pointer
                let info = try checkNotNull("d2i_PKCS8_PRIV_KEY_INFO", d2i_PKCS8_PRIV_KEY_INFO(nil, &cursor, bytes.count))
                defer { PKCS8_PRIV_KEY_INFO_free(info) }
                guard let start = bytes.uint8Pointer, cursor == start + bytes.count else { throw .invalidLength }
                return EVPPKey(try checkNotNull("EVP_PKCS82PKEY", EVP_PKCS82PKEY(info)))
            }
        } catch {
            throw .notPKCS8
        }
        if EVP_PKEY_is_a(key.pointer, "ED25519") == 1 {
            guard let seed = try? SecretBytes(count: Ed25519.keyByteCount, fill: { (buffer) throws(CryptoError) in
                var length = buffer.count
                try check("EVP_PKEY_get_raw_private_key", EVP_PKEY_get_raw_private_key(key.pointer, buffer.uint8Pointer, &length),
                          success: { $0 == 1 && length == Ed25519.keyByteCount })
            }) else { throw .notPKCS8 }
            return (.ed25519, seed)
        }
        if EVP_PKEY_is_a(key.pointer, "EC") == 1 {
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(key.pointer, &name, name.count, &length) == 1 else { throw .unsupportedKeyType("EC") }
            let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard let curve = ECCurve.named(group) else { throw .unsupportedKeyType("EC \(group)") }
            guard let scalar = try? curve.exportScalar(key) else { throw .notPKCS8 }
            // OpenSSL takes any scalar; a credential key must be in [1, n-1].
            guard scalar.withUnsafeBytes(curve.isValidScalar) else { throw .invalidScalar }
            return (.ec(curve), scalar)
        }
        if EVP_PKEY_is_a(key.pointer, "RSA") == 1 {
            let bits = Int(EVP_PKEY_get_bits(key.pointer))
            guard RSA.acceptedModulusBits.contains(bits) else { throw .unsupportedKeyType("\(bits)-bit RSA") }
            guard let der = try? RSA.PrivateKey.export(key), (try? RSA.PrivateKey(secret: der)) != nil else { throw .notPKCS8 }
            return (.rsa, der)
        }
        let type = EVP_PKEY_get0_type_name(key.pointer).map { String(cString: $0) } ?? "unknown"
        throw .unsupportedKeyType(type)
    }

    /// PKCS#8 DER of a raw credential key, in secure memory, as OpenSSL and WebCrypto write it:
    /// an EC key as an RFC 5915 ECPrivateKey with its public point (no parameters inside: they
    /// are in the AlgorithmIdentifier), Ed25519 as RFC 8410's CurvePrivateKey.
    public static func encode(_ algorithm: Algorithm, _ raw: SecretBytes) throws(CryptoError) -> SecretBytes {
        // Room for all of it up front (P-521's is 241 bytes): the array never reallocates (and
        // leaves no copy of the key behind) once the key is in it.
        var der: [UInt8] = []
        der.reserveCapacity(256)
        switch algorithm {
        case let .ec(curve):
            guard raw.withUnsafeBytes(curve.isValidScalar) else { throw .invalidKey }
            let point = try curve.publicKey(forScalar: raw)   // 0x04 ‖ X ‖ Y
            let publicKeyField = tlv(0xA1, tlv(0x03, [0x00] + point))
            let ecPrivateKeyLength = 3 + header(0x04, raw.count).count + raw.count + publicKeyField.count
            let ecPrivateKeyHeader = header(0x30, ecPrivateKeyLength)
            let octetsLength = ecPrivateKeyHeader.count + ecPrivateKeyLength
            let algorithmIdentifier = tlv(0x30, tlv(0x06, DEREncoding.ecPublicKeyOID) + tlv(0x06, curve.objectIdentifier))
            let octetsHeader = header(0x04, octetsLength)
            der += header(0x30, 3 + algorithmIdentifier.count + octetsHeader.count + octetsLength)
            der += [0x02, 0x01, 0x00] + algorithmIdentifier + octetsHeader + ecPrivateKeyHeader
            der += [0x02, 0x01, 0x01] + header(0x04, raw.count)
            raw.append(to: &der)
            der += publicKeyField
        case .rsa:
            // RFC 8017 A.1: rsaEncryption with NULL parameters, the RSAPrivateKey as the octets.
            let algorithmIdentifier = tlv(0x30, tlv(0x06, DEREncoding.rsaEncryptionOID) + [0x05, 0x00])
            let octetsHeader = header(0x04, raw.count)
            der.reserveCapacity(raw.count + 32)
            der += header(0x30, 3 + algorithmIdentifier.count + octetsHeader.count + raw.count)
            der += [0x02, 0x01, 0x00] + algorithmIdentifier + octetsHeader
            raw.append(to: &der)
        case let .mlDSA(parameterSet):
            // RFC 9881 §6: id-ml-dsa-*, no parameters; privateKey = seed [0] IMPLICIT OCTET STRING.
            guard raw.count == MLDSA.seedByteCount else { throw .invalidKey }
            der += [0x30, 0x34, 0x02, 0x01, 0x00, 0x30, 0x0B, 0x06, 0x09] + mlDSAObjectIdentifier(parameterSet)
                + [0x04, 0x22, 0x80, 0x20]
            raw.append(to: &der)
        case .ed25519:
            guard raw.count == Ed25519.keyByteCount else { throw .invalidKey }
            der += [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70,   // id-Ed25519
                   0x04, 0x22, 0x04, 0x20]
            raw.append(to: &der)
        }
        return SecretBytes(wiping: der)
    }

    /// id-ml-dsa-44, -65, -87: 2.16.840.1.101.3.4.3.17, .18, .19 (NIST CSOR).
    private static func mlDSAObjectIdentifier(_ parameterSet: MLDSA.ParameterSet) -> [UInt8] {
        let last: UInt8 = switch parameterSet {
        case .mlDSA44: 0x11
        case .mlDSA65: 0x12
        case .mlDSA87: 0x13
        }
        return [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, last]
    }

    /// An ML-DSA PrivateKeyInfo (RFC 9881): nil when the DER is not one (another key type, for
    /// OpenSSL to read). Of its three private key forms, `seed` and `both` are read (the
    /// expanded key of `both` must be the seed's); `expandedKey` alone cannot give the seed.
    private static func decodeMLDSA(_ der: [UInt8]) throws(Failure) -> (Algorithm, SecretBytes)? {
        var reader = DERReader(der[...])
        guard let info = reader.read(tag: 0x30), reader.isAtEnd else { return nil }
        var fields = DERReader(info)
        guard let version = fields.read(tag: 0x02), version.elementsEqual([0x00]) || version.elementsEqual([0x01]),
              let algorithmIdentifier = fields.read(tag: 0x30) else { return nil }
        var identifier = DERReader(algorithmIdentifier)
        guard let oid = identifier.read(tag: 0x06), identifier.isAtEnd,
              let parameterSet = MLDSA.ParameterSet.allCases.first(where: { mlDSAObjectIdentifier($0)[...] == oid }) else {
            return nil
        }
        // Attributes or a public key after the private key: not a form any ML-DSA writer uses.
        guard var octets = fields.read(tag: 0x04).map(DERReader.init), fields.isAtEnd else { throw .notPKCS8 }
        if let seed = octets.read(tag: 0x80), octets.isAtEnd {
            guard seed.count == MLDSA.seedByteCount else { throw .notPKCS8 }
            return (.mlDSA(parameterSet), SecretBytes(seed))
        }
        if let both = octets.read(tag: 0x30), octets.isAtEnd {
            var pair = DERReader(both)
            guard let seed = pair.read(tag: 0x04), seed.count == MLDSA.seedByteCount,
                  let expanded = pair.read(tag: 0x04), pair.isAtEnd else { throw .notPKCS8 }
            let secret = SecretBytes(seed)
            var key = MLDSAExpandedKey(seed: secret, parameterSet, encodingPrivateKey: true)
            var ours = key.encodedPrivateKey ?? []
            defer { ours.wipe(); key.wipe() }
            guard constantTimeEquals(ours, Array(expanded)) else { throw .notPKCS8 }
            return (.mlDSA(parameterSet), secret)
        }
        throw .mlDSAWithoutSeed
    }

    private static func header(_ tag: UInt8, _ length: Int) -> [UInt8] { DEREncoding.header(tag, length) }

    private static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { DEREncoding.tlv(tag, content) }
}

/// Reads definite-length DER elements (short or long form lengths) from a slice.
struct DERReader {
    private var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    var isAtEnd: Bool { bytes.isEmpty }

    /// The content of the next element when its tag is `tag`; nil (nothing consumed) otherwise.
    mutating func read(tag: UInt8) -> ArraySlice<UInt8>? {
        guard let first = bytes.first, first == tag, bytes.count >= 2 else { return nil }
        var index = bytes.startIndex + 1
        var length = Int(bytes[index])
        index += 1
        if length >= 0x80 {
            let count = length - 0x80
            guard (1...3).contains(count), bytes.endIndex - index >= count else { return nil }
            length = bytes[index..<(index + count)].reduce(0) { $0 << 8 | Int($1) }
            index += count
        }
        guard bytes.endIndex - index >= length else { return nil }
        let content = bytes[index..<(index + length)]
        bytes = bytes[(index + length)...]
        return content
    }
}
