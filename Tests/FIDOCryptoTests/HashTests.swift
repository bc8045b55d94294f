import Dispatch
import XCTest
import FIDOCrypto

final class SHA256Tests: XCTestCase {
    // FIPS 180-2 Appendix B / NIST CSRC examples.
    func testFIPS180Vectors() {
        XCTAssertEqual(SHA256.hash("abc".bytes).hex,
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hash([UInt8]()).hex,
                       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256.hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".bytes).hex,
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    func testNonArrayCollections() {
        let message = "xxabcxx".bytes
        XCTAssertEqual(SHA256.hash(message[2..<5]).hex,
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hash("abc".utf8).hex,          // not contiguous-by-contract
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hash(Set<UInt8>()).hex,
                       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    func testMillionA() {
        XCTAssertEqual(SHA256.hash([UInt8](repeating: 0x61, count: 1_000_000)).hex,
                       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}

final class HMACSHA256Tests: XCTestCase {
    // RFC 4231 §4.
    func testRFC4231() {
        let cases: [(key: [UInt8], data: [UInt8], mac: String)] = [
            ([UInt8](repeating: 0x0b, count: 20), "Hi There".bytes,
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            ("Jefe".bytes, "what do ya want for nothing?".bytes,
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            ([UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
             "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
            (Array(1...25), [UInt8](repeating: 0xcd, count: 50),
             "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
            ([UInt8](repeating: 0xaa, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First".bytes,
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
            ([UInt8](repeating: 0xaa, count: 131),
             ("This is a test using a larger than block-size key and a larger than block-size data. "
              + "The key needs to be hashed before being used by the HMAC algorithm.").bytes,
             "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
        ]
        for (index, testCase) in cases.enumerated() {
            XCTAssertEqual(HMACSHA256.authenticationCode(key: testCase.key, data: testCase.data).hex, testCase.mac,
                           "RFC 4231 case #\(index)")
            XCTAssertEqual(HMACSHA256.authenticationCode(key: SecretBytes(testCase.key), data: testCase.data).hex,
                           testCase.mac, "RFC 4231 case #\(index) (SecretBytes key)")
        }
    }

    func testEmptyKeyAndMessage() {
        // HMAC-SHA256("", "") — widely published value.
        XCTAssertEqual(HMACSHA256.authenticationCode(key: [], data: []).hex,
                       "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }
}

final class HKDFSHA256Tests: XCTestCase {
    // RFC 5869 Appendix A.1–A.3.
    func testRFC5869Case1() {
        let okm = HKDFSHA256.deriveKey(inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22),
                                       salt: Array(0x00...0x0c), info: Array(0xf0...0xf9), outputByteCount: 42)
        XCTAssertEqual(okm.hex, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    func testRFC5869Case2() {
        let okm = HKDFSHA256.deriveKey(inputKeyMaterial: Array(0x00...0x4f), salt: Array(0x60...0xaf),
                                       info: Array(0xb0...0xff), outputByteCount: 82)
        XCTAssertEqual(okm.hex, "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c"
                              + "59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71"
                              + "cc30c58179ec3e87c14c01d5c1f3434f1d87")
    }

    func testRFC5869Case3EmptySaltAndInfo() {
        let okm = HKDFSHA256.deriveKey(inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22), salt: [], info: [],
                                       outputByteCount: 42)
        XCTAssertEqual(okm.hex, "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }

    /// Cross-check against a direct RFC 5869 construction from HMAC, including
    /// edge cases the RFC vectors do not cover (empty IKM, 32-byte boundary, max length).
    func testMatchesHMACConstruction() {
        func reference(_ ikm: [UInt8], _ salt: [UInt8], _ info: [UInt8], _ length: Int) -> [UInt8] {
            let prk = HMACSHA256.authenticationCode(key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt,
                                                    data: ikm)
            var output: [UInt8] = []
            var block: [UInt8] = []
            var counter: UInt8 = 1
            while output.count < length {
                block = HMACSHA256.authenticationCode(key: prk, data: block + info + [counter])
                output += block
                counter &+= 1
            }
            return Array(output.prefix(length))
        }
        for (ikm, salt, info, length) in [([UInt8](), [UInt8](), [UInt8](), 32),
                                          ([1, 2, 3], [4], "CTAP2 HMAC key".bytes, 32),
                                          ([9], [UInt8](repeating: 0, count: 32), "CTAP2 AES key".bytes, 64),
                                          ([7, 7], [1], [2], 8160)] {
            XCTAssertEqual(HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: salt, info: info, outputByteCount: length),
                           reference(ikm, salt, info, length))
        }
        XCTAssertEqual(HKDFSHA256.deriveKey(inputKeyMaterial: [1], salt: [], info: [], outputByteCount: 0), [])
    }

    /// The keyed context (the store's lookup keys) gives exactly the one-shot HMAC, for any
    /// message, from several threads at once.
    func testKeyedHMACContextMatchesTheOneShotHMAC() {
        let key = SecretBytes(Array(0..<32))
        let context = HMACSHA256.KeyedContext(key: key)
        for length in [0, 1, 20, 55, 64, 65, 200] {
            let data = [UInt8](repeating: UInt8(length & 0xFF), count: length)
            XCTAssertEqual(context.authenticationCode(data), HMACSHA256.authenticationCode(key: key, data: data), "length \(length)")
        }
        let expected = HMACSHA256.authenticationCode(key: key, data: Array("cred".utf8))
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<100 { XCTAssertEqual(context.authenticationCode(Array("cred".utf8)), expected) }
        }
    }
}

/// scrypt against RFC 7914 §12's test vector.
final class ScryptTests: XCTestCase {
    func testRFC7914Vector() throws {
        // scrypt(P = "password", S = "NaCl", N = 1024, r = 8, p = 16, dkLen = 64)
        let derived = try Scrypt.deriveKey(passphrase: SecretBytes(Array("password".utf8)), salt: Array("NaCl".utf8),
                                           parameters: Scrypt.Parameters(logN: 10, r: 8, p: 16), count: 64)
        XCTAssertEqual(derived.copyBytes().map { String(format: "%02x", $0) }.joined(),
                       "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640")
        XCTAssertEqual(Scrypt.Parameters.default.memoryBytes, 128 << 20, "the default costs 128 MiB a guess")
        XCTAssertThrowsError(try Scrypt.deriveKey(passphrase: SecretBytes([1]), salt: [2], parameters: Scrypt.Parameters(logN: 30, r: 8, p: 1)))
        // Work bounded as well as memory: N·r·p ≤ 2^24 and p ≤ 16.
        XCTAssertNil(Scrypt.Parameters(logN: 20, r: 8, p: 2).problem)
        XCTAssertEqual(Scrypt.Parameters(logN: 10, r: 1, p: 16_000_000).problem, "scrypt p = 16000000 is more than 16, the most Latchkey runs")
        XCTAssertEqual(Scrypt.Parameters(logN: 22, r: 8, p: 1).problem,
                       "scrypt work N·r·p = 2^22·8·1 is more than 2^24 (16 times the default), the most Latchkey runs")
        XCTAssertNotNil(Scrypt.Parameters(logN: 12, r: UInt32.max, p: 1).problem)
        XCTAssertThrowsError(try Scrypt.deriveKey(passphrase: SecretBytes([1]), salt: [2], parameters: Scrypt.Parameters(logN: 10, r: 1, p: 16_000_000)))
    }
}
