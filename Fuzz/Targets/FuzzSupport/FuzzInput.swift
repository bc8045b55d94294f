import Glibc

/// A fuzzer's bytes read as a script: single bytes, fixed-size fields and length-prefixed
/// records. Reading past the end gives zeros / nil, never traps.
public struct FuzzInput {
    public let bytes: [UInt8]
    public private(set) var offset = 0

    public init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    }

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { offset >= bytes.count }
    public var remaining: Int { max(0, bytes.count - offset) }

    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }

    public mutating func uint32() -> UInt32 { UInt32(uint16()) << 16 | UInt32(uint16()) }

    /// Up to `count` bytes (fewer at the end).
    public mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = end }
        return offset < end ? Array(bytes[offset..<end]) : []
    }

    /// A record: a 2-byte big-endian length, then that many bytes (cut at the end); nil at the end.
    public mutating func record() -> [UInt8]? {
        guard !isAtEnd else { return nil }
        return take(Int(uint16()))
    }

    public mutating func rest() -> [UInt8] { take(remaining) }
}

/// An invariant of the code under test: when it fails the input is a finding, so stop the way
/// libFuzzer records a crash (abort, with the reason on stderr).
public func invariant(_ condition: @autoclosure () -> Bool, _ reason: @autoclosure () -> String,
                      file: StaticString = #fileID, line: UInt = #line) {
    guard !condition() else { return }
    let text = Array("INVARIANT VIOLATED (\(file):\(line)): \(reason())\n".utf8)
    _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    abort()
}

/// Whether `needle` (non-empty) occurs in `haystack`. libc's memchr and memcmp, not a Swift
/// byte loop: the harness is instrumented like the code under test, and a loop over every
/// response cost a tenth of an input's time in comparison callbacks.
public func occurs(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
    guard let first = needle.first, needle.count <= haystack.count else { return false }
    return haystack.withUnsafeBytes { hay in
        needle.withUnsafeBytes { pattern in
            guard let base = hay.baseAddress, let wanted = pattern.baseAddress else { return false }
            var start = 0
            let last = hay.count - pattern.count
            while start <= last, let hit = memchr(base + start, Int32(first), last - start + 1) {
                if memcmp(hit, wanted, pattern.count) == 0 { return true }
                start = base.distance(to: UnsafeRawPointer(hit)) + 1
            }
            return false
        }
    }
}

public func hex(_ bytes: [UInt8]) -> String {
    bytes.map { b in String(b, radix: 16).count == 1 ? "0" + String(b, radix: 16) : String(b, radix: 16) }.joined()
}

import FIDOCrypto

/// SHA-256 of a string's UTF-8 (application parameters, RP ID hashes).
public func SHA256Of(_ text: String) -> [UInt8] { SHA256.hash(Array(text.utf8)) }
