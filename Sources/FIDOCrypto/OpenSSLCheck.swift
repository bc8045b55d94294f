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

// MARK: - Owning wrappers
//
// Each OpenSSL object has exactly one owning class; its deinit is the only place
// the object is freed. Wrappers are `@unchecked Sendable` because they are either
// immutable after construction (keys, fetched algorithms, groups — OpenSSL
// documents these as safe for concurrent read-only use) or confined to one
// thread at a time (contexts, handed out by `EVPPKeyContextPool`).

/// Owns an `EVP_PKEY`.
final class EVPPKey: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }
}

/// Owns an `EVP_PKEY_CTX`.
final class EVPPKeyContext: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_CTX_free(pointer) }
}

/// Owns an `EVP_MD_CTX`.
final class EVPMDContext {
    let pointer: OpaquePointer
    init() throws(CryptoError) { pointer = try checkNotNull("EVP_MD_CTX_new", EVP_MD_CTX_new()) }
    deinit { EVP_MD_CTX_free(pointer) }
}

/// Owns an `EVP_CIPHER_CTX`.
final class EVPCipherContext {
    let pointer: OpaquePointer
    init() throws(CryptoError) { pointer = try checkNotNull("EVP_CIPHER_CTX_new", EVP_CIPHER_CTX_new()) }
    deinit { EVP_CIPHER_CTX_free(pointer) }
}

/// Owns an `EVP_MAC_CTX`.
final class EVPMACContext {
    let pointer: OpaquePointer
    init(_ mac: FetchedMAC) throws(CryptoError) {
        pointer = try checkNotNull("EVP_MAC_CTX_new", EVP_MAC_CTX_new(mac.pointer))
    }
    /// Takes ownership of a context made elsewhere (`EVP_MAC_CTX_dup`).
    init(adopting pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_MAC_CTX_free(pointer) }
}

/// Owns an `EVP_KDF_CTX`.
final class EVPKDFContext {
    let pointer: OpaquePointer
    init(_ kdf: FetchedKDF) throws(CryptoError) {
        pointer = try checkNotNull("EVP_KDF_CTX_new", EVP_KDF_CTX_new(kdf.pointer))
    }
    deinit { EVP_KDF_CTX_free(pointer) }
}

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

/// Owns a `BIGNUM`; freed with `BN_clear_free` because it may hold a private scalar.
final class BigNumber {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { BN_clear_free(pointer) }
}

/// Owns an `EC_GROUP`.
final class ECGroup: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EC_GROUP_free(pointer) }
}

/// Owns an `EC_POINT`; cleared on free in case it was derived from a secret.
final class ECPoint {
    let pointer: OpaquePointer
    init(group: ECGroup) throws(CryptoError) {
        pointer = try checkNotNull("EC_POINT_new", EC_POINT_new(group.pointer))
    }
    deinit { EC_POINT_clear_free(pointer) }
}

/// Owns an `X509`.
final class X509Handle: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { X509_free(pointer) }
}

/// Owns an `X509_NAME`.
final class X509NameHandle {
    let pointer: OpaquePointer
    init() throws(CryptoError) { pointer = try checkNotNull("X509_NAME_new", X509_NAME_new()) }
    deinit { X509_NAME_free(pointer) }
}

/// Owns an `X509_EXTENSION`.
final class X509ExtensionHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { X509_EXTENSION_free(pointer) }
}

/// Owns an `ASN1_OBJECT`.
final class ASN1ObjectHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { ASN1_OBJECT_free(pointer) }
}

/// Owns an `ASN1_STRING` (any of its aliases: OCTET STRING, INTEGER, …).
final class ASN1StringHandle {
    let pointer: UnsafeMutablePointer<ASN1_STRING>
    init(_ pointer: UnsafeMutablePointer<ASN1_STRING>) { self.pointer = pointer }
    deinit { ASN1_STRING_free(pointer) }
}

/// Owns a decoded `BASIC_CONSTRAINTS` structure.
final class BasicConstraintsHandle {
    let pointer: UnsafeMutablePointer<BASIC_CONSTRAINTS>
    init(_ pointer: UnsafeMutablePointer<BASIC_CONSTRAINTS>) { self.pointer = pointer }
    deinit { BASIC_CONSTRAINTS_free(pointer) }
}

// MARK: - Context reuse

/// A small free list of `EVP_PKEY_CTX`s that have already been initialised for
/// one operation. OpenSSL 3 spends a noticeable share of a P-256 operation
/// creating and initialising contexts (provider method lookup), and an
/// initialised context can be reused for any number of sequential operations
/// but never concurrently; the pool hands each context to one caller at a time.
final class EVPPKeyContextPool: Sendable {
    private let idle = Mutex<[EVPPKeyContext]>([])
    private let capacity: Int
    private let make: @Sendable () throws(CryptoError) -> EVPPKeyContext

    init(capacity: Int, make: @escaping @Sendable () throws(CryptoError) -> EVPPKeyContext) {
        self.capacity = capacity
        self.make = make
    }

    func withContext<R>(_ body: (EVPPKeyContext) throws(CryptoError) -> R) throws(CryptoError) -> R {
        let recycled = idle.withLock { $0.popLast() }
        let context: EVPPKeyContext
        if let recycled { context = recycled } else { context = try make() }
        // A context whose operation failed is dropped rather than recycled.
        let result = try body(context)
        idle.withLock { if $0.count < capacity { $0.append(context) } }
        return result
    }
}
