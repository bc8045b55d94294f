import COpenSSL

/// Owns a decoded `BASIC_CONSTRAINTS` structure.
final class BasicConstraintsHandle {
    let pointer: UnsafeMutablePointer<BASIC_CONSTRAINTS>
    init(_ pointer: UnsafeMutablePointer<BASIC_CONSTRAINTS>) { self.pointer = pointer }
    deinit { BASIC_CONSTRAINTS_free(pointer) }
}
