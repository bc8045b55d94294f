import COpenSSL

/// Owns an `EVP_MAC_CTX`.
final class EVPMACContext {
    let pointer: OpaquePointer
    init(_ mac: FetchedMAC) throws(CryptoError) {
        pointer = try checkNotNull("EVP_MAC_CTX_new", EVP_MAC_CTX_new(mac.pointer))
    }
    /// Takes ownership of a context made elsewhere (`EVP_MAC_CTX_dup`).
    init(adopting pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_MAC_CTX_free(pointer) }
}
