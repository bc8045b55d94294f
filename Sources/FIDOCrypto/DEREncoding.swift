/// The DER writing PKCS#8 and SubjectPublicKeyInfo share: tags with definite lengths, positive
/// INTEGERs, and the named curves' object identifiers.
enum DEREncoding {
    /// A DER tag and definite length (short form, or long form up to 65,535 bytes).
    static func header(_ tag: UInt8, _ length: Int) -> [UInt8] {
        switch length {
        case ..<0x80: [tag, UInt8(length)]
        case ..<0x100: [tag, 0x81, UInt8(length)]
        default: [tag, 0x82, UInt8(length >> 8), UInt8(length & 0xFF)]
        }
    }

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { header(tag, content.count) + content }

    /// A non-negative INTEGER from big-endian magnitude bytes: leading zeros dropped, one zero
    /// byte put back when the top bit is set.
    static func positiveInteger(_ magnitude: [UInt8]) -> [UInt8] {
        var bytes = Array(magnitude.drop { $0 == 0 })
        if bytes.isEmpty || bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }

    /// id-ecPublicKey (RFC 5480), the algorithm of every EC key.
    static let ecPublicKeyOID: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
    /// rsaEncryption (RFC 8017), with NULL parameters wherever it appears.
    static let rsaEncryptionOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
    /// id-Ed25519 (RFC 8410), no parameters.
    static let ed25519OID: [UInt8] = [0x2B, 0x65, 0x70]
}

extension ECCurve {
    /// The named-curve OID's content octets (RFC 5480 §2.1.1.1, SEC 2 for secp256k1).
    var objectIdentifier: [UInt8] {
        switch self {
        case .p384: [0x2B, 0x81, 0x04, 0x00, 0x22]
        case .p521: [0x2B, 0x81, 0x04, 0x00, 0x23]
        case .secp256k1: [0x2B, 0x81, 0x04, 0x00, 0x0A]
        default: [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]   // prime256v1
        }
    }
}
