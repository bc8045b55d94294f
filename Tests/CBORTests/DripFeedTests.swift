import CBOR
import XCTest

/// Streaming behaviour: every proper prefix of a valid message is `.truncated`.
final class DripFeedTests: XCTestCase {
    func testEveryProperPrefixIsTruncated() throws {
        for message in CTAPSamples.all {
            let bytes = message.encoded()
            for length in 0..<bytes.count {
                do {
                    let value = try CBORDecoder.decode(Array(bytes[..<length]))
                    XCTFail("prefix of length \(length) decoded to \(value)")
                } catch {
                    XCTAssertEqual(error, .truncated, "prefix length \(length) of \(bytes.count)")
                }
                XCTAssertThrowsError(try CBORDecoder.decodePrefix(bytes[..<length]))
            }
            XCTAssertEqual(try CBORDecoder.decode(bytes), message)
            let strict = CBORDecodingLimits(maxDepth: 4, requireCanonicalMapOrder: true)
            XCTAssertEqual(try CBORDecoder.decode(bytes, limits: strict), message)
        }
    }

    func testDecodePrefixWithTrailingData() throws {
        for message in CTAPSamples.all {
            let bytes = message.encoded()
            for extra in [[], [0x00], [0xff, 0xff], hex("a1 01 02"), bytes] as [[UInt8]] {
                let input = [0xee, 0xee] + bytes + extra
                let (value, consumed) = try CBORDecoder.decodePrefix(input[2...])
                XCTAssertEqual(value, message)
                XCTAssertEqual(consumed, bytes.count)
                if !extra.isEmpty {
                    assertDecodeError(bytes + extra, .trailingBytes)
                }
            }
        }
    }

    func testConcatenatedMessagesDecodeSequentially() throws {
        let stream = CTAPSamples.all.flatMap { $0.encoded() }
        var rest = stream[...]
        var decoded: [CBORValue] = []
        while !rest.isEmpty {
            let (value, consumed) = try CBORDecoder.decodePrefix(rest)
            decoded.append(value)
            rest = rest.dropFirst(consumed)
        }
        XCTAssertEqual(decoded, CTAPSamples.all)
    }

    func testSampleMessagesAccessors() throws {
        let request = try CBORDecoder.decode(CTAPSamples.makeCredentialRequest.encoded())
        XCTAssertEqual(request[1]?.bytesValue?.count, 32)
        XCTAssertEqual(request[2]?["id"]?.stringValue, "example.com")
        XCTAssertEqual(request[3]?["displayName"], "Alice Liddell")
        XCTAssertEqual(request[4]?.arrayValue?.compactMap { $0["alg"]?.intValue }, [-7, -8, -257])
        XCTAssertEqual(request[7]?["rk"]?.boolValue, true)
        XCTAssertEqual(request[9]?.intValue, 2)
        XCTAssertNil(request[10])
        XCTAssertNil(request["1"])
    }
}
