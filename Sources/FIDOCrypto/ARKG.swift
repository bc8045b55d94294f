import COpenSSL

/// ARKG-P256, the authenticator's half: Asynchronous Remote Key Generation
/// (draft-bradleylundberg-cfrg-arkg-10, §3 and the ARKG-P256 instance, as python-fido2 2.2.1's
/// `arkg.py` implements it). The authenticator keeps a seed (sk_bl, sk_kem) and gives out its
/// public half (pk_bl, pk_kem); anyone can then derive public keys from it, each with a key
/// handle, without the authenticator; given the handle (and the context it was derived for) the
/// authenticator derives the matching private key and signs with it.
public enum ARKGP256 {
    /// BL's DST_ext and KEM's (python-fido2's `ARKG_P256_PLACEHOLDER`).
    static let blindingDomain = Array("ARKG-P256".utf8)
    static let kemDomain = Array("ARKG-ECDH.ARKG-P256".utf8)
    /// hash_to_field's L for P-256 (RFC 9380: ⌈(256 + 128) / 8⌉).
    static let fieldElementByteCount = 48
    /// A key handle: the 16-byte HMAC tag ‖ the ephemeral public key, uncompressed (65 bytes).
    public static let keyHandleByteCount = 16 + 65
    /// The longest context ARKG takes.
    public static let maximumContextByteCount = 64

    /// A new seed: the blinding and KEM private keys, each a random P-256 scalar.
    public static func generateSeed() throws(CryptoError) -> (blinding: ECDSA.PrivateKey, kem: ECDSA.PrivateKey) {
        (try ECDSA.PrivateKey(suite: .es256), try ECDSA.PrivateKey(suite: .es256))
    }

    /// ARKG-Derive-Secret-Key((sk_kem, sk_bl), kh, ctx): the private scalar of the public key
    /// derived with `keyHandle` and `context`. `.authenticationFailure` when the handle's tag does
    /// not match (a handle made for another seed or context, or altered); `.invalidLength` for a
    /// handle or context of the wrong size; `.invalidKey` for a point off the curve.
    public static func deriveSecretKey(blinding: SecretBytes, kem: SecretBytes, keyHandle: [UInt8],
                                       context: [UInt8]) throws(CryptoError) -> SecretBytes {
        guard keyHandle.count == keyHandleByteCount, context.count <= maximumContextByteCount else { throw .invalidLength }
        let contextPrime = [UInt8(context.count)] + context
        let blindingContext = Array("ARKG-Derive-Key-BL.".utf8) + contextPrime
        let kemContext = Array("ARKG-Derive-Key-KEM.".utf8) + contextPrime
        var ikmTau = try decapsulate(kem: kem, ciphertext: keyHandle, context: kemContext)
        defer { ikmTau.wipe() }
        let tau = hashToScalar(ikmTau, domain: Array("ARKG-BL-EC.".utf8) + blindingDomain + blindingContext)
        return try addScalars(blinding, tau)
    }

    /// KEM-Decaps of ARKG's HMAC-wrapped ECDH KEM: checks the tag over the ephemeral key and
    /// returns the shared key k (32 bytes).
    static func decapsulate(kem: SecretBytes, ciphertext: [UInt8], context: [UInt8]) throws(CryptoError) -> [UInt8] {
        let tag = Array(ciphertext[0..<16])
        let ephemeral = Array(ciphertext[16...])
        let peer: P256.KeyAgreement.PublicKey
        do {
            peer = try P256.KeyAgreement.PublicKey(x963Representation: ephemeral)
        } catch {
            throw .invalidKey
        }
        let privateKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: kem.copyBytes())
        var shared = try privateKey.sharedSecretX(with: peer).copyBytes()
        defer { shared.wipe() }
        var macKey = HKDFSHA256.deriveKey(inputKeyMaterial: shared, salt: [],
                                          info: Array("ARKG-KEM-HMAC-mac.".utf8) + kemDomain + context, outputByteCount: 32)
        defer { macKey.wipe() }
        let expected = Array(HMACSHA256.authenticationCode(key: macKey, data: ephemeral).prefix(16))
        guard constantTimeEquals(expected, tag) else { throw .authenticationFailure }
        return HKDFSHA256.deriveKey(inputKeyMaterial: shared, salt: [],
                                    info: Array("ARKG-KEM-HMAC-shared.".utf8) + kemDomain + context,
                                    outputByteCount: shared.count)
    }

    /// A P-256 private key derived from secret key material: hash_to_field (below) under
    /// `domain`, so distinct domains give independent keys. `.invalidKey` for the zero scalar
    /// (probability 2^-256).
    public static func derivedPrivateKey(from material: [UInt8], domain: [UInt8]) throws(CryptoError) -> ECDSA.PrivateKey {
        var scalar = hashToScalar(material, domain: domain)
        defer { scalar.wipe() }
        guard scalar.contains(where: { $0 != 0 }) else { throw .invalidKey }
        return try ECDSA.PrivateKey(secret: SecretBytes(scalar), suite: .es256)
    }

    /// hash_to_field(msg, 1) over P-256's scalar field (RFC 9380 §5.2, m = 1, L = 48) with
    /// expand_message_xmd(SHA-256): 48 uniform bytes, reduced mod n.
    static func hashToScalar(_ message: [UInt8], domain: [UInt8]) -> [UInt8] {
        var uniform = expandMessageXMD(message, domain: domain, count: fieldElementByteCount)
        defer { uniform.wipe() }
        return mustSucceed { () throws(CryptoError) -> [UInt8] in
            try withBigNumbers(uniform, ECCurve.p256.order) { (value, order, context) throws(CryptoError) in
                try check("BN_nnmod", BN_nnmod(value, value, order, context))
            }
        }
    }

    /// expand_message_xmd with SHA-256 (RFC 9380 §5.3.1), for up to 255 · 32 bytes and a DST of
    /// up to 255 bytes.
    static func expandMessageXMD(_ message: [UInt8], domain: [UInt8], count: Int) -> [UInt8] {
        precondition(domain.count <= 255 && count <= 255 * 32, "expand_message_xmd bounds")
        let blocks = (count + 31) / 32
        let domainPrime = domain + [UInt8(domain.count)]
        let first = SHA256.hash([UInt8](repeating: 0, count: 64) + message + [UInt8(count >> 8), UInt8(count & 0xFF), 0]
                                + domainPrime)
        var output: [UInt8] = []
        var previous = SHA256.hash(first + [1] + domainPrime)
        output += previous
        if blocks > 1 {
            for index in 2...blocks {
                let mixed = zip(first, previous).map { $0 ^ $1 }
                previous = SHA256.hash(mixed + [UInt8(index)] + domainPrime)
                output += previous
            }
        }
        return Array(output.prefix(count))
    }

    /// (a + b) mod n for P-256's order, as a 32-byte big-endian scalar; `.invalidKey` when zero.
    static func addScalars(_ a: SecretBytes, _ b: [UInt8]) throws(CryptoError) -> SecretBytes {
        var aBytes = a.copyBytes()
        defer { aBytes.wipe() }
        var sum = try withBigNumbers(aBytes, b) { (left, right, context) throws(CryptoError) in
            let order = try bigNumber(ECCurve.p256.order)
            try check("BN_mod_add", BN_mod_add(left, left, right, order.pointer, context))
        }
        defer { sum.wipe() }
        guard sum.contains(where: { $0 != 0 }) else { throw .invalidKey }
        return SecretBytes(sum)
    }

    private static func bigNumber(_ bytes: [UInt8]) throws(CryptoError) -> BigNumber {
        let number = BigNumber(try checkNotNull("BN_secure_new", BN_secure_new()))
        try bytes.withBytes { (raw) throws(CryptoError) in
            _ = try checkNotNull("BN_bin2bn", BN_bin2bn(raw.uint8Pointer, Int32(raw.count), number.pointer))
        }
        BN_set_flags(number.pointer, BN_FLG_CONSTTIME)
        return number
    }

    /// Runs `body` on two numbers in OpenSSL's secure heap (constant-time flag set) and returns
    /// the first as 32 big-endian bytes afterwards.
    private static func withBigNumbers(_ first: [UInt8], _ second: [UInt8],
                                       _ body: (OpaquePointer, OpaquePointer, OpaquePointer) throws(CryptoError) -> Void)
        throws(CryptoError) -> [UInt8] {
        let left = try bigNumber(first), right = try bigNumber(second)
        guard let context = BN_CTX_secure_new() else { throw openSSLFailure("BN_CTX_secure_new") }
        defer { BN_CTX_free(context) }
        try body(left.pointer, right.pointer, context)
        return try makeBytes(count: 32) { (output) throws(CryptoError) -> Int in
            try check("BN_bn2binpad", BN_bn2binpad(left.pointer, output.uint8Pointer, 32), success: { $0 == 32 })
            return 32
        }
    }
}
