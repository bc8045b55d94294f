import COpenSSL

/// A short-Weierstrass curve Latchkey signs on (and, for P-256, agrees keys on): key
/// import/export through OpenSSL 3's provider API, scalar and point validation, and
/// public-key derivation. One shared instance per curve holds its group and reusable
/// contexts; `P256.Signing`, `P256.KeyAgreement` and `ECDSA` keys use them.
public final class ECCurve: Sendable, Equatable, CustomStringConvertible {
    /// The curve's common name ("P-256", "secp256k1", …).
    public let name: String
    /// OpenSSL's group name, as the "group" parameter takes it.
    let groupName: StaticString
    /// Bytes of a private scalar and of each affine coordinate (big-endian, fixed length).
    public let scalarByteCount: Int
    /// 0x04 ‖ x ‖ y.
    var x963ByteCount: Int { 1 + 2 * scalarByteCount }
    /// Group order n, big-endian, `scalarByteCount` bytes.
    let order: [UInt8]
    /// One shared, immutable group object for point decoding and scalar·G.
    /// (`EC_GROUP` creation costs ~10 µs; operations only read it.)
    let group: ECGroup
    /// Reused `EVP_PKEY_fromdata` contexts for "EC" (creating one per import
    /// costs a few µs of provider lookup).
    let importContexts: EVPPKeyContextPool
    /// Reused key-generation contexts, already set to this group.
    let generationContexts: EVPPKeyContextPool

    private init(name: String, groupName: StaticString, nid: Int32, order: [UInt8]) {
        self.name = name
        self.groupName = groupName
        self.scalarByteCount = order.count
        self.order = order
        group = ECGroup(mustSucceed { () throws(CryptoError) -> OpaquePointer in
            try checkNotNull("EC_GROUP_new_by_curve_name", EC_GROUP_new_by_curve_name(nid))
        })
        importContexts = EVPPKeyContextPool(capacity: 8) { () throws(CryptoError) -> EVPPKeyContext in
            let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_name",
                                                          EVP_PKEY_CTX_new_from_name(nil, ("EC" as StaticString).cString, nil)))
            try check("EVP_PKEY_fromdata_init", EVP_PKEY_fromdata_init(context.pointer))
            return context
        }
        generationContexts = EVPPKeyContextPool(capacity: 4) { () throws(CryptoError) -> EVPPKeyContext in
            let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_name",
                                                          EVP_PKEY_CTX_new_from_name(nil, ("EC" as StaticString).cString, nil)))
            try check("EVP_PKEY_keygen_init", EVP_PKEY_keygen_init(context.pointer))
            try withParameters([OSSLParameter.utf8("group", groupName)]) { (parameters) throws(CryptoError) in
                try check("EVP_PKEY_CTX_set_params", EVP_PKEY_CTX_set_params(context.pointer, parameters))
            }
            return context
        }
    }

    public var description: String { name }

    /// One instance per curve: the same curve is the same object.
    public static func == (lhs: ECCurve, rhs: ECCurve) -> Bool { lhs === rhs }

    /// NIST P-256 (secp256r1 / prime256v1): ES256, and the PIN/UV key agreement.
    public static let p256 = ECCurve(name: "P-256", groupName: "prime256v1", nid: NID_X9_62_prime256v1, order: [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ])

    /// NIST P-384 (secp384r1): ES384.
    public static let p384 = ECCurve(name: "P-384", groupName: "secp384r1", nid: NID_secp384r1, order: [
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xC7, 0x63, 0x4D, 0x81, 0xF4, 0x37, 0x2D, 0xDF,
        0x58, 0x1A, 0x0D, 0xB2, 0x48, 0xB0, 0xA7, 0x7A, 0xEC, 0xEC, 0x19, 0x6A, 0xCC, 0xC5, 0x29, 0x73,
    ])

    /// NIST P-521 (secp521r1): ES512. Scalars and coordinates are 66 bytes (521 bits).
    public static let p521 = ECCurve(name: "P-521", groupName: "secp521r1", nid: NID_secp521r1, order: [
        0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFA, 0x51, 0x86, 0x87, 0x83, 0xBF, 0x2F, 0x96, 0x6B, 0x7F, 0xCC, 0x01, 0x48, 0xF7, 0x09,
        0xA5, 0xD0, 0x3B, 0xB5, 0xC9, 0xB8, 0x89, 0x9C, 0x47, 0xAE, 0xBB, 0x6F, 0xB7, 0x1E, 0x91, 0x38,
        0x64, 0x09,
    ])

    /// secp256k1 (SEC 2): ES256K.
    public static let secp256k1 = ECCurve(name: "secp256k1", groupName: "secp256k1", nid: NID_secp256k1, order: [
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE,
        0xBA, 0xAE, 0xDC, 0xE6, 0xAF, 0x48, 0xA0, 0x3B, 0xBF, 0xD2, 0x5E, 0x8C, 0xD0, 0x36, 0x41, 0x41,
    ])

    /// Whether this libcrypto has the curve OpenSSL calls `groupName` ("prime256v1",
    /// "secp384r1", "secp521r1", "secp256k1"). A libcrypto may be built without some curves
    /// (secp256k1 most often), and the shared instances above stop the process at their first use
    /// when theirs is missing; so a key asks first and does not offer what it cannot make
    /// (`Authenticator.init`). Asked without touching the shared instances.
    public static func isAvailable(groupName: String) -> Bool {
        let nid = OBJ_sn2nid(groupName)
        guard nid != NID_undef, let group = EC_GROUP_new_by_curve_name(nid) else {
            ERR_clear_error()
            return false
        }
        EC_GROUP_free(group)
        return true
    }

    /// The curve OpenSSL calls `groupName`, if it is one of these.
    static func named(_ groupName: String) -> ECCurve? {
        [p256, p384, p521, secp256k1].first { $0.groupName.description == groupName }
    }

    // MARK: Validation

    /// 0 < d < n, evaluated without data-dependent branches over the bytes.
    func isValidScalar(_ scalar: UnsafeRawBufferPointer) -> Bool {
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
    func validatePublicKey(x963 bytes: [UInt8]) throws(CryptoError) {
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
    func makePublicKey(x963: [UInt8]) throws(CryptoError) -> EVPPKey {
        try x963.withBytes { (point) throws(CryptoError) -> EVPPKey in
            try importKey(selection: Self.publicKeySelection,
                          [OSSLParameter.utf8("group", groupName), OSSLParameter.octets("pub", point)])
        }
    }

    /// A private `EVP_PKEY` from a validated big-endian scalar of `scalarByteCount` bytes.
    ///
    /// Only the group and scalar are imported. OpenSSL does not need the public
    /// point to sign or derive, and computing it (a scalar multiplication, about
    /// as expensive as the import itself) is deferred until someone asks for it.
    func makePrivateKey(scalar: UnsafeRawBufferPointer) throws(CryptoError) -> EVPPKey {
        precondition(scalar.count == scalarByteCount)
        // OSSL_PARAM big numbers are native-endian; build the reversed copy on the
        // stack and wipe it afterwards.
        let result: Result<EVPPKey, CryptoError> =
            withUnsafeTemporaryAllocation(byteCount: scalarByteCount, alignment: 16) { native in
                for index in 0..<scalarByteCount {
                    native[index] = scalar[Self.isLittleEndian ? scalarByteCount - 1 - index : index]
                }
                defer { OPENSSL_cleanse(native.baseAddress, native.count) }
                return Result { () throws(CryptoError) -> EVPPKey in
                    try importKey(selection: Self.keyPairSelection,
                                  [OSSLParameter.utf8("group", groupName),
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

    private func importKey(selection: Int32, _ parameters: [OSSL_PARAM]) throws(CryptoError) -> EVPPKey {
        try importContexts.withContext { (context) throws(CryptoError) -> EVPPKey in
            try withParameters(parameters) { (list) throws(CryptoError) -> EVPPKey in
                var key: OpaquePointer? = nil
                try check("EVP_PKEY_fromdata", EVP_PKEY_fromdata(context.pointer, &key, selection, list))
                return EVPPKey(try checkNotNull("EVP_PKEY_fromdata", key))
            }
        }
    }

    /// A fresh random key pair.
    func generate() throws(CryptoError) -> EVPPKey {
        try generationContexts.withContext { (context) throws(CryptoError) -> EVPPKey in
            var key: OpaquePointer? = nil
            try check("EVP_PKEY_generate", EVP_PKEY_generate(context.pointer, &key))
            return EVPPKey(try checkNotNull("EVP_PKEY_generate", key))
        }
    }

    // MARK: Export

    /// The private scalar of `key` as `scalarByteCount` big-endian bytes.
    func exportScalar(_ key: EVPPKey) throws(CryptoError) -> SecretBytes {
        var number: OpaquePointer? = nil
        try check("EVP_PKEY_get_bn_param", EVP_PKEY_get_bn_param(key.pointer, ("priv" as StaticString).cString, &number))
        let scalar = BigNumber(try checkNotNull("EVP_PKEY_get_bn_param", number))
        return try SecretBytes(count: scalarByteCount) { (buffer) throws(CryptoError) in
            try check("BN_bn2binpad", BN_bn2binpad(scalar.pointer, buffer.uint8Pointer, Int32(buffer.count)),
                      success: { $0 == Int32(scalarByteCount) })
        }
    }

    /// The uncompressed public point of a key that has one (generated or imported with "pub").
    func exportPublicKey(_ key: EVPPKey) throws(CryptoError) -> [UInt8] {
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
    func uncompressed(_ encoded: [UInt8]) throws(CryptoError) -> [UInt8] {
        if encoded.count == x963ByteCount && encoded.first == 0x04 { return encoded }
        let point = try ECPoint(group: group)
        try encoded.withBytes { (bytes) throws(CryptoError) in
            try check("EC_POINT_oct2point",
                      EC_POINT_oct2point(group.pointer, point.pointer, bytes.uint8Pointer, bytes.count, nil))
        }
        return try encode(point)
    }

    /// d·G for a validated scalar, uncompressed.
    func publicKey(forScalar scalar: SecretBytes) throws(CryptoError) -> [UInt8] {
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

    private func encode(_ point: ECPoint) throws(CryptoError) -> [UInt8] {
        try makeBytes(count: x963ByteCount) { (output) throws(CryptoError) -> Int in
            let length = EC_POINT_point2oct(group.pointer, point.pointer, POINT_CONVERSION_UNCOMPRESSED,
                                            output.uint8Pointer, output.count, nil)
            try check("EC_POINT_point2oct", Int32(clamping: length), success: { $0 == Int32(x963ByteCount) })
            return length
        }
    }
}
