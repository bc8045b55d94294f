/// FIPS 204's rounding (§7.4) and encodings (§7.1–7.2): Power2Round, Decompose, hints, and the
/// bit packing of keys and signatures (values little-endian, least significant bit first).
enum MLDSAEncoding {
    static let droppedBits = 13

    /// Packs each value's low `bits` bits, least significant first, into bytes.
    static func pack(_ values: [Int32], bits: Int, into output: inout [UInt8]) {
        var accumulator: UInt64 = 0
        var held = 0
        for value in values {
            accumulator |= UInt64(UInt32(bitPattern: value) & UInt32((1 << bits) - 1)) << held
            held += bits
            while held >= 8 {
                output.append(UInt8(truncatingIfNeeded: accumulator))
                accumulator >>= 8
                held -= 8
            }
        }
        precondition(held == 0, "ML-DSA packs whole bytes")
    }

    /// 256 values of `bits` bits each from `bytes` (exactly 32 · bits of them).
    static func unpack(_ bytes: ArraySlice<UInt8>, bits: Int) -> [Int32] {
        var values = [Int32](repeating: 0, count: 256)
        var accumulator: UInt64 = 0
        var held = 0
        var index = 0
        for byte in bytes {
            accumulator |= UInt64(byte) << held
            held += 8
            while held >= bits, index < 256 {
                values[index] = Int32(truncatingIfNeeded: accumulator & ((1 << UInt64(bits)) - 1))
                accumulator >>= UInt64(bits)
                held -= bits
                index += 1
            }
        }
        accumulator = 0
        return values
    }

    /// Power2Round (Algorithm 35) of a polynomial with coefficients in [0, q): (t1, t0) with
    /// t = t1 · 2^13 + t0, t0 in (−2^12, 2^12].
    static func power2Round(_ t: MLDSAPolynomial) -> (MLDSAPolynomial, MLDSAPolynomial) {
        var high = MLDSAPolynomial(), low = MLDSAPolynomial()
        for i in 0..<256 {
            let a = t.c[i]
            let a1 = (a &+ (1 << (droppedBits - 1)) &- 1) >> droppedBits
            high.c[i] = a1
            low.c[i] = a &- (a1 << droppedBits)
        }
        return (high, low)
    }

    /// Decompose (Algorithm 36) of a in [0, q): (r1, r0), a = r1 · 2γ2 + r0 mod q, r0 centred, with
    /// the standard's wrap at q − 1. Multiplications and shifts only (no division by 2γ2).
    @inline(__always)
    static func decompose(_ a: Int32, _ p: MLDSAParameterSet) -> (high: Int32, low: Int32) {
        var a1 = (a &+ 127) >> 7
        if p.gamma2 == (MLDSAField.q - 1) / 32 {
            a1 = (a1 &* 1025 &+ (1 << 21)) >> 22
            a1 &= 15
        } else {
            a1 = (a1 &* 11275 &+ (1 << 23)) >> 24
            a1 ^= ((43 &- a1) >> 31) & a1
        }
        var a0 = a &- a1 &* 2 &* p.gamma2
        a0 &-= (((MLDSAField.q - 1) / 2 &- a0) >> 31) & MLDSAField.q
        return (a1, a0)
    }

    /// HighBits of every coefficient (in [0, q)).
    static func highBits(_ w: MLDSAPolynomial, _ p: MLDSAParameterSet) -> MLDSAPolynomial {
        MLDSAPolynomial(coefficients: w.c.map { decompose($0, p).high })
    }

    /// Whether some |LowBits| ≥ bound; every coefficient is looked at.
    static func lowBitsExceed(_ w: MLDSAPolynomial, _ bound: Int32, _ p: MLDSAParameterSet) -> Bool {
        var exceeds: Int32 = 0
        for a in w.c {
            var low = decompose(a, p).low
            low = low &- ((low >> 31) & (low &+ low))
            exceeds |= (bound &- 1 &- low) >> 31
        }
        return exceeds != 0
    }

    /// MakeHint (Algorithm 39) coefficient by coefficient: whether HighBits(r) ≠ HighBits(r′), where
    /// `plus` is r = w − cs2 + ct0 and `minus` is r′ = r − ct0 (both in [0, q)).
    static func makeHint(plus: MLDSAPolynomial, minus: MLDSAPolynomial, _ p: MLDSAParameterSet) -> [Bool] {
        (0..<256).map { decompose(plus.c[$0], p).high != decompose(minus.c[$0], p).high }
    }

    /// UseHint (Algorithm 40).
    static func useHint(_ hint: [Bool], _ r: MLDSAPolynomial, _ p: MLDSAParameterSet) -> MLDSAPolynomial {
        let m: Int32 = p.gamma2 == (MLDSAField.q - 1) / 32 ? 16 : 44
        return MLDSAPolynomial(coefficients: (0..<256).map { i in
            let (high, low) = decompose(r.c[i], p)
            guard hint[i] else { return high }
            return low > 0 ? (high + 1) % m : (high - 1 + m) % m
        })
    }

    /// w1Encode (Algorithm 28).
    static func encodeW1(_ w1: [MLDSAPolynomial], _ p: MLDSAParameterSet) -> [UInt8] {
        var output = [UInt8]()
        output.reserveCapacity(32 * p.w1Bits * w1.count)
        for polynomial in w1 { pack(polynomial.c, bits: p.w1Bits, into: &output) }
        return output
    }

    /// pkEncode (Algorithm 22): ρ ‖ t1 in 10-bit values.
    static func encodePublicKey(rho: [UInt8], t1: [MLDSAPolynomial]) -> [UInt8] {
        var output = rho
        for polynomial in t1 { pack(polynomial.c, bits: 10, into: &output) }
        return output
    }

    /// pkDecode (Algorithm 23), of a key of the right length.
    static func decodePublicKey(_ key: [UInt8], _ p: MLDSAParameterSet) -> (rho: [UInt8], t1: [MLDSAPolynomial]) {
        let t1 = (0..<p.k).map { i in MLDSAPolynomial(coefficients: unpack(key[(32 + 320 * i)..<(32 + 320 * (i + 1))], bits: 10)) }
        return (Array(key[0..<32]), t1)
    }

    /// skEncode (Algorithm 24), of s1, s2 and t0 in their normal (not NTT) form.
    static func encodePrivateKey(rho: [UInt8], key: [UInt8], tr: [UInt8], s1: [MLDSAPolynomial], s2: [MLDSAPolynomial],
                                 t0: [MLDSAPolynomial], _ p: MLDSAParameterSet) -> [UInt8] {
        var output = rho + key + tr
        for polynomial in s1 + s2 { pack(polynomial.c.map { p.eta - $0 }, bits: p.etaBits, into: &output) }
        for polynomial in t0 { pack(polynomial.c.map { (1 << 12) - $0 }, bits: 13, into: &output) }
        return output
    }

    /// sigEncode (Algorithm 26): c̃ ‖ z (γ1 − z in 1 + bitlen(γ1 − 1) bits) ‖ HintBitPack(h).
    static func encodeSignature(commitmentHash: [UInt8], z: [MLDSAPolynomial], hint: [[Bool]], _ p: MLDSAParameterSet) -> [UInt8] {
        var output = commitmentHash
        output.reserveCapacity(p.signatureByteCount)
        for polynomial in z {
            pack(polynomial.c.map { p.gamma1 - centred($0) }, bits: p.gamma1Bits, into: &output)
        }
        var positions = [UInt8](repeating: 0, count: p.omega + p.k)
        var index = 0
        for (row, bits) in hint.enumerated() {
            for (j, set) in bits.enumerated() where set {
                positions[index] = UInt8(j)
                index += 1
            }
            positions[p.omega + row] = UInt8(index)
        }
        return output + positions
    }

    /// sigDecode (Algorithm 27) with HintBitUnpack's checks (Algorithm 21): positions strictly
    /// increasing within a row, counts non-decreasing and at most ω, unused bytes zero. nil when
    /// any fails or the length is wrong.
    static func decodeSignature(_ signature: [UInt8], _ p: MLDSAParameterSet)
        -> (commitmentHash: [UInt8], z: [MLDSAPolynomial], hint: [[Bool]])? {
        guard signature.count == p.signatureByteCount else { return nil }
        let hashCount = p.commitmentHashByteCount
        let zBytes = 32 * p.gamma1Bits
        let z = (0..<p.l).map { i in
            MLDSAPolynomial(coefficients: unpack(signature[(hashCount + zBytes * i)..<(hashCount + zBytes * (i + 1))],
                                                 bits: p.gamma1Bits).map { p.gamma1 - $0 })
        }
        let hintStart = hashCount + zBytes * p.l
        let positions = Array(signature[hintStart...])
        var hint = [[Bool]](repeating: [Bool](repeating: false, count: 256), count: p.k)
        var index = 0
        for row in 0..<p.k {
            let end = Int(positions[p.omega + row])
            guard end >= index, end <= p.omega else { return nil }
            let first = index
            while index < end {
                if index > first, positions[index - 1] >= positions[index] { return nil }
                hint[row][Int(positions[index])] = true
                index += 1
            }
        }
        guard positions[index..<p.omega].allSatisfy({ $0 == 0 }) else { return nil }
        return (Array(signature[0..<hashCount]), z, hint)
    }

    /// The representative in (−q/2, q/2] of a value in [0, q).
    @inline(__always)
    static func centred(_ a: Int32) -> Int32 {
        a &- (((MLDSAField.q - 1) / 2 &- a) >> 31 & MLDSAField.q)
    }
}
