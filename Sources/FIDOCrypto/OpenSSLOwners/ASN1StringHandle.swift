import COpenSSL

/// Owns an `ASN1_STRING` (any of its aliases: OCTET STRING, INTEGER, …).
final class ASN1StringHandle {
    let pointer: UnsafeMutablePointer<ASN1_STRING>
    init(_ pointer: UnsafeMutablePointer<ASN1_STRING>) { self.pointer = pointer }
    deinit { ASN1_STRING_free(pointer) }
}
