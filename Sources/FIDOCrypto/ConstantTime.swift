import COpenSSL

/// Compares two byte strings in time that depends only on their length
/// (`CRYPTO_memcmp`). Differing lengths return `false` immediately: lengths
/// are not secret in any use in this project (MACs, tags, PIN hashes).
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    guard !a.isEmpty else { return true }
    return a.withUnsafeBytes { left in
        b.withUnsafeBytes { right in
            CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0
        }
    }
}
