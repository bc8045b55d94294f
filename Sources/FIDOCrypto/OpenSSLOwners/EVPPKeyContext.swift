import COpenSSL

/// Owns an `EVP_PKEY_CTX`.
final class EVPPKeyContext: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_CTX_free(pointer) }
}
