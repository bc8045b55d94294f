import XCTest
import COpenSSL
import FIDOCrypto

final class P256SigningTests: XCTestCase {
    // RFC 6979 §A.2.5 (P-256 key; SHA-256 signatures over "sample" and "test").
    let rfc6979Scalar = [UInt8](hex: "c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721")
    let rfc6979X = [UInt8](hex: "60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6")
    let rfc6979Y = [UInt8](hex: "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299")

    // Wycheproof ecdsa_secp256r1_sha256_test.json, tcId 1 (valid).
    let wycheproofKey = [UInt8](hex: "042927b10512bae3eddcfe467828128bad2903269919f7086069c8c4df6c732838"
                                   + "c7787964eaac00e5921fb1498a60f4606766b3d9685001558d1a974e7341513e")
    let wycheproofMessage = [UInt8](hex: "313233343030")
    let wycheproofR = "2ba3a8be6b94d5ec80a6d9d1190a436effe50d85a1eee859b8cc6af9bd5c2e18"
    let wycheproofS = "4cd60b855d442f5b3c7b11eb6c4e0ae7525fe710fab9aa7c77a67f79e6fadd76"
    let order = "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551"

    func der(r: String, s: String) -> [UInt8] {
        func integer(_ hex: String) -> [UInt8] {
            var bytes = [UInt8](hex: hex)
            while bytes.count > 1 && bytes[0] == 0 && bytes[1] < 0x80 { bytes.removeFirst() }
            if bytes[0] >= 0x80 { bytes.insert(0, at: 0) }
            return [0x02, UInt8(bytes.count)] + bytes
        }
        let body = integer(r) + integer(s)
        return [0x30, UInt8(body.count)] + body
    }

    func testRFC6979KeyAndSignatures() throws {
        let key = try P256.Signing.PrivateKey(rawRepresentation: rfc6979Scalar)
        XCTAssertEqual(key.publicKey.x, rfc6979X)
        XCTAssertEqual(key.publicKey.y, rfc6979Y)
        XCTAssertEqual(key.publicKey.x963Representation, [0x04] + rfc6979X + rfc6979Y)
        XCTAssertEqual(key.rawRepresentation.copyBytes(), rfc6979Scalar)

        let publicKey = try P256.Signing.PublicKey(x: rfc6979X, y: rfc6979Y)
        let sample = der(r: "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716",
                         s: "f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8")
        let test = der(r: "f1abb023518351cd71d881567b1ea663ed3efcf6c5132b354f28d3b0b7d38367",
                       s: "019f4113742a2b14bd25926b49c649155f267e60d3814b4c0cc84250e46f0083")
        XCTAssertTrue(publicKey.isValidSignature(sample, for: "sample".bytes))
        XCTAssertTrue(publicKey.isValidSignature(test, for: "test".bytes))
        XCTAssertFalse(publicKey.isValidSignature(sample, for: "test".bytes))
    }

    func testWycheproofStyleVectors() throws {
        let key = try P256.Signing.PublicKey(x963Representation: wycheproofKey)
        let valid = der(r: wycheproofR, s: wycheproofS)
        XCTAssertEqual(valid, [UInt8](hex: "304402202ba3a8be6b94d5ec80a6d9d1190a436effe50d85a1eee859b8cc6af9bd5c2e18"
                                         + "02204cd60b855d442f5b3c7b11eb6c4e0ae7525fe710fab9aa7c77a67f79e6fadd76"))
        XCTAssertTrue(key.isValidSignature(valid, for: wycheproofMessage), "tcId 1")
        // High-S form (s' = n − s) is a valid ECDSA signature; OpenSSL accepts it.
        XCTAssertTrue(key.isValidSignature(der(r: wycheproofR,
                                               s: "b329f479a2bbd0a5c384ee1493b1f5186a87139cac5df4087c134b49156847db"),
                                           for: wycheproofMessage), "high s")

        var modifiedS = valid
        modifiedS[modifiedS.count - 1] ^= 0x01
        let invalid: [(String, [UInt8], [UInt8])] = [
            ("s modified", modifiedS, wycheproofMessage),
            ("r = 0", der(r: "00", s: wycheproofS), wycheproofMessage),
            ("s = 0", der(r: wycheproofR, s: "00"), wycheproofMessage),
            ("r = 0, s = 0", der(r: "00", s: "00"), wycheproofMessage),
            ("r = n", der(r: order, s: wycheproofS), wycheproofMessage),
            ("s = n", der(r: wycheproofR, s: order), wycheproofMessage),
            ("wrong message", valid, [UInt8](hex: "313233343031")),
            ("empty message", valid, []),
            ("non-DER: long-form length", [0x30, 0x81, 0x44] + valid.dropFirst(2), wycheproofMessage),
            ("non-DER: padded r", [0x30, 0x45, 0x02, 0x21, 0x00] + valid.dropFirst(4), wycheproofMessage),
            ("trailing byte", valid + [0x00], wycheproofMessage),
            ("truncated", Array(valid.dropLast()), wycheproofMessage),
            ("raw r‖s instead of DER", [UInt8](hex: wycheproofR + wycheproofS), wycheproofMessage),
            ("garbage", [0xde, 0xad, 0xbe, 0xef], wycheproofMessage),
            ("empty sequence", [0x30, 0x00], wycheproofMessage),
            ("empty", [], wycheproofMessage),
        ]
        for (name, signature, message) in invalid {
            XCTAssertFalse(key.isValidSignature(signature, for: message), name)
        }
        // Rejected inputs leave nothing on OpenSSL's error queue.
        XCTAssertEqual(ERR_peek_error(), 0)
    }

    func testSignVerifyRoundTrip() throws {
        let key = try P256.Signing.PrivateKey()
        let message = "client data hash ‖ authenticator data".bytes
        let signature = try key.signature(for: message)
        XCTAssertEqual(signature.first, 0x30)
        XCTAssertLessThanOrEqual(signature.count, 72)
        XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message))
        XCTAssertFalse(key.publicKey.isValidSignature(signature, for: message + [0]))
        XCTAssertFalse(try P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: message))

        // Prehashed variant agrees with the hashing one.
        let prehashed = try key.signature(forDigest: SHA256.hash(message))
        XCTAssertTrue(key.publicKey.isValidSignature(prehashed, for: message))
        XCTAssertThrowsCryptoError(.exactly(.invalidLength)) { try key.signature(forDigest: [1, 2, 3]) }

        // Repeated signing reuses the context; every signature must still verify.
        for index in 0..<20 {
            XCTAssertTrue(key.publicKey.isValidSignature(try key.signature(for: [UInt8(index)]), for: [UInt8(index)]))
        }
    }

    /// Verifies our signatures through an OpenSSL path that shares no code with
    /// FIDOCrypto: the key comes from a hand-built SubjectPublicKeyInfo via
    /// d2i_PUBKEY and the check is EVP_DigestVerify with SHA-256.
    func testCrossCheckWithRawOpenSSL() throws {
        func opensslVerifies(publicKey x963: [UInt8], signature: [UInt8], message: [UInt8]) -> Bool {
            let spki = [UInt8](hex: "3059301306072a8648ce3d020106082a8648ce3d030107034200") + x963
            let pkey: OpaquePointer? = spki.withUnsafeBufferPointer { buffer in
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                return d2i_PUBKEY(nil, &cursor, buffer.count)
            }
            guard let pkey else { return false }
            defer { EVP_PKEY_free(pkey) }
            guard let context = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(context) }
            guard EVP_DigestVerifyInit_ex(context, nil, "SHA256", nil, nil, pkey, nil) == 1 else { return false }
            let result = EVP_DigestVerify(context, signature, signature.count, message, message.count)
            ERR_clear_error()
            return result == 1
        }
        for key in [try P256.Signing.PrivateKey(), try P256.Signing.PrivateKey(rawRepresentation: rfc6979Scalar)] {
            for length in [0, 1, 32, 1000] {
                let message = SecureRandom.bytes(count: length)
                let signature = try key.signature(for: message)
                XCTAssertTrue(opensslVerifies(publicKey: key.publicKey.x963Representation, signature: signature,
                                              message: message), "length \(length)")
                XCTAssertFalse(opensslVerifies(publicKey: key.publicKey.x963Representation, signature: signature,
                                               message: message + [1]))
            }
        }
    }

    func testPrivateKeyRawRepresentation() throws {
        let key = try P256.Signing.PrivateKey()
        let raw = key.rawRepresentation
        XCTAssertEqual(raw.count, 32)
        let reimported = try P256.Signing.PrivateKey(rawRepresentation: raw.copyBytes())
        XCTAssertEqual(reimported.publicKey, key.publicKey)
        XCTAssertTrue(key.publicKey.isValidSignature(try reimported.signature(for: [1]), for: [1]))

        // Boundaries: 1 and n − 1 are valid; 0, n, n + 1, 2^256 − 1 and wrong lengths are not.
        let one = [UInt8](repeating: 0, count: 31) + [1]
        let generator = try P256.Signing.PrivateKey(rawRepresentation: one).publicKey
        XCTAssertEqual(generator.x.hex, "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296")
        XCTAssertEqual(try P256.Signing.PrivateKey(rawRepresentation: [UInt8](hex: "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632550")).publicKey.x,
                       generator.x)   // (n − 1)·G = −G
        for (name, scalar) in [("zero", [UInt8](repeating: 0, count: 32)),
                               ("n", [UInt8](hex: order)),
                               ("n + 1", [UInt8](hex: "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632552")),
                               ("2^256 − 1", [UInt8](repeating: 0xff, count: 32)),
                               ("31 bytes", [UInt8](repeating: 1, count: 31)),
                               ("33 bytes", [UInt8](repeating: 1, count: 33)),
                               ("empty", [])] {
            XCTAssertThrowsCryptoError(.exactly(.invalidKey)) { try P256.Signing.PrivateKey(rawRepresentation: scalar) }
            _ = name
        }
    }

    func testPublicKeyValidation() throws {
        let valid = wycheproofKey
        XCTAssertEqual(try P256.Signing.PublicKey(x963Representation: valid).x963Representation, valid)
        var offCurve = valid
        offCurve[64] ^= 0x01
        var compressedPrefix = valid
        compressedPrefix[0] = 0x03
        var hybrid = valid
        hybrid[0] = 0x06
        let rejects: [[UInt8]] = [offCurve, compressedPrefix, hybrid, Array(valid.prefix(33)), Array(valid.dropFirst()),
                                  [0x00], [], [0x04] + [UInt8](repeating: 0, count: 64),
                                  [0x04] + [UInt8](repeating: 0xff, count: 64)]
        for bytes in rejects {
            XCTAssertThrowsCryptoError(.exactly(.invalidKey)) { try P256.Signing.PublicKey(x963Representation: bytes) }
        }
        XCTAssertThrowsCryptoError(.exactly(.invalidKey)) { try P256.Signing.PublicKey(x: [1], y: [2]) }
        let key = try P256.Signing.PublicKey(x963Representation: valid)
        XCTAssertEqual(try P256.Signing.PublicKey(x: key.x, y: key.y), key)
        XCTAssertEqual(ERR_peek_error(), 0)
    }

    func testConcurrentSigning() async throws {
        let key = try P256.Signing.PrivateKey(rawRepresentation: rfc6979Scalar)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<16 {
                group.addTask {
                    let message = [UInt8(index)]
                    var ok = true
                    for _ in 0..<10 {
                        let signature = try key.signature(for: message)
                        ok = ok && key.publicKey.isValidSignature(signature, for: message)
                    }
                    let fresh = try P256.Signing.PrivateKey(rawRepresentation: key.rawRepresentation.copyBytes())
                    return ok && fresh.publicKey == key.publicKey
                }
            }
            for try await ok in group { XCTAssertTrue(ok) }
        }
    }
}
