import COpenSSL

/// Owns an `ASN1_OBJECT`.
final class ASN1ObjectHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { ASN1_OBJECT_free(pointer) }
}
