import COpenSSL

extension P256 {
    /// Elliptic-curve Diffie–Hellman over P-256 (CTAP2 PIN/UV auth protocols).
    public enum KeyAgreement {
        /// An ECDH private key.
        public final class PrivateKey: @unchecked Sendable {
            let key: EVPPKey
            /// The matching public key.
            public let publicKey: PublicKey

            /// Generates a new random key.
            public init() throws(CryptoError) {
                key = try ECCurve.p256.generate()
                publicKey = PublicKey(validatedX963: try ECCurve.p256.exportPublicKey(key))
            }

            /// Imports a 32-byte big-endian private scalar (for known-answer tests
            /// and fixed test keys). Wrong length, 0 and ≥ n give `.invalidKey`.
            public init(rawRepresentation: [UInt8]) throws(CryptoError) {
                guard rawRepresentation.withUnsafeBytes(ECCurve.p256.isValidScalar) else { throw .invalidKey }
                let scalar = SecretBytes(rawRepresentation)
                key = try scalar.withUnsafeBytes { (bytes) throws(CryptoError) -> EVPPKey in
                    try ECCurve.p256.makePrivateKey(scalar: bytes)
                }
                publicKey = PublicKey(validatedX963: try ECCurve.p256.publicKey(forScalar: scalar))
            }

            /// The raw ECDH shared secret: the 32-byte x coordinate of d·Q_peer.
            /// A peer that OpenSSL's public-key check rejects gives `.invalidKey`.
            public func sharedSecretX(with peer: PublicKey) throws(CryptoError) -> SecretBytes {
                let peerKey: EVPPKey
                do {
                    peerKey = try ECCurve.p256.makePublicKey(x963: peer.x963Representation)
                } catch {
                    throw .invalidKey
                }
                let context = EVPPKeyContext(try checkNotNull("EVP_PKEY_CTX_new_from_pkey",
                                                              EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil)))
                try check("EVP_PKEY_derive_init", EVP_PKEY_derive_init(context.pointer))
                // validate_peer = 0: `PublicKey` can only hold a point that
                // EC_POINT_oct2point accepted (coordinates < p, on the curve, not
                // infinity), and P-256 has cofactor 1, so that point is in the
                // prime-order group. OpenSSL's full check would repeat this plus an
                // n·Q scalar multiplication (~40 µs) that proves nothing more here.
                guard EVP_PKEY_derive_set_peer_ex(context.pointer, peerKey.pointer, 0) == 1 else {
                    discardOpenSSLErrors()
                    throw .invalidKey
                }
                return try SecretBytes(count: ECCurve.p256.scalarByteCount) { (output) throws(CryptoError) in
                    var length = output.count
                    try check("EVP_PKEY_derive", EVP_PKEY_derive(context.pointer, output.uint8Pointer, &length))
                    guard length == ECCurve.p256.scalarByteCount else { throw .invalidLength }
                }
            }
        }

        /// An ECDH public key: an uncompressed point known to be on the curve.
        public struct PublicKey: Sendable, Equatable {
            /// 0x04 ‖ x ‖ y (65 bytes).
            public let x963Representation: [UInt8]

            /// Accepts only the 65-byte uncompressed encoding of a point on the curve.
            public init(x963Representation: [UInt8]) throws(CryptoError) {
                try ECCurve.p256.validatePublicKey(x963: x963Representation)
                self.x963Representation = x963Representation
            }

            /// From 32-byte big-endian affine coordinates (as in a COSE_Key).
            public init(x: [UInt8], y: [UInt8]) throws(CryptoError) {
                guard x.count == ECCurve.p256.scalarByteCount, y.count == ECCurve.p256.scalarByteCount else {
                    throw .invalidKey
                }
                try self.init(x963Representation: [0x04] + x + y)
            }

            init(validatedX963 bytes: [UInt8]) { x963Representation = bytes }

            /// The 32-byte x coordinate.
            public var x: [UInt8] { Array(x963Representation[1...32]) }
            /// The 32-byte y coordinate.
            public var y: [UInt8] { Array(x963Representation[33...64]) }
        }
    }
}
