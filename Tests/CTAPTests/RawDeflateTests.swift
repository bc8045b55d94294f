import CTAP
import XCTest

/// RawDeflate (zlib's raw DEFLATE) against streams Python's zlib wrote (`zlib.compressobj(level,
/// DEFLATED, -15)`, the compression python-fido2 and Chromium give large blobs), hostile ones, and
/// itself.
final class RawDeflateTests: XCTestCase {
    /// The 2,000 bytes the vectors compress: a skewed text (Python:
    /// `bytes(s[(i*i + i//7) % 44] for i in range(2000))`).
    let text: [UInt8] = {
        let pangram = Array("the quick brown fox jumps over the lazy dog ".utf8)
        return (0..<2000).map { pangram[($0 * $0 + $0 / 7) % 44] }
    }()

    /// zlib level 6: one block with dynamic Huffman codes (BTYPE 2).
    let zlibDynamic = hex("""
        edd0dbb585200c45d156766b02c1e0012310e451fda58cfb610159197b2a67781ca1cd8e3e939def2821235b01\
        3954f1cb9f3082761b1bac4162c8ab70175357aaa31b983e241280a44fd61da3e6bb749fca6c8382402c109cd6\
        fdc85f60f9b5c39450cc4a067813c6f550d4525d677077d269ed587a44276e828f12bd16df1cd18e1548184a98\
        983b861f0e2e5478a9696849c6f984980ab9c8cad1e55ed70f9a58f6c11d3023e254eb5f5768cf2c22344032d7\
        dc33f7869b2d59867293a6e24e0e3d118d68d4c49163ddff543fb3cfec33fbcc3eb3cfec9f99fd01
        """)

    func testInflatesZlibsDynamicBlock() throws {
        XCTAssertEqual(zlibDynamic[0] >> 1 & 3, 2, "the vector is a dynamic block")
        XCTAssertEqual(try RawDeflate.inflate(zlibDynamic, maxOutput: 2000), text)
    }

    func testInflatesStoredAndEmptyStreams() throws {
        XCTAssertEqual(try RawDeflate.inflate(hex("010000ffff"), maxOutput: 10), [], "zlib level 0, empty")
        XCTAssertEqual(try RawDeflate.inflate(hex("0300"), maxOutput: 10), [], "zlib level 9, empty (a fixed block)")
        XCTAssertEqual(try RawDeflate.inflate(hex("010300fcff616263"), maxOutput: 10), Array("abc".utf8))
        XCTAssertEqual(try RawDeflate.inflate(hex("4b4c4a0600"), maxOutput: 10), Array("abc".utf8), "zlib, fixed codes")
    }

    func testWhatItDeflatesInflatesBack() throws {
        let repetitive = [UInt8](repeating: 0x61, count: 1000) + text + text
        let random = (0..<70_000).map { _ in UInt8.random(in: 0...255) }
        for input in [[], [0x42], Array("abcabcabcabcabc".utf8), text, repetitive, random] {
            let compressed = RawDeflate.deflate(input)
            XCTAssertEqual(try RawDeflate.inflate(compressed, maxOutput: input.count), input, "\(input.count) bytes")
        }
        XCTAssertLessThan(RawDeflate.deflate(repetitive).count, repetitive.count / 4, "matches, overlapping ones included")
        XCTAssertLessThan(RawDeflate.deflate(text).count, 700, "skewed text compresses")
        // Incompressible data falls back to stored blocks: two of them past 65,535 bytes.
        XCTAssertEqual(RawDeflate.deflate(random).count, random.count + 10)
    }

    func testHostileStreamsFailPrecisely() {
        func failure(_ bytes: [UInt8], maxOutput: Int = 5000) -> RawDeflate.Failure? {
            do {
                _ = try RawDeflate.inflate(bytes, maxOutput: maxOutput)
                return nil
            } catch {
                return error
            }
        }
        XCTAssertEqual(failure(Array(zlibDynamic.dropLast())), .truncated)
        XCTAssertEqual(failure([]), .truncated)
        XCTAssertEqual(failure(hex("010500faff616263")), .truncated, "a stored block longer than the input")
        XCTAssertEqual(failure([0x07]), .reservedBlockType)
        XCTAssertEqual(failure(hex("0100000000")), .storedLengthMismatch)
        // A fixed block whose first code is a match: length 3 at distance 1, before any output.
        XCTAssertEqual(failure([0x03, 0x02]), .distanceTooFar)
        // A dynamic block whose code-length code has no codes at all: zlib reads the (all zero)
        // code lengths it then describes before it judges them, so the stream must hold them.
        XCTAssertEqual(failure([0x05, 0x00, 0x00, 0x00] + [UInt8](repeating: 0, count: 40)), .invalidCodeLengths)
        XCTAssertEqual(failure([0x05, 0x00, 0x00, 0x00]), .truncated, "and without them the stream ends inside the block")
        XCTAssertEqual(failure(zlibDynamic, maxOutput: 100), .outputTooLong(limit: 100))
        XCTAssertEqual(failure(RawDeflate.deflate([UInt8](repeating: 0, count: 100_000)), maxOutput: 65_536),
                       .outputTooLong(limit: 65_536), "a bomb stops at the limit")
    }
}

private func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)! }
}

private extension UInt8 {
    var isWhitespace: Bool { self == 0x20 || self == 0x0A }
}
