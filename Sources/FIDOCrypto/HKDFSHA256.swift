import COpenSSL

/// HKDF with SHA-256 (RFC 5869), extract-then-expand, through `EVP_KDF` "HKDF".
public enum HKDFSHA256 {
    static let kdf = FetchedKDF("HKDF")

    /// Derives `outputByteCount` bytes (0 … 255·32) from the input keying
    /// material. An empty `salt` means the RFC's default (HashLen zero bytes).
    public static func deriveKey(inputKeyMaterial: [UInt8], salt: [UInt8], info: [UInt8],
                                 outputByteCount: Int) -> [UInt8] {
        precondition(outputByteCount >= 0 && outputByteCount <= 255 * SHA256.byteCount,
                     "HKDF-SHA-256 output length must be in 0…8160")
        if outputByteCount == 0 { return [] }
        return mustSucceed { () throws(CryptoError) -> [UInt8] in
            let context = try EVPKDFContext(kdf)
            return try inputKeyMaterial.withBytes { (ikm) throws(CryptoError) -> [UInt8] in
                try salt.withBytes { (saltBytes) throws(CryptoError) -> [UInt8] in
                    try info.withBytes { (infoBytes) throws(CryptoError) -> [UInt8] in
                        var parameters = [OSSLParameter.utf8("digest", "SHA256"),
                                          OSSLParameter.octets("key", ikm)]
                        // Absent salt and info are simply omitted: OpenSSL then
                        // uses the RFC defaults (zero salt, empty info).
                        if !saltBytes.isEmpty { parameters.append(OSSLParameter.octets("salt", saltBytes)) }
                        if !infoBytes.isEmpty { parameters.append(OSSLParameter.octets("info", infoBytes)) }
                        return try withParameters(parameters) { (list) throws(CryptoError) -> [UInt8] in
                            try makeBytes(count: outputByteCount) { (output) throws(CryptoError) -> Int in
                                try check("EVP_KDF_derive",
                                          EVP_KDF_derive(context.pointer, output.uint8Pointer, output.count, list))
                                return output.count
                            }
                        }
                    }
                }
            }
        }
    }
}
