import COpenSSL

/// SHAKE128 and SHAKE256 (FIPS 202) from OpenSSL. OpenSSL 3.0 squeezes an XOF once
/// (`EVP_DigestFinalXOF`), so a reader that needs more than it asked for hashes again for a
/// longer output: an XOF's output is a prefix of every longer one, so the bytes read are the same.
public enum SHAKE: Sendable {
    case shake128, shake256

    private static let digests = (FetchedDigest("SHAKE128"), FetchedDigest("SHAKE256"))

    var digest: FetchedDigest { self == .shake128 ? Self.digests.0 : Self.digests.1 }

    /// The first `count` bytes of SHAKE over the concatenation of `parts`.
    public func hash(_ parts: [UInt8]..., count: Int) -> [UInt8] {
        hash(parts: parts, count: count)
    }

    func hash(parts: [[UInt8]], count: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        squeeze(parts: parts, into: &output)
        return output
    }

    /// Fills `output` with SHAKE over the concatenation of `parts`.
    func squeeze(parts: [[UInt8]], into output: inout [UInt8]) {
        mustSucceed { () throws(CryptoError) in
            let context = try EVPMDContext()
            try check("EVP_DigestInit_ex", EVP_DigestInit_ex(context.pointer, digest.pointer, nil))
            for part in parts where !part.isEmpty {
                try part.withBytes { (bytes) throws(CryptoError) in
                    try check("EVP_DigestUpdate", EVP_DigestUpdate(context.pointer, bytes.baseAddress, bytes.count))
                }
            }
            let count = output.count
            try output.withMutableBytes { (bytes) throws(CryptoError) in
                try check("EVP_DigestFinalXOF", EVP_DigestFinalXOF(context.pointer, bytes.uint8Pointer, count))
            }
        }
    }
}

/// Bytes read one at a time from SHAKE over a fixed input, for rejection sampling that cannot
/// know in advance how many it needs. Wipes what it squeezed when asked (inputs may be secret).
struct SHAKEReader {
    private let shake: SHAKE
    private var input: [[UInt8]]
    private var output: [UInt8]
    private var position = 0

    init(_ shake: SHAKE, _ input: [UInt8]..., initialCount: Int) {
        self.shake = shake
        self.input = input
        output = [UInt8](repeating: 0, count: initialCount)
        shake.squeeze(parts: input, into: &output)
    }

    mutating func next() -> UInt8 {
        if position == output.count {
            output.wipe()
            output = [UInt8](repeating: 0, count: output.count * 2)
            shake.squeeze(parts: input, into: &output)
        }
        defer { position += 1 }
        return output[position]
    }

    /// Wipes what it squeezed and its copy of the input.
    mutating func wipe() {
        output.wipe()
        for index in input.indices { input[index].wipe() }
    }
}
