import COpenSSL

/// Owns an `EVP_MAC` fetched once from the default provider.
final class FetchedMAC: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ name: StaticString) {
        pointer = mustSucceed { () throws(CryptoError) in
            try checkNotNull("EVP_MAC_fetch", EVP_MAC_fetch(nil, name.cString, nil))
        }
    }
    deinit { EVP_MAC_free(pointer) }
}
