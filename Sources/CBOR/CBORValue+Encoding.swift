// Canonical encoder. Output is always in CTAP2 canonical form
// (CTAP 2.1 §8 "CTAP2 canonical CBOR encoding form", i.e. RFC 7049 §3.9):
// shortest arguments, definite lengths only, map keys sorted by their encoded
// bytes (shorter first, then bytewise), no tags.

extension CBORValue {
    /// The canonical encoding of this value.
    public func encoded() -> [UInt8] {
        var buffer: [UInt8] = []
        encode(into: &buffer)
        return buffer
    }

    /// Appends the canonical encoding of this value to `buffer`.
    public func encode(into buffer: inout [UInt8]) {
        switch self {
        case .unsignedInt(let n):
            CBORValue.appendHead(major: 0, argument: n, into: &buffer)
        case .negativeInt(let n):
            CBORValue.appendHead(major: 1, argument: n, into: &buffer)
        case .byteString(let bytes):
            CBORValue.appendHead(major: 2, argument: UInt64(bytes.count), into: &buffer)
            buffer.append(contentsOf: bytes)
        case .textString(let text):
            let utf8 = text.utf8
            CBORValue.appendHead(major: 3, argument: UInt64(utf8.count), into: &buffer)
            buffer.append(contentsOf: utf8)
        case .array(let elements):
            CBORValue.appendHead(major: 4, argument: UInt64(elements.count), into: &buffer)
            for element in elements { element.encode(into: &buffer) }
        case .map(let entries):
            CBORValue.appendMap(entries, into: &buffer)
        case .boolean(let b):
            buffer.append(b ? 0xf5 : 0xf4)
        case .null:
            buffer.append(0xf6)
        case .undefined:
            buffer.append(0xf7)
        case .simple(let v):
            // RFC 8949 §3.3: values < 24 live in the initial byte, others use f8 xx.
            // (20...23 coincide with false/true/null/undefined; 24...31 are not
            // well-formed and should never be constructed.)
            if v < 24 {
                buffer.append(0xe0 | v)
            } else {
                buffer.append(0xf8)
                buffer.append(v)
            }
        case .float(let d):
            CBORValue.appendFloat(d, into: &buffer)
        }
    }

    /// Initial byte plus argument in its shortest form (RFC 8949 §4.2.1 rule 1,
    /// required by CTAP2 canonical form). Public for encoders that write a known shape directly.
    public static func appendHead(major: UInt8, argument: UInt64, into buffer: inout [UInt8]) {
        let mt = major << 5
        if argument < 24 {
            buffer.append(mt | UInt8(argument))
        } else if argument <= 0xff {
            buffer.append(mt | 24)
            buffer.append(UInt8(argument))
        } else if argument <= 0xffff {
            buffer.append(mt | 25)
            appendBigEndian(argument, byteCount: 2, into: &buffer)
        } else if argument <= 0xffff_ffff {
            buffer.append(mt | 26)
            appendBigEndian(argument, byteCount: 4, into: &buffer)
        } else {
            buffer.append(mt | 27)
            appendBigEndian(argument, byteCount: 8, into: &buffer)
        }
    }

    static func appendBigEndian(_ value: UInt64, byteCount: Int, into buffer: inout [UInt8]) {
        var shift = (byteCount - 1) * 8
        while shift >= 0 {
            buffer.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            shift -= 8
        }
    }

    /// RFC 8949 §4.2.1 / CTAP2 canonical: keys sorted by encoded bytes, shorter first.
    /// Every key is encoded once into one scratch buffer (not one array per key: this runs for
    /// every request and response, and the allocations showed in the profile).
    static func appendMap(_ entries: [CBORValue: CBORValue], into buffer: inout [UInt8]) {
        appendHead(major: 5, argument: UInt64(entries.count), into: &buffer)
        if entries.count < 2 {
            for (key, value) in entries {
                key.encode(into: &buffer)
                value.encode(into: &buffer)
            }
            return
        }
        var keys: [UInt8] = []
        keys.reserveCapacity(entries.count * 8)
        var order: [(start: Int, end: Int, value: CBORValue)] = []
        order.reserveCapacity(entries.count)
        for (key, value) in entries {
            let start = keys.count
            key.encode(into: &keys)
            order.append((start, keys.count, value))
        }
        // canonicalKeyPrecedes on raw ranges: the generic slice comparison cost more than the
        // rest of encoding a getInfo answer.
        keys.withUnsafeBufferPointer { keys in
            order.sort { a, b in
                let length = a.end - a.start
                if length != b.end - b.start { return length < b.end - b.start }
                var index = 0
                while index < length {
                    let x = keys[a.start + index], y = keys[b.start + index]
                    if x != y { return x < y }
                    index += 1
                }
                return false
            }
        }
        for entry in order {
            buffer.append(contentsOf: keys[entry.start..<entry.end])
            entry.value.encode(into: &buffer)
        }
    }

    /// CTAP2 canonical key order (RFC 7049 §3.9): the shorter encoding sorts
    /// first; equal lengths sort bytewise lexicographically. This puts integers
    /// before text strings and "id" before "type". Note that this differs from
    /// RFC 8949 §4.2.1 plain bytewise order (e.g. "b" before 1000 here).
    static func canonicalKeyPrecedes<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
    where A.Element == UInt8, B.Element == UInt8 {
        if a.count != b.count { return a.count < b.count }
        return a.lexicographicallyPrecedes(b)
    }

    /// Shortest of half/single/double that represents `d` exactly
    /// (RFC 8949 §4.2.2 preferred serialization; NaN as f9 7e00).
    static func appendFloat(_ d: Double, into buffer: inout [UInt8]) {
        if d.isNaN {
            buffer.append(contentsOf: [0xf9, 0x7e, 0x00])
            return
        }
        let single = Float(d)
        guard Double(single).bitPattern == d.bitPattern else {
            buffer.append(0xfb)
            appendBigEndian(d.bitPattern, byteCount: 8, into: &buffer)
            return
        }
        if let half = halfBits(exactly: single) {
            buffer.append(0xf9)
            appendBigEndian(UInt64(half), byteCount: 2, into: &buffer)
        } else {
            buffer.append(0xfa)
            appendBigEndian(UInt64(single.bitPattern), byteCount: 4, into: &buffer)
        }
    }

    /// IEEE 754 binary16 bits for `f` if `f` (not NaN) is exactly representable.
    static func halfBits(exactly f: Float) -> UInt16? {
        let bits = f.bitPattern
        let sign = UInt16(truncatingIfNeeded: (bits >> 16) & 0x8000)
        let exponent = Int((bits >> 23) & 0xff)
        let mantissa = bits & 0x7f_ffff
        if exponent == 0xff {
            return mantissa == 0 ? sign | 0x7c00 : nil      // infinity (NaN handled by caller)
        }
        if exponent == 0 {
            return mantissa == 0 ? sign : nil               // ±0; single subnormals are below half range
        }
        let e = exponent - 127
        if e > 15 || e < -24 { return nil }
        if e >= -14 {
            // Half normal: 10 mantissa bits, so the low 13 single bits must be zero.
            guard mantissa & 0x1fff == 0 else { return nil }
            return sign | UInt16(e + 15) << 10 | UInt16(truncatingIfNeeded: mantissa >> 13)
        }
        // Half subnormal: value = m * 2^-24 with m < 1024.
        let significand = mantissa | 0x80_0000
        let shift = UInt32(-e - 1)                           // 14...23
        guard significand & ((1 << shift) - 1) == 0 else { return nil }
        return sign | UInt16(truncatingIfNeeded: significand >> shift)
    }

    /// Value of IEEE 754 binary16 bits.
    static func doubleFromHalf(_ h: UInt16) -> Double {
        let sign: FloatingPointSign = h & 0x8000 != 0 ? .minus : .plus
        let exponent = Int((h >> 10) & 0x1f)
        let mantissa = Int(h & 0x3ff)
        switch exponent {
        case 0:
            return Double(sign: sign, exponent: -24, significand: Double(mantissa))
        case 31:
            if mantissa != 0 { return .nan }
            return sign == .minus ? -.infinity : .infinity
        default:
            return Double(sign: sign, exponent: exponent - 25, significand: Double(mantissa + 1024))
        }
    }
}
