import FIDOCrypto
@testable import KeySealing
import XCTest

/// master.key's sealed record (MasterKeySeal.Sealed), on its own: what is written decodes back,
/// the method is bound to the key, and malformed fields are named.
final class SealedMasterKeyTests: XCTestCase {
    /// The TPM and keyring records (their methods are tested against swtpm in TPMSealTests, and against
    /// gnome-keyring in the socket suite): each decodes to what was written, and the method is
    /// bound to the sealed key — the same bytes relabelled as another method do not open.
    func testTPMAndKeyringRecordsRoundTripAndBindTheirMethod() throws {
        let key = SecretBytes(randomCount: 32), wrapping = SecretBytes(randomCount: 32)
        let blob = TPMSeal.Blob(publicArea: [1, 2, 3], privateArea: [4, 5, 6, 7], pcrs: [0, 7],
                                storageKeyName: [0x00, 0x0B] + Array(repeating: 0x5A, count: 32))
        let unpinned = TPMSeal.Blob(publicArea: [1, 2, 3], privateArea: [4, 5, 6, 7], pcrs: [0, 7])   // a record of 2026-12-02
        let path = "/x/master.key"
        for kind in [MasterKeySeal.Sealed.Wrapping.tpm(blob), .tpm(unpinned), .keyring(item: String(repeating: "ab", count: 16))] {
            let record = try MasterKeySeal.Sealed.seal(key, under: wrapping, wrapping: kind)
            let decoded = try MasterKeySeal.Sealed(decoding: record.encoded(), path: path)
            XCTAssertEqual(decoded.wrapping, kind)
            XCTAssertEqual(decoded.open(under: wrapping)?.copyBytes(), key.copyBytes())
            XCTAssertNil(decoded.open(under: SecretBytes(randomCount: 32)), "another wrapping key opens nothing")
            var relabelled = decoded
            relabelled.wrapping = kind.method == "tpm" ? .keyring(item: String(repeating: "cd", count: 16)) : .tpm(blob)
            XCTAssertNil(relabelled.open(under: wrapping), "a record relabelled as another method does not open")
        }
        XCTAssertEqual(try MasterKeySeal.Sealed(decoding: MasterKeySeal.Sealed.seal(key, under: wrapping, wrapping: .tpm(blob))
            .encoded(), path: path).state, .sealedWithTPM(pcrs: [0, 7], pinned: true))
        XCTAssertEqual(try MasterKeySeal.Sealed(decoding: MasterKeySeal.Sealed.seal(key, under: wrapping, wrapping: .tpm(unpinned))
            .encoded(), path: path).state, .sealedWithTPM(pcrs: [0, 7], pinned: false))
        XCTAssertNil(MasterKeySeal.State.sealedWithTPM(pcrs: [], pinned: true).weakness)
        XCTAssertTrue(MasterKeySeal.State.sealedWithTPM(pcrs: [], pinned: false).weakness?.contains("latchkey store seal --tpm") == true)
        // Malformed fields are named, not trapped on.
        var bad = try MasterKeySeal.Sealed.seal(key, under: wrapping, wrapping: .keyring(item: "../../not-hex"))
        XCTAssertThrowsError(try MasterKeySeal.Sealed(decoding: bad.encoded(), path: path)) { error in
            XCTAssertEqual(error as? SealError, .corrupt("\(path) is a keyring-sealed master key with a missing or malformed item name"))
        }
        bad.wrapping = .tpm(TPMSeal.Blob(publicArea: [1], privateArea: [2], pcrs: [24]))
        XCTAssertThrowsError(try MasterKeySeal.Sealed(decoding: bad.encoded(), path: path)) { error in
            XCTAssertEqual(error as? SealError, .corrupt("\(path) is a TPM-sealed master key with missing or malformed fields"))
        }
        bad.wrapping = .tpm(TPMSeal.Blob(publicArea: [1], privateArea: [2], pcrs: [7], storageKeyName: [0x0B]))
        XCTAssertThrowsError(try MasterKeySeal.Sealed(decoding: bad.encoded(), path: path)) { error in
            XCTAssertEqual(error as? SealError, .corrupt("\(path) is a TPM-sealed master key with a malformed storage key name"))
        }
    }
}
