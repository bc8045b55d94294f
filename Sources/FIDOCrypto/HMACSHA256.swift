import COpenSSL

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
}
