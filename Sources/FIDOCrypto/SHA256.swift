import COpenSSL

/// SHA-256 (FIPS 180-4).
public enum SHA256 {
    /// Digest length in bytes.
    static let byteCount = 32

    /// The explicitly fetched implementation, shared by every hash, HMAC, HKDF
    /// and signature call in the module.
    static let digest = FetchedDigest("SHA256")

    /// The 32-byte SHA-256 digest of `data`. Contiguous inputs (`[UInt8]`,
    /// `ArraySlice`, …) are hashed in place; anything else is copied first.
    public static func hash<D: Collection>(_ data: D) -> [UInt8] where D.Element == UInt8 {
        if let digest = data.withContiguousStorageIfAvailable({ hash(bytes: UnsafeRawBufferPointer($0)) }) {
            return digest
        }
        return Array(data).withUnsafeBytes { hash(bytes: $0) }
    }

    /// One-shot `EVP_Digest` over a raw buffer.
    static func hash(bytes: UnsafeRawBufferPointer) -> [UInt8] {
        mustSucceed { () throws(CryptoError) -> [UInt8] in
            try bytes.withNonNullBase { (input) throws(CryptoError) -> [UInt8] in
                try makeBytes(count: byteCount) { (output) throws(CryptoError) -> Int in
                    var length: UInt32 = 0
                    try check("EVP_Digest", EVP_Digest(input.baseAddress, input.count, output.uint8Pointer,
                                                       &length, digest.pointer, nil))
                    return Int(length)
                }
            }
        }
    }
}
