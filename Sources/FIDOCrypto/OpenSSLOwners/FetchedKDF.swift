import COpenSSL

/// Owns an `EVP_KDF` fetched once from the default provider.
final class FetchedKDF: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ name: StaticString) {
        pointer = mustSucceed { () throws(CryptoError) in
            try checkNotNull("EVP_KDF_fetch", EVP_KDF_fetch(nil, name.cString, nil))
        }
    }
    deinit { EVP_KDF_free(pointer) }
}
