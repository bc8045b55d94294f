/// Raw DEFLATE (RFC 1951: no zlib or gzip wrapper), the compression of a large blob before it is
/// encrypted into the large-blob array (CTAP 2.1 §6.10.3: "DEFLATE-compressed", as zlib's
/// `wbits = -15` writes it). Clients compress; the key itself never needs to, but the rig reads
/// and plants blobs (`addCredential` / `getCredential` `largeBlob`), so it needs both directions.
///
/// `inflate` reads untrusted bytes (whatever a client wrote into the array): every length and
/// code is checked, and the output is bounded by the caller.
public enum RawDeflate {
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The input ended inside a block.
        case truncated
        /// Block type 3 (reserved).
        case reservedBlockType
        /// A stored block whose NLEN is not LEN's ones' complement.
        case storedLengthMismatch
        /// Code lengths that describe no usable Huffman code (over-subscribed, incomplete, a repeat
        /// with nothing to repeat, running past the table, or no end-of-block code).
        case invalidCodeLengths
        /// A bit pattern that is no symbol of the code, or symbol 286/287 or distance 30/31.
        case invalidSymbol
        /// A distance back past the start of the output.
        case distanceTooFar
        /// More output than the caller allows.
        case outputTooLong(limit: Int)

        public var description: String {
            switch self {
            case .truncated: "the DEFLATE stream ends inside a block"
            case .reservedBlockType: "the DEFLATE stream has a block of the reserved type 3"
            case .storedLengthMismatch: "a stored DEFLATE block's length check (NLEN) does not match"
            case .invalidCodeLengths: "a DEFLATE block's Huffman code lengths describe no valid code"
            case .invalidSymbol: "the DEFLATE stream has a code that stands for no symbol"
            case .distanceTooFar: "the DEFLATE stream refers back past its start"
            case let .outputTooLong(limit): "the DEFLATE stream inflates to more than \(limit) bytes"
            }
        }
    }

    /// The decompressed bytes of one complete DEFLATE stream (up to its final block; bytes after
    /// it are ignored, as zlib does). More than `maxOutput` bytes is `.outputTooLong`.
    public static func inflate(_ input: [UInt8], maxOutput: Int) throws(Failure) -> [UInt8] {
        var inflater = Inflater(input: input, maxOutput: maxOutput)
        try inflater.run()
        return inflater.output
    }

    /// `input` compressed: one block with the fixed Huffman codes and LZ77 matches (greedy, a
    /// 32 KiB window), or stored blocks where that would be longer (incompressible data).
    public static func deflate(_ input: [UInt8]) -> [UInt8] {
        let compressed = FixedBlockEncoder.encode(input)
        let storedLength = input.count + 5 * max(1, (input.count + 65_534) / 65_535)
        return compressed.count <= storedLength ? compressed : stored(input)
    }

    /// `input` as stored (uncompressed) blocks of at most 65,535 bytes, the last one final.
    static func stored(_ input: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(input.count + 5 * (input.count / 65_535 + 1))
        var start = 0
        repeat {
            let end = min(input.count, start + 65_535)
            let length = UInt16(end - start)
            output.append(end == input.count ? 1 : 0)
            output += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)]
            output += input[start..<end]
            start = end
        } while start < input.count
        return output
    }

    // RFC 1951 §3.2.5: lengths 3…258 (symbols 257…285) and distances 1…32768 (0…29).
    static let lengthBase: [Int] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                    35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtra: [Int] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                     3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBase: [Int] = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
                                      257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
                                      8193, 12289, 16385, 24577]
    static let distanceExtra: [Int] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                                       7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    /// §3.2.6: the fixed literal/length code's bit lengths (symbols 0…287).
    static let fixedLiteralLengths: [Int] = Array(repeating: 8, count: 144) + Array(repeating: 9, count: 112)
        + Array(repeating: 7, count: 24) + Array(repeating: 8, count: 8)
}

/// A canonical Huffman code, decoded a bit at a time by code length (as zlib's `puff` does):
/// `counts[n]` codes of length n, their symbols in `symbols` in canonical order.
private struct HuffmanCode {
    var counts = [Int](repeating: 0, count: 16)
    var symbols: [Int] = []
    /// Every bit pattern is a code (Kraft's sum is exactly 1).
    let isComplete: Bool

    /// The code for these bit lengths (0 = symbol unused). Over-subscribed lengths are invalid;
    /// so is an incomplete code, except an empty one or a single code of length 1 (RFC 1951
    /// §3.2.7 allows a distance code of one distance, or none for all-literal data), as zlib.
    init(lengths: ArraySlice<Int>) throws(RawDeflate.Failure) {
        for length in lengths { counts[length] += 1 }
        let used = lengths.count - counts[0]
        var left = 1
        for length in 1...15 {
            left = left * 2 - counts[length]
            guard left >= 0 else { throw .invalidCodeLengths }
        }
        isComplete = left == 0
        guard isComplete || used == 0 || (used == 1 && counts[1] == 1) else { throw .invalidCodeLengths }
        var offsets = [Int](repeating: 0, count: 16)
        for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
        symbols = [Int](repeating: 0, count: used)
        for (symbol, length) in zip(0..., lengths) where length != 0 {
            symbols[offsets[length]] = symbol
            offsets[length] += 1
        }
    }
}

private struct Inflater {
    let input: [UInt8]
    let maxOutput: Int
    var output: [UInt8] = []
    var position = 0
    var bitBuffer = 0
    var bitCount = 0

    init(input: [UInt8], maxOutput: Int) {
        self.input = input
        self.maxOutput = maxOutput
    }

    mutating func bits(_ count: Int) throws(RawDeflate.Failure) -> Int {
        while bitCount < count {
            guard position < input.count else { throw .truncated }
            bitBuffer |= Int(input[position]) << bitCount
            position += 1
            bitCount += 8
        }
        let value = bitBuffer & ((1 << count) - 1)
        bitBuffer >>= count
        bitCount -= count
        return value
    }

    mutating func decode(_ code: HuffmanCode) throws(RawDeflate.Failure) -> Int {
        var bits = 0, first = 0, index = 0
        for length in 1...15 {
            bits |= try self.bits(1)
            let count = code.counts[length]
            if bits - first < count { return code.symbols[index + bits - first] }
            index += count
            first = (first + count) << 1
            bits <<= 1
        }
        throw .invalidSymbol
    }

    mutating func run() throws(RawDeflate.Failure) {
        var isFinal = false
        while !isFinal {
            isFinal = try bits(1) == 1
            switch try bits(2) {
            case 0: try storedBlock()
            case 1:
                // 32 distance codes of 5 bits, a complete code; 30 and 31 are invalid symbols.
                try codes(literals: HuffmanCode(lengths: RawDeflate.fixedLiteralLengths[...]),
                          distances: HuffmanCode(lengths: [Int](repeating: 5, count: 32)[...]))
            case 2: try dynamicBlock()
            default: throw .reservedBlockType
            }
        }
    }

    mutating func storedBlock() throws(RawDeflate.Failure) {
        bitBuffer = 0
        bitCount = 0
        guard position + 4 <= input.count else { throw .truncated }
        let length = Int(input[position]) | Int(input[position + 1]) << 8
        let check = Int(input[position + 2]) | Int(input[position + 3]) << 8
        guard length == ~check & 0xFFFF else { throw .storedLengthMismatch }
        position += 4
        guard position + length <= input.count else { throw .truncated }
        guard output.count + length <= maxOutput else { throw .outputTooLong(limit: maxOutput) }
        output += input[position..<(position + length)]
        position += length
    }

    mutating func dynamicBlock() throws(RawDeflate.Failure) {
        let literalCount = try bits(5) + 257
        let distanceCount = try bits(5) + 1
        let lengthCodeCount = try bits(4) + 4
        guard literalCount <= 286, distanceCount <= 30 else { throw .invalidCodeLengths }
        let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
        var lengthLengths = [Int](repeating: 0, count: 19)
        for index in 0..<lengthCodeCount { lengthLengths[order[index]] = try bits(3) }
        let lengthCode = try HuffmanCode(lengths: lengthLengths[...])
        // The code-length code itself must be complete (zlib refuses an incomplete one).
        guard lengthCode.isComplete else { throw .invalidCodeLengths }

        var lengths: [Int] = []
        let total = literalCount + distanceCount
        lengths.reserveCapacity(total)
        while lengths.count < total {
            let symbol = try decode(lengthCode)
            let value: Int, repeats: Int
            switch symbol {
            case 0..<16: (value, repeats) = (symbol, 1)
            case 16:
                guard let previous = lengths.last else { throw .invalidCodeLengths }
                (value, repeats) = (previous, try 3 + bits(2))
            case 17: (value, repeats) = (0, try 3 + bits(3))
            default: (value, repeats) = (0, try 11 + bits(7))
            }
            guard lengths.count + repeats <= total else { throw .invalidCodeLengths }
            lengths += repeatElement(value, count: repeats)
        }
        // A block that cannot end is no block.
        guard lengths[256] != 0 else { throw .invalidCodeLengths }
        try codes(literals: HuffmanCode(lengths: lengths[0..<literalCount]),
                  distances: HuffmanCode(lengths: lengths[literalCount...]))
    }

    mutating func codes(literals: HuffmanCode, distances: HuffmanCode) throws(RawDeflate.Failure) {
        while true {
            let symbol = try decode(literals)
            if symbol < 256 {
                guard output.count < maxOutput else { throw .outputTooLong(limit: maxOutput) }
                output.append(UInt8(symbol))
                continue
            }
            if symbol == 256 { return }
            let lengthIndex = symbol - 257
            guard lengthIndex < 29 else { throw .invalidSymbol }
            let length = try RawDeflate.lengthBase[lengthIndex] + bits(RawDeflate.lengthExtra[lengthIndex])
            let distanceSymbol = try decode(distances)
            guard distanceSymbol < 30 else { throw .invalidSymbol }
            let distance = try RawDeflate.distanceBase[distanceSymbol] + bits(RawDeflate.distanceExtra[distanceSymbol])
            guard distance <= output.count else { throw .distanceTooFar }
            guard output.count + length <= maxOutput else { throw .outputTooLong(limit: maxOutput) }
            // Byte by byte: a match may overlap what it produces (distance < length).
            var from = output.count - distance
            for _ in 0..<length {
                output.append(output[from])
                from += 1
            }
        }
    }
}

/// One final block with the fixed codes (§3.2.6): literals, and greedy LZ77 matches found through
/// a hash of the next three bytes with chains of bounded depth.
private enum FixedBlockEncoder {
    static let window = 32_768
    static let maxChain = 64

    struct BitWriter {
        var bytes: [UInt8] = []
        var buffer = 0
        var count = 0

        /// `value`'s low `width` bits, least significant first (extra bits, headers).
        mutating func write(_ value: Int, width: Int) {
            buffer |= value << count
            count += width
            while count >= 8 {
                bytes.append(UInt8(buffer & 0xFF))
                buffer >>= 8
                count -= 8
            }
        }

        /// A Huffman code: its most significant bit goes first.
        mutating func writeCode(_ code: Int, width: Int) {
            var reversed = 0
            for bit in 0..<width { reversed |= ((code >> bit) & 1) << (width - 1 - bit) }
            write(reversed, width: width)
        }

        mutating func finish() -> [UInt8] {
            if count > 0 { bytes.append(UInt8(buffer & 0xFF)) }
            return bytes
        }
    }

    static func writeLiteral(_ symbol: Int, to writer: inout BitWriter) {
        switch symbol {
        case 0..<144: writer.writeCode(0x30 + symbol, width: 8)
        case 144..<256: writer.writeCode(0x190 + symbol - 144, width: 9)
        case 256..<280: writer.writeCode(symbol - 256, width: 7)
        default: writer.writeCode(0xC0 + symbol - 280, width: 8)
        }
    }

    static func writeMatch(length: Int, distance: Int, to writer: inout BitWriter) {
        let lengthIndex = RawDeflate.lengthBase.lastIndex { $0 <= length }!
        writeLiteral(257 + lengthIndex, to: &writer)
        writer.write(length - RawDeflate.lengthBase[lengthIndex], width: RawDeflate.lengthExtra[lengthIndex])
        let distanceIndex = RawDeflate.distanceBase.lastIndex { $0 <= distance }!
        writer.writeCode(distanceIndex, width: 5)
        writer.write(distance - RawDeflate.distanceBase[distanceIndex], width: RawDeflate.distanceExtra[distanceIndex])
    }

    static func encode(_ input: [UInt8]) -> [UInt8] {
        var writer = BitWriter()
        writer.write(1, width: 1)  // BFINAL
        writer.write(1, width: 2)  // BTYPE 01: fixed codes
        // Tables no larger than the input needs (blobs are a few KiB; the window is 32 KiB).
        var hashSize = 256
        while hashSize < min(input.count, 1 << 15) { hashSize <<= 1 }
        var head = [Int](repeating: -1, count: hashSize)
        let slots = max(1, min(window, input.count))
        var previous = [Int](repeating: -1, count: slots)
        func hash(_ at: Int) -> Int {
            (Int(input[at]) << 10 ^ Int(input[at + 1]) << 5 ^ Int(input[at + 2])) & (hashSize - 1)
        }
        func insert(_ at: Int) {
            guard at + 2 < input.count else { return }
            let key = hash(at)
            previous[at % slots] = head[key]
            head[key] = at
        }
        var position = 0
        while position < input.count {
            var bestLength = 0, bestDistance = 0
            if position + 2 < input.count {
                var candidate = head[hash(position)]
                var chain = 0
                let limit = min(258, input.count - position)
                while candidate >= 0, position - candidate <= window, chain < maxChain {
                    var length = 0
                    while length < limit, input[candidate + length] == input[position + length] { length += 1 }
                    if length > bestLength {
                        (bestLength, bestDistance) = (length, position - candidate)
                        if length == limit { break }
                    }
                    let next = previous[candidate % slots]
                    // A slot reused by a newer position ends the chain.
                    guard next < candidate else { break }
                    candidate = next
                    chain += 1
                }
            }
            if bestLength >= 3 {
                writeMatch(length: bestLength, distance: bestDistance, to: &writer)
                for at in position..<(position + bestLength) { insert(at) }
                position += bestLength
            } else {
                writeLiteral(Int(input[position]), to: &writer)
                insert(position)
                position += 1
            }
        }
        writeLiteral(256, to: &writer)
        return writer.finish()
    }
}
