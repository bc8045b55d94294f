import COpenSSL

/// Construction of `OSSL_PARAM` entries.
///
/// An `OSSL_PARAM` stores raw pointers to its key and its data and copies
/// neither. Keys and constant values therefore come from `StaticString`
/// literals (immortal); byte data must come from a buffer whose `withUnsafe…`
/// closure encloses the OpenSSL call that reads the array.
/// Key names match the `OSSL_*_PARAM_*` macros in <openssl/core_names.h>.
enum OSSLParameter {
    /// A UTF-8 string parameter with a constant value.
    static func utf8(_ key: StaticString, _ value: StaticString) -> OSSL_PARAM {
        OSSL_PARAM_construct_utf8_string(key.cString, UnsafeMutablePointer(mutating: value.cString), 0)
    }

    /// An octet-string parameter over `bytes`; valid only while `bytes` is.
    static func octets(_ key: StaticString, _ bytes: UnsafeRawBufferPointer) -> OSSL_PARAM {
        OSSL_PARAM_construct_octet_string(key.cString, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                                          bytes.count)
    }

    /// A writable octet-string parameter (for `…_get_params`).
    static func octets(_ key: StaticString, output bytes: UnsafeMutableRawBufferPointer) -> OSSL_PARAM {
        OSSL_PARAM_construct_octet_string(key.cString, bytes.baseAddress, bytes.count)
    }

    /// An unsigned big-number parameter. OpenSSL expects the integer in native
    /// byte order, so `nativeEndianBytes` must already be converted.
    static func unsignedInteger(_ key: StaticString, nativeEndianBytes bytes: UnsafeMutableRawBufferPointer) -> OSSL_PARAM {
        OSSL_PARAM_construct_BN(key.cString, bytes.uint8Pointer, bytes.count)
    }

    /// The terminator every parameter array needs.
    static var end: OSSL_PARAM { OSSL_PARAM_construct_end() }
}

/// Runs `body` with a NUL-terminated `OSSL_PARAM` array built from `parameters`.
func withParameters<R>(_ parameters: [OSSL_PARAM],
                       _ body: (UnsafeMutablePointer<OSSL_PARAM>) throws(CryptoError) -> R) throws(CryptoError) -> R {
    var array = parameters
    array.append(OSSLParameter.end)
    let result: Result<R, CryptoError> = array.withUnsafeMutableBufferPointer { buffer in
        Result { () throws(CryptoError) -> R in try body(buffer.baseAddress!) }
    }
    return try result.get()
}
