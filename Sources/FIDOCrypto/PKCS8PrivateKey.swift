import COpenSSL

/// A credential private key in PKCS#8 `PrivateKeyInfo` DER (RFC 5208/5958): what WebDriver's
/// virtual-authenticator `addCredential` and `getCredentials` carry, and what WebCrypto's
/// `exportKey("pkcs8")` writes. Only the two credential algorithms: P-256 (ES256) and Ed25519.
public enum PKCS8PrivateKey {
    public enum Algorithm: Sendable, Equatable {
        /// The 32-byte big-endian scalar.
        case p256
        /// The 32-byte seed.
        case ed25519
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case notPKCS8
        case unsupportedKeyType(String)
        case invalidScalar

        public var description: String {
            switch self {
            case .notPKCS8: "not a PKCS#8 PrivateKeyInfo (DER)"
            case let .unsupportedKeyType(type): "a \(type) key: only P-256 (ES256) and Ed25519 (EdDSA) keys are credentials"
            case .invalidScalar: "a P-256 private scalar outside [1, n-1]"
            }
        }
    }

    /// The raw key (scalar or seed) of a PKCS#8 DER private key. The DER must be exactly one
    /// PrivateKeyInfo (no trailing bytes).
    public static func decode(_ der: [UInt8]) throws(Failure) -> (Algorithm, SecretBytes) {
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
            guard group == "prime256v1" else { throw .unsupportedKeyType("EC \(group)") }
            guard let scalar = try? P256Curve.exportScalar(key) else { throw .notPKCS8 }
            // OpenSSL takes any scalar; a credential key must be in [1, n-1].
            guard scalar.withUnsafeBytes(P256Curve.isValidScalar) else { throw .invalidScalar }
            return (.p256, scalar)
        }
        let type = EVP_PKEY_get0_type_name(key.pointer).map { String(cString: $0) } ?? "unknown"
        throw .unsupportedKeyType(type)
    }

    /// PKCS#8 DER of a raw credential key, in secure memory, as OpenSSL and WebCrypto write it:
    /// P-256 as an RFC 5915 ECPrivateKey with its public point (no parameters inside: they are
    /// in the AlgorithmIdentifier), Ed25519 as RFC 8410's CurvePrivateKey.
    public static func encode(_ algorithm: Algorithm, _ raw: SecretBytes) throws(CryptoError) -> SecretBytes {
        guard raw.count == 32 else { throw .invalidKey }
        // Room for all of it up front: the array never reallocates (and leaves no copy of the key
        // behind) once the key is in it.
        var der: [UInt8] = []
        der.reserveCapacity(160)
        switch algorithm {
        case .p256:
            guard raw.withUnsafeBytes(P256Curve.isValidScalar) else { throw .invalidKey }
            let point = try P256Curve.publicKey(forScalar: raw)   // 0x04 ‖ X ‖ Y
            der += [0x30, 0x81, 0x87, 0x02, 0x01, 0x00,
                   0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,     // id-ecPublicKey
                   0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07,           // prime256v1
                   0x04, 0x6D, 0x30, 0x6B, 0x02, 0x01, 0x01, 0x04, 0x20]
            raw.append(to: &der)
            der += [0xA1, 0x44, 0x03, 0x42, 0x00]
            der += point
        case .ed25519:
            der += [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70,   // id-Ed25519
                   0x04, 0x22, 0x04, 0x20]
            raw.append(to: &der)
        }
        return SecretBytes(wiping: der)
    }
}
