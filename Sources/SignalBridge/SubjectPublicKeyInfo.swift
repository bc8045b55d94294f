import CTAP

/// A credential public key as X.509 SubjectPublicKeyInfo DER, what
/// `AuthenticatorAttestationResponse.getPublicKey()` returns (WebAuthn L3 §5.2.1.1) for the
/// algorithms a browser must know: ES256 (and the other NIST curves), EdDSA with Ed25519, RS256
/// and PS256. For anything else (ML-DSA) it is nil, and so is getPublicKey(), as the
/// specification allows; the page then reads the COSE key from authenticatorData.
enum SubjectPublicKeyInfo {
    static func der(_ key: COSEKey) -> [UInt8]? {
        switch key {
        case let .ec2P256(_, x, y):
            return ecPoint(curveOID: [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07], x: x, y: y)
        case let .ec2(curve, _, x, y):
            switch curve {
            case .p256: return ecPoint(curveOID: [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07], x: x, y: y)
            case .p384: return ecPoint(curveOID: [0x2B, 0x81, 0x04, 0x00, 0x22], x: x, y: y)
            case .p521: return ecPoint(curveOID: [0x2B, 0x81, 0x04, 0x00, 0x23], x: x, y: y)
            default: return nil
            }
        case let .okpEd25519(x):
            // id-Ed25519 (RFC 8410), no parameters.
            return sequence(sequence(tlv(0x06, [0x2B, 0x65, 0x70])) + bitString(x))
        case let .rsa(_, n, e):
            // rsaEncryption with NULL parameters, then RSAPublicKey (RFC 8017 A.1.1).
            let algorithm = sequence(tlv(0x06, [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]) + [0x05, 0x00])
            return sequence(algorithm + bitString(sequence(integer(n) + integer(e))))
        case .akp:
            return nil
        }
    }

    /// id-ecPublicKey with the named curve, then the uncompressed point 04 ‖ x ‖ y.
    private static func ecPoint(curveOID: [UInt8], x: [UInt8], y: [UInt8]) -> [UInt8] {
        let algorithm = sequence(tlv(0x06, [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]) + tlv(0x06, curveOID))
        return sequence(algorithm + bitString([0x04] + x + y))
    }

    private static func sequence(_ content: [UInt8]) -> [UInt8] { tlv(0x30, content) }

    private static func bitString(_ content: [UInt8]) -> [UInt8] { tlv(0x03, [0x00] + content) }

    /// A positive INTEGER: leading zeros dropped, one zero byte added when the top bit is set.
    private static func integer(_ magnitude: [UInt8]) -> [UInt8] {
        var bytes = Array(magnitude.drop { $0 == 0 })
        if bytes.isEmpty || bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }

    /// Tag, DER length (short form below 128, else long form), content.
    private static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8] = []
        if content.count < 0x80 {
            length = [UInt8(content.count)]
        } else {
            var count = content.count
            while count > 0 { length.insert(UInt8(count & 0xFF), at: 0); count >>= 8 }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + content
    }
}
