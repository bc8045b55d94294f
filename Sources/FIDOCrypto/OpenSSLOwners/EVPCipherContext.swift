import COpenSSL

/// Owns an `EVP_CIPHER_CTX`.
final class EVPCipherContext {
    let pointer: OpaquePointer
    init() throws(CryptoError) { pointer = try checkNotNull("EVP_CIPHER_CTX_new", EVP_CIPHER_CTX_new()) }
    deinit { EVP_CIPHER_CTX_free(pointer) }
}
