import CBOR
import XCTest

final class ValueAPITests: XCTestCase {
    func testLiterals() {
        XCTAssertEqual(0 as CBORValue, .unsignedInt(0))
        XCTAssertEqual(-1 as CBORValue, .negativeInt(0))
        XCTAssertEqual(-257 as CBORValue, .negativeInt(256))
        XCTAssertEqual("id" as CBORValue, .textString("id"))
        XCTAssertEqual(true as CBORValue, .boolean(true))
        XCTAssertEqual(nil as CBORValue, .null)
        XCTAssertEqual([1, "a"] as CBORValue, .array([.unsignedInt(1), .textString("a")]))
        XCTAssertEqual([1: "a", "k": [2]] as CBORValue,
                       .map([.unsignedInt(1): .textString("a"), .textString("k"): .array([.unsignedInt(2)])]))
        XCTAssertEqual([1: "a", 1: "b"] as CBORValue, .map([.unsignedInt(1): .textString("b")]))
    }

    func testInitializers() {
        XCTAssertEqual(CBORValue(5), .unsignedInt(5))
        XCTAssertEqual(CBORValue(-5), .negativeInt(4))
        XCTAssertEqual(CBORValue(Int.min), .negativeInt(UInt64(Int.max)))
        XCTAssertEqual(CBORValue(Int64.min), .negativeInt(UInt64(Int64.max)))
        XCTAssertEqual(CBORValue(Int64(-1)), .negativeInt(0))
        XCTAssertEqual(CBORValue(UInt64.max), .unsignedInt(.max))
        XCTAssertEqual(CBORValue([0x01, 0x02] as [UInt8]), .byteString([1, 2]))
        XCTAssertEqual(CBORValue("text"), .textString("text"))
    }

    func testIntAccessors() {
        XCTAssertEqual(CBORValue(42).intValue, 42)
        XCTAssertEqual(CBORValue(-42).intValue, -42)
        XCTAssertEqual(CBORValue(Int.max).intValue, Int.max)
        XCTAssertEqual(CBORValue(Int.min).intValue, Int.min)
        XCTAssertNil(CBORValue.unsignedInt(UInt64(Int.max) + 1).intValue)
        XCTAssertNil(CBORValue.negativeInt(UInt64(Int.max) + 1).intValue)
        XCTAssertNil(CBORValue.negativeInt(.max).intValue)
        XCTAssertNil(CBORValue("1").intValue)
        XCTAssertEqual(CBORValue.unsignedInt(.max).uint64Value, .max)
        XCTAssertNil(CBORValue(-1).uint64Value)
    }

    func testOtherAccessors() {
        XCTAssertEqual(CBORValue.byteString([1]).bytesValue, [1])
        XCTAssertNil(CBORValue("a").bytesValue)
        XCTAssertEqual(CBORValue("a").stringValue, "a")
        XCTAssertNil(CBORValue.byteString([0x61]).stringValue)
        XCTAssertEqual(([1] as CBORValue).arrayValue, [1])
        XCTAssertNil(([:] as CBORValue).arrayValue)
        XCTAssertEqual(([1: 2] as CBORValue).mapValue, [1: 2])
        XCTAssertNil(([] as CBORValue).mapValue)
        XCTAssertEqual(CBORValue.boolean(false).boolValue, false)
        XCTAssertNil(CBORValue.null.boolValue)
        XCTAssertTrue(CBORValue.null.isNull)
        XCTAssertFalse(CBORValue.undefined.isNull)
        XCTAssertFalse(CBORValue(0).isNull)
    }

    func testSubscripts() {
        let map: CBORValue = [1: "one", -2: "minus two", "id": .byteString([9]), [1]: "array key"]
        XCTAssertEqual(map[1], "one")
        XCTAssertEqual(map[-2], "minus two")
        XCTAssertEqual(map["id"]?.bytesValue, [9])
        XCTAssertEqual(map[[1] as CBORValue], "array key")
        XCTAssertEqual(map[CBORValue(1)], "one")
        XCTAssertNil(map[2])
        XCTAssertNil(map["type"])
        XCTAssertNil(CBORValue(1)[1])
        XCTAssertNil(([1, 2] as CBORValue)[0])
        XCTAssertNil(CBORValue("id")["id"])
    }

    func testEqualityFollowsEncoding() {
        XCTAssertEqual(CBORValue.float(.nan), .float(-.nan))
        XCTAssertEqual(CBORValue.float(.nan).hashValue, CBORValue.float(Double(bitPattern: 0x7ff0_0000_0000_0001)).hashValue)
        XCTAssertNotEqual(CBORValue.float(0.0), .float(-0.0))
        XCTAssertNotEqual(CBORValue.float(1), .unsignedInt(1))
        XCTAssertNotEqual(CBORValue.textString("\u{e9}"), .textString("e\u{301}"))
        XCTAssertNotEqual(CBORValue.unsignedInt(0), .negativeInt(0))
        XCTAssertNotEqual(CBORValue.byteString([0x61]), .textString("a"))
        let keys: Set<CBORValue> = [.textString("\u{e9}"), .textString("e\u{301}"), .float(0), .float(-0.0), .float(.nan)]
        XCTAssertEqual(keys.count, 5)
        XCTAssertTrue(keys.contains(.float(-.nan)))
    }

    func testDiagnosticNotation() {
        let value: CBORValue = [1: .byteString([1, 2]), "id": "x", 2: [1, -2, true]]
        XCTAssertEqual(value.description, "{1: h'0102', 2: [1, -2, true], \"id\": \"x\"}")
        XCTAssertEqual(CBORValue("a\"b\\c\nd\u{1}").description, "\"a\\\"b\\\\c\\nd\\u0001\"")
        XCTAssertEqual(([nil, .undefined, .simple(99), .float(0.5)] as CBORValue).description,
                       "[null, undefined, simple(99), 0.5]")
        XCTAssertEqual(CBORValue.byteString([0xde, 0xad, 0xbe, 0xef]).description, "h'deadbeef'")
        XCTAssertEqual(CBORValue.float(1e-300).description, "1.0e-300")
        XCTAssertEqual(CBORValue.float(1.5e20).description, "1.5e+20")
        XCTAssertEqual(CBORValue(Int.min).description, "-9223372036854775808")
        XCTAssertEqual("\(CBORValue(7))", "7")
    }
}
