import Encoding
import Foundation
import XCTest

final class JSONValueTests: XCTestCase {
    func testRenderingKeepsOrderOnOneLine() {
        // --json prints one compact line, members in the order given.
        let value = JSONValue.object([
            ("z", .int(-3)), ("a", .array([.bool(true), .null, .double(1.5)])), ("empty", .object([])), ("none", .array([])),
        ])
        XCTAssertEqual(value.rendered, #"{"z":-3,"a":[true,null,1.5],"empty":{},"none":[]}"#)
    }

    /// RFC 8259 §7: quotes, backslashes and control characters are escaped; the rest passes as UTF-8.
    func testStringsAreEscaped() throws {
        let text = "a\"b\\c\nd\te\u{01}f µs /dev/hidraw0"
        let rendered = JSONValue.object([("s", .string(text))]).rendered
        XCTAssertTrue(rendered.contains(#""a\"b\\c\nd\te\u0001f µs /dev/hidraw0""#), rendered)
        XCTAssertEqual((try JSONSerialization.jsonObject(with: Data(rendered.utf8)) as? [String: Any])?["s"] as? String, text)
    }

    func testOptionalsAndNonFiniteNumbers() {
        XCTAssertEqual(JSONValue.optional(nil as String?), .null)
        XCTAssertEqual(JSONValue.optional(7 as Int?), .int(7))
        XCTAssertEqual(JSONValue.double(.nan).rendered, "null")
        XCTAssertNotEqual(JSONValue.object([("a", .int(1))]), .object([("b", .int(1))]))
    }

    func testAnObjectBuiltAMemberAtATime() {
        var inner = JSONValue.Object()
        inner.add("rk", true)
        var object = JSONValue.Object()
        object.add("id", Int64(7))
        object.add("none", nil as Int64?)
        object.add("name", "a\"b\u{1}")
        object.add("list", strings: ["x", "y"])
        object.add("inner", inner)
        object.add("raw", .double(0.5))
        XCTAssertEqual(object.rendered, #"{"id":7,"none":null,"name":"a\"b\u0001","list":["x","y"],"inner":{"rk":true},"raw":0.5}"#)
        XCTAssertEqual(JSONValue.quoted("é\n"), #""é\n""#)
    }
}
