import Glibc

/// A byte string (a credential ID, an RP ID hash) as a dictionary key. `[UInt8]`'s own
/// `hash(into:)` feeds the hasher one byte at a time (about 15 instructions a byte: a 64-byte
/// credential ID cost 1,000 per lookup, measured with callgrind) and its `==` compares element by
/// element; this key hashes the bytes in one pass and compares them eight at a time.
public struct ByteKey: Hashable, Sendable {
    public let bytes: [UInt8]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The length and at most the first 16 bytes: every key this project makes one of is a hash
    /// or a random ID (cred_key, an RP ID hash, a credential ID), so 16 bytes tell them apart;
    /// equality still compares every byte. A table filled with keys somebody chose (credential
    /// IDs from an allowList) must be bounded, as the read cache is: equal prefixes only make
    /// lookups slower there.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        bytes.withUnsafeBytes { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0.prefix(16))) }
    }

    public static func == (a: ByteKey, b: ByteKey) -> Bool {
        sameBytes(a.bytes, b.bytes)
    }

    /// `a == b` eight bytes at a time. Neither side may be secret: not FIDOCrypto's
    /// `constantTimeEquals`, whose CRYPTO_memcmp goes byte by byte on purpose (measured: 600
    /// instructions more per non-resident getAssertion).
    public static func sameBytes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                var offset = 0
                while offset + 8 <= x.count {
                    guard x.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                            == y.loadUnaligned(fromByteOffset: offset, as: UInt64.self) else { return false }
                    offset += 8
                }
                while offset < x.count {
                    guard x[offset] == y[offset] else { return false }
                    offset += 1
                }
                return true
            }
        }
    }

    /// The same UTF-8 bytes (not String's `==`, which equates canonically equivalent text whose
    /// bytes, and so whose hash, differ), compared in place where the strings allow it.
    public static func sameUTF8(_ a: String, _ b: String) -> Bool {
        let x = a.utf8, y = b.utf8
        guard x.count == y.count else { return false }
        let inPlace = x.withContiguousStorageIfAvailable { x in
            y.withContiguousStorageIfAvailable { y in
                x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0   // counts are equal
            }
        }
        return (inPlace ?? nil) ?? x.elementsEqual(y)
    }
}
