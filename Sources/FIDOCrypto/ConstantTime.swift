import COpenSSL

/// Compares two byte strings in time that depends only on their length
/// (`CRYPTO_memcmp`). Differing lengths return `false` immediately: lengths
/// are not secret in any use in this project (MACs, tags, PIN hashes).
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    a.withUnsafeBytes { left in b.withUnsafeBytes { right in constantTimeEquals(left, right) } }
}

/// `constantTimeEquals` of a secret and a byte string.
public func constantTimeEquals(_ a: SecretBytes, _ b: [UInt8]) -> Bool {
    a.withUnsafeBytes { secret in b.withUnsafeBytes { other in constantTimeEquals(secret, other) } }
}

/// `constantTimeEquals` of two secrets.
public func constantTimeEquals(_ a: SecretBytes, _ b: SecretBytes) -> Bool {
    a.withUnsafeBytes { left in b.withUnsafeBytes { right in constantTimeEquals(left, right) } }
}

private func constantTimeEquals(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Bool {
    guard left.count == right.count else { return false }
    guard left.count > 0 else { return true }
    return CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0
}
