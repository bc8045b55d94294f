import Authenticator
import CTAP
import FIDOCrypto
import FuzzSupport

/// Large blobs a client wrote, as the rig reads them (`LargeBlobStorage`, `RawDeflate`). The first
/// byte picks the mode:
/// - even: the rest is a DEFLATE stream (zlib's, or hostile) inflated with a 64 KiB limit: an
///   error or at most the limit, never a trap;
/// - odd: the rest is a blob: deflate then inflate gives it back, and sealed into a large-blob
///   array under a key it reads back under that key only.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let rest = input.rest()
    if mode & 1 == 0 {
        if let output = try? RawDeflate.inflate(rest, maxOutput: 65_536) {
            invariant(output.count <= 65_536, "inflate went past its limit: \(output.count) bytes")
        }
        return 0
    }
    let compressed = RawDeflate.deflate(rest)
    invariant(compressed.count <= rest.count + 5 * (rest.count / 65_535 + 1), "deflate expanded \(rest.count) bytes to \(compressed.count)")
    invariant((try? RawDeflate.inflate(compressed, maxOutput: rest.count)) == rest,
              "inflate(deflate(x)) != x for \(hex(rest))")
    let key = SecretBytes([UInt8](repeating: mode, count: 32))
    let empty = LargeBlobArray().serialized(hash: SHA256.hash)
    guard let array = try? LargeBlobStorage.replacingBlob(in: empty, key: key, with: rest, maxLength: 1 << 20,
                                                          random: SystemRandom()) else {
        invariant(false, "a blob of \(rest.count) bytes could not be sealed")
        return 0
    }
    invariant((try? LargeBlobStorage.blob(in: array, key: key)) == .some(rest), "the sealed blob did not read back")
    let otherKey = SecretBytes([UInt8](repeating: mode ^ 0xFF, count: 32))
    invariant((try? LargeBlobStorage.blob(in: array, key: otherKey)) == .some(nil), "another key read the blob")
    return 0
}
