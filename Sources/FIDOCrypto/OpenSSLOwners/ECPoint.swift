import COpenSSL

/// Owns an `EC_POINT`; cleared on free in case it was derived from a secret.
final class ECPoint {
    let pointer: OpaquePointer
    init(group: ECGroup) throws(CryptoError) {
        pointer = try checkNotNull("EC_POINT_new", EC_POINT_new(group.pointer))
    }
    deinit { EC_POINT_clear_free(pointer) }
}
