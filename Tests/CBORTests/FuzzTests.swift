import CBOR
import XCTest

/// Deterministic robustness tests: the decoder must be total, and whatever it
/// accepts must round-trip through the canonical encoder.
final class FuzzTests: XCTestCase {
    enum Outcome { case rejected, accepted, acceptedCanonical }

    /// Checks the invariants for one input and reports how it was classified.
    @discardableResult
    func check(_ input: [UInt8], limits: CBORDecodingLimits = .init()) -> Outcome {
        guard let value = try? CBORDecoder.decode(input, limits: limits) else { return .rejected }
        let reencoded = value.encoded()
        // Re-encoding is canonical, so it decodes (even with strict order) to the same value
        // and is a fixed point of decode∘encode.
        let strict = CBORDecodingLimits(maxDepth: limits.maxDepth, maxItems: limits.maxItems,
                                        maxLength: limits.maxLength, requireCanonicalMapOrder: true)
        guard let again = try? CBORDecoder.decode(reencoded, limits: strict) else {
            XCTFail("re-encoding of \(hexString(input)) does not decode: \(hexString(reencoded))")
            return .accepted
        }
        XCTAssertEqual(again, value, hexString(input))
        XCTAssertEqual(again.encoded(), reencoded, hexString(input))
        // A canonical input (strict decode succeeds; floats may use non-preferred widths)
        // re-encodes byte for byte.
        _ = value.description
        if !containsFloat(value), (try? CBORDecoder.decode(input, limits: strict)) != nil {
            XCTAssertEqual(reencoded, input, "canonical input not reproduced: \(hexString(input))")
            return .acceptedCanonical
        }
        return .accepted
    }

    func testCorruptedCTAPMessages() {
        var rng = SplitMix64(seed: 0x1a7c_4e11_5eed_0001)
        let messages = CTAPSamples.all.map { $0.encoded() }
        var accepted = 0, canonical = 0
        for _ in 0..<20_000 {
            var bytes = messages[Int.random(in: 0..<messages.count, using: &rng)]
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let position = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0...4, using: &rng) {
                case 0: bytes[position] ^= 1 << UInt8.random(in: 0...7, using: &rng)   // bit flip
                case 1: bytes[position] = UInt8.random(in: 0...255, using: &rng)       // byte overwrite
                case 2: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: position)
                case 3: if bytes.count > 1 { bytes.remove(at: position) }
                default: bytes.removeLast(Int.random(in: 0..<bytes.count, using: &rng))  // truncate
                }
                if bytes.isEmpty { bytes = [0] }
            }
            switch check(bytes) {
            case .rejected: break
            case .accepted: accepted += 1
            case .acceptedCanonical: accepted += 1; canonical += 1
            }
            _ = try? CBORDecoder.decodePrefix(bytes[...])
        }
        // Some mutations (e.g. changing a byte inside a byte string) stay valid, and
        // most of those are still canonical, exercising the byte-identity check.
        XCTAssertGreaterThan(accepted, 1_000)
        XCTAssertGreaterThan(canonical, 500)
    }

    func testRandomInputs() {
        var rng = SplitMix64(seed: 0xdec0_de00_0000_0002)
        // Bias half of the inputs towards "interesting" header bytes so that
        // containers, strings and arguments get exercised, not just rejected.
        let interesting: [UInt8] = [0x00, 0x01, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x20, 0x38, 0x40, 0x41, 0x58,
                                    0x60, 0x61, 0x62, 0x78, 0x80, 0x81, 0x82, 0x98, 0xa0, 0xa1, 0xa2, 0xb8,
                                    0xc0, 0xe0, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xff,
                                    0x5b, 0x7b, 0x9b, 0xbb, 0xc3, 0xe6, 0xed, 0xf0, 0x7f, 0x9f]
        var accepted = 0, canonical = 0
        for i in 0..<20_000 {
            let length = Int.random(in: 0...64, using: &rng)
            let input: [UInt8] = (0..<length).map { _ in
                if i % 2 == 0 { return UInt8.random(in: 0...255, using: &rng) }
                return interesting[Int.random(in: 0..<interesting.count, using: &rng)]
            }
            switch check(input) {
            case .rejected: break
            case .accepted: accepted += 1
            case .acceptedCanonical: accepted += 1; canonical += 1
            }
            _ = try? CBORDecoder.decodePrefix(input[...])
            _ = try? CBORDecoder.decode(input, limits: .init(maxDepth: 2, maxItems: 5, maxLength: 3,
                                                             requireCanonicalMapOrder: true))
        }
        XCTAssertGreaterThan(accepted, 100)
        XCTAssertGreaterThan(canonical, 50)
    }

    func testRandomTreesRoundTrip() throws {
        var generator = TreeGenerator(rng: SplitMix64(seed: 0x7ee5_0000_0000_0003))
        let strict = CBORDecodingLimits(requireCanonicalMapOrder: true)
        for _ in 0..<3_000 {
            let value = generator.value(depth: 4)
            let bytes = value.encoded()
            let decoded = try CBORDecoder.decode(bytes, limits: strict)
            XCTAssertEqual(decoded, value, value.description)
            XCTAssertEqual(decoded.encoded(), bytes)
            XCTAssertEqual(decoded.hashValue, value.hashValue)
            // Diagnostic notation is deterministic (canonical key order).
            XCTAssertEqual(decoded.description, value.description)
        }
    }
}
