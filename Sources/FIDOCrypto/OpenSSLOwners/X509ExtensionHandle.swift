import COpenSSL

/// Owns an `X509_EXTENSION`.
final class X509ExtensionHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { X509_EXTENSION_free(pointer) }
}
