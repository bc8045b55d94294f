import COpenSSL

/// Owns an `EC_GROUP`.
final class ECGroup: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EC_GROUP_free(pointer) }
}
