import XCTest
import CTAP

final class PINTextTests: XCTestCase {
    func testCountsCodePointsNotBytes() {
        XCTAssertEqual(PINText.codePointCount(ofUTF8: Array("1234".utf8)), 4)
        XCTAssertEqual(PINText.codePointCount(ofUTF8: Array("Grüße".utf8)), 5)      // 7 bytes
        XCTAssertEqual(PINText.codePointCount(ofUTF8: Array("🔑🔑".utf8)), 2)       // 8 bytes
        XCTAssertEqual(PINText.codePointCount(ofUTF8: [UInt8]()), 0)
        XCTAssertEqual(PINText.codePointCount(ofUTF8: Array("ab12".utf8)[1...]), 3)
    }

    func testRejectsWhatStringValidationRejects() {
        let invalid: [[UInt8]] = [
            [0xC0, 0x80],             // overlong NUL
            [0xED, 0xA0, 0x80],       // a UTF-16 surrogate
            [0xE2, 0x82],             // truncated
            [0x31, 0xFF, 0x32],       // never valid
            [0xF4, 0x90, 0x80, 0x80], // past U+10FFFF
        ]
        for bytes in invalid {
            XCTAssertNil(PINText.codePointCount(ofUTF8: bytes), "\(bytes)")
            XCTAssertNil(String(validating: bytes, as: UTF8.self), "the reference disagrees on \(bytes)")
        }
    }
}
