import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// authenticatorLargeBlobs (CTAP 2.1 §6.10) and the largeBlobKey extension (§12.3).
final class LargeBlobsTests: XCTestCase {
    /// The empty array 0x80 ‖ LEFT(SHA-256(0x80), 16) (§6.10.1).
    let emptyArray: [UInt8] = [0x80] + Array(PlatformCrypto.sha256([0x80]).prefix(16))
    /// maxMsgSize − 64.
    let maxFragment = 1200 - 64   // maxMsgSize − 64 (§6.10.2)

    func array(ofAbout size: Int, seed: UInt8 = 1) -> [UInt8] {
        AuthenticatorHarness.serializedLargeBlobArray([
            .map([1: .byteString([UInt8](repeating: seed, count: size - 40)), 2: .byteString([UInt8](repeating: 9, count: 12)),
                  3: 1234]),
        ])
    }

    func testAFreshKeyHoldsTheEmptyArray() throws {
        let harness = try AuthenticatorHarness()
        let (status, body) = harness.readLargeBlobs(offset: 0, get: 1024)
        XCTAssertEqual(status, .success)
        XCTAssertEqual(body, .map([1: .byteString(emptyArray)]))
        XCTAssertEqual(harness.readLargeBlobs(offset: 17, get: 10).body?[1], .byteString([]), "at the end: nothing")
        XCTAssertEqual(harness.readLargeBlobs(offset: 18, get: 10).status, .invalidParameter, "past the end")
        XCTAssertEqual(harness.readLargeBlobs(offset: 5, get: 3).body?[1]?.bytesValue, Array(emptyArray[5..<8]))
    }

    func testWriteInFragmentsThenReadBackInFragments() throws {
        let harness = try AuthenticatorHarness()
        let blobArray = array(ofAbout: 3000)
        XCTAssertEqual(harness.writeLargeBlobArray(blobArray, fragmentLength: 700), [CTAP2StatusCode](repeating: .success, count: 5))
        XCTAssertEqual(harness.readLargeBlobArray(get: 1000), blobArray)
        XCTAssertEqual(try harness.store.loadSetting("largeBlobArray"), blobArray, "stored durably")
        // Fragments of the largest size getInfo allows (maxMsgSize − 64) work too.
        let whole = array(ofAbout: 4096, seed: 2)
        XCTAssertEqual(whole.count, 4096)
        XCTAssertEqual(harness.writeLargeBlobArray(whole, fragmentLength: maxFragment), [CTAP2StatusCode](repeating: .success, count: 4))
        XCTAssertEqual(harness.readLargeBlobArray(get: UInt64(maxFragment)), whole)
    }

    func testTheArrayIsStoredOnlyWhenItsLastFragmentArrivesInOneWrite() throws {
        let store = CountingStore()
        let harness = try AuthenticatorHarness(store: store.inner, port: store)
        let blobArray = array(ofAbout: 2000)
        XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[0..<1000]), offset: 0, length: UInt64(blobArray.count)), .success)
        XCTAssertEqual(harness.readLargeBlobArray(), emptyArray, "readers see the old array meanwhile")
        XCTAssertEqual(store.count("saveSetting(largeBlobArray)"), 0)
        XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[1000...]), offset: 1000), .success)
        XCTAssertEqual(store.count("saveSetting(largeBlobArray)"), 1)
        XCTAssertEqual(harness.readLargeBlobArray(), blobArray)
    }

    func testAWrongHashIsIntegrityFailureAndKeepsTheOldArray() throws {
        let harness = try AuthenticatorHarness()
        var corrupt = array(ofAbout: 500)
        corrupt[10] ^= 0xFF
        XCTAssertEqual(harness.writeLargeBlobArray(corrupt, fragmentLength: 300), [.success, .integrityFailure])
        XCTAssertEqual(harness.readLargeBlobArray(), emptyArray)
        // The failed write is over: its next fragment is out of sequence.
        XCTAssertEqual(harness.writeLargeBlobs([1, 2, 3], offset: 500), .invalidSequence)
    }

    func testFragmentRules() throws {
        let harness = try AuthenticatorHarness()
        let blobArray = array(ofAbout: 1000)
        let first = Array(blobArray[0..<400])
        // The first fragment needs the total length: 17…4096.
        XCTAssertEqual(harness.writeLargeBlobs(first, offset: 0), .invalidParameter)
        XCTAssertEqual(harness.writeLargeBlobs(first, offset: 0, length: 4097), .largeBlobStorageFull)
        XCTAssertEqual(harness.writeLargeBlobs([1, 2], offset: 0, length: 16), .invalidParameter)
        // A fragment longer than maxMsgSize − 64.
        XCTAssertEqual(harness.writeLargeBlobs([UInt8](repeating: 0, count: maxFragment + 1), offset: 0, length: 4096), .invalidLength)
        // No write in progress: any other offset is out of sequence.
        XCTAssertEqual(harness.writeLargeBlobs(first, offset: 400), .invalidSequence)
        XCTAssertEqual(harness.writeLargeBlobs(first, offset: 0, length: UInt64(blobArray.count)), .success)
        // Later fragments carry no length, and come in order.
        XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[400..<800]), offset: 400, length: 1000), .invalidParameter)
        XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[400..<800]), offset: 300), .invalidSequence)
        XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[400..<800]), offset: 800), .invalidSequence)
        // Not past the announced length.
        XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[400...]) + [0], offset: 400), .invalidParameter)
        XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[400...]), offset: 400), .success)
        XCTAssertEqual(harness.readLargeBlobArray(), blobArray)
        // A new first fragment restarts the write.
        XCTAssertEqual(harness.writeLargeBlobs(first, offset: 0, length: UInt64(blobArray.count)), .success)
        XCTAssertEqual(harness.writeLargeBlobs(first, offset: 0, length: UInt64(blobArray.count)), .success)
        XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[400...]), offset: 400), .success)
        // A power cycle forgets a write in progress.
        XCTAssertEqual(harness.writeLargeBlobs(first, offset: 0, length: UInt64(blobArray.count)), .success)
        harness.authenticator.powerCycle()
        XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[400...]), offset: 400), .invalidSequence)
    }

    func testRequestShapeRules() throws {
        let harness = try AuthenticatorHarness()
        // offset is required; exactly one of get and set.
        XCTAssertEqual(harness.send(.largeBlobs, .map([1: 10])).status, .invalidParameter)
        XCTAssertEqual(harness.send(.largeBlobs, .map([3: 0])).status, .invalidParameter)
        XCTAssertEqual(harness.send(.largeBlobs, .map([1: 10, 2: .byteString([1]), 3: 0])).status, .invalidParameter)
        // A read carries no length and no pinUvAuth, and asks for at most maxMsgSize − 64.
        XCTAssertEqual(harness.send(.largeBlobs, .map([1: 10, 3: 0, 4: 17])).status, .invalidParameter)
        XCTAssertEqual(harness.send(.largeBlobs, .map([1: 10, 3: 0, 5: .byteString([1])])).status, .invalidParameter)
        XCTAssertEqual(harness.send(.largeBlobs, .map([1: 10, 3: 0, 6: 2])).status, .invalidParameter)
        XCTAssertEqual(harness.readLargeBlobs(offset: 0, get: UInt64(maxFragment + 1)).status, .invalidLength)
        XCTAssertEqual(harness.readLargeBlobs(offset: 0, get: UInt64(maxFragment)).status, .success)
        XCTAssertEqual(harness.send(.largeBlobs, .map([1: "ten", 3: 0])).status, .cborUnexpectedType)
        XCTAssertEqual(harness.send(.largeBlobs, .map([2: "data", 3: 0])).status, .cborUnexpectedType)
        XCTAssertEqual(harness.sendRaw([CTAPCommand.largeBlobs.rawValue]).status, .missingParameter)
    }

    func testWithAPINWritesNeedAnLbwTokenOverTheSpecMessage() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin, pinProtocol), .success)
            let blobArray = array(ofAbout: 1200)
            XCTAssertEqual(harness.writeLargeBlobArray(blobArray, fragmentLength: 500), [.puatRequired, .invalidSequence, .invalidSequence])
            let cm = try harness.grantedToken(AuthenticatorHarness.pin, pinProtocol, permissions: [.credentialManagement])
            XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[0..<500]), offset: 0, length: 1200, token: cm, pinProtocol),
                           .pinAuthInvalid)
            let token = try harness.grantedToken(AuthenticatorHarness.pin, pinProtocol, permissions: [.largeBlobWrite])
            // The MAC covers the offset and the fragment: another fragment's MAC fails.
            XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[0..<500]), offset: 0, length: 1200, token: token, pinProtocol), .success)
            var tampered: CBORValue = .map([2: .byteString(Array(blobArray[500..<1000])), 3: 500,
                                            5: .byteString(pinProtocol.authenticate(key: token, [1, 2, 3])),
                                            6: .unsignedInt(pinProtocol.version)])
            XCTAssertEqual(harness.send(.largeBlobs, tampered).status, .pinAuthInvalid)
            tampered = .map([2: .byteString(Array(blobArray[500..<1000])), 3: 500, 5: .byteString([1])])
            XCTAssertEqual(harness.send(.largeBlobs, tampered).status, .missingParameter)
            // An unauthorised first fragment does not abort the write in progress.
            XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[0..<500]), offset: 0, length: 1200), .puatRequired)
            XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[500..<1000]), offset: 500, token: token, pinProtocol), .success)
            XCTAssertEqual(harness.writeLargeBlobs(Array(blobArray[1000...]), offset: 1000, token: token, pinProtocol), .success)
            XCTAssertEqual(harness.readLargeBlobArray(), blobArray, "reading needs no token")
        }
    }

    func testAlwaysUvAloneMakesWritesNeedAToken() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.config(0x02).status, .success)
        XCTAssertEqual(harness.writeLargeBlobArray(array(ofAbout: 100), fragmentLength: 100), [.puatRequired])
    }

    // MARK: - largeBlobKey extension

    func testLargeBlobKeyIsMadeForDiscoverableCredentialsAndReturnedByAssertions() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(resident: true, extensions: .init(largeBlobKey: true)))
        let key = try XCTUnwrap(registration.response[5]?.bytesValue, "makeCredential response member 0x05")
        XCTAssertEqual(key.count, 32)
        XCTAssertEqual(try harness.store.residentCredential(id: registration.credentialID)?.largeBlobKey?.copyBytes(), key)
        XCTAssertNil(registration.authenticatorData.extensions, "no authenticator-data output")
        let other = try harness.register(harness.makeCredentialRequest(userID: [2], resident: true, extensions: .init(largeBlobKey: true)))
        XCTAssertNotEqual(other.response[5]?.bytesValue, key, "one key per credential")

        // getAssertion returns it in member 0x07 when asked, with or without an allowList.
        let asked = harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID],
                                                                         extensions: .init(largeBlobKey: true)).cborValue)
        XCTAssertEqual(asked.status, .success)
        XCTAssertEqual(asked.body?[7]?.bytesValue, key)
        XCTAssertNil(harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID]).cborValue).body?[7])
        let discoverable = harness.send(.getAssertion, harness.assertionRequest(extensions: .init(largeBlobKey: true)).cborValue)
        XCTAssertEqual(discoverable.body?[5], 2)
        XCTAssertEqual(discoverable.body?[7]?.bytesValue, other.response[5]?.bytesValue, "newest first")
        XCTAssertEqual(harness.send(.getNextAssertion).body?[7]?.bytesValue, key)
        // A credential without one answers without member 0x07.
        let plain = try harness.register(harness.makeCredentialRequest(userID: [3], resident: true))
        XCTAssertNil(plain.response[5])
        XCTAssertNil(harness.send(.getAssertion, harness.assertionRequest(allow: [plain.credentialID],
                                                                          extensions: .init(largeBlobKey: true)).cborValue).body?[7])
    }

    func testLargeBlobKeyRules() throws {
        let harness = try AuthenticatorHarness()
        // Only discoverable credentials have one.
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(extensions: .init(largeBlobKey: true)).cborValue).status,
                       .invalidOption)
        XCTAssertEqual(harness.send(.makeCredential, AuthenticatorHarness.cbor(harness.makeCredentialRequest(),
                                                                             rawExtensions: ["largeBlobKey": 1])).status,
                       .cborUnexpectedType)
        XCTAssertEqual(harness.send(.getAssertion, AuthenticatorHarness.cbor(harness.assertionRequest(),
                                                                           rawExtensions: ["largeBlobKey": "yes"])).status,
                       .cborUnexpectedType)
        let registration = try harness.register(harness.makeCredentialRequest(resident: true, extensions: .init(largeBlobKey: false)))
        XCTAssertNil(registration.response[5])
    }

    func testLbwOutlivesTheTokensUseInMakeCredential() throws {
        // §6.1.2 step 14 keeps lbw: a platform writes the new credential's blob with the same token.
        let harness = try AuthenticatorHarness.pinned()
        let token = try harness.grantedToken(AuthenticatorHarness.pin, permissions: [.makeCredential, .largeBlobWrite],
                                             rpID: "example.com")
        let create = AuthenticatorHarness.authorized(harness.makeCredentialRequest(resident: true, extensions: .init(largeBlobKey: true)),
                                                     token: token, .two)
        let registration = try harness.register(create)
        XCTAssertNotNil(registration.response[5])
        XCTAssertEqual(harness.send(.makeCredential, create.cborValue).status, .pinAuthInvalid, "mc is spent")
        let blobArray = array(ofAbout: 300)
        XCTAssertEqual(harness.writeLargeBlobArray(blobArray, fragmentLength: 300, token: token), [.success])
        XCTAssertEqual(harness.readLargeBlobArray(), blobArray)
    }

    func testResetPutsTheEmptyArrayBack() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.writeLargeBlobArray(array(ofAbout: 300), fragmentLength: 300), [.success])
        XCTAssertEqual(harness.send(.reset).status, .success)
        XCTAssertEqual(harness.readLargeBlobArray(), emptyArray)
    }
}
