import COpenSSL

/// Owns an `X509_NAME`.
final class X509NameHandle {
    let pointer: OpaquePointer
    init() throws(CryptoError) { pointer = try checkNotNull("X509_NAME_new", X509_NAME_new()) }
    deinit { X509_NAME_free(pointer) }
}
