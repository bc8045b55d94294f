import Encoding
import XCTest

final class Base64URLTests: XCTestCase {
    /// RFC 4648 §10 test vectors (the base64 ones, which base64url shares without padding).
    func testRFC4648Vectors() {
        let vectors = [("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
                       ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64URL.encode(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base64URL.decode(encoded), Array(plain.utf8), encoded)
        }
    }

    /// RFC 4648 §5: 62 and 63 are '-' and '_' (base64's '+' and '/' are not accepted).
    func testURLSafeAlphabet() {
        XCTAssertEqual(Base64URL.encode([0xFB, 0xFF, 0xBF]), "-_-_")
        XCTAssertEqual(Base64URL.decode("-_-_"), [0xFB, 0xFF, 0xBF])
        XCTAssertNil(Base64URL.decode("+/+/"))
    }

    func testPaddedInputIsAccepted() {
        XCTAssertEqual(Base64URL.decode("Zg=="), Array("f".utf8))
        XCTAssertEqual(Base64URL.decode("Zm8="), Array("fo".utf8))
        XCTAssertEqual(Base64URL.decode("  Zm9v\n"), Array("foo".utf8), "surrounding whitespace")
    }

    func testMalformedInputIsRefused() {
        for bad in ["Z", "Zg=", "Zg===", "Z===", "Zm9=v", "Zm 9v", "Zh", "Zm9vY", "é"] {
            XCTAssertNil(Base64URL.decode(bad), bad)
        }
        XCTAssertNil(Base64URL.decode("Zm9"), "left-over bits must be zero (RFC 4648 §3.5): \"fo\" is Zm8")
        XCTAssertEqual(Base64URL.decode("Zm8"), [0x66, 0x6F], "three characters are two bytes")
    }

    func testRoundTripsEveryLength() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...130 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let encoded = Base64URL.encode(bytes)
            XCTAssertFalse(encoded.contains("="))
            XCTAssertEqual(encoded.count, (length * 4 + 2) / 3)
            XCTAssertEqual(Base64URL.decode(encoded), bytes)
        }
    }
}
