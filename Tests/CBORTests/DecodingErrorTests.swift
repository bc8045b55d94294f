import CBOR
import XCTest

func assertDecodeError(_ hexInput: String, _ expected: CBORDecodingError,
                       limits: CBORDecodingLimits = .init(),
                       file: StaticString = #filePath, line: UInt = #line) {
    assertDecodeError(hex(hexInput), expected, limits: limits, label: hexInput, file: file, line: line)
}

func assertDecodeError(_ input: [UInt8], _ expected: CBORDecodingError,
                       limits: CBORDecodingLimits = .init(), label: String = "",
                       file: StaticString = #filePath, line: UInt = #line) {
    do {
        let value = try CBORDecoder.decode(input, limits: limits)
        XCTFail("expected \(expected), decoded \(value) \(label)", file: file, line: line)
    } catch {
        XCTAssertEqual(error, expected, label, file: file, line: line)
    }
}

/// One concrete input per `CBORDecodingError` case (and then some).
final class DecodingErrorTests: XCTestCase {
    func testTruncated() {
        assertDecodeError("", .truncated)
        assertDecodeError("18", .truncated)          // missing 1-byte argument
        assertDecodeError("19 01", .truncated)
        assertDecodeError("1a 00 01 00", .truncated)
        assertDecodeError("1b 00 00 00 01 00 00 00", .truncated)
        assertDecodeError("43 01 02", .truncated)    // byte string shorter than declared
        assertDecodeError("63 61 62", .truncated)
        assertDecodeError("82 01", .truncated)       // array missing an element
        assertDecodeError("a1 01", .truncated)       // map missing a value
        assertDecodeError("f9 00", .truncated)
        assertDecodeError("fa 00 00 00", .truncated)
        assertDecodeError("fb 00 00 00 00 00 00 00", .truncated)
        assertDecodeError("f8", .truncated)
        assertDecodeError("5a 00 01 00 00", .truncated) // 65536 declared, none present
    }

    func testTrailingBytes() {
        assertDecodeError("01 02", .trailingBytes)
        assertDecodeError("a0 00", .trailingBytes)
        assertDecodeError("80 ff", .trailingBytes)
    }

    func testNonMinimalEncoding() {
        assertDecodeError("18 05", .nonMinimalEncoding)
        assertDecodeError("18 17", .nonMinimalEncoding)
        assertDecodeError("19 00 ff", .nonMinimalEncoding)
        assertDecodeError("1a 00 00 ff ff", .nonMinimalEncoding)
        assertDecodeError("1b 00 00 00 00 ff ff ff ff", .nonMinimalEncoding)
        assertDecodeError("38 00", .nonMinimalEncoding)          // negative int
        assertDecodeError("58 01 00", .nonMinimalEncoding)       // byte string length
        assertDecodeError("78 01 61", .nonMinimalEncoding)       // text string length
        assertDecodeError("98 01 00", .nonMinimalEncoding)       // array count
        assertDecodeError("b8 01 00 00", .nonMinimalEncoding)    // map count
        assertDecodeError("a1 18 01 00", .nonMinimalEncoding)    // nested in a map key
    }

    func testIndefiniteLength() {
        assertDecodeError("5f ff", .indefiniteLength)
        assertDecodeError("7f ff", .indefiniteLength)
        assertDecodeError("9f ff", .indefiniteLength)
        assertDecodeError("bf ff", .indefiniteLength)
        assertDecodeError("ff", .indefiniteLength)       // stray break
        assertDecodeError("1f", .indefiniteLength)
        assertDecodeError("3f", .indefiniteLength)
        assertDecodeError("81 ff", .indefiniteLength)
    }

    func testReservedAdditionalInfo() {
        for major in 0..<8 {
            for info in 28...30 {
                let byte = UInt8(major << 5 | info)
                assertDecodeError([byte, 0, 0, 0, 0, 0, 0, 0, 0], .reservedAdditionalInfo, label: "\(byte)")
            }
        }
    }

    func testDuplicateMapKey() {
        assertDecodeError("a2 01 00 01 01", .duplicateMapKey)
        assertDecodeError("a2 61 61 00 61 61 01", .duplicateMapKey)
        assertDecodeError("a3 01 00 02 00 01 00", .duplicateMapKey)
        assertDecodeError("a2 f9 3c 00 00 fa 3f 80 00 00 00", .duplicateMapKey) // 1.0 in two widths
        assertDecodeError("a1 01 a2 02 00 02 00", .duplicateMapKey)               // nested
    }

    func testDistinctNormalizationKeysAreNotDuplicates() throws {
        // "\u{e9}" and "e\u{301}" are canonically equivalent Swift Strings but distinct CBOR keys.
        let value = try CBORDecoder.decode(hex("a2 62 c3 a9 00 63 65 cc 81 01"))
        XCTAssertEqual(value.mapValue?.count, 2)
        XCTAssertEqual(value["\u{e9}"], 0)
        XCTAssertEqual(value[.textString("e\u{301}")], 1)
        XCTAssertEqual(value.encoded(), hex("a2 62 c3 a9 00 63 65 cc 81 01"))
    }

    func testMapKeysOutOfOrder() throws {
        let strict = CBORDecodingLimits(requireCanonicalMapOrder: true)
        for h in ["a2 02 00 01 00", "a2 20 00 01 00", "a2 64 74 79 70 65 00 62 69 64 00",
                  "a2 62 61 61 00 61 62 00", "a2 19 03 e8 00 61 62 00", "a1 00 a2 02 00 01 00"] {
            assertDecodeError(h, .mapKeysOutOfOrder, limits: strict)
            XCTAssertNoThrow(try CBORDecoder.decode(hex(h)), h)   // accepted by default
        }
        XCTAssertNoThrow(try CBORDecoder.decode(hex("a3 01 00 20 00 61 61 00"), limits: strict))
        // Duplicate detection takes precedence over ordering.
        assertDecodeError("a2 01 00 01 00", .duplicateMapKey, limits: strict)
    }

    func testDepthExceeded() throws {
        func nested(_ depth: Int, leaf: [UInt8] = [0x00]) -> [UInt8] {
            [UInt8](repeating: 0x81, count: depth) + leaf
        }
        XCTAssertNoThrow(try CBORDecoder.decode(nested(8)))
        XCTAssertNoThrow(try CBORDecoder.decode(nested(7, leaf: [0x80])))   // 8 levels, innermost empty
        assertDecodeError(nested(9), .depthExceeded)
        assertDecodeError(nested(8, leaf: [0x80]), .depthExceeded)         // 9 levels
        assertDecodeError(nested(8, leaf: [0xa0]), .depthExceeded)
        // Maps count as levels too: {1: {1: ... }}.
        let maps: [UInt8] = Array([[UInt8]](repeating: [0xa1, 0x01], count: 9).joined()) + [0x00]
        assertDecodeError(maps, .depthExceeded)
        XCTAssertNoThrow(try CBORDecoder.decode(Array(maps.dropFirst(2))))
        // Container map keys count as nested.
        assertDecodeError(nested(7, leaf: [0xa1, 0x81, 0x00, 0x00]), .depthExceeded)
        // Custom limit; and a deep input does not blow the stack.
        assertDecodeError(nested(5), .depthExceeded, limits: .init(maxDepth: 4))
        XCTAssertNoThrow(try CBORDecoder.decode(nested(4), limits: .init(maxDepth: 4)))
        assertDecodeError(nested(100_000), .depthExceeded)
        assertDecodeError("80", .depthExceeded, limits: .init(maxDepth: 0))
        XCTAssertEqual(try CBORDecoder.decode(hex("01"), limits: .init(maxDepth: 0)), 1)
    }

    func testTooManyItems() throws {
        // Array of 4095 zeros = 4096 items: accepted. 4096 zeros = 4097 items: rejected.
        let ok = CBORValue.array(Array(repeating: 0, count: 4095)).encoded()
        XCTAssertNoThrow(try CBORDecoder.decode(ok))
        let tooMany = CBORValue.array(Array(repeating: 0, count: 4096)).encoded()
        assertDecodeError(tooMany, .tooManyItems)
        assertDecodeError("83 01 02 03", .tooManyItems, limits: .init(maxItems: 3))
        XCTAssertNoThrow(try CBORDecoder.decode(hex("83 01 02 03"), limits: .init(maxItems: 4)))
        assertDecodeError("a2 01 02 03 04", .tooManyItems, limits: .init(maxItems: 4))
        assertDecodeError("01", .tooManyItems, limits: .init(maxItems: 0))
        // Declared count alone exceeds the budget: rejected before reading elements.
        assertDecodeError("99 ff ff", .tooManyItems)
        // Nested items count towards the same document budget.
        assertDecodeError("82 82 01 02 82 03 04", .tooManyItems, limits: .init(maxItems: 6))
    }

    func testLengthTooLarge() {
        assertDecodeError("5b ff ff ff ff ff ff ff ff", .lengthTooLarge)
        assertDecodeError("7b 80 00 00 00 00 00 00 00", .lengthTooLarge)   // 2^63
        assertDecodeError("9b ff ff ff ff ff ff ff ff", .lengthTooLarge)
        assertDecodeError("bb 7f ff ff ff ff ff ff ff", .lengthTooLarge)
        assertDecodeError("5a 00 10 00 01", .lengthTooLarge)                // 1_048_577
        assertDecodeError("44 01 02 03 04", .lengthTooLarge, limits: .init(maxLength: 3))
        assertDecodeError("83 01 02 03", .lengthTooLarge, limits: .init(maxLength: 2))
        assertDecodeError("a2 01 02 03 04", .lengthTooLarge, limits: .init(maxLength: 1))
        XCTAssertNoThrow(try CBORDecoder.decode(hex("43 01 02 03"), limits: .init(maxLength: 3)))
    }

    func testHugeDeclaredLengthsFailFastWithoutAllocating() {
        // Within maxLength but beyond the input: truncated (nothing reserved up front).
        let lenient = CBORDecodingLimits(maxItems: .max, maxLength: .max)
        for h in ["5b 7f ff ff ff ff ff ff ff", "5b ff ff ff ff ff ff ff ff", "7b ff ff ff ff ff ff ff ff",
                  "9b 7f ff ff ff ff ff ff ff", "bb 7f ff ff ff ff ff ff ff", "9b ff ff ff ff ff ff ff ff 00"] {
            do {
                _ = try CBORDecoder.decode(hex(h), limits: lenient)
                XCTFail(h)
            } catch {
                // With unbounded maxLength/maxItems the item budget may trip first.
                XCTAssertTrue([.truncated, .lengthTooLarge, .tooManyItems].contains(error), "\(h): \(error)")
            }
        }
        assertDecodeError("5b 7f ff ff ff ff ff ff ff", .truncated, limits: lenient)      // Int.max bytes declared
        assertDecodeError("5b 80 00 00 00 00 00 00 00", .lengthTooLarge, limits: lenient) // 2^63 > Int.max
        assertDecodeError("9a 00 0f ff ff 00", .truncated, limits: .init(maxItems: .max))
        // 2^60 elements/entries pass both limits: storage must not be reserved from the declared count.
        assertDecodeError("9b 0f ff ff ff ff ff ff ff 00", .truncated, limits: lenient)
        assertDecodeError("bb 0f ff ff ff ff ff ff ff 00 00", .truncated, limits: lenient)
    }

    func testInvalidUTF8() {
        assertDecodeError("61 ff", .invalidUTF8)
        assertDecodeError("61 80", .invalidUTF8)                // lone continuation byte
        assertDecodeError("62 c0 80", .invalidUTF8)             // overlong NUL
        assertDecodeError("63 e0 80 80", .invalidUTF8)          // overlong
        assertDecodeError("63 ed a0 80", .invalidUTF8)          // UTF-16 surrogate U+D800
        assertDecodeError("64 f4 90 80 80", .invalidUTF8)       // > U+10FFFF
        assertDecodeError("62 e6 b0", .invalidUTF8)             // truncated sequence inside the string
        assertDecodeError("a1 62 c3 28 00", .invalidUTF8)       // as a map key
    }

    func testUnsupportedTag() {
        assertDecodeError("c0 60", .unsupportedTag)
        assertDecodeError("d8 18 40", .unsupportedTag)
        assertDecodeError("d9 d9 f7 00", .unsupportedTag)       // self-describe tag 55799
        assertDecodeError("81 c1 00", .unsupportedTag)
        assertDecodeError("c6", .unsupportedTag)
    }

    func testInvalidSimpleValue() {
        for v in 0..<32 {
            assertDecodeError([0xf8, UInt8(v)], .invalidSimpleValue, label: "f8 \(v)")
        }
        XCTAssertEqual(try CBORDecoder.decode([0xf8, 32]), .simple(32))
    }

    func testDecodePrefixReportsConsumed() throws {
        let input = hex("83 01 02 03 ff ee")
        let (value, consumed) = try CBORDecoder.decodePrefix(input[...])
        XCTAssertEqual(value, [1, 2, 3])
        XCTAssertEqual(consumed, 4)
        // Slices with a non-zero start index.
        let (next, n) = try CBORDecoder.decodePrefix(input[2...])
        XCTAssertEqual(next, 2)
        XCTAssertEqual(n, 1)
        XCTAssertThrowsError(try CBORDecoder.decodePrefix(input[4...])) {
            XCTAssertEqual($0 as? CBORDecodingError, .indefiniteLength)
        }
        XCTAssertThrowsError(try CBORDecoder.decodePrefix(input[6...])) {
            XCTAssertEqual($0 as? CBORDecodingError, .truncated)
        }
    }
}
