import CBOR
import XCTest

/// RFC 8949 Appendix A ("Examples of Encoded CBOR Data Items").
final class RFC8949VectorTests: XCTestCase {
    /// Vectors without tags or indefinite lengths: decode and canonical encode.
    /// `diag` is checked where our diagnostic output matches the RFC's column.
    static let vectors: [(value: CBORValue, hex: String, diag: String?)] = [
        (0, "00", "0"),
        (1, "01", "1"),
        (10, "0a", "10"),
        (23, "17", "23"),
        (24, "1818", "24"),
        (25, "1819", "25"),
        (100, "1864", "100"),
        (1000, "1903e8", "1000"),
        (1_000_000, "1a000f4240", "1000000"),
        (1_000_000_000_000, "1b000000e8d4a51000", "1000000000000"),
        (.unsignedInt(18_446_744_073_709_551_615), "1bffffffffffffffff", "18446744073709551615"),
        (.negativeInt(18_446_744_073_709_551_615), "3bffffffffffffffff", "-18446744073709551616"),
        (-1, "20", "-1"),
        (-10, "29", "-10"),
        (-100, "3863", "-100"),
        (-1000, "3903e7", "-1000"),
        (.float(0.0), "f90000", "0.0"),
        (.float(-0.0), "f98000", "-0.0"),
        (.float(1.0), "f93c00", "1.0"),
        (.float(1.1), "fb3ff199999999999a", "1.1"),
        (.float(1.5), "f93e00", "1.5"),
        (.float(65504.0), "f97bff", "65504.0"),
        (.float(100000.0), "fa47c35000", "100000.0"),
        (.float(3.4028234663852886e+38), "fa7f7fffff", "3.4028234663852886e+38"),
        (.float(1.0e+300), "fb7e37e43c8800759c", "1.0e+300"),
        (.float(5.960464477539063e-8), "f90001", "5.960464477539063e-8"),
        (.float(0.00006103515625), "f90400", nil),
        (.float(-4.0), "f9c400", "-4.0"),
        (.float(-4.1), "fbc010666666666666", "-4.1"),
        (.float(.infinity), "f97c00", "Infinity"),
        (.float(.nan), "f97e00", "NaN"),
        (.float(-.infinity), "f9fc00", "-Infinity"),
        (false, "f4", "false"),
        (true, "f5", "true"),
        (nil, "f6", "null"),
        (.undefined, "f7", "undefined"),
        (.simple(16), "f0", "simple(16)"),
        (.simple(255), "f8ff", "simple(255)"),
        (.byteString([]), "40", "h''"),
        (.byteString([1, 2, 3, 4]), "4401020304", "h'01020304'"),
        ("", "60", "\"\""),
        ("a", "6161", "\"a\""),
        ("IETF", "6449455446", "\"IETF\""),
        ("\"\\", "62225c", "\"\\\"\\\\\""),
        ("\u{00fc}", "62c3bc", "\"\u{00fc}\""),
        ("\u{6c34}", "63e6b0b4", "\"\u{6c34}\""),
        ("\u{10151}", "64f0908591", "\"\u{10151}\""),
        ([], "80", "[]"),
        ([1, 2, 3], "83010203", "[1, 2, 3]"),
        ([1, [2, 3], [4, 5]], "8301820203820405", "[1, [2, 3], [4, 5]]"),
        (.array((1...25).map { CBORValue($0) }),
         "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
         "[" + (1...25).map(String.init).joined(separator: ", ") + "]"),
        ([:], "a0", "{}"),
        ([1: 2, 3: 4], "a201020304", "{1: 2, 3: 4}"),
        (["a": 1, "b": [2, 3]], "a26161016162820203", "{\"a\": 1, \"b\": [2, 3]}"),
        (["a", ["b": "c"]], "826161a161626163", "[\"a\", {\"b\": \"c\"}]"),
        (["a": "A", "b": "B", "c": "C", "d": "D", "e": "E"],
         "a56161614161626142616361436164614461656145",
         "{\"a\": \"A\", \"b\": \"B\", \"c\": \"C\", \"d\": \"D\", \"e\": \"E\"}"),
    ]

    /// Non-preferred float widths: decode only (the encoder picks the half form).
    static let decodeOnly: [(value: CBORValue, hex: String)] = [
        (.float(.infinity), "fa7f800000"),
        (.float(.nan), "fa7fc00000"),
        (.float(-.infinity), "faff800000"),
        (.float(.infinity), "fb7ff0000000000000"),
        (.float(.nan), "fb7ff8000000000000"),
        (.float(-.infinity), "fbfff0000000000000"),
    ]

    /// Tagged vectors: CTAP2 forbids tags.
    static let tagged: [String] = [
        "c249010000000000000000",                 // 2(h'010000000000000000')  bignum 2^64
        "c349010000000000000000",                 // 3(h'010000000000000000')  -2^64 - 1
        "c074323031332d30332d32315432303a30343a30305a",  // 0("2013-03-21T20:04:00Z")
        "c11a514b67b0",                           // 1(1363896240)
        "c1fb41d452d9ec200000",                   // 1(1363896240.5)
        "d74401020304",                           // 23(h'01020304')
        "d818456449455446",                       // 24(h'6449455446')
        "d82076687474703a2f2f7777772e6578616d706c652e636f6d",  // 32("http://www.example.com")
    ]

    /// Indefinite-length vectors: CTAP2 requires definite lengths.
    static let indefinite: [String] = [
        "5f42010243030405ff",                     // (_ h'0102', h'030405')
        "7f657374726561646d696e67ff",             // (_ "strea", "ming")
        "9fff",                                   // [_ ]
        "9f018202039f0405ffff",                   // [_ 1, [2, 3], [_ 4, 5]]
        "9f01820203820405ff",                     // [_ 1, [2, 3], [4, 5]]
        "83018202039f0405ff",                     // [1, [2, 3], [_ 4, 5]]
        "83019f0203ff820405",                     // [1, [_ 2, 3], [4, 5]]
        "9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff",  // [_ 1, ..., 25]
        "bf61610161629f0203ffff",                 // {_ "a": 1, "b": [_ 2, 3]}
        "826161bf61626163ff",                     // ["a", {_ "b": "c"}]
        "bf6346756ef563416d7421ff",               // {_ "Fun": true, "Amt": -2}
    ]

    func testEncodeVectors() {
        for v in Self.vectors {
            XCTAssertEqual(hexString(v.value.encoded()), v.hex, "encoding \(v.value)")
        }
    }

    func testDecodeVectors() throws {
        let canonical = CBORDecodingLimits(requireCanonicalMapOrder: true)
        for v in Self.vectors {
            XCTAssertEqual(try CBORDecoder.decode(hex(v.hex)), v.value, "decoding \(v.hex)")
            XCTAssertEqual(try CBORDecoder.decode(hex(v.hex), limits: canonical), v.value, "decoding \(v.hex)")
        }
        for v in Self.decodeOnly {
            XCTAssertEqual(try CBORDecoder.decode(hex(v.hex)), v.value, "decoding \(v.hex)")
        }
    }

    func testDiagnosticNotation() {
        for v in Self.vectors {
            if let diag = v.diag {
                XCTAssertEqual(v.value.description, diag, "diagnostic of \(v.hex)")
            }
        }
    }

    func testFloatValuesDecodeExactly() throws {
        XCTAssertEqual(try CBORDecoder.decode(hex("f90400")), .float(0.00006103515625))
        XCTAssertEqual(try CBORDecoder.decode(hex("f90001")), .float(5.960464477539063e-8))
        XCTAssertEqual(try CBORDecoder.decode(hex("f97bff")), .float(65504))
        XCTAssertEqual(try CBORDecoder.decode(hex("f9c400")).description, "-4.0")
        XCTAssertEqual(try CBORDecoder.decode(hex("f98000")), .float(-0.0))
        XCTAssertNotEqual(try CBORDecoder.decode(hex("f98000")), .float(0.0))
    }

    func testTaggedVectorsRejected() {
        for h in Self.tagged {
            XCTAssertThrowsError(try CBORDecoder.decode(hex(h)), h) { error in
                XCTAssertEqual(error as? CBORDecodingError, .unsupportedTag, h)
            }
        }
    }

    func testIndefiniteLengthVectorsRejected() {
        for h in Self.indefinite {
            XCTAssertThrowsError(try CBORDecoder.decode(hex(h)), h) { error in
                XCTAssertEqual(error as? CBORDecodingError, .indefiniteLength, h)
            }
        }
    }
}
