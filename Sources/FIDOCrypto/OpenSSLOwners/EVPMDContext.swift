import COpenSSL

/// Owns an `EVP_MD_CTX`.
final class EVPMDContext {
    let pointer: OpaquePointer
    init() throws(CryptoError) { pointer = try checkNotNull("EVP_MD_CTX_new", EVP_MD_CTX_new()) }
    deinit { EVP_MD_CTX_free(pointer) }
}
