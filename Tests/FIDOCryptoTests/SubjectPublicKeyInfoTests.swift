import COpenSSL
@testable import FIDOCrypto
import XCTest

/// SubjectPublicKeyInfo DER against OpenSSL, which shares no code with it: d2i_PUBKEY reads
/// every key, i2d_PUBKEY writes the very same bytes back, and the key read verifies the
/// signatures FIDOCrypto made with its private half.
final class SubjectPublicKeyInfoTests: XCTestCase {
    /// The key OpenSSL reads from `spki`, and what it writes back; nil when it cannot read it.
    private func openSSL(_ spki: [UInt8]) -> (key: OpaquePointer, written: [UInt8])? {
        let pkey: OpaquePointer? = spki.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let pkey else { return nil }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(pkey, &out)
        guard length > 0, let out else { EVP_PKEY_free(pkey); return nil }
        defer { CRYPTO_free(out, #fileID, #line) }
        return (pkey, Array(UnsafeBufferPointer(start: out, count: Int(length))))
    }

    private func verifies(_ pkey: OpaquePointer, digest: String?, signature: [UInt8], message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit_ex(context, nil, digest, nil, nil, pkey, nil) == 1 else { return false }
        defer { ERR_clear_error() }
        return EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
    }

    func testECKeysOnEveryNISTCurve() throws {
        for (suite, digest) in [(ECDSA.Suite.es256, "SHA256"), (.es384, "SHA384"), (.es512, "SHA512")] {
            let key = try ECDSA.PrivateKey(suite: suite)
            let point = key.publicKey.x963Representation
            let half = (point.count - 1) / 2
            let spki = SubjectPublicKeyInfo.ec(curve: suite.curve, x: Array(point[1...half]), y: Array(point[(half + 1)...]))
            let read = try XCTUnwrap(openSSL(spki), "\(suite.curve)")
            defer { EVP_PKEY_free(read.key) }
            XCTAssertEqual(read.written, spki, "\(suite.curve)")
            let message = SecureRandom.bytes(count: 40)
            XCTAssertTrue(verifies(read.key, digest: digest, signature: try key.signature(for: message), message: message))
        }
        // The P-256 prefix WebCrypto's "spki" export has (the one the host's tests pin).
        let spki = SubjectPublicKeyInfo.ec(curve: .p256, x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32))
        XCTAssertEqual(Array(spki.prefix(27)), [UInt8](hex: "3059301306072a8648ce3d020106082a8648ce3d03010703420004"))
    }

    func testEd25519() throws {
        let key = try Ed25519.PrivateKey()
        let spki = SubjectPublicKeyInfo.ed25519(key.publicKey.rawRepresentation)
        XCTAssertEqual(Array(spki.prefix(12)), [UInt8](hex: "302a300506032b6570032100"), "RFC 8410 §10.1's form")
        let read = try XCTUnwrap(openSSL(spki))
        defer { EVP_PKEY_free(read.key) }
        XCTAssertEqual(read.written, spki)
        let message = SecureRandom.bytes(count: 40)
        XCTAssertTrue(verifies(read.key, digest: nil, signature: try key.signature(for: message), message: message))
    }

    func testRSAWithTopBitModulusAndLeadingZeros() throws {
        // A 2048-bit modulus (top bit set: INTEGER needs its zero byte) and an exponent given
        // with leading zeros (dropped).
        var modulus = SecureRandom.bytes(count: 256)
        modulus[0] |= 0x80
        modulus[255] |= 1
        let spki = SubjectPublicKeyInfo.rsa(modulus: modulus, exponent: [0, 0, 1, 0, 1])
        let read = try XCTUnwrap(openSSL(spki))
        defer { EVP_PKEY_free(read.key) }
        XCTAssertEqual(read.written, spki)
        XCTAssertEqual(EVP_PKEY_get_bits(read.key), 2048)
    }
}
