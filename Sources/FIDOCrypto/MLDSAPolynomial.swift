import COpenSSL

/// The ring arithmetic of ML-DSA (FIPS 204 §7.5–7.6 and Appendix: NTT over Z_q[X]/(X^256 + 1)).
/// Coefficients are Int32. Reductions use multiplications and shifts only, never a division,
/// so their time does not depend on secret coefficients: Montgomery reduction with R = 2^32
/// after a product, a shift-based Barrett step (`reduce32`) after sums.
enum MLDSAField {
    static let q: Int32 = 8_380_417
    static let n = 256
    /// q⁻¹ mod 2^32.
    static let qInverse: Int32 = 58_728_449
    /// 2^32 mod q, centred: multiplying by it (in Montgomery form: by its square) enters the domain.
    static let montgomery: Int64 = 4_193_792 // 2^32 mod q

    /// a · 2⁻³² mod q, in (−q, q), for |a| < 2^31 · q.
    @inline(__always)
    static func montgomeryReduce(_ a: Int64) -> Int32 {
        let t = Int32(truncatingIfNeeded: a) &* qInverse
        return Int32(truncatingIfNeeded: (a &- Int64(t) &* Int64(q)) >> 32)
    }

    /// A representative of a mod q in [−6283008, 6283008], for a ≤ 2^31 − 2^22 − 1.
    @inline(__always)
    static func reduce32(_ a: Int32) -> Int32 {
        let t = (a &+ (1 << 22)) >> 23
        return a &- t &* q
    }

    /// a + q when a is negative (no branch).
    @inline(__always)
    static func addQIfNegative(_ a: Int32) -> Int32 {
        a &+ ((a >> 31) & q)
    }

    /// The representative in [0, q).
    @inline(__always)
    static func freeze(_ a: Int32) -> Int32 {
        addQIfNegative(reduce32(a))
    }

    /// ζ^BitRev8(m) · 2^32 mod q for m in 0..<256 (ζ = 1753, FIPS 204 Appendix B), computed once:
    /// public constants, so plain modular arithmetic is fine here.
    static let zetas: [Int32] = {
        func power(_ base: Int64, _ exponent: Int) -> Int64 {
            var result: Int64 = 1, base = base, exponent = exponent
            while exponent > 0 {
                if exponent & 1 == 1 { result = result * base % Int64(q) }
                base = base * base % Int64(q)
                exponent >>= 1
            }
            return result
        }
        return (0..<256).map { m in
            let reversed = (0..<8).reduce(0) { ($0 << 1) | ((m >> $1) & 1) }
            var value = power(1753, reversed) * montgomery % Int64(q)
            if value > Int64(q) / 2 { value -= Int64(q) }
            return Int32(value)
        }
    }()
}

/// One polynomial of R_q: 256 coefficients.
struct MLDSAPolynomial {
    var c: [Int32]

    init() { c = [Int32](repeating: 0, count: MLDSAField.n) }
    init(coefficients: [Int32]) { c = coefficients }

    /// Overwrites the coefficients (OPENSSL_cleanse: not optimised away).
    mutating func wipe() {
        c.withUnsafeMutableBytes { buffer in
            if let base = buffer.baseAddress { OPENSSL_cleanse(base, buffer.count) }
        }
    }

    /// NTT (FIPS 204 Algorithm 41), coefficients |a| < q in, |a| < 9q out.
    mutating func ntt() {
        let zetas = MLDSAField.zetas
        c.withUnsafeMutableBufferPointer { a in
            var m = 0
            var length = 128
            while length >= 1 {
                var start = 0
                while start < 256 {
                    m += 1
                    let zeta = Int64(zetas[m])
                    for j in start..<(start + length) {
                        let t = MLDSAField.montgomeryReduce(zeta &* Int64(a[j + length]))
                        a[j + length] = a[j] &- t
                        a[j] = a[j] &+ t
                    }
                    start += 2 * length
                }
                length >>= 1
            }
        }
    }

    /// Inverse NTT of a product of NTT-domain values (FIPS 204 Algorithm 42), times 2^32 to undo the
    /// Montgomery factor the pointwise product left: out in (−q, q).
    mutating func inverseNTTFromMontgomeryProduct() {
        let zetas = MLDSAField.zetas
        // mont² / 256 mod q: the 1/256 of the inverse transform and the 2^32 of the product.
        let scale: Int64 = 41_978
        c.withUnsafeMutableBufferPointer { a in
            var m = 256
            var length = 1
            while length < 256 {
                var start = 0
                while start < 256 {
                    m -= 1
                    let zeta = -Int64(zetas[m])
                    for j in start..<(start + length) {
                        let t = a[j]
                        a[j] = MLDSAField.reduce32(t &+ a[j + length])
                        a[j + length] = MLDSAField.montgomeryReduce(zeta &* Int64(t &- a[j + length]))
                    }
                    start += 2 * length
                }
                length <<= 1
            }
            for j in 0..<256 { a[j] = MLDSAField.montgomeryReduce(scale &* Int64(a[j])) }
        }
    }

    /// The pointwise product of two NTT-domain polynomials, times 2⁻³² (Montgomery).
    static func pointwise(_ x: MLDSAPolynomial, _ y: MLDSAPolynomial) -> MLDSAPolynomial {
        var result = MLDSAPolynomial()
        for i in 0..<256 { result.c[i] = MLDSAField.montgomeryReduce(Int64(x.c[i]) &* Int64(y.c[i])) }
        return result
    }

    static func + (x: MLDSAPolynomial, y: MLDSAPolynomial) -> MLDSAPolynomial {
        var result = x
        for i in 0..<256 { result.c[i] = x.c[i] &+ y.c[i] }
        return result
    }

    static func - (x: MLDSAPolynomial, y: MLDSAPolynomial) -> MLDSAPolynomial {
        var result = x
        for i in 0..<256 { result.c[i] = x.c[i] &- y.c[i] }
        return result
    }

    /// Every coefficient reduced to [0, q).
    mutating func freeze() {
        for i in 0..<256 { c[i] = MLDSAField.freeze(c[i]) }
    }

    /// Every coefficient reduced to (−6283009, 6283009).
    mutating func reduce() {
        for i in 0..<256 { c[i] = MLDSAField.reduce32(c[i]) }
    }

    /// Whether some coefficient, taken mod q and centred in (−q/2, q/2], has |a| ≥ bound (FIPS 204's
    /// ‖·‖∞ check). Looks at every coefficient whatever it finds (no early exit), and never branches
    /// on a coefficient or its sign. Any representative with |a| < 2^31 − 2^22 will do.
    func exceedsNorm(_ bound: Int32) -> Bool {
        var exceeds: Int32 = 0
        for coefficient in c {
            let value = MLDSAField.freeze(coefficient)
            // Centre: subtract q from values above (q − 1)/2, without a branch.
            var t = value &- (((MLDSAField.q - 1) / 2 &- value) >> 31 & MLDSAField.q)
            t = t &- ((t >> 31) & (t &+ t)) // |t|
            exceeds |= (bound &- 1 &- t) >> 31
        }
        return exceeds != 0
    }
}
