import CZlib

/// Raw DEFLATE (RFC 1951: no zlib or gzip wrapper), the compression of a large blob before it is
/// encrypted into the large-blob array (CTAP 2.1 §6.10.3: "DEFLATE-compressed", as zlib's
/// `wbits = -15` writes it), and of a large blob in a CXF file. Clients compress; the key itself
/// never needs to, but the rig reads and plants blobs (`addCredential` / `getCredential`
/// `largeBlob`) and exports carry them, so it needs both directions. Both go through zlib.
///
/// `inflate` reads untrusted bytes (whatever a client wrote into the array): zlib checks every
/// length and code, and the output is bounded by the caller.
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

        /// zlib's Z_DATA_ERROR message (inflate.c's `strm->msg`), as one of these.
        init(zlibMessage message: String) {
            switch message {
            case "invalid block type": self = .reservedBlockType
            case "invalid stored block lengths": self = .storedLengthMismatch
            case "invalid distance too far back": self = .distanceTooFar
            case "invalid literal/length code", "invalid distance code": self = .invalidSymbol
            default: self = .invalidCodeLengths   // the code-length, literal/length and distance sets, a repeat, no end of block
            }
        }
    }

    /// The decompressed bytes of one complete DEFLATE stream (up to its final block; bytes after
    /// it are ignored, as zlib does). More than `maxOutput` bytes is `.outputTooLong`: zlib is
    /// given room for one byte more than that, never the whole of what a bomb would expand to.
    public static func inflate(_ input: [UInt8], maxOutput: Int) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        guard latchkey_inflate_init_raw(&stream) == Z_OK else { throw .truncated }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: max(maxOutput, 0) + 1)
        let status = finish(&stream, input: input, output: &output) { CZlib.inflate(&$0, Z_FINISH) }
        let produced = Int(stream.total_out)
        switch status {
        case Z_STREAM_END:
            guard produced <= maxOutput else { throw .outputTooLong(limit: maxOutput) }
            return Array(output.prefix(produced))
        case Z_DATA_ERROR:
            throw Failure(zlibMessage: stream.msg.map { String(cString: $0) } ?? "")
        default:
            // Z_BUF_ERROR: the output is full (past the limit) or the input ended inside a block.
            if produced > maxOutput { throw .outputTooLong(limit: maxOutput) }
            throw .truncated
        }
    }

    /// `input` compressed by zlib (level 6, its default), or as stored blocks of at most 65,535
    /// bytes (zlib level 0) where that is shorter: incompressible data grows by 5 bytes a block.
    public static func deflate(_ input: [UInt8]) -> [UInt8] {
        let compressed = zlibDeflate(input, level: 6)
        let storedLength = input.count + 5 * max(1, (input.count + 65_534) / 65_535)
        return compressed.count <= storedLength ? compressed : zlibDeflate(input, level: 0)
    }

    private static func zlibDeflate(_ input: [UInt8], level: Int32) -> [UInt8] {
        var stream = z_stream()
        // Only a failed allocation fails here; the caller has nothing better to do than stop.
        guard latchkey_deflate_init_raw(&stream, level) == Z_OK else { fatalError("zlib deflateInit2 failed: out of memory") }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))) + 5)
        let status = finish(&stream, input: input, output: &output) { CZlib.deflate(&$0, Z_FINISH) }
        precondition(status == Z_STREAM_END, "zlib deflate into deflateBound's room did not finish")
        return Array(output.prefix(Int(stream.total_out)))
    }

    /// One call of `step` (inflate or deflate with Z_FINISH) over all of `input` into `output`.
    private static func finish(_ stream: inout z_stream, input: [UInt8], output: inout [UInt8],
                               _ step: (inout z_stream) -> Int32) -> Int32 {
        var input = input
        return input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                stream.next_in = source.baseAddress
                stream.avail_in = UInt32(source.count)
                stream.next_out = destination.baseAddress
                stream.avail_out = UInt32(destination.count)
                return step(&stream)
            }
        }
    }
}
