/// X.509 SubjectPublicKeyInfo DER of a public key (RFC 5280 §4.1.2.7), as OpenSSL's
/// `i2d_PUBKEY` and WebCrypto's "spki" export write it: what a WebAuthn client's
/// `getPublicKey()` returns.
public enum SubjectPublicKeyInfo {
    /// An EC point (uncompressed: 04 ‖ x ‖ y) on a named curve (RFC 5480).
    public static func ec(curve: ECCurve, x: [UInt8], y: [UInt8]) -> [UInt8] {
        let algorithm = DEREncoding.tlv(0x30, DEREncoding.tlv(0x06, DEREncoding.ecPublicKeyOID)
                                        + DEREncoding.tlv(0x06, curve.objectIdentifier))
        return DEREncoding.tlv(0x30, algorithm + bitString([0x04] + x + y))
    }

    /// An Ed25519 public key (RFC 8410 §4).
    public static func ed25519(_ publicKey: [UInt8]) -> [UInt8] {
        DEREncoding.tlv(0x30, DEREncoding.tlv(0x30, DEREncoding.tlv(0x06, DEREncoding.ed25519OID)) + bitString(publicKey))
    }

    /// An RSA public key: rsaEncryption with NULL parameters, then RSAPublicKey (RFC 8017 A.1.1).
    public static func rsa(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
        let algorithm = DEREncoding.tlv(0x30, DEREncoding.tlv(0x06, DEREncoding.rsaEncryptionOID) + [0x05, 0x00])
        let publicKey = DEREncoding.tlv(0x30, DEREncoding.positiveInteger(modulus) + DEREncoding.positiveInteger(exponent))
        return DEREncoding.tlv(0x30, algorithm + bitString(publicKey))
    }

    private static func bitString(_ content: [UInt8]) -> [UInt8] { DEREncoding.tlv(0x03, [0x00] + content) }
}
