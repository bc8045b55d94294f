import CTAP
import FIDOCrypto

/// A large-blob array being written in fragments (CTAP 2.1 §6.10.2): volatile until its last
/// fragment arrives and the whole array checks out, then stored in one transaction.
struct LargeBlobWrite {
    /// The smallest serialized array: an empty CBOR array (1 byte) and its 16-byte hash.
    static let minimumLength = 17

    /// The length the first fragment announced.
    let expectedLength: Int
    /// What arrived so far.
    private(set) var received: [UInt8] = []

    /// The write a first fragment (offset 0) begins. §6.10.2: it must announce the whole
    /// length (absent → CTAP1_ERR_INVALID_PARAMETER), at most maxSerializedLargeBlobArray
    /// (→ CTAP2_ERR_LARGE_BLOB_STORAGE_FULL) and at least 17 bytes (→ CTAP1_ERR_INVALID_PARAMETER).
    init(announcedLength length: UInt64?, maxLength: Int) throws(CTAP2StatusCode) {
        guard let length else { throw .invalidParameter }
        guard length <= UInt64(maxLength) else { throw .largeBlobStorageFull }
        guard length >= UInt64(Self.minimumLength) else { throw .invalidParameter }
        expectedLength = Int(length)
    }

    /// The offset the next fragment must have: the count of bytes received.
    var expectedNextOffset: Int { received.count }

    /// Whether every announced byte has arrived.
    var isComplete: Bool { received.count == expectedLength }

    /// Adds the next fragment. One that would run past the announced length is
    /// CTAP1_ERR_INVALID_PARAMETER, and the write stays as it was.
    mutating func append(_ fragment: [UInt8]) throws(CTAP2StatusCode) {
        guard received.count + fragment.count <= expectedLength else { throw .invalidParameter }
        received += fragment
    }

    /// The received array, if its last 16 bytes are LEFT(SHA-256(everything before), 16)
    /// (§6.10.2); else CTAP2_ERR_INTEGRITY_FAILURE.
    func verifiedArray() throws(CTAP2StatusCode) -> [UInt8] {
        let body = received.dropLast(16)
        guard constantTimeEquals(Array(SHA256.hash(body).prefix(16)), Array(received.suffix(16))) else {
            throw .integrityFailure
        }
        return received
    }
}
