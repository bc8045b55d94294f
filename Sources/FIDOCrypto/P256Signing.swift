import COpenSSL
import Synchronization

/// NIST P-256 (secp256r1 / prime256v1). Signing and key-agreement keys are
/// distinct types so a key can only be used for the purpose it was made for.
public enum P256 {}

extension P256 {
    /// ECDSA over P-256 with SHA-256 (COSE ES256).
    public enum Signing {
        /// An ECDSA signing key.
        ///
        /// Keys built from a raw scalar import only the scalar; the public key is
        /// derived on first use of `publicKey` and cached.
        public final class PrivateKey: @unchecked Sendable {
            let key: EVPPKey
            private let scalar: SecretBytes
            private let cachedPublicKey: Mutex<PublicKey?>
            /// One `EVP_PKEY_sign`-initialised context kept for reuse.
            private let signingContexts: EVPPKeyContextPool

            /// Generates a new random key.
            public convenience init() throws(CryptoError) {
                let key = try P256Curve.generate()
                let scalar = try P256Curve.exportScalar(key)
                let publicKey = PublicKey(validatedX963: try P256Curve.exportPublicKey(key))
                self.init(key: key, scalar: scalar, publicKey: publicKey)
            }

            /// Imports a 32-byte big-endian private scalar d. Wrong length, d = 0
            /// and d ≥ n are rejected with `.invalidKey`.
            public convenience init(rawRepresentation: [UInt8]) throws(CryptoError) {
                try self.init(secret: SecretBytes(rawRepresentation))
            }

            /// Imports the scalar from a secret, keeping that secret (no copy of it is made).
            public convenience init(secret scalar: SecretBytes) throws(CryptoError) {
                guard scalar.withUnsafeBytes(P256Curve.isValidScalar) else { throw .invalidKey }
                let key = try scalar.withUnsafeBytes { (bytes) throws(CryptoError) -> EVPPKey in
                    try P256Curve.makePrivateKey(scalar: bytes)
                }
                self.init(key: key, scalar: scalar, publicKey: nil)
            }

            private init(key: EVPPKey, scalar: SecretBytes, publicKey: PublicKey?) {
                self.key = key
                self.scalar = scalar
                self.cachedPublicKey = Mutex(publicKey)
                self.signingContexts = EVPPKeyContextPool(capacity: 1) { () throws(CryptoError) -> EVPPKeyContext in
                    let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_pkey",
                                                                  EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil)))
                    try check("EVP_PKEY_sign_init", EVP_PKEY_sign_init(context.pointer))
                    return context
                }
            }

            /// The 32-byte big-endian private scalar.
            public var rawRepresentation: SecretBytes { scalar }

            /// The matching public key (computed once, then cached).
            public var publicKey: PublicKey {
                if let cached = cachedPublicKey.withLock({ $0 }) { return cached }
                let computed = mustSucceed { () throws(CryptoError) -> PublicKey in
                    PublicKey(validatedX963: try P256Curve.publicKey(forScalar: scalar))
                }
                cachedPublicKey.withLock { $0 = computed }
                return computed
            }

            /// ECDSA-SHA-256 signature over `message` (hashed here), DER-encoded.
            public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
                try signature(forDigest: SHA256.hash(message))
            }

            /// ECDSA signature over an already computed 32-byte SHA-256 digest, DER-encoded.
            public func signature(forDigest digest: [UInt8]) throws(CryptoError) -> [UInt8] {
                guard digest.count == SHA256.byteCount else { throw .invalidLength }
                return try signingContexts.withContext { (context) throws(CryptoError) -> [UInt8] in
                    try digest.withBytes { (input) throws(CryptoError) -> [UInt8] in
                        // 72 bytes = the largest DER ECDSA-Sig-Value for a 256-bit order.
                        try makeBytes(count: 72) { (output) throws(CryptoError) -> Int in
                            var length = output.count
                            try check("EVP_PKEY_sign", EVP_PKEY_sign(context.pointer, output.uint8Pointer, &length,
                                                                     input.uint8Pointer, input.count))
                            return length
                        }
                    }
                }
            }
        }

        /// An ECDSA verification key: an uncompressed point known to be on the curve.
        public struct PublicKey: Sendable, Equatable {
            /// 0x04 ‖ x ‖ y (65 bytes).
            public let x963Representation: [UInt8]

            /// Accepts only the 65-byte uncompressed encoding of a point on the curve.
            public init(x963Representation: [UInt8]) throws(CryptoError) {
                try P256Curve.validatePublicKey(x963: x963Representation)
                self.x963Representation = x963Representation
            }

            /// From 32-byte big-endian affine coordinates (as in a COSE_Key).
            public init(x: [UInt8], y: [UInt8]) throws(CryptoError) {
                guard x.count == P256Curve.scalarByteCount, y.count == P256Curve.scalarByteCount else {
                    throw .invalidKey
                }
                try self.init(x963Representation: [0x04] + x + y)
            }

            init(validatedX963 bytes: [UInt8]) { x963Representation = bytes }

            /// The 32-byte x coordinate.
            public var x: [UInt8] { Array(x963Representation[1...32]) }
            /// The 32-byte y coordinate.
            public var y: [UInt8] { Array(x963Representation[33...64]) }

            /// Whether `derSignature` is a valid, strictly DER-encoded ECDSA-SHA-256
            /// signature over `message`.
            public func isValidSignature(_ derSignature: [UInt8], for message: [UInt8]) -> Bool {
                isValidSignature(derSignature, forDigest: SHA256.hash(message))
            }

            /// As above, over an already computed 32-byte SHA-256 digest.
            func isValidSignature(_ derSignature: [UInt8], forDigest digest: [UInt8]) -> Bool {
                guard digest.count == SHA256.byteCount, !derSignature.isEmpty else { return false }
                do {
                    let key = try P256Curve.makePublicKey(x963: x963Representation)
                    let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_pkey",
                                                                  EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil)))
                    try check("EVP_PKEY_verify_init", EVP_PKEY_verify_init(context.pointer))
                    let result = derSignature.withUnsafeBytes { signature in
                        digest.withUnsafeBytes { hash in
                            EVP_PKEY_verify(context.pointer, signature.uint8Pointer, signature.count,
                                            hash.uint8Pointer, hash.count)
                        }
                    }
                    // 0 = bad signature, negative = malformed encoding; both are "no".
                    if result != 1 { discardOpenSSLErrors() }
                    return result == 1
                } catch {
                    return false
                }
            }
        }
    }
}
