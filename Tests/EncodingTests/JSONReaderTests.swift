import Encoding
import Foundation
import XCTest

/// The one JSON reader: strict types, errors naming the member by its path, in one wording.
final class JSONReaderTests: XCTestCase {
    struct Failure: Error, Equatable { let message: String }
    let fail: JSONReader<Failure>.Failing = { Failure(message: $0) }

    func reader(_ text: String) throws -> JSONReader<Failure> {
        JSONReader(try XCTUnwrap(JSONDocument.parse(Array(text.utf8))?.objectValue), failure: fail)
    }

    func message(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as Failure {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    func testTypesAreStrictAndPathsNamed() throws {
        let top = try reader(#"{"a": {"list": [{"n": 1}, {"n": "x"}], "flag": 1, "b": "AQI", "bad": "!!"}, "s": true}"#)
        let a = try top.object("a")
        XCTAssertEqual(try a.objects("list")[0].integer("n"), 1)
        XCTAssertEqual(message { _ = try a.objects("list")[1].integer("n") }, "a.list[1].n is not an integer")
        XCTAssertEqual(message { _ = try a.optionalBool("flag") }, "a.flag is not a boolean (it is a number)")
        XCTAssertEqual(message { _ = try top.string("s") }, "s is not a string (it is a boolean)")
        XCTAssertEqual(message { _ = try a.string("missing") }, "a.missing is missing")
        XCTAssertEqual(try a.bytes("b"), [1, 2])
        XCTAssertEqual(message { _ = try a.bytes("bad") }, "a.bad is not base64url")
        XCTAssertEqual(message { _ = try top.objects("a") }, "a is not an array (it is an object)")
        XCTAssertEqual(message { _ = try JSONReader.object(.array([]), "the file", failure: self.fail) }, "the file is not an object (it is an array)")
    }

    func testNullIsAbsentAndExportersLeniencyIsNamed() throws {
        let top = try reader(#"{"none": null, "digits": "42", "half": 1.5, "text": "true", "yes": true}"#)
        XCTAssertNil(try top.optionalString("none"))
        XCTAssertEqual(message { _ = try top.string("none") }, "none is missing")
        XCTAssertEqual(try top.integer("digits"), 42, "a counter as Bitwarden writes it")
        XCTAssertEqual(message { _ = try top.integer("half") }, "half is not an integer")
        XCTAssertEqual(try top.optionalFlag("text"), true)
        XCTAssertEqual(message { _ = try top.optionalBool("text") }, "text is not a boolean (it is a string)")
        XCTAssertEqual(try top.optionalBool("yes"), true)
    }

    func testValuesWalkedByName() throws {
        let value = JSONDocument.parse(Array(#"[1, "x"]"#.utf8))
        XCTAssertEqual(message { _ = try JSONReader.object(value, "options", failure: self.fail) }, "options is not an object (it is an array)")
        XCTAssertEqual(message { _ = try JSONReader.string(nil, "origin", failure: self.fail) }, "origin is missing")
        XCTAssertEqual(message { _ = try JSONReader.optionalNumber(.number(-1), "timeout", failure: self.fail) },
                       "timeout is not a non-negative number")
        XCTAssertNil(JSONDocument.parse(Array("{\"a\": ".utf8)), "cut short: no document")
        XCTAssertEqual(JSONDocument.parse(Array("true".utf8)), .bool(true), "a boolean is never a number")
    }

    func testADocumentWrittenBackSortsMembersAndKeepsIntegers() throws {
        let document = try XCTUnwrap(JSONDocument.parse(Array(#"{"b": [1, 2.5, null], "a": {"z": false, "y": "é"}}"#.utf8)))
        XCTAssertEqual(JSONValue(document).rendered, #"{"a":{"y":"é","z":false},"b":[1,2.5,null]}"#)
    }

    struct Probe: Decodable {
        struct Inner: Decodable { var list: [Int]; var flag: Bool }
        var a: Inner
    }

    /// A Decodable type's errors read as the reader's do.
    func testDecodingErrorsInTheSameWording() {
        func why(_ text: String) -> String? {
            do {
                _ = try JSONDecoder().decode(Probe.self, from: Data(text.utf8))
                return nil
            } catch let error as DecodingError {
                return error.memberPath(root: "params")
            } catch {
                return "\(error)"
            }
        }
        XCTAssertEqual(why(#"{"a": {"list": [1, "x"], "flag": true}}"#), "params.a.list[1] is not an integer")
        XCTAssertEqual(why(#"{"a": {"list": []}}"#), "params.a.flag is missing")
        XCTAssertEqual(why(#"{"a": {"list": [], "flag": null}}"#), "params.a.flag is not a boolean")
        XCTAssertEqual(why("[1]"), "params is not an object")
    }

    /// Any bytes give a document or nil: nesting deeper than the parser allows is refused, not a
    /// stack overflow (an import file or a native-messaging frame is anyone's).
    func testDeepNestingIsRefusedNotACrash() {
        let depth = 100_000
        XCTAssertNil(JSONDocument.parse(Array(String(repeating: "[", count: depth).utf8) + Array(String(repeating: "]", count: depth).utf8)))
        XCTAssertNil(JSONDocument.parse(Array(String(repeating: "{\"a\":", count: depth).utf8) + [0x31]
                                        + Array(String(repeating: "}", count: depth).utf8)))
        XCTAssertNotNil(JSONDocument.parse(Array("[[[[1]]]]".utf8)))
    }
}
