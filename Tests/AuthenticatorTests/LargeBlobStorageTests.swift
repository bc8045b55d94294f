import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// Per-credential blobs in the large-blob array (CTAP 2.1 §6.10.3), as the rig reads and plants them.
final class LargeBlobStorageTests: XCTestCase {
    let key = SecretBytes([UInt8](repeating: 0x11, count: 32))
    let otherKey = SecretBytes([UInt8](repeating: 0x22, count: 32))
    let emptyArray = AuthenticatorHarness.serializedLargeBlobArray([])

    /// An element made by hand as §6.10.3 says a client makes it: zlib's raw DEFLATE of "abc",
    /// sealed with AES-256-GCM, associated data "blob" ‖ uint64LE(3), the tag after the ciphertext.
    func clientElement(key: SecretBytes) throws -> CBORValue {
        let nonce = [UInt8](repeating: 7, count: 12)
        let associatedData = Array("blob".utf8) + [3, 0, 0, 0, 0, 0, 0, 0]
        let (ciphertext, tag) = try AES256GCM.seal([0x4B, 0x4C, 0x4A, 0x06, 0x00], key: key, nonce: nonce,
                                                   authenticating: associatedData)
        return .map([1: .byteString(ciphertext + tag), 2: .byteString(nonce), 3: 3])
    }

    func testReadsTheBlobAClientWroteUnderItsKeyOnly() throws {
        let array = AuthenticatorHarness.serializedLargeBlobArray([.textString("someone else's"), try clientElement(key: key)])
        XCTAssertEqual(try LargeBlobStorage.blob(in: array, key: key), Array("abc".utf8))
        XCTAssertNil(try LargeBlobStorage.blob(in: array, key: otherKey))
        XCTAssertNil(try LargeBlobStorage.blob(in: emptyArray, key: key))
    }

    func testAnElementWhoseOrigSizeLiesIsSkipped() throws {
        guard case var .map(map) = try clientElement(key: key) else { return XCTFail() }
        map[3] = 4  // the AEAD then fails: origSize is in the associated data
        XCTAssertNil(try LargeBlobStorage.blob(in: AuthenticatorHarness.serializedLargeBlobArray([.map(map)]), key: key))
    }

    func testAnArrayWithABadHashIsRefusedWithItsReason() throws {
        var array = AuthenticatorHarness.serializedLargeBlobArray([try clientElement(key: key)])
        array[array.count - 1] ^= 1
        XCTAssertThrowsError(try LargeBlobStorage.blob(in: array, key: key)) {
            XCTAssertEqual($0 as? LargeBlobStorage.Failure, .unreadableArray(.hashMismatch))
        }
    }

    func testReplacingKeepsOtherElementsAndSwapsItsOwn() throws {
        let foreign = try clientElement(key: otherKey)
        let start = AuthenticatorHarness.serializedLargeBlobArray([foreign, .textString("unknown"), try clientElement(key: key)])
        let blob = Array("ssh certificate ".utf8) + [UInt8](repeating: 0x41, count: 300)
        let replaced = try LargeBlobStorage.replacingBlob(in: start, key: key, with: blob, maxLength: 4096, random: SystemRandom())
        XCTAssertEqual(try LargeBlobStorage.blob(in: replaced, key: key), blob)
        XCTAssertEqual(try LargeBlobStorage.blob(in: replaced, key: otherKey), Array("abc".utf8))
        let elements = try LargeBlobArray(serialized: replaced, hash: SHA256.hash).elements
        XCTAssertEqual(elements.count, 3, "the old element under the key is gone, not kept beside the new one")
        XCTAssertEqual(Array(elements.prefix(2)), [foreign, .textString("unknown")])
        XCTAssertLessThan(replaced.count, start.count + 100, "the blob is stored compressed")

        let removed = try LargeBlobStorage.replacingBlob(in: replaced, key: key, with: nil, maxLength: 4096, random: SystemRandom())
        XCTAssertNil(try LargeBlobStorage.blob(in: removed, key: key))
        XCTAssertEqual(try LargeBlobArray(serialized: removed, hash: SHA256.hash).elements, [foreign, .textString("unknown")])
    }

    /// python-fido2's put_blob drops every element that decrypts under the key: one that does
    /// not inflate (damaged, or a hostile origSize) must not stay behind taking space.
    func testReplacingDropsAnElementUnderTheKeyThatDoesNotInflate() throws {
        let nonce = [UInt8](repeating: 3, count: 12)
        let associatedData = Array("blob".utf8) + [5, 0, 0, 0, 0, 0, 0, 0]
        let (ciphertext, tag) = try AES256GCM.seal([0xFF, 0xFF, 0xFF], key: key, nonce: nonce, authenticating: associatedData)
        let damaged = CBORValue.map([1: .byteString(ciphertext + tag), 2: .byteString(nonce), 3: 5])
        let start = AuthenticatorHarness.serializedLargeBlobArray([damaged])
        XCTAssertNil(try LargeBlobStorage.blob(in: start, key: key), "it does not read")
        let replaced = try LargeBlobStorage.replacingBlob(in: start, key: key, with: [1], maxLength: 4096, random: SystemRandom())
        XCTAssertEqual(try LargeBlobArray(serialized: replaced, hash: SHA256.hash).elements.count, 1, "the damaged one went")
        XCTAssertEqual(try LargeBlobStorage.blob(in: replaced, key: key), [1])
    }

    /// In a store: one read-and-write (updateSetting); a blob that does not fit changes nothing.
    func testReplaceBlobInAStore() throws {
        let store = InMemoryCredentialStore()
        try LargeBlobStorage.replaceBlob([4, 5, 6], key: key, maxLength: 4096, random: SystemRandom(), in: store)
        try LargeBlobStorage.replaceBlob([7], key: otherKey, maxLength: 4096, random: SystemRandom(), in: store)
        let array = try LargeBlobStorage.serializedArray(in: store)
        XCTAssertEqual(try LargeBlobStorage.blob(in: array, key: key), [4, 5, 6])
        XCTAssertEqual(try LargeBlobStorage.blob(in: array, key: otherKey), [7])
        let random = (0..<5000).map { _ in UInt8.random(in: 0...255) }
        XCTAssertThrowsError(try LargeBlobStorage.replaceBlob(random, key: key, maxLength: 4096, random: SystemRandom(), in: store))
        XCTAssertEqual(try LargeBlobStorage.serializedArray(in: store), array, "unchanged")
        try LargeBlobStorage.replaceBlob(nil, key: key, maxLength: 4096, random: SystemRandom(), in: store)
        XCTAssertNil(try LargeBlobStorage.blob(in: try LargeBlobStorage.serializedArray(in: store), key: key))
    }

    func testABlobThatDoesNotFitIsRefused() throws {
        let random = (0..<5000).map { _ in UInt8.random(in: 0...255) }
        XCTAssertThrowsError(try LargeBlobStorage.replacingBlob(in: emptyArray, key: key, with: random, maxLength: 4096,
                                                                random: SystemRandom())) {
            guard case let .arrayFull(needed, limit)? = $0 as? LargeBlobStorage.Failure else { return XCTFail("\($0)") }
            XCTAssertGreaterThan(needed, 5000)
            XCTAssertEqual(limit, 4096)
        }
    }

    /// The authenticator reads the array from the store on every read, so what a rig plants
    /// beside it is what clients read next.
    func testTheKeyServesAnArrayPlantedInItsStore() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.readLargeBlobArray(), emptyArray)
        let planted = try LargeBlobStorage.replacingBlob(in: emptyArray, key: key, with: [1, 2, 3], maxLength: 4096,
                                                         random: SystemRandom())
        try LargeBlobStorage.save(planted, in: harness.store)
        XCTAssertEqual(harness.readLargeBlobArray(), planted)
        XCTAssertEqual(try LargeBlobStorage.blob(in: try LargeBlobStorage.serializedArray(in: harness.store), key: key), [1, 2, 3])
    }
}
