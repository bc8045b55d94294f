import COpenSSL

/// Owns an `EVP_KDF_CTX`.
final class EVPKDFContext {
    let pointer: OpaquePointer
    init(_ kdf: FetchedKDF) throws(CryptoError) {
        pointer = try checkNotNull("EVP_KDF_CTX_new", EVP_KDF_CTX_new(kdf.pointer))
    }
    deinit { EVP_KDF_CTX_free(pointer) }
}
