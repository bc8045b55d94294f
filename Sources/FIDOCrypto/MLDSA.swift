import COpenSSL
import Synchronization

/// ML-DSA (FIPS 204), the module-lattice signature standardised in August 2024: key generation from
/// a 32-byte seed, hedged and deterministic signing, verification, for ML-DSA-44, -65 and -87.
/// Debian 12's OpenSSL 3.0 has none (3.5 does), so it is written here, from the standard's
/// algorithms: the ring arithmetic is in MLDSAPolynomial.swift, the encodings in
/// MLDSAEncoding.swift. SHAKE comes from OpenSSL.
///
/// Secret-dependent work takes the same time whatever the secret (no division, no branch on a
/// secret coefficient, norm checks look at every coefficient); the loops that reject a candidate
/// signature run a data-dependent number of times, as the standard's own do: a rejected
/// candidate is independent of the key. Secret intermediates are wiped after use.
public enum MLDSA {
    public static let seedByteCount = 32

    /// The three parameter sets (MLDSAParameterSet.swift).
    public typealias ParameterSet = MLDSAParameterSet

    /// An ML-DSA signing key, kept as its 32-byte seed ξ (the form FIPS 204 §3.6.3 recommends
    /// storing); each signature expands it again and wipes the expansion.
    public final class PrivateKey: @unchecked Sendable {
        public let parameterSet: ParameterSet
        public let seed: SecretBytes
        private let cachedPublicKey = Mutex<PublicKey?>(nil)

        /// The matching public key, expanded from the seed on first use and then cached (as
        /// ECDSA.PrivateKey does): an assertion, which only signs, then expands the seed once.
        public var publicKey: PublicKey {
            if let cached = cachedPublicKey.withLock({ $0 }) { return cached }
            var expanded = ExpandedKey(seed: seed, parameterSet)
            let computed = PublicKey(validated: expanded.publicKey, parameterSet)
            expanded.wipe()
            cachedPublicKey.withLock { $0 = computed }
            return computed
        }

        /// A new key from 32 random bytes.
        public convenience init(parameterSet: ParameterSet) {
            self.init(parameterSet: parameterSet, validSeed: SecretBytes(randomCount: seedByteCount))
        }

        /// The key of a 32-byte seed; another length is `.invalidKey`.
        public convenience init(parameterSet: ParameterSet, seed: SecretBytes) throws(CryptoError) {
            guard seed.count == seedByteCount else { throw .invalidKey }
            self.init(parameterSet: parameterSet, validSeed: seed)
        }

        private init(parameterSet: ParameterSet, validSeed: SecretBytes) {
            self.parameterSet = parameterSet
            seed = validSeed
        }

        /// A hedged signature (FIPS 204 Algorithm 2, pure ML-DSA): fresh randomness in every one.
        /// `context` is at most 255 bytes (`.invalidLength` otherwise); WebAuthn uses none.
        public func signature(for message: [UInt8], context: [UInt8] = []) throws(CryptoError) -> [UInt8] {
            var randomness = SecureRandom.bytes(count: 32)
            defer { randomness.wipe() }
            return try signature(for: message, context: context, randomness: randomness)
        }

        /// The deterministic variant when `randomness` is 32 zero bytes (FIPS 204 §3.4).
        func signature(for message: [UInt8], context: [UInt8], randomness: [UInt8]) throws(CryptoError) -> [UInt8] {
            var expanded = ExpandedKey(seed: seed, parameterSet)
            defer { expanded.wipe() }
            return try expanded.sign(formattedMessage: try MLDSA.formatted(message, context: context), randomness: randomness)
        }
    }

    /// An ML-DSA public key: ρ and t1, in FIPS 204's pkEncode form.
    public struct PublicKey: Sendable, Equatable {
        public let parameterSet: ParameterSet
        public let rawRepresentation: [UInt8]

        /// Takes the encoded key; a wrong length is `.invalidKey` (every 10-bit value is a valid t1).
        public init(parameterSet: ParameterSet, rawRepresentation: [UInt8]) throws(CryptoError) {
            guard rawRepresentation.count == parameterSet.publicKeyByteCount else { throw .invalidKey }
            self.init(validated: rawRepresentation, parameterSet)
        }

        init(validated raw: [UInt8], _ parameterSet: ParameterSet) {
            self.parameterSet = parameterSet
            rawRepresentation = raw
        }

        /// FIPS 204 Algorithm 3 (pure ML-DSA, `context` up to 255 bytes).
        public func isValidSignature(_ signature: [UInt8], for message: [UInt8], context: [UInt8] = []) -> Bool {
            guard let formatted = try? MLDSA.formatted(message, context: context) else { return false }
            return MLDSA.verify(publicKey: rawRepresentation, formattedMessage: formatted, signature: signature, parameterSet)
        }
    }

    /// M′ = 0 ‖ |ctx| ‖ ctx ‖ M (FIPS 204 Algorithm 2, line 10): pure signing, no pre-hash.
    static func formatted(_ message: [UInt8], context: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard context.count <= 255 else { throw .invalidLength }
        return [0, UInt8(context.count)] + context + message
    }
}

extension MLDSA {
    typealias ExpandedKey = MLDSAExpandedKey

    /// Verify_internal (FIPS 204 Algorithm 8).
    static func verify(publicKey: [UInt8], formattedMessage: [UInt8], signature: [UInt8], _ p: ParameterSet) -> Bool {
        guard publicKey.count == p.publicKeyByteCount,
              let (commitmentHash, z, hint) = MLDSAEncoding.decodeSignature(signature, p) else { return false }
        for zs in z where zs.exceedsNorm(p.gamma1 - p.beta) { return false }
        let (rho, t1) = MLDSAEncoding.decodePublicKey(publicKey, p)
        let matrix = MLDSASampling.expandA(rho, p)
        let tr = SHAKE.shake256.hash(publicKey, count: 64)
        let mu = SHAKE.shake256.hash(tr, formattedMessage, count: 64)
        var challenge = MLDSASampling.sampleInBall(commitmentHash, p)
        challenge.ntt()
        let zHat = z.map { var zs = $0; zs.ntt(); return zs }
        var w1 = [MLDSAPolynomial]()
        for r in 0..<p.k {
            var t1Shifted = MLDSAPolynomial(coefficients: t1[r].c.map { $0 << 13 })
            t1Shifted.ntt()
            var approximation = MLDSAExpandedKey.row(matrix[r], times: zHat) - MLDSAPolynomial.pointwise(challenge, t1Shifted)
            approximation.inverseNTTFromMontgomeryProduct()
            approximation.freeze()
            w1.append(MLDSAEncoding.useHint(hint[r], approximation, p))
        }
        let expected = SHAKE.shake256.hash(mu, MLDSAEncoding.encodeW1(w1, p), count: p.commitmentHashByteCount)
        return expected == commitmentHash
    }
}
