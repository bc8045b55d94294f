import COpenSSL
import Synchronization

// MARK: - The checking helper
//
// Every OpenSSL return value in this module goes through `check` or
// `checkNotNull`; both report failure through `openSSLFailure`, which drains the
// calling thread's OpenSSL error queue into `CryptoError.openSSL`. Code that only
// needs a yes/no answer (signature verification, tag checks) uses
// `discardOpenSSLErrors()` so a rejected input leaves no stale entries behind to
// be misattributed to a later failure.

/// Builds the error for a failed OpenSSL call, draining the thread's error queue.
func openSSLFailure(_ function: StaticString) -> CryptoError {
    var reasons: [String] = []
    var buffer = [CChar](repeating: 0, count: 256)
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        buffer.withUnsafeMutableBufferPointer { ERR_error_string_n(code, $0.baseAddress, $0.count) }
        reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return .openSSL(function: "\(function)",
                    reason: reasons.isEmpty ? "no error recorded by OpenSSL" : reasons.joined(separator: "; "))
}

/// Checks an OpenSSL status code. Most of the EVP API returns 1 on success and
/// 0 or a negative value on failure; pass `success` for the exceptions
/// (for example `X509_sign`, which returns the signature length).
@inline(__always)
func check(_ function: StaticString, _ returnCode: Int32,
           success: (Int32) -> Bool = { $0 == 1 }) throws(CryptoError) {
    if !success(returnCode) { throw openSSLFailure(function) }
}

/// Checks an OpenSSL constructor or getter that signals failure with NULL.
@inline(__always)
func checkNotNull<T>(_ function: StaticString, _ value: T?) throws(CryptoError) -> T {
    guard let value else { throw openSSLFailure(function) }
    return value
}

/// Empties the thread's error queue after an expected, already-handled failure
/// (a signature that does not verify, a GCM tag mismatch, a rejected peer key).
func discardOpenSSLErrors() {
    ERR_clear_error()
}

/// Whether `signature` verifies over `digest` under the public key `key` (EVP_PKEY_verify), after
/// `configure` has set the context up (RSA's padding). Every failure is "no": 0 is a bad
/// signature, a negative result a malformed encoding, a throw a context that could not be made.
func verifyDigestSignature(_ signature: [UInt8], digest: [UInt8], key: EVPPKey,
                           configure: (EVPPKeyContext) throws(CryptoError) -> Void = { _ in }) -> Bool {
    do {
        let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_pkey",
                                                      EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil)))
        try check("EVP_PKEY_verify_init", EVP_PKEY_verify_init(context.pointer))
        try configure(context)
        let result = signature.withUnsafeBytes { signatureBytes in
            digest.withUnsafeBytes { hash in
                EVP_PKEY_verify(context.pointer, signatureBytes.uint8Pointer, signatureBytes.count, hash.uint8Pointer, hash.count)
            }
        }
        if result != 1 { discardOpenSSLErrors() }
        return result == 1
    } catch {
        return false
    }
}

/// For the non-throwing public APIs (hashes, MACs, KDF, RNG): their only failure
/// mode is OpenSSL itself being broken (allocation failure, provider missing),
/// which no caller can handle, so it traps with the captured error text.
func mustSucceed<R>(_ body: () throws(CryptoError) -> R) -> R {
    do {
        return try body()
    } catch {
        fatalError("FIDOCrypto: OpenSSL failed unexpectedly: \(error)")
    }
}

/// `StaticString` literals are immortal and NUL-terminated, which makes them the
/// safe source of `const char *` arguments that OpenSSL may keep a pointer to
/// (`OSSL_PARAM` keys, `EVP_PKEY_CTX_new_from_name`'s key type). Swift `String`
/// arguments would bridge to temporaries that die when the call returns.
extension StaticString {
    var cString: UnsafePointer<CChar> {
        precondition(hasPointerRepresentation, "C-string literals must not be a single scalar")
        return UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

// The owning wrappers (OpenSSLOwners/, one class a file):
// Each OpenSSL object has exactly one owning class; its deinit is the only place
// the object is freed. Wrappers are `@unchecked Sendable` because they are either
// immutable after construction (keys, fetched algorithms, groups — OpenSSL
// documents these as safe for concurrent read-only use) or confined to one
// thread at a time (contexts, handed out by `EVPPKeyContextPool`).
