import CBOR
import XCTest

/// CTAP2 canonical form (CTAP 2.1 §8): shortest arguments and key ordering.
final class CanonicalEncodingTests: XCTestCase {
    func testIntegerBoundaries() {
        let cases: [(CBORValue, String)] = [
            (.unsignedInt(23), "17"),
            (.unsignedInt(24), "1818"),
            (.unsignedInt(255), "18ff"),
            (.unsignedInt(256), "190100"),
            (.unsignedInt(65535), "19ffff"),
            (.unsignedInt(65536), "1a00010000"),
            (.unsignedInt(4_294_967_295), "1affffffff"),
            (.unsignedInt(4_294_967_296), "1b0000000100000000"),
            (.unsignedInt(.max), "1bffffffffffffffff"),
            (.negativeInt(23), "37"),            // -24
            (.negativeInt(24), "3818"),          // -25
            (.negativeInt(255), "38ff"),         // -256
            (.negativeInt(256), "390100"),       // -257
            (.negativeInt(65535), "39ffff"),
            (.negativeInt(65536), "3a00010000"),
            (.negativeInt(4_294_967_295), "3affffffff"),
            (.negativeInt(4_294_967_296), "3b0000000100000000"),
            (-24, "37"),
            (-25, "3818"),
            (-257, "390100"),
            (CBORValue(Int.min), "3b7fffffffffffffff"),
            (CBORValue(Int64.max), "1b7fffffffffffffff"),
        ]
        for (value, expected) in cases {
            XCTAssertEqual(hexString(value.encoded()), expected, "\(value)")
            XCTAssertEqual(try CBORDecoder.decode(hex(expected)), value)
        }
    }

    func testLengthBoundaries() throws {
        for (count, head) in [(23, "57"), (24, "5818"), (255, "58ff"), (256, "590100"),
                              (65535, "59ffff"), (65536, "5a00010000")] {
            let bytes = [UInt8](repeating: 0xab, count: count)
            let encoded = CBORValue.byteString(bytes).encoded()
            XCTAssertEqual(hexString(Array(encoded.prefix(head.count / 2))), head)
            XCTAssertEqual(encoded.count, head.count / 2 + count)
            XCTAssertEqual(try CBORDecoder.decode(encoded), .byteString(bytes))
        }
        for (count, head) in [(23, "77"), (24, "7818"), (256, "790100")] {
            let text = String(repeating: "x", count: count)
            XCTAssertEqual(hexString(Array(CBORValue.textString(text).encoded().prefix(head.count / 2))), head)
        }
        let limits = CBORDecodingLimits(maxItems: 100_000)
        for (count, head) in [(23, "97"), (24, "9818"), (255, "98ff"), (256, "990100"), (65536, "9a00010000")] {
            let array = CBORValue.array(Array(repeating: 0, count: count))
            let encoded = array.encoded()
            XCTAssertEqual(hexString(Array(encoded.prefix(head.count / 2))), head)
            XCTAssertEqual(try CBORDecoder.decode(encoded, limits: limits), array)
        }
        var big: [CBORValue: CBORValue] = [:]
        for i in 0..<24 { big[CBORValue(i)] = CBORValue.null }
        XCTAssertEqual(CBORValue.map(big).encoded().prefix(2), [0xb8, 24])
    }

    func testIntegerKeyOrder() {
        let map: CBORValue = [-2: "m2", 10: "ten", -1: "m1", 2: "two", 1: "one"]
        // 1 (01), 2 (02), 10 (0a), -1 (20), -2 (21)
        XCTAssertEqual(hexString(map.encoded()),
                       "a5" + "01636f6e65" + "026374776f" + "0a6374656e" + "20626d31" + "21626d32")
    }

    func testTextKeyOrder() {
        XCTAssertEqual(hexString((["type": "public-key", "id": 1] as CBORValue).encoded()),
                       "a2" + "62696401" + "6474797065" + "6a7075626c69632d6b6579")
        XCTAssertEqual(hexString((["aa": 1, "b": 2, "a": 3] as CBORValue).encoded()),
                       "a3" + "616103" + "616202" + "62616101")
        // "displayName" (12 bytes encoded) sorts after "name" (5) and "id" (3).
        let user: CBORValue = ["displayName": "A", "name": "a", "id": .byteString([1])]
        XCTAssertEqual(user.encoded().prefix(4), [0xa3, 0x62, 0x69, 0x64])
    }

    func testByteStringKeyOrder() {
        let map: CBORValue = [.byteString([0x00, 0x00]): 1, .byteString([0xff]): 2, .byteString([]): 3, .byteString([0x01]): 4]
        XCTAssertEqual(hexString(map.encoded()), "a4" + "4003" + "410104" + "41ff02" + "42000001")
    }

    func testMixedTypeKeyOrder() {
        let map: CBORValue = [
            false: 0, "": 1, .byteString([]): 2, -1: 3, 0: 4, [] as CBORValue: 5, [:] as CBORValue: 6,
            100: 7, "a": 8, 1000: 9, "b": 10,
        ]
        // Single bytes: 00 < 20 < 40 < 60 < 80 < a0 < f4; then two-byte 1864 < 6161 < 6162; then 1903e8.
        XCTAssertEqual(hexString(map.encoded()),
                       "ab" + "0004" + "2003" + "4002" + "6001" + "8005" + "a006" + "f400"
                           + "186407" + "616108" + "61620a" + "1903e809")
    }

    func testCanonicalOrderIsLengthFirstNotRFC8949Bytewise() {
        // RFC 8949 §4.2.1 would put 1000 (19 03e8) before "b" (61 62); CTAP2 puts shorter first.
        XCTAssertEqual(hexString((["b": 1, 1000: 2] as CBORValue).encoded()), "a2" + "616201" + "1903e802")
    }

    func testNestedMapsSortedRecursively() {
        let value: CBORValue = [["z": 1, "a": 2]: [3: 0, 1: 0]]
        XCTAssertEqual(hexString(value.encoded()), "a1" + "a2616102617a01" + "a201000300")
    }

    func testCOSEKeyLayout() {
        let x = filler(32, seed: 1), y = filler(32, seed: 2)
        let key: CBORValue = [-3: .byteString(y), -2: .byteString(x), -1: 1, 3: -7, 1: 2]
        XCTAssertEqual(key.encoded(), hex("a5 0102 0326 2001 215820") + x + [0x22, 0x58, 0x20] + y)
    }

    func testSmallCTAPMessageExactBytes() {
        let message: CBORValue = [2: ["name": "y", "id": "x"], 1: .byteString([1])]
        XCTAssertEqual(message.encoded(), hex("a2 01 41 01 02 a2 62 69 64 61 78 64 6e 61 6d 65 61 79"))
    }

    func testFloatWidths() {
        let cases: [(Double, String)] = [
            (0.0, "f90000"), (-0.0, "f98000"), (1.0, "f93c00"), (0.5, "f93800"),
            (65504, "f97bff"),                     // largest half
            (65505, "fa477fe100"),                 // needs single
            (65536, "fa47800000"),                 // 2^16: half exponent overflow
            (5.960464477539063e-8, "f90001"),      // smallest half subnormal
            (2.9802322387695312e-8, "fa33000000"), // 2^-25: below half range
            (6.097555160522461e-5, "f903ff"),      // largest half subnormal
            (0.00006103515625, "f90400"),          // smallest half normal
            (1.0 / 3.0, "fb3fd5555555555555"),
            (Double(Float(1.0 / 3.0)), "fa3eaaaaab"),
            (Double(Float.leastNonzeroMagnitude), "fa00000001"),
            (Double.leastNonzeroMagnitude, "fb0000000000000001"),
            (Double.greatestFiniteMagnitude, "fb7fefffffffffffff"),
            (.infinity, "f97c00"), (-.infinity, "f9fc00"),
            (.nan, "f97e00"), (-Double.nan, "f97e00"), (Double(bitPattern: 0x7ff0_0000_0000_0001), "f97e00"),
        ]
        for (d, expected) in cases {
            XCTAssertEqual(hexString(CBORValue.float(d).encoded()), expected, "\(d)")
            if !d.isNaN {
                XCTAssertEqual(try CBORDecoder.decode(hex(expected)), .float(d), expected)
            }
        }
    }

    func testSimpleValues() {
        XCTAssertEqual(CBORValue.simple(0).encoded(), [0xe0])
        XCTAssertEqual(CBORValue.simple(19).encoded(), [0xf3])
        XCTAssertEqual(CBORValue.simple(32).encoded(), [0xf8, 0x20])
        XCTAssertEqual(CBORValue.undefined.encoded(), [0xf7])
    }

    func testEncodeIntoAppends() {
        var buffer: [UInt8] = [0xaa]
        CBORValue(1).encode(into: &buffer)
        CBORValue("a").encode(into: &buffer)
        XCTAssertEqual(buffer, [0xaa, 0x01, 0x61, 0x61])
    }
}
