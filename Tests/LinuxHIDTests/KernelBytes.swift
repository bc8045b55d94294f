/// Hand-built kernel-layout bytes for the codec tests: a zeroed
/// `struct uhid_event` with little-endian fields poked in at offsets taken
/// from <linux/uhid.h> by hand (x86_64 and arm64 are little-endian).
struct KernelBytes {
    var bytes: [UInt8]

    init(type: UInt32, count: Int = 4380) {
        bytes = [UInt8](repeating: 0, count: count)
        put32(type, at: 0)
    }

    mutating func put16(_ value: UInt16, at offset: Int) {
        bytes[offset] = UInt8(value & 0xFF)
        bytes[offset + 1] = UInt8(value >> 8)
    }

    mutating func put32(_ value: UInt32, at offset: Int) {
        for index in 0..<4 { bytes[offset + index] = UInt8((value >> (8 * UInt32(index))) & 0xFF) }
    }

    mutating func put(_ data: [UInt8], at offset: Int) {
        bytes.replaceSubrange(offset..<offset + data.count, with: data)
    }

    static func u16(_ bytes: [UInt8], at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    static func u32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }

    /// A 64-byte report whose bytes are `seed`, `seed + 1`, …
    static func report(_ seed: UInt8) -> [UInt8] {
        (0..<64).map { seed &+ UInt8($0) }
    }
}
