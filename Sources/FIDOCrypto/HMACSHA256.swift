import COpenSSL
import Synchronization

/// HMAC-SHA-256 (RFC 2104) through OpenSSL's `EVP_MAC` "HMAC".
public enum HMACSHA256 {
    static let mac = FetchedMAC("HMAC")

    /// The 32-byte HMAC-SHA-256 of `data` under `key` (any key length, including empty).
    public static func authenticationCode(key: [UInt8], data: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { authenticationCode(keyBytes: $0, data: data) }
    }

    /// As above, with the key read in place from `SecretBytes`.
    public static func authenticationCode(key: SecretBytes, data: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { authenticationCode(keyBytes: $0, data: data) }
    }

    static func authenticationCode(keyBytes: UnsafeRawBufferPointer, data: [UInt8]) -> [UInt8] {
        mustSucceed { () throws(CryptoError) -> [UInt8] in
            let context = try EVPMACContext(mac)
            try keyBytes.withNonNullBase { (key) throws(CryptoError) in
                try withParameters([OSSLParameter.utf8("digest", "SHA256")]) { (parameters) throws(CryptoError) in
                    try check("EVP_MAC_init", EVP_MAC_init(context.pointer, key.uint8Pointer, key.count, parameters))
                }
            }
            return try finish(context, data: data)
        }
    }

    /// Feeds `data` to a keyed context and returns its 32-byte MAC.
    fileprivate static func finish(_ context: EVPMACContext, data: [UInt8]) throws(CryptoError) -> [UInt8] {
        try data.withBytes { (input) throws(CryptoError) in
            try check("EVP_MAC_update", EVP_MAC_update(context.pointer, input.uint8Pointer, input.count))
        }
        return try makeBytes(count: SHA256.byteCount) { (output) throws(CryptoError) -> Int in
            var length = 0
            try check("EVP_MAC_final", EVP_MAC_final(context.pointer, output.uint8Pointer, &length, output.count))
            return length
        }
    }
}

extension HMACSHA256 {
    /// One HMAC-SHA-256 key made ready once, for keys that MAC many short messages (the store's
    /// lookup keys): the context is keyed at creation (OpenSSL keeps its copy of the key in the
    /// secure heap), and each message starts from that keyed state again (`EVP_MAC_init` with no
    /// key: HMAC's inner and outer digests restart from the padded key), which saves the MAC
    /// fetch, a context, the key schedule and the copy of both digests per message — most of the
    /// cost of MACing 20–60 bytes. Safe to use from several threads: one message at a time.
    public final class KeyedContext: Sendable {
        private let context: Mutex<EVPMACContext>

        public init(key: SecretBytes) {
            context = Mutex(mustSucceed { () throws(CryptoError) -> EVPMACContext in
                let context = try EVPMACContext(HMACSHA256.mac)
                try key.withUnsafeBytes { (bytes) throws(CryptoError) in
                    try bytes.withNonNullBase { (key) throws(CryptoError) in
                        try withParameters([OSSLParameter.utf8("digest", "SHA256")]) { (parameters) throws(CryptoError) in
                            try check("EVP_MAC_init", EVP_MAC_init(context.pointer, key.uint8Pointer, key.count, parameters))
                        }
                    }
                }
                return context
            })
        }

        /// The 32-byte HMAC of `data`; the same as `HMACSHA256.authenticationCode(key:data:)`.
        public func authenticationCode(_ data: [UInt8]) -> [UInt8] {
            context.withLock { context in
                mustSucceed { () throws(CryptoError) -> [UInt8] in
                    try check("EVP_MAC_init", EVP_MAC_init(context.pointer, nil, 0, nil))
                    return try HMACSHA256.finish(context, data: data)
                }
            }
        }
    }
}
