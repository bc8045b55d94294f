import CTAP
import FIDOCrypto

/// A PIN as the user typed it: UTF-8 bytes kept in `SecretBytes`, never in a String, a log line
/// or argv. CTAP 2.1 §6.5.1: at least minPINLength Unicode code points (default 4), at most 63
/// bytes; sent padded with zeros to 64 bytes, so it cannot contain a zero byte itself.
public struct PIN: Sendable {
    public static let defaultMinimumLength = 4
    public static let maximumByteLength = 63
    static let paddedLength = 64

    let bytes: SecretBytes
    /// Unicode code points.
    public let length: Int

    /// Takes the bytes and wipes the caller's array. Not UTF-8, empty or containing 0x00 is a `Problem`.
    public init(consuming utf8: inout [UInt8]) throws(Problem) {
        defer { utf8.wipe() }
        guard !utf8.isEmpty else { throw .empty }
        guard !utf8.contains(0) else { throw .containsZeroByte }
        guard let codePoints = PINText.codePointCount(ofUTF8: utf8) else { throw .notUTF8 }
        length = codePoints
        bytes = SecretBytes(utf8)
    }

    public var byteCount: Int { bytes.count }

    /// Meets a key's policy (§6.5.1).
    public func check(minimumLength: Int) throws(Problem) {
        guard length >= minimumLength else { throw .tooShort(minimum: minimumLength, length: length) }
        guard bytes.count <= Self.maximumByteLength else { throw .tooLong(bytes: bytes.count) }
    }

    /// The PIN padded with 0x00 to 64 bytes (newPinEnc's plaintext). The caller wipes it.
    func paddedBytes() -> [UInt8] {
        var padded: [UInt8] = []
        padded.reserveCapacity(Swift.max(Self.paddedLength, bytes.count))   // no reallocation leaves a copy behind
        bytes.append(to: &padded)
        padded += repeatElement(0, count: Swift.max(0, Self.paddedLength - padded.count))
        return padded
    }

    /// LEFT(SHA-256(PIN), 16): what pinHashEnc carries and what a key stores.
    public func leftHash() -> [UInt8] {
        var digest = bytes.withUnsafeBytes { FIDOCrypto.SHA256.hash($0) }
        defer { digest.wipe() }
        return Array(digest[..<16])
    }

    public enum Problem: Error, Equatable, Sendable {
        case empty
        case containsZeroByte
        case notUTF8
        case tooShort(minimum: Int, length: Int)
        case tooLong(bytes: Int)
        case mismatch

        public var message: String {
            switch self {
            case .empty: "the PIN is empty"
            case .containsZeroByte: "the PIN contains a zero byte, which CTAP cannot carry"
            case .notUTF8: "the PIN is not valid UTF-8"
            case let .tooShort(minimum, length):
                "the PIN is too short: the key needs at least \(minimum) characters, this one has \(length)"
            case .tooLong(let bytes): "the PIN is too long: at most 63 bytes of UTF-8, this one has \(bytes)"
            case .mismatch: "the two new PINs differ"
            }
        }
    }
}
