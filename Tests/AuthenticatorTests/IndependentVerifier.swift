import COpenSSL
import CShims
import CTAP

/// Signature checks that go straight to libcrypto, not through FIDOCrypto, so a test does not
/// verify with the code that signed.
enum IndependentVerifier {
    /// SubjectPublicKeyInfo prefix for an uncompressed P-256 point (RFC 5480).
    static let p256SPKIPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
        0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
    ]

    static func verifyES256(x: [UInt8], y: [UInt8], signature: [UInt8], message: [UInt8]) -> Bool {
        let spki = p256SPKIPrefix + x + y
        let key: OpaquePointer? = spki.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &pointer, buffer.count)
        }
        guard let key else { return false }
        defer { EVP_PKEY_free(key) }
        return verify(key: key, digest: EVP_sha256(), signature: signature, message: message)
    }

    /// ECDSA on another curve, from a SubjectPublicKeyInfo built here (RFC 5480) and parsed by
    /// d2i_PUBKEY: ES384 (P-384, SHA-384), ES512 (P-521, SHA-512), ES256K (secp256k1, SHA-256).
    static func verifyECDSA(curve: COSECurve, x: [UInt8], y: [UInt8], signature: [UInt8], message: [UInt8]) -> Bool {
        let (curveOID, digest): ([UInt8], OpaquePointer?) = switch curve {
        case .p256: ([0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07], EVP_sha256())
        case .p384: ([0x2B, 0x81, 0x04, 0x00, 0x22], EVP_sha384())
        case .p521: ([0x2B, 0x81, 0x04, 0x00, 0x23], EVP_sha512())
        case .secp256k1: ([0x2B, 0x81, 0x04, 0x00, 0x0A], EVP_sha256())
        }
        let algorithm = der(0x30, der(0x06, [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]) + der(0x06, curveOID))
        let spki = der(0x30, algorithm + der(0x03, [0x00, 0x04] + x + y))
        let key: OpaquePointer? = spki.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &pointer, buffer.count)
        }
        guard let key else { return false }
        defer { EVP_PKEY_free(key) }
        return verify(key: key, digest: digest, signature: signature, message: message)
    }

    /// RS256 (PKCS#1 v1.5) or PS256 (PSS, salt 32, MGF1-SHA-256) with SHA-256, from a
    /// SubjectPublicKeyInfo built here (RFC 8017 A.1.1).
    static func verifyRSA(n: [UInt8], e: [UInt8], pss: Bool, signature: [UInt8], message: [UInt8]) -> Bool {
        func integer(_ bytes: [UInt8]) -> [UInt8] { der(0x02, (bytes.first ?? 0) >= 0x80 ? [0] + bytes : bytes) }
        let algorithm = der(0x30, der(0x06, [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]) + [0x05, 0x00])
        let spki = der(0x30, algorithm + der(0x03, [0x00] + der(0x30, integer(n) + integer(e))))
        let key: OpaquePointer? = spki.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &pointer, buffer.count)
        }
        guard let key, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_PKEY_free(key); EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer?
        guard EVP_DigestVerifyInit(context, &keyContext, EVP_sha256(), nil, key) == 1 else { return false }
        if pss {
            guard EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING) == 1,
                  EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, 32) == 1 else { return false }
        }
        return EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
    }

    /// A DER TLV (definite length, short or long form).
    private static func der(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let length: [UInt8] = content.count < 0x80 ? [UInt8(content.count)]
            : content.count < 0x100 ? [0x81, UInt8(content.count)] : [0x82, UInt8(content.count >> 8), UInt8(content.count & 0xFF)]
        return [tag] + length + content
    }

    static func verifyEd25519(publicKey: [UInt8], signature: [UInt8], message: [UInt8]) -> Bool {
        guard let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, publicKey, publicKey.count) else { return false }
        defer { EVP_PKEY_free(key) }
        return verify(key: key, digest: nil, signature: signature, message: message)
    }

    /// Verify with the public key inside a DER certificate.
    static func verifyWithCertificate(_ der: [UInt8], signature: [UInt8], message: [UInt8]) -> Bool {
        let cert: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &pointer, buffer.count)
        }
        guard let cert else { return false }
        defer { X509_free(cert) }
        guard let key = X509_get_pubkey(cert) else { return false }
        defer { EVP_PKEY_free(key) }
        return verify(key: key, digest: EVP_sha256(), signature: signature, message: message)
    }

    private static func verify(key: OpaquePointer, digest: OpaquePointer?, signature: [UInt8], message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest, nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
    }
}
