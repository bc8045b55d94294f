import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import Synchronization
import XCTest

/// A key device (`serve --keys tpm`) as the core sees it: every key it makes comes from the
/// device and every signature is the device's, the credential is kept in the store (its blob
/// fits no credential ID), and a key without that device does not have the credential.
final class KeyDeviceTests: XCTestCase {
    /// A device that keeps software P-256 keys by blob; its blobs start with its own tag, as a
    /// TPM's name its storage key, so that another device of this kind holds none of them.
    final class FakeDevice: CredentialKeyDevice, @unchecked Sendable {
        let tag: UInt8
        private let keys = Mutex<[[UInt8]: ECDSA.PrivateKey]>([:])
        private let signed = Mutex(0)
        var signatures: Int { signed.withLock { $0 } }

        init(tag: UInt8) { self.tag = tag }

        func makeP256Key() throws(CTAP2StatusCode) -> DeviceKey {
            guard let key = try? ECDSA.PrivateKey(suite: .es256) else { throw .other }
            let blob = [tag] + SecretBytes(randomCount: 200).copyBytes()
            keys.withLock { $0[blob] = key }
            return DeviceKey(x: key.publicKey.x, y: key.publicKey.y, blob: blob)
        }

        func holds(blob: [UInt8]) -> Bool { blob.first == tag }

        func signature(blob: [UInt8], for message: [UInt8]) throws(CTAP2StatusCode) -> [UInt8] {
            guard let key = keys.withLock({ $0[blob] }), let signature = try? key.signature(for: message) else { throw .other }
            signed.withLock { $0 += 1 }
            return signature
        }
    }

    func testADeviceKeyOffersES256AloneAndMakesEveryKey() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.algorithms = [.edDSA, .es256, .es384]
        let device = FakeDevice(tag: 0xD1)
        let harness = try AuthenticatorHarness(configuration: configuration, keyDevice: device)
        XCTAssertEqual(harness.send(.getInfo).body?[10]?.arrayValue?.compactMap { $0["alg"]?.intValue }, [-7])
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(algorithms: [-8]).cborValue).status,
                       .unsupportedAlgorithm, "no software EdDSA key behind the user's back")

        for resident in [false, true] {
            let request = harness.makeCredentialRequest(userName: resident ? "rk" : "nr", resident: resident)
            let made = try harness.register(request)
            // The blob is kept in the store: the ID is the store's random one, not a sealed key.
            XCTAssertEqual(made.credentialID.count, 32)
            let stored = try XCTUnwrap(try harness.store.residentCredential(id: made.credentialID))
            XCTAssertTrue(DeviceKey.isDeviceKey(stored.privateKey))
            XCTAssertEqual(stored.discoverable, resident)
            let before = device.signatures
            let (status, body) = harness.send(.getAssertion, harness.assertionRequest(allow: [made.credentialID]).cborValue)
            XCTAssertEqual(status, .success)
            XCTAssertEqual(device.signatures, before + 1, "the device signed the assertion")
            XCTAssertTrue(AuthenticatorHarness.verifyAssertion(try XCTUnwrap(body), publicKey: made.publicKey,
                                                               clientDataHash: harness.assertionRequest().clientDataHash))
        }
    }

    func testAnotherDeviceOrNoneDoesNotHaveTheCredential() throws {
        let store = InMemoryCredentialStore()
        let harness = try AuthenticatorHarness(store: store, keyDevice: FakeDevice(tag: 0xD1))
        let made = try harness.register(harness.makeCredentialRequest(resident: true))
        for other in [try AuthenticatorHarness(store: store, keyDevice: FakeDevice(tag: 0xD2), seed: 8),
                      try AuthenticatorHarness(store: store, seed: 9)] {
            XCTAssertEqual(other.send(.getAssertion, other.assertionRequest(allow: [made.credentialID]).cborValue).status,
                           .noCredentials)
            XCTAssertEqual(other.send(.getAssertion, other.assertionRequest().cborValue).status, .noCredentials)
        }
        // The first still signs with it.
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest().cborValue).status, .success)

        // Beside a credential of its own at the same RP, a key offers only its own, however the
        // store orders them, and getNextAssertion passes the other's over too.
        let second = try AuthenticatorHarness(store: store, keyDevice: FakeDevice(tag: 0xD2), seed: 10)
        let own = try second.register(second.makeCredentialRequest(userID: [9], userName: "bob", resident: true))
        for (key, mine, theirs) in [(second, own, made), (harness, made, own)] {
            let (status, body) = key.send(.getAssertion, key.assertionRequest().cborValue)
            XCTAssertEqual(status, .success)
            XCTAssertEqual(body?[1]?["id"]?.bytesValue, mine.credentialID)
            XCTAssertNotEqual(body?[1]?["id"]?.bytesValue, theirs.credentialID)
            let next = key.send(.getNextAssertion)
            XCTAssertTrue(next.status == .noCredentials || next.status == .notAllowed, "\(next.status)")
        }
    }

    func testStoredFormRoundTripsAndSoftwareKeysAreNotDeviceKeys() {
        let key = DeviceKey(x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32), blob: [9, 9, 9])
        XCTAssertEqual(DeviceKey(stored: key.stored), key)
        XCTAssertTrue(DeviceKey.isDeviceKey(key.stored))
        for count in [32, 48, 66] {
            let software = SecretBytes(randomCount: count)
            XCTAssertNil(DeviceKey(stored: software))
            XCTAssertFalse(DeviceKey.isDeviceKey(software))
        }
        XCTAssertNil(DeviceKey(stored: SecretBytes(Array(key.stored.copyBytes().prefix(69)))), "no blob")
    }
}
