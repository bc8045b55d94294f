/// The key FIPS 204's KeyGen_internal expands a seed into (or skDecode reads from an encoded key),
/// with s1, s2 and t0 already in the NTT domain as signing uses them.
struct MLDSAExpandedKey {
    let parameterSet: MLDSAParameterSet
    let rho: [UInt8]
    var key: [UInt8]
    let tr: [UInt8]
    var s1: [MLDSAPolynomial]
    var s2: [MLDSAPolynomial]
    var t0: [MLDSAPolynomial]
    let matrix: [[MLDSAPolynomial]]
    /// pkEncode(ρ, t1) when made from a seed; empty when read with skDecode.
    let publicKey: [UInt8]
    /// skEncode of the key, when asked for (a PKCS#8 `both` form checked against its seed).
    var encodedPrivateKey: [UInt8]?

    /// KeyGen_internal (FIPS 204 Algorithm 6).
    init(seed: SecretBytes, _ p: MLDSAParameterSet, encodingPrivateKey: Bool = false) {
        parameterSet = p
        var seedBytes = seed.copyBytes()
        var expandedSeed = SHAKE.shake256.hash(seedBytes, [UInt8(p.k), UInt8(p.l)], count: 128)
        seedBytes.wipe()
        defer { expandedSeed.wipe() }
        rho = Array(expandedSeed[0..<32])
        var rhoPrime = Array(expandedSeed[32..<96])
        defer { rhoPrime.wipe() }
        key = Array(expandedSeed[96..<128])
        matrix = MLDSASampling.expandA(rho, p)
        (s1, s2) = MLDSASampling.expandS(rhoPrime, p)
        var t1 = [MLDSAPolynomial]()
        var t0 = [MLDSAPolynomial]()
        for i in 0..<s1.count { s1[i].ntt() }
        for r in 0..<p.k {
            var t = MLDSAExpandedKey.row(matrix[r], times: s1)
            t.inverseNTTFromMontgomeryProduct()
            t = t + s2[r]
            t.freeze()
            let (high, low) = MLDSAEncoding.power2Round(t)
            t.wipe()
            t1.append(high)
            t0.append(low)
        }
        publicKey = MLDSAEncoding.encodePublicKey(rho: rho, t1: t1)
        tr = SHAKE.shake256.hash(publicKey, count: 64)
        if encodingPrivateKey {
            var (s1Normal, s2Normal) = MLDSASampling.expandS(rhoPrime, p)
            encodedPrivateKey = MLDSAEncoding.encodePrivateKey(rho: rho, key: key, tr: tr, s1: s1Normal, s2: s2Normal, t0: t0, p)
            for i in s1Normal.indices { s1Normal[i].wipe() }
            for i in s2Normal.indices { s2Normal[i].wipe() }
        }
        for i in 0..<s2.count { s2[i].ntt() }
        for i in 0..<t0.count { t0[i].ntt() }
        self.t0 = t0
    }

    init(parameterSet: MLDSAParameterSet, rho: [UInt8], key: [UInt8], tr: [UInt8], s1: [MLDSAPolynomial],
         s2: [MLDSAPolynomial], t0: [MLDSAPolynomial]) {
        self.parameterSet = parameterSet
        self.rho = rho
        self.key = key
        self.tr = tr
        self.s1 = s1.map { var p = $0; p.ntt(); return p }
        self.s2 = s2.map { var p = $0; p.ntt(); return p }
        self.t0 = t0.map { var p = $0; p.ntt(); return p }
        matrix = MLDSASampling.expandA(rho, parameterSet)
        publicKey = []
    }

    mutating func wipe() {
        key.wipe()
        for i in s1.indices { s1[i].wipe() }
        for i in s2.indices { s2[i].wipe() }
        for i in t0.indices { t0[i].wipe() }
    }

    /// Σ_s Â[r][s] ∘ v̂[s], still carrying the product's 2⁻³² (undone by the inverse NTT).
    static func row(_ row: [MLDSAPolynomial], times vector: [MLDSAPolynomial]) -> MLDSAPolynomial {
        var sum = MLDSAPolynomial.pointwise(row[0], vector[0])
        for s in 1..<vector.count { sum = sum + MLDSAPolynomial.pointwise(row[s], vector[s]) }
        return sum
    }

    /// Sign_internal (FIPS 204 Algorithm 7) over M′.
    func sign(formattedMessage: [UInt8], randomness: [UInt8]) throws(CryptoError) -> [UInt8] {
        let p = parameterSet
        let mu = SHAKE.shake256.hash(tr, formattedMessage, count: 64)
        var rhoDoublePrime = SHAKE.shake256.hash(key, randomness, mu, count: 64)
        defer { rhoDoublePrime.wipe() }
        var kappa = 0
        // Each round succeeds with probability about 1/4 to 1/5; 814 rounds (FIPS 204 §3.6.3's
        // bound for ML-DSA-87's κ) fail with probability below 2^-256.
        while kappa < 0x10000 - p.l {
            var y = MLDSASampling.expandMask(rhoDoublePrime, kappa: kappa, p)
            kappa += p.l
            var yHat = y
            for i in 0..<yHat.count { yHat[i].ntt() }
            var w = (0..<p.k).map { r in
                var row = MLDSAExpandedKey.row(matrix[r], times: yHat)
                row.inverseNTTFromMontgomeryProduct()
                row.freeze()
                return row
            }
            for i in 0..<yHat.count { yHat[i].wipe() }
            let w1 = w.map { MLDSAEncoding.highBits($0, p) }
            let commitmentHash = SHAKE.shake256.hash(mu, MLDSAEncoding.encodeW1(w1, p), count: p.commitmentHashByteCount)
            var challenge = MLDSASampling.sampleInBall(commitmentHash, p)
            challenge.ntt()
            var rejected = false
            var z = [MLDSAPolynomial]()
            for s in 0..<p.l {
                var cs1 = MLDSAPolynomial.pointwise(challenge, s1[s])
                cs1.inverseNTTFromMontgomeryProduct()
                var zs = y[s] + cs1
                cs1.wipe()
                zs.freeze()
                rejected = rejected || zs.exceedsNorm(p.gamma1 - p.beta)
                z.append(zs)
            }
            var hint = [[Bool]]()
            var hintCount = 0
            for r in 0..<p.k where !rejected {
                var cs2 = MLDSAPolynomial.pointwise(challenge, s2[r])
                cs2.inverseNTTFromMontgomeryProduct()
                var wMinusCs2 = w[r] - cs2
                cs2.wipe()
                wMinusCs2.freeze()
                if MLDSAEncoding.lowBitsExceed(wMinusCs2, p.gamma2 - p.beta, p) { rejected = true; wMinusCs2.wipe(); break }
                var ct0 = MLDSAPolynomial.pointwise(challenge, t0[r])
                ct0.inverseNTTFromMontgomeryProduct()
                ct0.freeze()
                if ct0.exceedsNorm(p.gamma2) { rejected = true; ct0.wipe(); wMinusCs2.wipe(); break }
                var sum = wMinusCs2 + ct0
                sum.freeze()
                // MakeHint(−ct0, w − cs2 + ct0): whether adding −ct0 changes the high bits.
                let row = MLDSAEncoding.makeHint(plus: sum, minus: wMinusCs2, p)
                hintCount += row.lazy.filter { $0 }.count
                hint.append(row)
                ct0.wipe(); sum.wipe(); wMinusCs2.wipe()
            }
            for i in y.indices { y[i].wipe() }
            for i in w.indices { w[i].wipe() }
            if rejected || hintCount > p.omega {
                for i in z.indices { z[i].wipe() }
                continue
            }
            return MLDSAEncoding.encodeSignature(commitmentHash: commitmentHash, z: z, hint: hint, p)
        }
        throw .openSSL(function: "ML-DSA Sign_internal", reason: "no signature within the bound on κ")
    }

    /// skDecode (Algorithm 25); nil for a wrong length or an s1/s2 value outside [−η, η].
    static func decodingPrivateKey(_ encoded: [UInt8], _ p: MLDSAParameterSet) -> MLDSAExpandedKey? {
        guard encoded.count == p.expandedPrivateKeyByteCount else { return nil }
        var offset = 128
        func polynomials(_ count: Int, bits: Int, _ value: (Int32) -> Int32) -> [MLDSAPolynomial] {
            (0..<count).map { _ in
                defer { offset += 32 * bits }
                return MLDSAPolynomial(coefficients: MLDSAEncoding.unpack(encoded[offset..<(offset + 32 * bits)], bits: bits).map(value))
            }
        }
        let s1 = polynomials(p.l, bits: p.etaBits) { p.eta - $0 }
        let s2 = polynomials(p.k, bits: p.etaBits) { p.eta - $0 }
        let t0 = polynomials(p.k, bits: 13) { (1 << 12) - $0 }
        guard (s1 + s2).allSatisfy({ $0.c.allSatisfy { abs($0) <= p.eta } }) else { return nil }
        return MLDSAExpandedKey(parameterSet: p, rho: Array(encoded[0..<32]), key: Array(encoded[32..<64]),
                                tr: Array(encoded[64..<128]), s1: s1, s2: s2, t0: t0)
    }
}
