import COpenSSL

/// Owns an `EVP_MD` fetched once from the default provider. Explicit fetching
/// avoids the implicit per-call fetch `EVP_sha256()` incurs in OpenSSL 3.
final class FetchedDigest: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ name: StaticString) {
        pointer = mustSucceed { () throws(CryptoError) in
            try checkNotNull("EVP_MD_fetch", EVP_MD_fetch(nil, name.cString, nil))
        }
    }
    deinit { EVP_MD_free(pointer) }
}
