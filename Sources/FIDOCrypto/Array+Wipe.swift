import COpenSSL

extension Array where Element == UInt8 {
    /// Overwrite a transient copy of secret bytes (a key, PIN, PIN hash, token or salt) before it
    /// is released. OPENSSL_cleanse, unlike a loop of stores, is not optimised away.
    public mutating func wipe() {
        withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            OPENSSL_cleanse(base, buffer.count)
        }
    }
}
