import COpenSSL

/// X25519 key agreement (RFC 7748), for HPKE's DHKEM(X25519, HKDF-SHA256) (RFC 9180 §7.1).
public enum X25519 {
    public static let keyByteCount = 32

    /// An X25519 private key, held as its 32 raw bytes.
    public final class PrivateKey: @unchecked Sendable {
        let key: EVPPKey
        public let rawRepresentation: SecretBytes
        public let publicKey: PublicKey

        /// A new random key.
        public convenience init() throws(CryptoError) {
            try self.init(secret: SecretBytes(randomCount: keyByteCount))
        }

        /// Imports 32 raw bytes (RFC 7748 clamps them when used); any other length is `.invalidKey`.
        public init(secret: SecretBytes) throws(CryptoError) {
            guard secret.count == keyByteCount else { throw .invalidKey }
            key = try secret.withUnsafeBytes { (bytes) throws(CryptoError) -> EVPPKey in
                EVPPKey(try checkNotNull("EVP_PKEY_new_raw_private_key_ex",
                                         EVP_PKEY_new_raw_private_key_ex(nil, ("X25519" as StaticString).cString, nil,
                                                                         bytes.uint8Pointer, bytes.count)))
            }
            rawRepresentation = secret
            publicKey = PublicKey(raw: try makeBytes(count: keyByteCount) { [key] (output) throws(CryptoError) -> Int in
                var length = output.count
                try check("EVP_PKEY_get_raw_public_key", EVP_PKEY_get_raw_public_key(key.pointer, output.uint8Pointer, &length))
                return length
            })
        }

        /// The shared secret with `peer`. An all-zero result (a small-order peer point) is
        /// refused, as RFC 9180 §7.1.4 asks of DH(): `.invalidKey`.
        public func sharedSecret(with peer: PublicKey) throws(CryptoError) -> SecretBytes {
            let peerKey = try peer.rawRepresentation.withBytes { (bytes) throws(CryptoError) -> EVPPKey in
                EVPPKey(try checkNotNull("EVP_PKEY_new_raw_public_key_ex",
                                         EVP_PKEY_new_raw_public_key_ex(nil, ("X25519" as StaticString).cString, nil,
                                                                        bytes.uint8Pointer, bytes.count)))
            }
            let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_pkey",
                                                          EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil)))
            try check("EVP_PKEY_derive_init", EVP_PKEY_derive_init(context.pointer))
            guard EVP_PKEY_derive_set_peer_ex(context.pointer, peerKey.pointer, 1) == 1 else {
                discardOpenSSLErrors()
                throw .invalidKey
            }
            let secret = try SecretBytes(count: keyByteCount) { (output) throws(CryptoError) in
                var length = output.count
                guard EVP_PKEY_derive(context.pointer, output.uint8Pointer, &length) == 1 else {
                    discardOpenSSLErrors()   // OpenSSL refuses an all-zero X25519 result
                    throw .invalidKey
                }
                guard length == keyByteCount else { throw .invalidLength }
            }
            let isZero = secret.withUnsafeBytes { bytes in bytes.reduce(0 as UInt8) { $0 | $1 } == 0 }
            guard !isZero else { throw .invalidKey }
            return secret
        }

        /// PKCS#8 DER (RFC 8410): what `openssl genpkey -algorithm X25519` writes inside its PEM.
        public var pkcs8: SecretBytes {
            rawRepresentation.withUnsafeBytes { raw in
                var der = PublicKey.pkcs8Prefix + Array(raw)
                defer { der.wipe() }
                return SecretBytes(der)
            }
        }

        /// A private key from PKCS#8 DER (RFC 8410, v1 or v2 without the optional parts).
        public convenience init(pkcs8 der: [UInt8]) throws(CryptoError) {
            guard der.count == PublicKey.pkcs8Prefix.count + keyByteCount,
                  Array(der.prefix(PublicKey.pkcs8Prefix.count)) == PublicKey.pkcs8Prefix else { throw .invalidKey }
            try self.init(secret: SecretBytes(der.suffix(keyByteCount)))
        }
    }

    /// An X25519 public key (32 bytes, RFC 7748 u-coordinate).
    public struct PublicKey: Sendable, Equatable {
        public let rawRepresentation: [UInt8]

        init(raw: [UInt8]) { rawRepresentation = raw }

        /// Any 32 bytes are a u-coordinate; small-order points are caught at `sharedSecret`.
        public init(rawRepresentation: [UInt8]) throws(CryptoError) {
            guard rawRepresentation.count == keyByteCount else { throw .invalidKey }
            self.rawRepresentation = rawRepresentation
        }

        // RFC 8410 §4 and §7: id-X25519 is 1.3.101.110, with no parameters.
        static let spkiPrefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x6E, 0x03, 0x21, 0x00]
        static let pkcs8Prefix: [UInt8] = [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x6E,
                                           0x04, 0x22, 0x04, 0x20]

        /// SubjectPublicKeyInfo DER: what `openssl pkey -pubout` writes inside its PEM.
        public var subjectPublicKeyInfo: [UInt8] { Self.spkiPrefix + rawRepresentation }

        public init(subjectPublicKeyInfo der: [UInt8]) throws(CryptoError) {
            guard der.count == Self.spkiPrefix.count + keyByteCount, Array(der.prefix(Self.spkiPrefix.count)) == Self.spkiPrefix else {
                throw .invalidKey
            }
            rawRepresentation = Array(der.suffix(keyByteCount))
        }
    }
}
