import COpenSSL

/// Ed25519 (RFC 8032, pure EdDSA — COSE EdDSA).
public enum Ed25519 {
    public static let keyByteCount = 32
    static let signatureByteCount = 64

    /// An Ed25519 signing key, held as its 32-byte seed.
    public final class PrivateKey: @unchecked Sendable {
        let key: EVPPKey
        /// The 32-byte seed (RFC 8032's "private key").
        public let rawRepresentation: SecretBytes
        /// The matching public key.
        public let publicKey: PublicKey

        /// Generates a new random key.
        public init() throws(CryptoError) {
            let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_name",
                                                          EVP_PKEY_CTX_new_from_name(nil, ("ED25519" as StaticString).cString, nil)))
            try check("EVP_PKEY_keygen_init", EVP_PKEY_keygen_init(context.pointer))
            var generated: OpaquePointer? = nil
            try check("EVP_PKEY_generate", EVP_PKEY_generate(context.pointer, &generated))
            key = EVPPKey(try checkNotNull("EVP_PKEY_generate", generated))
            rawRepresentation = try SecretBytes(count: keyByteCount) { [key] (output) throws(CryptoError) in
                var length = output.count
                try check("EVP_PKEY_get_raw_private_key",
                          EVP_PKEY_get_raw_private_key(key.pointer, output.uint8Pointer, &length))
                guard length == keyByteCount else { throw .invalidKey }
            }
            publicKey = PublicKey(validatedRaw: try Self.exportPublicKey(key))
        }

        /// Imports a 32-byte seed; any other length is `.invalidKey`.
        public convenience init(rawRepresentation seed: [UInt8]) throws(CryptoError) {
            try self.init(secret: SecretBytes(seed))
        }

        /// Imports the seed from a secret, keeping that secret (no copy of it is made).
        public init(secret: SecretBytes) throws(CryptoError) {
            guard secret.count == keyByteCount else { throw .invalidKey }
            key = try secret.withUnsafeBytes { (bytes) throws(CryptoError) -> EVPPKey in
                EVPPKey(try checkNotNull("EVP_PKEY_new_raw_private_key_ex",
                                         EVP_PKEY_new_raw_private_key_ex(nil, ("ED25519" as StaticString).cString, nil,
                                                                         bytes.uint8Pointer, bytes.count)))
            }
            rawRepresentation = secret
            publicKey = PublicKey(validatedRaw: try Self.exportPublicKey(key))
        }

        private static func exportPublicKey(_ key: EVPPKey) throws(CryptoError) -> [UInt8] {
            try makeBytes(count: keyByteCount) { (output) throws(CryptoError) -> Int in
                var length = output.count
                try check("EVP_PKEY_get_raw_public_key",
                          EVP_PKEY_get_raw_public_key(key.pointer, output.uint8Pointer, &length))
                return length
            }
        }

        /// The 64-byte signature over `message` (one-shot `EVP_DigestSign`, no digest).
        public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
            let context = try EVPMDContext()
            try check("EVP_DigestSignInit_ex",
                      EVP_DigestSignInit_ex(context.pointer, nil, nil, nil, nil, key.pointer, nil))
            return try message.withBytes { (input) throws(CryptoError) -> [UInt8] in
                try makeBytes(count: signatureByteCount) { (output) throws(CryptoError) -> Int in
                    var length = output.count
                    try check("EVP_DigestSign", EVP_DigestSign(context.pointer, output.uint8Pointer, &length,
                                                               input.uint8Pointer, input.count))
                    return length
                }
            }
        }
    }

    /// An Ed25519 public key (32-byte compressed point).
    public struct PublicKey: Sendable, Equatable {
        /// The 32-byte encoded point.
        public let rawRepresentation: [UInt8]

        /// Accepts any 32-byte string; an encoding that is not a valid point
        /// simply never verifies. Other lengths are `.invalidKey`.
        public init(rawRepresentation: [UInt8]) throws(CryptoError) {
            guard rawRepresentation.count == keyByteCount else { throw .invalidKey }
            self.rawRepresentation = rawRepresentation
        }

        init(validatedRaw bytes: [UInt8]) { rawRepresentation = bytes }

        /// Whether `signature` (64 bytes) is a valid Ed25519 signature over `message`.
        public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
            guard signature.count == signatureByteCount else { return false }
            do {
                let key = try rawRepresentation.withBytes { (bytes) throws(CryptoError) -> EVPPKey in
                    EVPPKey(try checkNotNull("EVP_PKEY_new_raw_public_key_ex",
                                             EVP_PKEY_new_raw_public_key_ex(nil, ("ED25519" as StaticString).cString,
                                                                            nil, bytes.uint8Pointer, bytes.count)))
                }
                let context = try EVPMDContext()
                try check("EVP_DigestVerifyInit_ex",
                          EVP_DigestVerifyInit_ex(context.pointer, nil, nil, nil, nil, key.pointer, nil))
                let result = try message.withBytes { (input) throws(CryptoError) -> Int32 in
                    signature.withUnsafeBytes { signatureBytes in
                        EVP_DigestVerify(context.pointer, signatureBytes.uint8Pointer, signatureBytes.count,
                                         input.uint8Pointer, input.count)
                    }
                }
                if result != 1 { discardOpenSSLErrors() }
                return result == 1
            } catch {
                return false
            }
        }
    }
}
