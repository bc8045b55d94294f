import FIDOCrypto
@testable import KeySealing
import Foundation
import XCTest

/// Credential keys made and used inside a TPM (`TPMKeys`, `serve --keys tpm`), against real
/// software TPMs (swtpm): a key signs only in the TPM that made it, what it signs verifies
/// under the public point it reported, and nothing is left loaded but what it keeps on purpose.
final class TPMKeysTests: SoftwareTPMTestCase {
    func testKeyMadeInTheTPMSignsWhatItsPublicKeyVerifies() throws {
        let tpm = try startTPM()
        let keys = try TPMKeys(tcti: tpm.tcti)
        let made = try keys.makeP256Key()
        XCTAssertEqual(made.x.count, 32)
        XCTAssertEqual(made.y.count, 32)
        XCTAssertTrue(keys.holds(blob: made.blob))
        let publicKey = try ECDSA.PublicKey(x: made.x, y: made.y)
        let other = try keys.makeP256Key()
        XCTAssertNotEqual(other.x, made.x, "each key is new")
        for message in [Array("authenticatorData ‖ clientDataHash".utf8), [UInt8](repeating: 0xA5, count: 300)] {
            // Alternating keys: the one kept loaded is replaced, and both still sign.
            let signature = try keys.signature(blob: made.blob, for: message)
            XCTAssertTrue(publicKey.isValidSignature(signature, for: message))
            XCTAssertFalse(publicKey.isValidSignature(signature, for: message + [0]))
            let otherSignature = try keys.signature(blob: other.blob, for: message)
            XCTAssertTrue(try ECDSA.PublicKey(x: other.x, y: other.y).isValidSignature(otherSignature, for: message))
            XCTAssertFalse(publicKey.isValidSignature(otherSignature, for: message))
        }
    }

    func testBlobHoldsNoPrivateKeyInTheClear() throws {
        let tpm = try startTPM()
        let keys = try TPMKeys(tcti: tpm.tcti)
        let made = try keys.makeP256Key()
        let blob = try XCTUnwrap(KeyBlob(decoding: made.blob))
        XCTAssertEqual(blob.storageKeyName, keys.storageKeyName)
        XCTAssertEqual(blob.encoded, made.blob)
        // The private area is the TPM's encryption of the key: it is not a P-256 scalar whose
        // public point is the key's (no 32 bytes of it, anywhere, give that point).
        for start in 0...(blob.privateArea.count - 32) {
            let candidate = SecretBytes(Array(blob.privateArea[start..<start + 32]))
            if let key = try? ECDSA.PrivateKey(secret: candidate, suite: .es256) {
                XCTAssertNotEqual(key.publicKey.x, made.x, "the private key is in the blob in the clear")
            }
        }
    }

    func testAnotherTPMSignsNothing() throws {
        let first = try startTPM(), second = try startTPM()
        let keys = try TPMKeys(tcti: first.tcti)
        let made = try keys.makeP256Key()
        let elsewhere = try TPMKeys(tcti: second.tcti)
        XCTAssertNotEqual(elsewhere.storageKeyName, keys.storageKeyName)
        XCTAssertFalse(elsewhere.holds(blob: made.blob))
        XCTAssertThrowsError(try elsewhere.signature(blob: made.blob, for: [1, 2, 3])) { error in
            guard case let .sealed(text) = error as? SealError else { return XCTFail("\(error)") }
            XCTAssertTrue(text.contains("another TPM"), text)
        }
        // Even with the name rewritten to this TPM's, the key does not load here: its private
        // area is sealed to the first TPM's storage key.
        var forged = try XCTUnwrap(KeyBlob(decoding: made.blob))
        forged.storageKeyName = elsewhere.storageKeyName
        XCTAssertThrowsError(try elsewhere.signature(blob: forged.encoded, for: [1, 2, 3])) { error in
            guard case let .sealed(text) = error as? SealError else { return XCTFail("\(error)") }
            XCTAssertTrue(text.contains("does not load"), text)
        }
        // And the first TPM still signs with it, after a new connection too (the storage key is
        // derived again from the same seed: nothing was made persistent).
        let again = try TPMKeys(tcti: first.tcti)
        let signature = try again.signature(blob: made.blob, for: [1, 2, 3])
        XCTAssertTrue(try ECDSA.PublicKey(x: made.x, y: made.y).isValidSignature(signature, for: [1, 2, 3]))
    }

    func testMalformedBlobsAreCorruptNotACrash() throws {
        let tpm = try startTPM()
        let keys = try TPMKeys(tcti: tpm.tcti)
        let made = try keys.makeP256Key()
        let cases: [[UInt8]] = [[], [1], [2] + made.blob.dropFirst(), Array(made.blob.dropLast()), made.blob + [0],
                                [1, 0, 0, 0, 0, 0, 0]]
        for blob in cases {
            XCTAssertFalse(keys.holds(blob: blob))
            XCTAssertThrowsError(try keys.signature(blob: blob, for: [1])) { error in
                guard case .corrupt = error as? SealError else { return XCTFail("\(blob.count) bytes: \(error)") }
            }
        }
        // A blob that parses and names this TPM but whose areas are damaged does not load.
        var damaged = try XCTUnwrap(KeyBlob(decoding: made.blob))
        damaged.privateArea[damaged.privateArea.count - 1] ^= 0x01
        XCTAssertThrowsError(try keys.signature(blob: damaged.encoded, for: [1]))
    }

    func testNothingIsLeftInTheTPMOnceTheKeysAreGone() throws {
        let tpm = try startTPM()
        do {
            let keys = try TPMKeys(tcti: tpm.tcti)
            let made = try keys.makeP256Key()
            _ = try keys.signature(blob: made.blob, for: [1])
        }
        // swtpm has no resource manager: what TPMKeys did not flush (the storage key, the loaded
        // key, the session) would still be there.
        XCTAssertEqual(try tpm.transientHandles(), 0)
        XCTAssertEqual(try tpm.loadedSessions(), 0)
    }

    func testNoTPMIsAnErrorNamingWhatToDo() {
        XCTAssertThrowsError(try TPMKeys(tcti: "swtpm:host=127.0.0.1,port=9")) { error in
            guard case let .io(text) = error as? SealError else { return XCTFail("\(error)") }
            XCTAssertTrue(text.contains("no TPM answered"), text)
        }
    }

    func testSignaturesAreStrictDER() {
        XCTAssertEqual(TPMKeys.derSignature(r: [0x01] + [UInt8](repeating: 0, count: 31), s: [UInt8](repeating: 0, count: 31) + [0x7F]),
                       [0x30, 0x25, 0x02, 0x20, 0x01] + [UInt8](repeating: 0, count: 31) + [0x02, 0x01, 0x7F])
        // A high bit gets a zero octet in front; leading zeros go.
        XCTAssertEqual(TPMKeys.derSignature(r: [0, 0, 0x80] + [UInt8](repeating: 1, count: 29), s: [UInt8](repeating: 0, count: 32)),
                       [0x30, 0x24, 0x02, 0x1F, 0x00, 0x80] + [UInt8](repeating: 1, count: 29) + [0x02, 0x01, 0x00])
    }
}
