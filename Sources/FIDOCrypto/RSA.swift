import COpenSSL

/// RSA signatures as COSE names them (RFC 8812 §2, RFC 8230): RS256 (RSASSA-PKCS1-v1_5 with
/// SHA-256) and PS256 (RSASSA-PSS with SHA-256, MGF1 with SHA-256, a 32-byte salt).
public enum RSA {
    /// How a signature is padded; both hash with SHA-256.
    public enum Padding: Sendable, Equatable {
        /// RSASSA-PKCS1-v1_5 (RS256).
        case pkcs1v15
        /// RSASSA-PSS, salt as long as the hash (PS256, RFC 8230 §2).
        case pss
    }

    /// The modulus sizes a credential key may have: what WebAuthn RPs verify (RSA-2048 is what
    /// keys make; a rig may plant up to 4096).
    public static let acceptedModulusBits = 2048...4096
    /// What `PrivateKey()` makes.
    public static let generatedModulusBits: Int32 = 2048

    /// An RSA signing key. Its serialized form (`rawRepresentation`) is the PKCS#1
    /// RSAPrivateKey DER, written straight into secure memory.
    public final class PrivateKey: @unchecked Sendable {
        let key: EVPPKey
        public let rawRepresentation: SecretBytes
        public let publicKey: PublicKey

        /// A fresh 2048-bit key with public exponent 65537. (Tens to hundreds of milliseconds.)
        public convenience init() throws(CryptoError) {
            let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_name",
                                                          EVP_PKEY_CTX_new_from_name(nil, ("RSA" as StaticString).cString, nil)))
            try check("EVP_PKEY_keygen_init", EVP_PKEY_keygen_init(context.pointer))
            try check("EVP_PKEY_CTX_set_rsa_keygen_bits",
                      EVP_PKEY_CTX_set_rsa_keygen_bits(context.pointer, RSA.generatedModulusBits))
            var generated: OpaquePointer? = nil
            try check("EVP_PKEY_generate", EVP_PKEY_generate(context.pointer, &generated))
            let key = EVPPKey(try checkNotNull("EVP_PKEY_generate", generated))
            try self.init(key: key, rawRepresentation: try Self.export(key))
        }

        /// The key in a PKCS#1 RSAPrivateKey DER (a stored credential's), kept without a copy.
        /// Anything else, trailing bytes, a modulus outside 2048–4096 bits or an even exponent
        /// is `.invalidKey`.
        public convenience init(secret: SecretBytes) throws(CryptoError) {
            let key = try secret.withUnsafeBytes { (bytes) throws(CryptoError) -> EVPPKey in
                guard let start = bytes.uint8Pointer.map({ UnsafePointer($0) }) else { throw .invalidKey }
                var cursor: UnsafePointer<UInt8>? = start
                guard let key = d2i_PrivateKey(EVP_PKEY_RSA, nil, &cursor, bytes.count) else {
                    discardOpenSSLErrors()
                    throw .invalidKey
                }
                let owned = EVPPKey(key)
                guard cursor == start + bytes.count else { throw .invalidKey }
                return owned
            }
            try self.init(key: key, rawRepresentation: secret)
        }

        private init(key: EVPPKey, rawRepresentation: SecretBytes) throws(CryptoError) {
            guard EVP_PKEY_is_a(key.pointer, "RSA") == 1,
                  RSA.acceptedModulusBits.contains(Int(EVP_PKEY_get_bits(key.pointer))) else { throw .invalidKey }
            self.key = key
            self.rawRepresentation = rawRepresentation
            publicKey = try PublicKey(modulus: try Self.parameter(key, "n"), exponent: try Self.parameter(key, "e"))
        }

        /// The signature over `message` (hashed here with SHA-256), `padding` as the algorithm says.
        public func signature(for message: [UInt8], padding: Padding) throws(CryptoError) -> [UInt8] {
            let digest = SHA256.hash(message)
            let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_pkey",
                                                          EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil)))
            try check("EVP_PKEY_sign_init", EVP_PKEY_sign_init(context.pointer))
            try RSA.configure(context, padding: padding)
            return try digest.withBytes { (input) throws(CryptoError) -> [UInt8] in
                try makeBytes(count: publicKey.modulus.count) { (output) throws(CryptoError) -> Int in
                    var length = output.count
                    try check("EVP_PKEY_sign", EVP_PKEY_sign(context.pointer, output.uint8Pointer, &length,
                                                             input.uint8Pointer, input.count))
                    return length
                }
            }
        }

        /// i2d_PrivateKey into secure memory: the length first, then the DER in place.
        static func export(_ key: EVPPKey) throws(CryptoError) -> SecretBytes {
            let length = i2d_PrivateKey(key.pointer, nil)
            guard length > 0 else { throw openSSLFailure("i2d_PrivateKey") }
            return try SecretBytes(count: Int(length)) { (buffer) throws(CryptoError) in
                var cursor = buffer.uint8Pointer
                try check("i2d_PrivateKey", i2d_PrivateKey(key.pointer, &cursor), success: { $0 == length })
            }
        }

        private static func parameter(_ key: EVPPKey, _ name: StaticString) throws(CryptoError) -> [UInt8] {
            var number: OpaquePointer? = nil
            try check("EVP_PKEY_get_bn_param", EVP_PKEY_get_bn_param(key.pointer, name.cString, &number))
            let value = BigNumber(try checkNotNull("EVP_PKEY_get_bn_param", number))
            return try makeBytes(count: Int((BN_num_bits(value.pointer) + 7) / 8)) { (output) throws(CryptoError) -> Int in
                Int(BN_bn2bin(value.pointer, output.uint8Pointer))
            }
        }
    }

    /// An RSA verification key: big-endian modulus n and public exponent e (as in a COSE_Key).
    public struct PublicKey: Sendable, Equatable {
        public let modulus: [UInt8]
        public let exponent: [UInt8]

        /// Accepts a modulus of 2048–4096 bits (no leading zero byte) and an odd exponent ≥ 3.
        public init(modulus: [UInt8], exponent: [UInt8]) throws(CryptoError) {
            guard let first = modulus.first, first != 0, RSA.acceptedModulusBits.contains(modulus.count * 8 - first.leadingZeroBitCount),
                  let last = exponent.last, last & 1 == 1, exponent.first != 0, exponent.count <= 8,
                  exponent.count > 1 || last >= 3 else { throw .invalidKey }
            self.modulus = modulus
            self.exponent = exponent
        }

        /// Whether `signature` is `padding`'s signature over SHA-256(`message`).
        public func isValidSignature(_ signature: [UInt8], for message: [UInt8], padding: Padding) -> Bool {
            guard signature.count == modulus.count else { return false }
            guard let key = try? modulus.withBytes({ (n) throws(CryptoError) -> EVPPKey in
                try exponent.withBytes { (e) throws(CryptoError) -> EVPPKey in try RSA.importPublicKey(n: n, e: e) }
            }) else { return false }
            return verifyDigestSignature(signature, digest: SHA256.hash(message), key: key) { (context) throws(CryptoError) in
                try RSA.configure(context, padding: padding)
            }
        }
    }

    /// Padding, hash, and for PSS the MGF1 hash and a salt as long as the hash.
    static func configure(_ context: EVPPKeyContext, padding: Padding) throws(CryptoError) {
        switch padding {
        case .pkcs1v15:
            try check("EVP_PKEY_CTX_set_rsa_padding", EVP_PKEY_CTX_set_rsa_padding(context.pointer, RSA_PKCS1_PADDING))
        case .pss:
            try check("EVP_PKEY_CTX_set_rsa_padding", EVP_PKEY_CTX_set_rsa_padding(context.pointer, RSA_PKCS1_PSS_PADDING))
            try check("EVP_PKEY_CTX_set_rsa_pss_saltlen", EVP_PKEY_CTX_set_rsa_pss_saltlen(context.pointer, Int32(SHA256.byteCount)))
            try check("EVP_PKEY_CTX_set_rsa_mgf1_md", EVP_PKEY_CTX_set_rsa_mgf1_md(context.pointer, SHA256.digest.pointer))
        }
        try check("EVP_PKEY_CTX_set_signature_md", EVP_PKEY_CTX_set_signature_md(context.pointer, SHA256.digest.pointer))
    }

    /// A public-only key from n and e (big-endian, as OSSL_PARAM big numbers take them natively).
    static func importPublicKey(n: UnsafeRawBufferPointer, e: UnsafeRawBufferPointer) throws(CryptoError) -> EVPPKey {
        let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_name",
                                                      EVP_PKEY_CTX_new_from_name(nil, ("RSA" as StaticString).cString, nil)))
        try check("EVP_PKEY_fromdata_init", EVP_PKEY_fromdata_init(context.pointer))
        // OSSL_PARAM big numbers are native-endian.
        let isLittleEndian = 1.littleEndian == 1
        var nativeN = isLittleEndian ? Array(n.reversed()) : Array(n)
        var nativeE = isLittleEndian ? Array(e.reversed()) : Array(e)
        let result: Result<EVPPKey, CryptoError> = nativeN.withUnsafeMutableBytes { nBytes in
            nativeE.withUnsafeMutableBytes { eBytes in
                Result { () throws(CryptoError) -> EVPPKey in
                    try withParameters([OSSLParameter.unsignedInteger("n", nativeEndianBytes: nBytes),
                                        OSSLParameter.unsignedInteger("e", nativeEndianBytes: eBytes)]) { (list) throws(CryptoError) -> EVPPKey in
                        var key: OpaquePointer? = nil
                        try check("EVP_PKEY_fromdata", EVP_PKEY_fromdata(context.pointer, &key, ECCurve.publicKeySelection, list))
                        return EVPPKey(try checkNotNull("EVP_PKEY_fromdata", key))
                    }
                }
            }
        }
        return try result.get()
    }
}
