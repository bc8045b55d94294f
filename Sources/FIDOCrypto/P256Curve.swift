import COpenSSL

/// Shared NIST P-256 machinery behind `P256.Signing` and `P256.KeyAgreement`:
/// key import/export through OpenSSL 3's provider API, scalar and point
/// validation, and public-key derivation.
enum P256Curve {
    static let scalarByteCount = 32
    static let x963ByteCount = 65

    /// Group order n, big-endian.
    static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// One shared, immutable group object for point decoding and scalar·G.
    /// (`EC_GROUP` creation costs ~10 µs; operations only read it.)
    static let group = ECGroup(mustSucceed { () throws(CryptoError) -> OpaquePointer in
        try checkNotNull("EC_GROUP_new_by_curve_name", EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1))
    })

    /// Reused `EVP_PKEY_fromdata` contexts for "EC" (creating one per import
    /// costs a few µs of provider lookup).
    static let importContexts = EVPPKeyContextPool(capacity: 8) { () throws(CryptoError) -> EVPPKeyContext in
        let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_name",
                                                      EVP_PKEY_CTX_new_from_name(nil, ("EC" as StaticString).cString, nil)))
        try check("EVP_PKEY_fromdata_init", EVP_PKEY_fromdata_init(context.pointer))
        return context
    }

    /// Reused key-generation contexts, already set to prime256v1.
    static let generationContexts = EVPPKeyContextPool(capacity: 4) { () throws(CryptoError) -> EVPPKeyContext in
        let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_name",
                                                      EVP_PKEY_CTX_new_from_name(nil, ("EC" as StaticString).cString, nil)))
        try check("EVP_PKEY_keygen_init", EVP_PKEY_keygen_init(context.pointer))
        try withParameters([OSSLParameter.utf8("group", "prime256v1")]) { (parameters) throws(CryptoError) in
            try check("EVP_PKEY_CTX_set_params", EVP_PKEY_CTX_set_params(context.pointer, parameters))
        }
        return context
    }

    // MARK: Validation

    /// 0 < d < n, evaluated without data-dependent branches over the bytes.
    static func isValidScalar(_ scalar: UnsafeRawBufferPointer) -> Bool {
        guard scalar.count == scalarByteCount else { return false }
        var nonZero: UInt8 = 0
        var borrow: UInt16 = 0   // borrow out of (d − n), least significant byte first
        for index in stride(from: scalarByteCount - 1, through: 0, by: -1) {
            let byte = scalar[index]
            nonZero |= byte
            let difference = UInt16(byte) &- UInt16(order[index]) &- borrow
            borrow = (difference >> 8) & 1
        }
        // d < n exactly when d − n borrows out of the top byte.
        return (nonZero != 0) && (borrow == 1)
    }

    /// Checks an uncompressed SEC1 point (0x04 ‖ x ‖ y): length, prefix,
    /// coordinates < p and on the curve (`EC_POINT_oct2point` enforces the last two).
    static func validatePublicKey(x963 bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == x963ByteCount, bytes[0] == 0x04 else { throw .invalidKey }
        let point = try ECPoint(group: group)
        let decoded = bytes.withUnsafeBytes {
            EC_POINT_oct2point(group.pointer, point.pointer, $0.uint8Pointer, $0.count, nil)
        }
        guard decoded == 1 else {
            discardOpenSSLErrors()
            throw .invalidKey
        }
    }

    // MARK: Key objects

    /// A public-only `EVP_PKEY` (for verification and as an ECDH peer).
    static func makePublicKey(x963: [UInt8]) throws(CryptoError) -> EVPPKey {
        try x963.withBytes { (point) throws(CryptoError) -> EVPPKey in
            try importKey(selection: publicKeySelection,
                          [OSSLParameter.utf8("group", "prime256v1"), OSSLParameter.octets("pub", point)])
        }
    }

    /// A private `EVP_PKEY` from a validated 32-byte big-endian scalar.
    ///
    /// Only the group and scalar are imported. OpenSSL does not need the public
    /// point to sign or derive, and computing it (a scalar multiplication, about
    /// as expensive as the import itself) is deferred until someone asks for it.
    static func makePrivateKey(scalar: UnsafeRawBufferPointer) throws(CryptoError) -> EVPPKey {
        precondition(scalar.count == scalarByteCount)
        // OSSL_PARAM big numbers are native-endian; build the reversed copy on the
        // stack and wipe it afterwards.
        let result: Result<EVPPKey, CryptoError> =
            withUnsafeTemporaryAllocation(byteCount: scalarByteCount, alignment: 16) { native in
                for index in 0..<scalarByteCount {
                    native[index] = scalar[isLittleEndian ? scalarByteCount - 1 - index : index]
                }
                defer { OPENSSL_cleanse(native.baseAddress, native.count) }
                return Result { () throws(CryptoError) -> EVPPKey in
                    try importKey(selection: keyPairSelection,
                                  [OSSLParameter.utf8("group", "prime256v1"),
                                   OSSLParameter.unsignedInteger("priv", nativeEndianBytes: native)])
                }
            }
        return try result.get()
    }

    // EVP_PKEY_PUBLIC_KEY and EVP_PKEY_KEYPAIR are nested macro expressions Swift
    // does not import; rebuild them from the OSSL_KEYMGMT_SELECT_* bits they are made of.
    private static let parameterSelection = OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS
    static let publicKeySelection = parameterSelection | OSSL_KEYMGMT_SELECT_PUBLIC_KEY
    static let keyPairSelection = publicKeySelection | OSSL_KEYMGMT_SELECT_PRIVATE_KEY

    private static let isLittleEndian = 1.littleEndian == 1

    private static func importKey(selection: Int32, _ parameters: [OSSL_PARAM]) throws(CryptoError) -> EVPPKey {
        try importContexts.withContext { (context) throws(CryptoError) -> EVPPKey in
            try withParameters(parameters) { (list) throws(CryptoError) -> EVPPKey in
                var key: OpaquePointer? = nil
                try check("EVP_PKEY_fromdata", EVP_PKEY_fromdata(context.pointer, &key, selection, list))
                return EVPPKey(try checkNotNull("EVP_PKEY_fromdata", key))
            }
        }
    }

    /// A fresh random key pair.
    static func generate() throws(CryptoError) -> EVPPKey {
        try generationContexts.withContext { (context) throws(CryptoError) -> EVPPKey in
            var key: OpaquePointer? = nil
            try check("EVP_PKEY_generate", EVP_PKEY_generate(context.pointer, &key))
            return EVPPKey(try checkNotNull("EVP_PKEY_generate", key))
        }
    }

    // MARK: Export

    /// The private scalar of `key` as 32 big-endian bytes.
    static func exportScalar(_ key: EVPPKey) throws(CryptoError) -> SecretBytes {
        var number: OpaquePointer? = nil
        try check("EVP_PKEY_get_bn_param", EVP_PKEY_get_bn_param(key.pointer, ("priv" as StaticString).cString, &number))
        let scalar = BigNumber(try checkNotNull("EVP_PKEY_get_bn_param", number))
        return try SecretBytes(count: scalarByteCount) { (buffer) throws(CryptoError) in
            try check("BN_bn2binpad", BN_bn2binpad(scalar.pointer, buffer.uint8Pointer, Int32(buffer.count)),
                      success: { $0 == Int32(scalarByteCount) })
        }
    }

    /// The uncompressed public point of a key that has one (generated or imported with "pub").
    static func exportPublicKey(_ key: EVPPKey) throws(CryptoError) -> [UInt8] {
        let encoded = try makeBytes(count: x963ByteCount) { (output) throws(CryptoError) -> Int in
            var length = 0
            try check("EVP_PKEY_get_octet_string_param",
                      EVP_PKEY_get_octet_string_param(key.pointer, ("pub" as StaticString).cString,
                                                      output.uint8Pointer, output.count, &length))
            return length
        }
        return try uncompressed(encoded)
    }

    /// Re-encodes any SEC1 point encoding as uncompressed (0x04 ‖ x ‖ y).
    static func uncompressed(_ encoded: [UInt8]) throws(CryptoError) -> [UInt8] {
        if encoded.count == x963ByteCount && encoded.first == 0x04 { return encoded }
        let point = try ECPoint(group: group)
        try encoded.withBytes { (bytes) throws(CryptoError) in
            try check("EC_POINT_oct2point",
                      EC_POINT_oct2point(group.pointer, point.pointer, bytes.uint8Pointer, bytes.count, nil))
        }
        return try encode(point)
    }

    /// d·G for a validated scalar, uncompressed.
    static func publicKey(forScalar scalar: SecretBytes) throws(CryptoError) -> [UInt8] {
        let number = try scalar.withUnsafeBytes { (bytes) throws(CryptoError) -> BigNumber in
            let secure = BigNumber(try checkNotNull("BN_secure_new", BN_secure_new()))
            _ = try checkNotNull("BN_bin2bn", BN_bin2bn(bytes.uint8Pointer, Int32(bytes.count), secure.pointer))
            return secure
        }
        BN_set_flags(number.pointer, BN_FLG_CONSTTIME)
        let point = try ECPoint(group: group)
        try check("EC_POINT_mul", EC_POINT_mul(group.pointer, point.pointer, number.pointer, nil, nil, nil))
        return try encode(point)
    }

    private static func encode(_ point: ECPoint) throws(CryptoError) -> [UInt8] {
        try makeBytes(count: x963ByteCount) { (output) throws(CryptoError) -> Int in
            let length = EC_POINT_point2oct(group.pointer, point.pointer, POINT_CONVERSION_UNCOMPRESSED,
                                            output.uint8Pointer, output.count, nil)
            try check("EC_POINT_point2oct", Int32(clamping: length), success: { $0 == Int32(x963ByteCount) })
            return length
        }
    }
}
