import CBOR
@testable import CTAP
import XCTest

/// `GetAssertionRequest(commonShape:)` against the full path (`CBORDecoder` then `init(cbor:)`):
/// it reads the requests clients send, and whenever it answers, it answers what the full path
/// does; on anything else it steps aside (nil), so the full path decides every error.
final class GetAssertionCommonShapeTests: XCTestCase {
    private let hash = [UInt8](repeating: 0xC1, count: 32)

    /// What the full path makes of `bytes`: the request, or the status it fails with.
    private func full(_ bytes: [UInt8]) -> Result<GetAssertionRequest, CTAP2StatusCode> {
        do {
            let value = try CBORDecoder.decode(bytes)
            return Result { () throws(CTAP2StatusCode) in try GetAssertionRequest(cbor: value) }
        } catch {
            return .failure(CTAP2StatusCode(error))
        }
    }

    /// The property: the common shape answers nil or exactly what the full path builds.
    private func assertAgrees(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        guard let common = GetAssertionRequest(commonShape: bytes[...]) else { return }
        XCTAssertEqual(try? full(bytes).get(), common, "bytes \(bytes.map { String(format: "%02x", $0) }.joined())",
                       file: file, line: line)
    }

    private func encoded(_ map: [CBORValue: CBORValue]) -> [UInt8] { CBORValue.map(map).encoded() }

    private var browserShapes: [[UInt8]] {
        let descriptor: CBORValue = .map(["id": .byteString(Array(repeating: 7, count: 64)), "type": "public-key"])
        return [
            encoded([1: "example.com", 2: .byteString(hash)]),
            encoded([1: "example.com", 2: .byteString(hash), 3: .array([descriptor])]),
            encoded([1: "example.com", 2: .byteString(hash), 3: .array([descriptor, descriptor]), 5: .map(["up": false])]),
            encoded([1: "example.com", 2: .byteString(hash), 3: .array([]), 5: .map(["uv": true, "up": true]),
                     6: .byteString(Array(repeating: 1, count: 32)), 7: 2]),
            encoded([1: "ünïcödé.example", 2: .byteString(hash), 5: .map([:])]),
        ]
    }

    func testTheShapesClientsSendAreReadAndMatchTheFullPath() throws {
        for bytes in browserShapes {
            let common = try XCTUnwrap(GetAssertionRequest(commonShape: bytes[...]), "not read: \(bytes)")
            XCTAssertEqual(common, try full(bytes).get())
        }
        let request = try XCTUnwrap(GetAssertionRequest(commonShape: browserShapes[3][...]))
        XCTAssertEqual(request.options.values, ["uv": true, "up": true])
        XCTAssertEqual(request.pinUvAuthProtocol, 2)
        XCTAssertEqual(request.extensionInputs, [:])
        XCTAssertNil(request.extensionsError)
    }

    /// Everything outside the shape, valid or not, goes to the full path.
    func testAnythingElseStepsAside() {
        let descriptor: CBORValue = .map(["id": .byteString([1]), "type": "public-key"])
        let steppingAside: [[UInt8]] = [
            encoded([1: "a.example", 2: .byteString(hash), 4: .map(["hmac-secret": true])]),   // extensions
            encoded([1: "a.example", 2: .byteString(hash),
                     3: .array([.map(["id": .byteString([1]), "type": "public-key", "transports": .array(["usb"])])])]),
            encoded([1: "a.example", 2: .byteString([1, 2, 3])]),                               // short hash
            encoded([1: "a.example"]),                                                           // missing
            encoded([1: .byteString([1]), 2: .byteString(hash)]),                               // rpId not text
            encoded([1: "a.example", 2: .byteString(hash), 5: .map(["up": 1])]),                 // option not bool
            encoded([1: "a.example", 2: .byteString(hash), 9: true]),                            // unknown key
            encoded([1: "a.example", 2: .byteString(hash)]) + [0x00],                           // trailing byte
            [0xA2, 0x02, 0x58, 0x20] + hash + [0x01, 0x61, 0x61],                               // keys out of order
            [0xA2, 0x01, 0x61, 0x61, 0x01, 0x61, 0x62],                                         // a key twice
            [0xA2, 0x18, 0x01, 0x61, 0x61, 0x02, 0x58, 0x20] + hash,                            // key not in shortest form
            [0xA2, 0x01, 0x62, 0xC3, 0x28, 0x02, 0x58, 0x20] + hash,                            // invalid UTF-8
            [0xA2, 0x01, 0x7F, 0x61, 0x61, 0xFF, 0x02, 0x58, 0x20] + hash,                      // indefinite length
            [0xA2, 0x01, 0x61],                                                                  // truncated
            encoded([1: "a.example", 2: .byteString(hash), 3: .array([descriptor, .map(["id": .byteString([1])])])]),
            encoded([1: "a.example", 2: .byteString(hash), 3: .map([:])]),
            [0xA3, 0x01, 0x61, 0x61, 0x02, 0x58, 0x20] + hash + [0x05, 0xA2, 0x62, 0x75, 0x70, 0xF5, 0x62, 0x75, 0x70, 0xF4],
        ]
        for bytes in steppingAside {
            XCTAssertNil(GetAssertionRequest(commonShape: bytes[...]), "read: \(bytes.map { String(format: "%02x", $0) }.joined())")
        }
        // A repeated option: the full path refuses it (a key twice), and the common shape stepped aside.
        XCTAssertEqual(full(steppingAside.last!), .failure(.invalidCBOR))
    }

    /// Options whose names are equal as Swift strings but not as bytes (é precomposed and
    /// decomposed) are two CBOR keys; the full path folds them into one option, and the common
    /// shape steps aside rather than choose which value wins.
    func testCanonicallyEqualOptionNamesStepAside() {
        let bytes = encoded([1: "a.example", 2: .byteString(hash), 5: .map(["\u{E9}": true, "e\u{301}": false])])
        XCTAssertNil(GetAssertionRequest(commonShape: bytes[...]))
    }

    /// The property on many mutations of the shapes (bytes changed, cut, inserted, dropped):
    /// whenever the common shape reads one, the full path reads the same request.
    func testMutatedRequestsAgreeWithTheFullPath() {
        var generator = SeededGenerator(seed: 0x5EED_0002)
        var read = 0
        for round in 0..<40_000 {
            var bytes = browserShapes[round % browserShapes.count]
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes[index] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &generator)
                case 2: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: index)
                default: if bytes.count > 1 { bytes.remove(at: index) }
                }
            }
            if GetAssertionRequest(commonShape: bytes[...]) != nil { read += 1 }
            assertAgrees(bytes)
        }
        XCTAssertGreaterThan(read, 1_000, "the mutations should leave many requests the common shape reads")
    }
}

/// xorshift64*: the same mutations every run.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }
}
