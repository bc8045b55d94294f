import XCTest
import FIDOCrypto

final class AES256CBCTests: XCTestCase {
    // NIST SP 800-38A F.2.5 (CBC-AES256.Encrypt) and F.2.6 (CBC-AES256.Decrypt).
    let key = [UInt8](hex: "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
    let iv = [UInt8](hex: "000102030405060708090a0b0c0d0e0f")
    let plaintext = [UInt8](hex: """
        6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51
        30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710
        """)
    let ciphertext = [UInt8](hex: """
        f58c4c04d6e5f1ba779eabfb5f7bfbd6 9cfc4e967edb808d679f777bc6702c7d
        39f23369a9d9bacfa530e26304231461 b2eb05e2c39be9fcda6c19078c6a9d1b
        """)

    func testSP800_38A_F25_Encrypt() throws {
        XCTAssertEqual(try AES256CBC.encrypt(plaintext, key: key, iv: iv), ciphertext)
    }

    func testSP800_38A_F26_Decrypt() throws {
        XCTAssertEqual(try AES256CBC.decrypt(ciphertext, key: key, iv: iv), plaintext)
    }

    func testEmptyInput() throws {
        XCTAssertEqual(try AES256CBC.encrypt([], key: key, iv: iv), [])
        XCTAssertEqual(try AES256CBC.decrypt([], key: key, iv: iv), [])
    }

    func testLengthsAreEnforced() {
        XCTAssertThrowsCryptoError(.exactly(.invalidLength)) { try AES256CBC.encrypt([1, 2, 3], key: key, iv: iv) }
        XCTAssertThrowsCryptoError(.exactly(.invalidLength)) { try AES256CBC.decrypt(Array(ciphertext.dropLast()), key: key, iv: iv) }
        XCTAssertThrowsCryptoError(.exactly(.invalidLength)) { try AES256CBC.encrypt(plaintext, key: Array(key.prefix(16)), iv: iv) }
        XCTAssertThrowsCryptoError(.exactly(.invalidLength)) { try AES256CBC.encrypt(plaintext, key: key, iv: [0]) }
    }
}

final class AES256GCMTests: XCTestCase {
    // McGrew & Viega, "The Galois/Counter Mode of Operation", Test Case 16 (256-bit key, AAD, 60-byte P).
    let key = SecretBytes([UInt8](hex: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"))
    let nonce = [UInt8](hex: "cafebabefacedbaddecaf888")
    let aad = [UInt8](hex: "feedfacedeadbeeffeedfacedeadbeefabaddad2")
    let plaintext = [UInt8](hex: """
        d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72
        1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39
        """)
    let ciphertext = [UInt8](hex: """
        522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa
        8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662
        """)
    let tag = [UInt8](hex: "76fc6ece0f4e1768cddf8853bb2d551b")

    func testGCMSpecTestCase16() throws {
        let sealed = try AES256GCM.seal(plaintext, key: key, nonce: nonce, authenticating: aad)
        XCTAssertEqual(sealed.ciphertext, ciphertext)
        XCTAssertEqual(sealed.tag, tag)
        XCTAssertEqual(try AES256GCM.open(ciphertext, tag: tag, key: key, nonce: nonce, authenticating: aad), plaintext)
    }

    func testGCMSpecTestCases13And14() throws {
        // Test Case 13: zero key, zero IV, empty P and A. Test Case 14: one zero block.
        let zeroKey = SecretBytes([UInt8](repeating: 0, count: 32))
        let zeroNonce = [UInt8](repeating: 0, count: 12)
        let empty = try AES256GCM.seal([], key: zeroKey, nonce: zeroNonce, authenticating: [])
        XCTAssertEqual(empty.ciphertext, [])
        XCTAssertEqual(empty.tag.hex, "530f8afbc74536b9a963b4f1c4cb738b")
        XCTAssertEqual(try AES256GCM.open([], tag: empty.tag, key: zeroKey, nonce: zeroNonce, authenticating: []), [])
        let block = try AES256GCM.seal([UInt8](repeating: 0, count: 16), key: zeroKey, nonce: zeroNonce,
                                       authenticating: [])
        XCTAssertEqual(block.ciphertext.hex, "cea7403d4d606b6e074ec5d3baf39d18")
        XCTAssertEqual(block.tag.hex, "d0d1c8a799996bf0265b98b5d48ab919")
    }

    func testEveryTamperIsDetected() {
        func assertRejected(_ ciphertext: [UInt8], _ tag: [UInt8], _ nonce: [UInt8], _ aad: [UInt8],
                            key: SecretBytes? = nil, _ what: String) {
            XCTAssertThrowsCryptoError(.exactly(.authenticationFailure)) {
                try AES256GCM.open(ciphertext, tag: tag, key: key ?? self.key, nonce: nonce, authenticating: aad)
            }
        }
        for index in ciphertext.indices {
            var modified = ciphertext
            modified[index] ^= 0x01
            assertRejected(modified, tag, nonce, aad, "ciphertext[\(index)]")
        }
        for index in tag.indices {
            var modified = tag
            modified[index] ^= 0x80
            assertRejected(ciphertext, modified, nonce, aad, "tag[\(index)]")
        }
        for index in aad.indices {
            var modified = aad
            modified[index] ^= 0x01
            assertRejected(ciphertext, tag, nonce, modified, "aad[\(index)]")
        }
        for index in nonce.indices {
            var modified = nonce
            modified[index] ^= 0x01
            assertRejected(ciphertext, tag, modified, aad, "nonce[\(index)]")
        }
        assertRejected(Array(ciphertext.dropLast()), tag, nonce, aad, "truncated ciphertext")
        assertRejected(ciphertext + [0], tag, nonce, aad, "extended ciphertext")
        assertRejected(ciphertext, tag, nonce, [], "missing aad")
        var otherKey = key.copyBytes()
        otherKey[0] ^= 1
        assertRejected(ciphertext, tag, nonce, aad, key: SecretBytes(otherKey), "different key")
    }

    func testLengthsAreEnforced() {
        XCTAssertThrowsCryptoError(.exactly(.invalidLength)) {
            try AES256GCM.seal(plaintext, key: SecretBytes([UInt8](repeating: 1, count: 16)), nonce: nonce, authenticating: [])
        }
        XCTAssertThrowsCryptoError(.exactly(.invalidLength)) {
            try AES256GCM.seal(plaintext, key: key, nonce: Array(nonce.prefix(8)), authenticating: [])
        }
        XCTAssertThrowsCryptoError(.exactly(.invalidLength)) {
            try AES256GCM.open(ciphertext, tag: Array(tag.prefix(12)), key: key, nonce: nonce, authenticating: aad)
        }
    }

    func testRoundTripRandom() throws {
        let key = SecretBytes(randomCount: 32)
        for length in [0, 1, 15, 16, 17, 1000] {
            let message = SecureRandom.bytes(count: length)
            let nonce = SecureRandom.bytes(count: 12)
            let sealed = try AES256GCM.seal(message, key: key, nonce: nonce, authenticating: [1, 2, 3])
            XCTAssertEqual(try AES256GCM.open(sealed.ciphertext, tag: sealed.tag, key: key, nonce: nonce,
                                              authenticating: [1, 2, 3]), message)
        }
    }
}

final class NoncePoolTests: XCTestCase {
    /// Every nonce is its length, and none repeats across many refills of the pool.
    func testNoncesAreFreshAcrossRefills() {
        var seen = Set<[UInt8]>()
        for index in 0..<2_000 {
            let nonce = NoncePool.bytes(count: index % 3 == 0 ? 16 : 12)
            XCTAssertEqual(nonce.count, index % 3 == 0 ? 16 : 12)
            XCTAssertTrue(seen.insert(nonce).inserted, "nonce \(index) repeated")
        }
        XCTAssertEqual(NoncePool.bytes(count: 0), [])
    }
}

