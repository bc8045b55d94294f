import CBOR

/// The serialized large-blob array (CTAP 2.1 §6.10.1): a CBOR array followed by
/// LEFT(SHA-256(array), 16). Its elements are usually large-blob maps (`LargeBlobEntry`), but a
/// writer keeps whatever else is there: §6.10.3 has clients preserve elements they cannot read.
/// The hash needs SHA-256, which this layer does not have, so callers pass it in.
public struct LargeBlobArray: Sendable, Equatable {
    public var elements: [CBORValue]

    public init(elements: [CBORValue] = []) {
        self.elements = elements
    }

    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case tooShort
        case hashMismatch
        case notAnArray

        public var description: String {
            switch self {
            case .tooShort: "the large-blob array is shorter than its 17-byte minimum"
            case .hashMismatch: "the large-blob array's trailing hash does not match its contents"
            case .notAnArray: "the large-blob array is not one CBOR array"
            }
        }
    }

    /// Parses a serialized array; `hash` is SHA-256.
    public init(serialized bytes: [UInt8], hash: ([UInt8]) -> [UInt8]) throws(Failure) {
        guard bytes.count >= 17 else { throw .tooShort }
        let body = Array(bytes.dropLast(16))
        guard Array(hash(body).prefix(16)) == Array(bytes.suffix(16)) else { throw .hashMismatch }
        guard let value = try? CBORDecoder.decode(body), let elements = value.arrayValue else { throw .notAnArray }
        self.elements = elements
    }

    /// The array as stored: its CBOR encoding and the truncated hash of it.
    public func serialized(hash: ([UInt8]) -> [UInt8]) -> [UInt8] {
        let body = CBORValue.array(elements).encoded()
        return body + hash(body).prefix(16)
    }
}

/// One large-blob map (§6.10.3): a blob compressed with DEFLATE, then sealed with AES-256-GCM
/// under its credential's largeBlobKey, the associated data "blob" ‖ uint64LE(origSize).
public struct LargeBlobEntry: Sendable, Equatable {
    /// ciphertext (0x01): the sealed compressed blob with its 16-byte tag appended.
    public var ciphertext: [UInt8]
    /// nonce (0x02): 12 bytes.
    public var nonce: [UInt8]
    /// origSize (0x03): the blob's length before compression.
    public var originalSize: UInt64

    public init(ciphertext: [UInt8], nonce: [UInt8], originalSize: UInt64) {
        self.ciphertext = ciphertext; self.nonce = nonce; self.originalSize = originalSize
    }

    /// The element as a large-blob map, or nil for anything else (which readers skip).
    public init?(_ value: CBORValue) {
        guard let ciphertext = value[1]?.bytesValue, ciphertext.count >= 16,
              let nonce = value[2]?.bytesValue, nonce.count == 12,
              let originalSize = value[3]?.uint64Value else { return nil }
        self.init(ciphertext: ciphertext, nonce: nonce, originalSize: originalSize)
    }

    public var cborValue: CBORValue {
        .map([1: .byteString(ciphertext), 2: .byteString(nonce), 3: .unsignedInt(originalSize)])
    }

    /// The AEAD's associated data: "blob" ‖ uint64LittleEndian(origSize).
    public var associatedData: [UInt8] {
        Array("blob".utf8) + (0..<8).map { UInt8(truncatingIfNeeded: originalSize >> (8 * $0)) }
    }
}
