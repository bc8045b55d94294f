import COpenSSL

/// AES-256-GCM with a 12-byte nonce and a full 16-byte tag.
public enum AES256GCM {
    static let cipher = FetchedCipher("AES-256-GCM")
    static let keyByteCount = 32
    static let nonceByteCount = 12
    static let tagByteCount = 16

    /// Encrypts and authenticates `plaintext`, also authenticating `aad`.
    /// Key must be 32 bytes and nonce 12 bytes (`.invalidLength` otherwise).
    /// Never reuse a nonce with the same key.
    public static func seal(_ plaintext: [UInt8], key: SecretBytes, nonce: [UInt8],
                            authenticating aad: [UInt8]) throws(CryptoError) -> (ciphertext: [UInt8], tag: [UInt8]) {
        guard plaintext.count <= Int(Int32.max), aad.count <= Int(Int32.max) else { throw .invalidLength }
        let context = try initialise(key: key, nonce: nonce, encrypting: true)
        try addAAD(aad, context: context)
        let ciphertext = try plaintext.withBytes { (input) throws(CryptoError) -> [UInt8] in
            try makeBytes(count: input.count) { (output) throws(CryptoError) -> Int in
                var length: Int32 = 0
                if input.count > 0 {
                    try check("EVP_EncryptUpdate",
                              EVP_EncryptUpdate(context.pointer, output.uint8Pointer, &length,
                                                input.uint8Pointer, Int32(input.count)))
                }
                // GCM is a stream mode: Final emits nothing but computes the tag.
                var finalLength: Int32 = 0
                try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { (scratch) throws(CryptoError) in
                    try check("EVP_EncryptFinal_ex",
                              EVP_EncryptFinal_ex(context.pointer, scratch.baseAddress, &finalLength))
                }
                return Int(length)
            }
        }
        let tag = try makeBytes(count: tagByteCount) { (output) throws(CryptoError) -> Int in
            try withParameters([OSSLParameter.octets("tag", output: output)]) { (parameters) throws(CryptoError) in
                try check("EVP_CIPHER_CTX_get_params", EVP_CIPHER_CTX_get_params(context.pointer, parameters))
            }
            return output.count
        }
        return (ciphertext, tag)
    }

    /// Verifies `tag` over `aad` and `ciphertext` and returns the plaintext.
    /// Any modification of ciphertext, tag, AAD, nonce or key yields
    /// `.authenticationFailure`; no plaintext is released in that case.
    public static func open(_ ciphertext: [UInt8], tag: [UInt8], key: SecretBytes, nonce: [UInt8],
                            authenticating aad: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard tag.count == tagByteCount, ciphertext.count <= Int(Int32.max), aad.count <= Int(Int32.max) else {
            throw .invalidLength
        }
        let context = try initialise(key: key, nonce: nonce, encrypting: false)
        try tag.withBytes { (tagBytes) throws(CryptoError) in
            try withParameters([OSSLParameter.octets("tag", tagBytes)]) { (parameters) throws(CryptoError) in
                try check("EVP_CIPHER_CTX_set_params", EVP_CIPHER_CTX_set_params(context.pointer, parameters))
            }
        }
        try addAAD(aad, context: context)
        var plaintext = try ciphertext.withBytes { (input) throws(CryptoError) -> [UInt8] in
            try makeBytes(count: input.count) { (output) throws(CryptoError) -> Int in
                var length: Int32 = 0
                if input.count > 0 {
                    try check("EVP_DecryptUpdate",
                              EVP_DecryptUpdate(context.pointer, output.uint8Pointer, &length,
                                                input.uint8Pointer, Int32(input.count)))
                }
                return Int(length)
            }
        }
        var finalLength: Int32 = 0
        let verified = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { scratch in
            EVP_DecryptFinal_ex(context.pointer, scratch.baseAddress, &finalLength)
        }
        guard verified == 1 else {
            discardOpenSSLErrors()
            plaintext.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
            throw .authenticationFailure
        }
        return plaintext
    }

    private static func initialise(key: SecretBytes, nonce: [UInt8],
                                   encrypting: Bool) throws(CryptoError) -> EVPCipherContext {
        guard key.count == keyByteCount, nonce.count == nonceByteCount else { throw .invalidLength }
        let context = try EVPCipherContext()
        // 12 bytes is the GCM default IV length, so no AEAD_IVLEN parameter is needed.
        try key.withUnsafeBytes { (keyBytes) throws(CryptoError) in
            try nonce.withBytes { (nonceBytes) throws(CryptoError) in
                try check("EVP_CipherInit_ex2",
                          EVP_CipherInit_ex2(context.pointer, cipher.pointer, keyBytes.uint8Pointer,
                                             nonceBytes.uint8Pointer, encrypting ? 1 : 0, nil))
            }
        }
        return context
    }

    private static func addAAD(_ aad: [UInt8], context: EVPCipherContext) throws(CryptoError) {
        guard !aad.isEmpty else { return }
        try aad.withBytes { (bytes) throws(CryptoError) in
            var length: Int32 = 0
            try check("EVP_CipherUpdate(aad)",
                      EVP_CipherUpdate(context.pointer, nil, &length, bytes.uint8Pointer, Int32(bytes.count)))
        }
    }
}
