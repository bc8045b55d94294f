import COpenSSL

/// AES-256 in CBC mode without padding (as CTAP2's PIN/UV auth protocols use it).
public enum AES256CBC {
    static let mode = AESCBC(cipher: FetchedCipher("AES-256-CBC"), keyByteCount: 32)

    /// Encrypts whole blocks. `plaintext.count` must be a multiple of 16, the key
    /// 32 bytes and the IV 16 bytes; otherwise `.invalidLength`.
    public static func encrypt(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        try mode.crypt(plaintext, key: key, iv: iv, encrypting: true)
    }

    /// Decrypts whole blocks; same length rules as `encrypt`.
    public static func decrypt(_ ciphertext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        try mode.crypt(ciphertext, key: key, iv: iv, encrypting: false)
    }
}

/// AES-128 in CBC mode without padding: CTAP 2.2 getInfo's encIdentifier (0x19) is the device
/// identifier under AES-128-CBC with a key derived from the persistentPinUvAuthToken.
public enum AES128CBC {
    static let mode = AESCBC(cipher: FetchedCipher("AES-128-CBC"), keyByteCount: 16)

    /// Encrypts whole blocks. `plaintext.count` must be a multiple of 16, the key
    /// 16 bytes and the IV 16 bytes; otherwise `.invalidLength`.
    public static func encrypt(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        try mode.crypt(plaintext, key: key, iv: iv, encrypting: true)
    }

    /// Decrypts whole blocks; same length rules as `encrypt`.
    public static func decrypt(_ ciphertext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        try mode.crypt(ciphertext, key: key, iv: iv, encrypting: false)
    }
}

/// One AES key size in CBC mode without padding, whole blocks only.
struct AESCBC: Sendable {
    static let blockByteCount = 16
    let cipher: FetchedCipher
    let keyByteCount: Int

    func crypt(_ input: [UInt8], key: [UInt8], iv: [UInt8], encrypting: Bool) throws(CryptoError) -> [UInt8] {
        let blockByteCount = Self.blockByteCount
        guard key.count == keyByteCount, iv.count == blockByteCount,
              input.count % blockByteCount == 0, input.count <= Int(Int32.max) else {
            throw .invalidLength
        }
        if input.isEmpty { return [] }
        let context = try EVPCipherContext()
        try key.withBytes { (keyBytes) throws(CryptoError) in
            try iv.withBytes { (ivBytes) throws(CryptoError) in
                try check("EVP_CipherInit_ex2",
                          EVP_CipherInit_ex2(context.pointer, cipher.pointer, keyBytes.uint8Pointer,
                                             ivBytes.uint8Pointer, encrypting ? 1 : 0, nil))
            }
        }
        try check("EVP_CIPHER_CTX_set_padding", EVP_CIPHER_CTX_set_padding(context.pointer, 0))
        return try input.withBytes { (inputBytes) throws(CryptoError) -> [UInt8] in
            try makeBytes(count: input.count) { (output) throws(CryptoError) -> Int in
                var length: Int32 = 0
                try check("EVP_CipherUpdate",
                          EVP_CipherUpdate(context.pointer, output.uint8Pointer, &length,
                                           inputBytes.uint8Pointer, Int32(inputBytes.count)))
                var finalLength: Int32 = 0
                try check("EVP_CipherFinal_ex",
                          EVP_CipherFinal_ex(context.pointer, output.uint8Pointer! + Int(length), &finalLength))
                return Int(length + finalLength)
            }
        }
    }
}
