import COpenSSL

/// Owns a `BIGNUM`; freed with `BN_clear_free` because it may hold a private scalar.
final class BigNumber {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { BN_clear_free(pointer) }
}
