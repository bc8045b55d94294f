import COpenSSL

/// SHA-256 (FIPS 180-4).
public enum SHA256 {
    /// Digest length in bytes.
    static let byteCount = 32

    /// The explicitly fetched implementation, shared by every hash, HMAC, HKDF
    /// and signature call in the module (MessageDigest.sha256's).
    static var digest: FetchedDigest { MessageDigest.sha256.implementation }

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
        MessageDigest.sha256.hash(bytes: bytes)
    }
}
