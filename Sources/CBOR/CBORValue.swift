/// A single CBOR data item (RFC 8949), restricted to what CTAP2 uses: no tags,
/// no indefinite-length items.
///
/// Equality and hashing follow the *canonical encoding* rather than Swift's
/// default semantics, so that two values compare equal exactly when
/// `encoded()` produces the same bytes:
/// - text strings compare by their UTF-8 bytes (Swift's `String ==` uses
///   Unicode canonical equivalence, which would merge distinct CBOR map keys
///   such as "\u{E9}" and "e\u{301}");
/// - floats compare by bit pattern (so `0.0 != -0.0`), and every NaN equals
///   every other NaN (the encoder writes all NaNs as `f9 7e00`).
public enum CBORValue: Hashable, Sendable {
    /// Major type 0.
    case unsignedInt(UInt64)
    /// Major type 1: the represented integer is `-1 - n`.
    case negativeInt(UInt64)
    /// Major type 2.
    case byteString([UInt8])
    /// Major type 3 (always valid UTF-8).
    case textString(String)
    /// Major type 4.
    case array([CBORValue])
    /// Major type 5.
    case map([CBORValue: CBORValue])
    /// Simple values 20 / 21.
    case boolean(Bool)
    /// Simple value 22.
    case null
    /// Simple value 23.
    case undefined
    /// Other simple values: 0...19 and 32...255. Values 20...23 have their own
    /// cases; 24...31 are not well-formed (RFC 8949 §3.3) and must not be built.
    case simple(UInt8)
    /// Major type 7 floats: decoded from half, single or double precision;
    /// encoded in the shortest of those widths that is exact.
    case float(Double)
}

extension CBORValue {
    public static func == (lhs: CBORValue, rhs: CBORValue) -> Bool {
        switch (lhs, rhs) {
        case let (.unsignedInt(a), .unsignedInt(b)): return a == b
        case let (.negativeInt(a), .negativeInt(b)): return a == b
        case let (.byteString(a), .byteString(b)): return a == b
        case let (.textString(a), .textString(b)): return a.utf8.elementsEqual(b.utf8)
        case let (.array(a), .array(b)): return a == b
        case let (.map(a), .map(b)): return a == b
        case let (.boolean(a), .boolean(b)): return a == b
        case (.null, .null): return true
        case (.undefined, .undefined): return true
        case let (.simple(a), .simple(b)): return a == b
        case let (.float(a), .float(b)):
            return a.bitPattern == b.bitPattern || (a.isNaN && b.isNaN)
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .unsignedInt(let n):
            hasher.combine(0 as UInt8); hasher.combine(n)
        case .negativeInt(let n):
            hasher.combine(1 as UInt8); hasher.combine(n)
        case .byteString(let b):
            hasher.combine(2 as UInt8); hasher.combine(b)
        case .textString(let s):
            hasher.combine(3 as UInt8)
            hasher.combine(s.utf8.count)
            // Native strings hash their UTF-8 storage in one call; bridged ones byte by byte.
            let hashedContiguously = s.utf8.withContiguousStorageIfAvailable {
                hasher.combine(bytes: UnsafeRawBufferPointer($0))
            } != nil
            if !hashedContiguously {
                for byte in s.utf8 { hasher.combine(byte) }
            }
        case .array(let a):
            hasher.combine(4 as UInt8); hasher.combine(a)
        case .map(let m):
            hasher.combine(5 as UInt8); hasher.combine(m)
        case .boolean(let b):
            hasher.combine(6 as UInt8); hasher.combine(b)
        case .null:
            hasher.combine(7 as UInt8)
        case .undefined:
            hasher.combine(8 as UInt8)
        case .simple(let v):
            hasher.combine(9 as UInt8); hasher.combine(v)
        case .float(let d):
            hasher.combine(10 as UInt8)
            hasher.combine(d.isNaN ? UInt64.max : d.bitPattern)
        }
    }
}
