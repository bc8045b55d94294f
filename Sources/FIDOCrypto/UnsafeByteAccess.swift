// Typed-throws access to byte buffers.
//
// The standard library's `withUnsafeBytes` family is `rethrows`, so a closure
// that throws `CryptoError` surfaces as `any Error` and cannot be used from a
// `throws(CryptoError)` function. These wrappers carry the typed error through
// a `Result`. They also never hand out a nil base address: an empty array is
// presented as a zero-length view of a valid one-byte scratch allocation,
// because several OpenSSL entry points reject NULL even when the length is 0.

extension UnsafeRawBufferPointer {
    /// Runs `body` with a buffer whose base address is never nil.
    @inline(__always)
    func withNonNullBase<R>(_ body: (UnsafeRawBufferPointer) throws(CryptoError) -> R) throws(CryptoError) -> R {
        if baseAddress != nil { return try body(self) }
        let result: Result<R, CryptoError> = withUnsafeTemporaryAllocation(byteCount: 1, alignment: 1) { scratch in
            Result { () throws(CryptoError) -> R in
                try body(UnsafeRawBufferPointer(start: scratch.baseAddress, count: 0))
            }
        }
        return try result.get()
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` with a typed error and a non-nil base address.
    @inline(__always)
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(CryptoError) -> R) throws(CryptoError) -> R {
        let result: Result<R, CryptoError> = withUnsafeBytes { bytes in
            Result { () throws(CryptoError) -> R in try bytes.withNonNullBase(body) }
        }
        return try result.get()
    }

    /// `withUnsafeMutableBytes` with a typed error.
    @inline(__always)
    mutating func withMutableBytes<R>(
        _ body: (UnsafeMutableRawBufferPointer) throws(CryptoError) -> R
    ) throws(CryptoError) -> R {
        let result: Result<R, CryptoError> = withUnsafeMutableBytes { bytes in
            Result { () throws(CryptoError) -> R in try body(bytes) }
        }
        return try result.get()
    }
}

extension UnsafeRawBufferPointer {
    /// The base address as `const unsigned char *`, for OpenSSL byte inputs.
    var uint8Pointer: UnsafePointer<UInt8>? {
        baseAddress?.assumingMemoryBound(to: UInt8.self)
    }
}

extension UnsafeMutableRawBufferPointer {
    /// The base address as `unsigned char *`, for OpenSSL byte outputs.
    var uint8Pointer: UnsafeMutablePointer<UInt8>? {
        baseAddress?.assumingMemoryBound(to: UInt8.self)
    }
}

/// Allocates `count` zeroed bytes, lets `body` fill them, and returns the array
/// truncated to the length `body` reports.
@inline(__always)
func makeBytes(count: Int,
               _ body: (UnsafeMutableRawBufferPointer) throws(CryptoError) -> Int) throws(CryptoError) -> [UInt8] {
    // Not `[UInt8](repeating:count:)`: its allocation is not specialized and looks the array's
    // type up at run time on every call (about 250 instructions, measured with callgrind).
    var output = Array(repeatElement(UInt8(0), count: Swift.max(count, 1)))
    let written = try output.withMutableBytes { (buffer) throws(CryptoError) -> Int in
        try body(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]))
    }
    precondition(written <= count, "OpenSSL wrote past the buffer it was given")
    output.removeSubrange(written...)
    return output
}
