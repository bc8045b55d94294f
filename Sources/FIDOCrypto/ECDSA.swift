import COpenSSL
import Synchronization

/// NIST P-256 (secp256r1 / prime256v1). Signing and key-agreement keys are
/// distinct types so a key can only be used for the purpose it was made for.
public enum P256 {}

extension P256 {
    /// ECDSA over P-256 with SHA-256 (COSE ES256): the `ECDSA` types, whose suite
    /// defaults to ES256.
    public enum Signing {
        public typealias PrivateKey = ECDSA.PrivateKey
        public typealias PublicKey = ECDSA.PublicKey
    }
}

/// ECDSA signing and verification on the curves COSE names (RFC 9053 §2.1, RFC 8812 §3.2).
public enum ECDSA {
    /// A curve and the hash its COSE algorithm signs with.
    public struct Suite: Sendable, Equatable, CustomStringConvertible {
        public let curve: ECCurve
        public let digest: MessageDigest

        /// ES256: P-256 with SHA-256 (COSE -7).
        public static let es256 = Suite(curve: .p256, digest: .sha256)
        /// ES384: P-384 with SHA-384 (COSE -35).
        public static let es384 = Suite(curve: .p384, digest: .sha384)
        /// ES512: P-521 with SHA-512 (COSE -36).
        public static let es512 = Suite(curve: .p521, digest: .sha512)
        /// ES256K: secp256k1 with SHA-256 (COSE -47, RFC 8812).
        public static let es256K = Suite(curve: .secp256k1, digest: .sha256)

                public var description: String { "ECDSA \(curve) with \(digest)" }

        /// The largest DER ECDSA-Sig-Value: SEQUENCE of two INTEGERs, each at most one byte
        /// longer than the order (a leading zero), with short or one-byte long lengths.
        var maximumSignatureByteCount: Int { 2 * (curve.scalarByteCount + 3) + 3 }
    }

    /// An ECDSA signing key.
    ///
    /// Keys built from a raw scalar import only the scalar; the public key is
    /// derived on first use of `publicKey` and cached.
    public final class PrivateKey: @unchecked Sendable {
        public let suite: Suite
        let key: EVPPKey
        private let scalar: SecretBytes
        private let cachedPublicKey: Mutex<PublicKey?>
        /// One `EVP_PKEY_sign`-initialised context kept for reuse.
        private let signingContexts: EVPPKeyContextPool

        /// Generates a new random key.
        public convenience init(suite: Suite = .es256) throws(CryptoError) {
            let key = try suite.curve.generate()
            let scalar = try suite.curve.exportScalar(key)
            let publicKey = PublicKey(suite: suite, validatedX963: try suite.curve.exportPublicKey(key))
            self.init(suite: suite, key: key, scalar: scalar, publicKey: publicKey)
        }

        /// Imports a big-endian private scalar d of the curve's length. Wrong length,
        /// d = 0 and d ≥ n are rejected with `.invalidKey`.
        public convenience init(rawRepresentation: [UInt8], suite: Suite = .es256) throws(CryptoError) {
            try self.init(secret: SecretBytes(rawRepresentation), suite: suite)
        }

        /// Imports the scalar from a secret, keeping that secret (no copy of it is made).
        public convenience init(secret scalar: SecretBytes, suite: Suite = .es256) throws(CryptoError) {
            guard scalar.withUnsafeBytes(suite.curve.isValidScalar) else { throw .invalidKey }
            let key = try scalar.withUnsafeBytes { (bytes) throws(CryptoError) -> EVPPKey in
                try suite.curve.makePrivateKey(scalar: bytes)
            }
            self.init(suite: suite, key: key, scalar: scalar, publicKey: nil)
        }

        /// A key from random bytes `draw(count)` gives (a reproducible rig key derives them from
        /// a seed): a scalar of the curve's length whose top byte is masked to the order's bit
        /// length (P-521's first byte keeps one bit), drawn again while it is 0 or ≥ n. On
        /// P-256 the mask keeps every bit, so the bytes drawn are the scalar.
        public static func derived(suite: Suite = .es256, draw: (Int) -> SecretBytes) throws(CryptoError) -> PrivateKey {
            let curve = suite.curve
            let mask = UInt8.max >> curve.order[0].leadingZeroBitCount
            for _ in 0..<64 {
                let candidate = draw(curve.scalarByteCount)
                guard candidate.count == curve.scalarByteCount else { throw .invalidLength }
                let scalar = mask == .max ? candidate : try SecretBytes(count: curve.scalarByteCount) { (output) throws(CryptoError) in
                    candidate.withUnsafeBytes { output.copyMemory(from: $0) }
                    output[0] &= mask
                }
                if let key = try? PrivateKey(secret: scalar, suite: suite) { return key }
            }
            throw .invalidKey
        }

        private init(suite: Suite, key: EVPPKey, scalar: SecretBytes, publicKey: PublicKey?) {
            self.suite = suite
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

        /// The big-endian private scalar (32 bytes for P-256 and secp256k1, 48 for P-384,
        /// 66 for P-521).
        public var rawRepresentation: SecretBytes { scalar }

        /// The matching public key (computed once, then cached).
        public var publicKey: PublicKey {
            if let cached = cachedPublicKey.withLock({ $0 }) { return cached }
            let computed = mustSucceed { () throws(CryptoError) -> PublicKey in
                PublicKey(suite: suite, validatedX963: try suite.curve.publicKey(forScalar: scalar))
            }
            cachedPublicKey.withLock { $0 = computed }
            return computed
        }

        /// The signature over `message` (hashed here with the suite's hash), DER-encoded.
        public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
            try signature(forDigest: suite.digest.hash(message))
        }

        /// The signature over an already computed digest (the suite's hash), DER-encoded.
        public func signature(forDigest digest: [UInt8]) throws(CryptoError) -> [UInt8] {
            guard digest.count == suite.digest.byteCount else { throw .invalidLength }
            return try signingContexts.withContext { (context) throws(CryptoError) -> [UInt8] in
                try digest.withBytes { (input) throws(CryptoError) -> [UInt8] in
                    try makeBytes(count: suite.maximumSignatureByteCount) { (output) throws(CryptoError) -> Int in
                        var length = output.count
                        try check("EVP_PKEY_sign", EVP_PKEY_sign(context.pointer, output.uint8Pointer, &length,
                                                                 input.uint8Pointer, input.count))
                        return length
                    }
                }
            }
        }
    }

    /// An ECDSA verification key: an uncompressed point known to be on the suite's curve.
    public struct PublicKey: Sendable, Equatable {
        public let suite: Suite
        /// 0x04 ‖ x ‖ y (65 bytes on P-256).
        public let x963Representation: [UInt8]

        /// Accepts only the uncompressed encoding of a point on the curve.
        public init(x963Representation: [UInt8], suite: Suite = .es256) throws(CryptoError) {
            try suite.curve.validatePublicKey(x963: x963Representation)
            self.init(suite: suite, validatedX963: x963Representation)
        }

        /// From big-endian affine coordinates of the curve's length (as in a COSE_Key).
        public init(x: [UInt8], y: [UInt8], suite: Suite = .es256) throws(CryptoError) {
            guard x.count == suite.curve.scalarByteCount, y.count == suite.curve.scalarByteCount else {
                throw .invalidKey
            }
            try self.init(x963Representation: [0x04] + x + y, suite: suite)
        }

        init(suite: Suite = .es256, validatedX963 bytes: [UInt8]) {
            self.suite = suite
            x963Representation = bytes
        }

        private var coordinateByteCount: Int { suite.curve.scalarByteCount }
        /// The x coordinate.
        public var x: [UInt8] { Array(x963Representation[1...coordinateByteCount]) }
        /// The y coordinate.
        public var y: [UInt8] { Array(x963Representation[(1 + coordinateByteCount)...]) }

        /// Whether `derSignature` is a valid, strictly DER-encoded ECDSA signature over
        /// `message` (hashed with the suite's hash).
        public func isValidSignature(_ derSignature: [UInt8], for message: [UInt8]) -> Bool {
            isValidSignature(derSignature, forDigest: suite.digest.hash(message))
        }

        /// As above, over an already computed digest.
        func isValidSignature(_ derSignature: [UInt8], forDigest digest: [UInt8]) -> Bool {
            guard digest.count == suite.digest.byteCount, !derSignature.isEmpty else { return false }
            guard let key = try? suite.curve.makePublicKey(x963: x963Representation) else { return false }
            return verifyDigestSignature(derSignature, digest: digest, key: key)
        }
    }
}
