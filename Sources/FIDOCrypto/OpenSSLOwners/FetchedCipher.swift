import COpenSSL

/// Owns an `EVP_CIPHER` fetched once from the default provider.
final class FetchedCipher: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ name: StaticString) {
        pointer = mustSucceed { () throws(CryptoError) in
            try checkNotNull("EVP_CIPHER_fetch", EVP_CIPHER_fetch(nil, name.cString, nil))
        }
    }
    deinit { EVP_CIPHER_free(pointer) }
}
