import Authenticator
import FIDOCrypto
import Glibc

/// The plaintext inside every sealed blob: a small versioned tag-length-value format.
///
/// ```
/// 0x01                      format version
/// kind                      RecordKind (a credential, an RP, device secrets, …)
/// repeated:
///   tag      UInt8          field number, per kind (see the `…Field` enums)
///   length   UInt32 BE      byte count of value (≤ SealedRecord.maximumSize)
///   value    length bytes   integers Int64 BE; strings UTF-8; booleans one byte 0/1
/// ```
/// An absent field is nil; readers skip tags they do not know (a later version may add fields)
/// and reject duplicates, truncation, an unknown format version or the wrong kind.
enum SealedRecord {
    static let formatVersion: UInt8 = 1
    /// The largest plaintext the reader accepts (certificates are the biggest fields).
    static let maximumSize = 1 << 20

    /// An integer as the records (and row bindings) write it: 8 bytes, big-endian.
    static func bigEndian(_ value: Int64) -> [UInt8] {
        let bits = UInt64(bitPattern: value)
        return (0..<8).map { UInt8((bits >> (56 - 8 * UInt64($0))) & 0xFF) }
    }
}

/// What a sealed record holds; checked on read so that one kind is never parsed as another.
enum RecordKind: UInt8 {
    case residentCredential = 1
    case relyingParty = 2
    case deviceSecrets = 3
    case pinState = 4
    case setting = 5
    case keyCheck = 6
    case signalJournalEntry = 7
}

/// Builds a record; `RowSealer.seal` wipes `bytes` once it is sealed.
struct RecordWriter {
    private(set) var bytes: [UInt8]

    init(kind: RecordKind) {
        bytes = [SealedRecord.formatVersion, kind.rawValue]
        // Room for any record without reallocating: a reallocation would free a buffer
        // holding secret plaintext without wiping it.
        bytes.reserveCapacity(4096)
    }

    mutating func append(_ tag: UInt8, bytes value: UnsafeRawBufferPointer) {
        reserve(5 + value.count)
        bytes.append(tag)
        // Byte by byte: an array literal here was an allocation per field.
        let count = UInt32(value.count)
        bytes.append(UInt8(count >> 24)); bytes.append(UInt8((count >> 16) & 0xFF))
        bytes.append(UInt8((count >> 8) & 0xFF)); bytes.append(UInt8(count & 0xFF))
        bytes.append(contentsOf: value)
    }

    mutating func append(_ tag: UInt8, bytes value: [UInt8]?) {
        guard let value else { return }
        value.withUnsafeBytes { append(tag, bytes: $0) }
    }

    mutating func append(_ tag: UInt8, secret value: SecretBytes?) {
        guard let value else { return }
        value.withUnsafeBytes { append(tag, bytes: $0) }
    }

    mutating func append(_ tag: UInt8, string value: String?) {
        guard let value else { return }
        let appended: Void? = value.utf8.withContiguousStorageIfAvailable { append(tag, bytes: UnsafeRawBufferPointer($0)) }
        if appended == nil { append(tag, bytes: Array(value.utf8)) }
    }

    mutating func append(_ tag: UInt8, integer value: Int64?) {
        guard let value else { return }
        withUnsafeBytes(of: UInt64(bitPattern: value).bigEndian) { append(tag, bytes: $0) }
    }

    mutating func append(_ tag: UInt8, bool value: Bool) {
        withUnsafeBytes(of: UInt8(value ? 1 : 0)) { append(tag, bytes: $0) }
    }

    /// A record larger than the room reserved (a planted RSA-4096 key with long names) moves to
    /// a larger buffer here, and the old one is wiped before it is freed, never by Array's growth.
    private mutating func reserve(_ extra: Int) {
        guard bytes.count + extra > bytes.capacity else { return }
        var grown: [UInt8] = []
        grown.reserveCapacity(Swift.max(2 * bytes.capacity, bytes.count + extra))
        grown.append(contentsOf: bytes)
        bytes.wipe()
        bytes = grown
    }
}

/// Parses a record: total (every input gives a reader or `.corrupt`), bounded by the input.
struct RecordReader {
    private let bytes: [UInt8]
    /// (tag, range) in record order. A record has a dozen fields, so a linear search beats a
    /// Dictionary, whose hashing and allocation were most of a row's decoding time (perf).
    private var fields: [(tag: UInt8, range: Range<Int>)] = []
    /// Names the record in error messages (a table name; never content).
    private let context: String

    init(_ bytes: [UInt8], kind: RecordKind, context: String) throws(StoreError) {
        self.bytes = bytes
        self.context = context
        guard bytes.count <= SealedRecord.maximumSize else { throw .corrupt("\(context): record too large") }
        guard bytes.count >= 2 else { throw .corrupt("\(context): record truncated") }
        guard bytes[0] == SealedRecord.formatVersion else {
            throw .corrupt("\(context): unknown record format \(bytes[0])")
        }
        guard bytes[1] == kind.rawValue else { throw .corrupt("\(context): wrong record kind \(bytes[1])") }
        var offset = 2
        var seen = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))   // a bit per tag, for duplicates
        fields.reserveCapacity(16)
        while offset < bytes.count {
            guard bytes.count - offset >= 5 else { throw .corrupt("\(context): field header truncated") }
            let tag = bytes[offset]
            let length = Int(bytes[offset + 1]) << 24 | Int(bytes[offset + 2]) << 16
                | Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
            offset += 5
            guard length <= bytes.count - offset else { throw .corrupt("\(context): field \(tag) truncated") }
            let bit = UInt64(1) << UInt64(tag & 63)
            let alreadySeen: Bool
            switch tag >> 6 {
            case 0: alreadySeen = seen.0 & bit != 0; seen.0 |= bit
            case 1: alreadySeen = seen.1 & bit != 0; seen.1 |= bit
            case 2: alreadySeen = seen.2 & bit != 0; seen.2 |= bit
            default: alreadySeen = seen.3 & bit != 0; seen.3 |= bit
            }
            guard !alreadySeen else { throw .corrupt("\(context): duplicate field \(tag)") }
            fields.append((tag, offset..<(offset + length)))
            offset += length
        }
    }

    private func range(_ tag: UInt8) -> Range<Int>? {
        for field in fields where field.tag == tag { return field.range }
        return nil
    }

    func bytes(_ tag: UInt8) -> [UInt8]? {
        range(tag).map { Array(bytes[$0]) }
    }

    func requiredBytes(_ tag: UInt8, _ name: String) throws(StoreError) -> [UInt8] {
        guard let value = bytes(tag) else { throw .corrupt("\(context): missing \(name)") }
        return value
    }

    /// Copies the field straight into `SecretBytes` (the caller wipes the reader's buffer).
    func secret(_ tag: UInt8) -> SecretBytes? {
        guard let range = range(tag) else { return nil }
        var value = Array(bytes[range])   // uniquely owned, so the wipe hits this very buffer
        defer { wipe(&value) }
        return SecretBytes(value)         // SecretBytes copies into its own wiped-on-release buffer
    }

    func requiredSecret(_ tag: UInt8, _ name: String) throws(StoreError) -> SecretBytes {
        guard let value = secret(tag) else { throw .corrupt("\(context): missing \(name)") }
        return value
    }

    func string(_ tag: UInt8) throws(StoreError) -> String? {
        guard let range = range(tag) else { return nil }
        guard let value = String(validating: bytes[range], as: UTF8.self) else {
            throw .corrupt("\(context): field \(tag) is not UTF-8")
        }
        return value
    }

    func requiredString(_ tag: UInt8, _ name: String) throws(StoreError) -> String {
        guard let value = try string(tag) else { throw .corrupt("\(context): missing \(name)") }
        return value
    }

    func integer(_ tag: UInt8) throws(StoreError) -> Int64? {
        guard let range = range(tag) else { return nil }
        guard range.count == 8 else { throw .corrupt("\(context): field \(tag) is not an integer") }
        var bits: UInt64 = 0
        for byte in bytes[range] { bits = bits << 8 | UInt64(byte) }
        return Int64(bitPattern: bits)
    }

    func requiredInteger(_ tag: UInt8, _ name: String) throws(StoreError) -> Int64 {
        guard let value = try integer(tag) else { throw .corrupt("\(context): missing \(name)") }
        return value
    }

    func bool(_ tag: UInt8) throws(StoreError) -> Bool? {
        guard let range = range(tag) else { return nil }
        guard range.count == 1, bytes[range.lowerBound] <= 1 else {
            throw .corrupt("\(context): field \(tag) is not a boolean")
        }
        return bytes[range.lowerBound] == 1
    }
}

/// Overwrites a buffer that held secret plaintext before it is released (best effort: Swift
/// arrays may have been copied before; SecretBytes is the real home of long-lived secrets).
func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
        guard let base = raw.baseAddress else { return }
        // explicit_bzero: unlike memset, never elided as a dead store.
        explicit_bzero(base, raw.count)
    }
    bytes.removeAll()
}
