import COpenSSL

/// The samplers of FIPS 204 §7.3: ExpandA, ExpandS, ExpandMask, SampleInBall.
enum MLDSASampling {
    /// Â, k × l polynomials in the NTT domain (Algorithm 32): entry (r, s) from RejNTTPoly(ρ ‖ s ‖ r).
    static func expandA(_ rho: [UInt8], _ p: MLDSAParameterSet) -> [[MLDSAPolynomial]] {
        (0..<p.k).map { r in (0..<p.l).map { s in rejectionNTTPolynomial(rho + [UInt8(s), UInt8(r)]) } }
    }

    /// RejNTTPoly (Algorithm 30): coefficients from 3 bytes of SHAKE128 (23 bits), below q.
    /// 840 bytes (5 blocks) give 280 candidates for 256 coefficients: enough but about once in 2^100.
    static func rejectionNTTPolynomial(_ seed: [UInt8]) -> MLDSAPolynomial {
        var reader = SHAKEReader(.shake128, seed, initialCount: 840)
        var polynomial = MLDSAPolynomial()
        var j = 0
        while j < 256 {
            let b0 = Int32(reader.next()), b1 = Int32(reader.next()), b2 = Int32(reader.next() & 0x7F)
            let z = b2 << 16 | b1 << 8 | b0
            if z < MLDSAField.q {
                polynomial.c[j] = z
                j += 1
            }
        }
        return polynomial
    }

    /// (s1, s2) (Algorithm 33): RejBoundedPoly(ρ′ ‖ r as 2 bytes) for r < l, then l ≤ r < l + k.
    static func expandS(_ rhoPrime: [UInt8], _ p: MLDSAParameterSet) -> ([MLDSAPolynomial], [MLDSAPolynomial]) {
        let s1 = (0..<p.l).map { r in rejectionBoundedPolynomial(rhoPrime + [UInt8(r), 0], eta: p.eta) }
        let s2 = (0..<p.k).map { r in rejectionBoundedPolynomial(rhoPrime + [UInt8(p.l + r), 0], eta: p.eta) }
        return (s1, s2)
    }

    /// RejBoundedPoly (Algorithm 31): coefficients in [−η, η] from half-bytes of SHAKE256, low
    /// half first. The value is computed without a division or a table (CoeffFromHalfByte); which
    /// half-bytes are rejected shows in the time taken, as in the standard's own algorithm (a
    /// rejected half-byte is not part of the key).
    static func rejectionBoundedPolynomial(_ seed: [UInt8], eta: Int32) -> MLDSAPolynomial {
        var seed = seed
        var reader = SHAKEReader(.shake256, seed, initialCount: 272)
        seed.wipe()
        defer { reader.wipe() }
        var polynomial = MLDSAPolynomial()
        var j = 0
        while j < 256 {
            let byte = Int32(reader.next())
            for half in [byte & 0x0F, byte >> 4] where j < 256 {
                if eta == 2, half < 15 {
                    // 2 − (half mod 5); half mod 5 = half − 5·⌊205·half / 1024⌋ for half < 15.
                    polynomial.c[j] = 2 - (half - ((205 * half) >> 10) * 5)
                    j += 1
                } else if eta == 4, half < 9 {
                    polynomial.c[j] = 4 - half
                    j += 1
                }
            }
        }
        return polynomial
    }

    /// y (Algorithm 34): l polynomials with coefficients in (−γ1, γ1], each from SHAKE256(ρ″ ‖ κ + r).
    static func expandMask(_ rhoDoublePrime: [UInt8], kappa: Int, _ p: MLDSAParameterSet) -> [MLDSAPolynomial] {
        (0..<p.l).map { r in
            let counter = kappa + r
            var bytes = SHAKE.shake256.hash(rhoDoublePrime, [UInt8(counter & 0xFF), UInt8(counter >> 8)],
                                             count: 32 * p.gamma1Bits)
            defer { bytes.wipe() }
            var values = MLDSAEncoding.unpack(bytes[...], bits: p.gamma1Bits)
            var polynomial = MLDSAPolynomial()
            for i in 0..<256 { polynomial.c[i] = p.gamma1 - values[i] }
            values.wipe()
            return polynomial
        }
    }

    /// SampleInBall (Algorithm 29): τ coefficients ±1, the rest 0; the first 8 bytes of
    /// SHAKE256(c̃) give the signs, the bytes after them the positions.
    static func sampleInBall(_ commitmentHash: [UInt8], _ p: MLDSAParameterSet) -> MLDSAPolynomial {
        var reader = SHAKEReader(.shake256, commitmentHash, initialCount: 136)
        var signs: UInt64 = 0
        for i in 0..<8 { signs |= UInt64(reader.next()) << (8 * i) }
        var polynomial = MLDSAPolynomial()
        for i in (256 - p.tau)..<256 {
            var j = Int(reader.next())
            while j > i { j = Int(reader.next()) }
            polynomial.c[i] = polynomial.c[j]
            polynomial.c[j] = 1 - 2 * Int32(signs & 1)
            signs >>= 1
        }
        return polynomial
    }
}

extension Array where Element == Int32 {
    /// Zeroes the values (OPENSSL_cleanse: not optimised away).
    mutating func wipe() {
        withUnsafeMutableBytes { buffer in
            if let base = buffer.baseAddress { OPENSSL_cleanse(base, buffer.count) }
        }
    }
}
