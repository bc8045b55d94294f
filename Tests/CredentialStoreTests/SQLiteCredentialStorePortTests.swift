import Authenticator
@testable import CredentialStore
import FIDOCrypto
import XCTest

/// Every method of CredentialStorePort on the real SQLite store (architecture rule 6: tested as itself).
final class SQLiteCredentialStorePortTests: XCTestCase {
    private var temporary: TemporaryDirectory!
    private var store: SQLiteCredentialStore!

    override func setUpWithError() throws {
        temporary = TemporaryDirectory()
        store = try SQLiteCredentialStore.open(directory: temporary.storePath)
    }

    override func tearDown() {
        store?.close()
        store = nil
        temporary = nil
    }

    func testDeviceSecretsAreCreatedOnceAndStable() throws {
        let created = makeDeviceSecrets()
        var calls = 0
        let first = try store.loadDeviceSecrets { calls += 1; return created }
        let second = try store.loadDeviceSecrets { calls += 1; return makeDeviceSecrets() }
        XCTAssertEqual(calls, 1)
        assertSameSecrets(first, created)
        assertSameSecrets(second, created)
    }

    func testDeviceSecretsCreationFailureStoresNothing() throws {
        struct Boom: Error {}
        assertThrows(.io("creating device secrets failed (Boom)")) { () throws(StoreError) in
            try store.loadDeviceSecrets { throw Boom() }
        }
        let created = makeDeviceSecrets()
        assertSameSecrets(try store.loadDeviceSecrets { created }, created)
    }

    func testReplaceWrappingKeyKeepsAttestation() throws {
        let created = try store.loadDeviceSecrets { makeDeviceSecrets() }
        let newKey = SecretBytes(randomCount: 32)
        try store.replaceWrappingKey(newKey)
        let loaded = try store.loadDeviceSecrets { XCTFail("must not create"); return makeDeviceSecrets() }
        assertSameSecret(loaded.wrappingKey, newKey, "wrapping key replaced")
        XCTAssertEqual(loaded.aaguid, created.aaguid)
        assertSameSecret(loaded.attestationPrivateKey, created.attestationPrivateKey, "attestation kept")
    }

    func testReplaceWrappingKeyWithoutSecretsIsAnError() {
        XCTAssertThrowsError(try store.replaceWrappingKey(SecretBytes(randomCount: 32)))
    }

    func testSaveAndLoadByIDRoundTripsEveryField() throws {
        let credential = makeCredential()
        try store.saveResidentCredential(credential)
        assertSameCredential(try store.residentCredential(id: credential.credentialID), credential)
        XCTAssertNil(try store.residentCredential(id: SecureRandom.bytes(count: 48)))
    }

    func testOptionalFieldsRoundTripAsNilAndEmpty() throws {
        let bare = makeCredential(rpName: nil, userName: nil, displayName: nil, full: false)
        let empty = makeCredential(rpName: "", userHandle: [], userName: "", displayName: "",
                                   id: SecureRandom.bytes(count: 16))
        try store.saveResidentCredential(bare)
        try store.saveResidentCredential(empty)
        assertSameCredential(try store.residentCredential(id: bare.credentialID), bare)
        assertSameCredential(try store.residentCredential(id: empty.credentialID), empty)
    }

    func testResidentCredentialsOfOneRPNewestFirstWithoutHidden() throws {
        let old = makeCredential(createdAt: 100)
        let newer = makeCredential(createdAt: 200)
        let sameSecondLater = makeCredential(createdAt: 200)
        let hidden = makeCredential(createdAt: 300, hiddenSince: 300)
        let other = makeCredential(rpID: "other.example", createdAt: 400)
        for credential in [old, newer, sameSecondLater, hidden, other] {
            try store.saveResidentCredential(credential)
        }
        let listed = try store.residentCredentials(rpIDHash: rpIDHash("example.com"))
        XCTAssertEqual(listed.map(\.credentialID), [sameSecondLater, newer, old].map(\.credentialID))
        XCTAssertEqual(try store.residentCredentials(rpIDHash: rpIDHash("nobody.example")).count, 0)
        // Hidden credentials are still found by ID (callers check hiddenSince).
        XCTAssertEqual(try store.residentCredential(id: hidden.credentialID)?.hiddenSince, 300)
    }

    // CTAP 2.1 §6.1.2 step 17: a new discoverable credential for the same account replaces the old.
    func testSaveReplacesCredentialOfSameRPAndUser() throws {
        let user = SecureRandom.bytes(count: 32)
        let first = makeCredential(userHandle: user, userName: "first")
        let second = makeCredential(userHandle: user, userName: "second", createdAt: 1_700_000_100)
        try store.saveResidentCredential(first)
        try store.saveResidentCredential(second)
        XCTAssertNil(try store.residentCredential(id: first.credentialID))
        assertSameCredential(try store.residentCredential(id: second.credentialID), second)
        XCTAssertEqual(try store.residentCredentialCount(), 1)
        XCTAssertEqual(try store.relyingParties().count, 1)
        // Same user handle at another RP is another account.
        try store.saveResidentCredential(makeCredential(rpID: "other.example", userHandle: user))
        XCTAssertEqual(try store.residentCredentialCount(), 2)
        XCTAssertTrue(try store.integrityCheck())
    }

    func testSavingSameIDAgainReplacesIt() throws {
        let credential = makeCredential()
        var changed = makeCredential(id: credential.credentialID)
        changed.userName = "changed"
        try store.saveResidentCredential(credential)
        try store.saveResidentCredential(changed)
        XCTAssertEqual(try store.residentCredentialCount(), 1)
        XCTAssertEqual(try store.residentCredential(id: credential.credentialID)?.userName, "changed")
    }

    func testDeleteResidentCredential() throws {
        let credential = makeCredential()
        try store.saveResidentCredential(credential)
        XCTAssertTrue(try store.deleteResidentCredential(id: credential.credentialID))
        XCTAssertFalse(try store.deleteResidentCredential(id: credential.credentialID))
        XCTAssertNil(try store.residentCredential(id: credential.credentialID))
        XCTAssertEqual(try store.residentCredentialCount(), 0)
        XCTAssertEqual(try store.relyingParties(), [])
    }

    func testUpdateUserReplacesAndRemovesNames() throws {
        let credential = makeCredential()
        try store.saveResidentCredential(credential)
        try store.updateUser(credentialID: credential.credentialID, name: "bob", displayName: nil)
        let updated = try XCTUnwrap(try store.residentCredential(id: credential.credentialID))
        XCTAssertEqual(updated.userName, "bob")
        XCTAssertNil(updated.userDisplayName)
        var expected = credential
        expected.userName = "bob"
        expected.userDisplayName = nil
        assertSameCredential(updated, expected)
        // An unknown ID changes nothing.
        try store.updateUser(credentialID: SecureRandom.bytes(count: 48), name: "x", displayName: "y")
        XCTAssertEqual(try store.residentCredentialCount(), 1)
    }

    func testCountIncludesHidden() throws {
        try store.saveResidentCredential(makeCredential())
        try store.saveResidentCredential(makeCredential(hiddenSince: 5))
        XCTAssertEqual(try store.residentCredentialCount(), 2)
    }

    func testStoreFullRejectsNewAccountsButAllowsReplacement() throws {
        store.close()
        store = try SQLiteCredentialStore.open(directory: temporary.storePath,
                                               options: StoreOptions(maxResidentCredentials: 2))
        XCTAssertEqual(store.maxResidentCredentials, 2)
        let user = SecureRandom.bytes(count: 8)
        try store.saveResidentCredential(makeCredential(userHandle: user))
        try store.saveResidentCredential(makeCredential())
        let third = makeCredential()
        assertThrows(.full) { () throws(StoreError) in try store.saveResidentCredential(third) }
        XCTAssertNil(try store.residentCredential(id: third.credentialID))
        XCTAssertEqual(try store.residentCredentialCount(), 2)
        try store.saveResidentCredential(makeCredential(userHandle: user))   // replacement fits
        XCTAssertEqual(try store.residentCredentialCount(), 2)
        // A batch that overflows stores nothing.
        assertThrows(.full) { () throws(StoreError) in
            try store.saveResidentCredentials([makeCredential(userHandle: user), makeCredential()])
        }
        XCTAssertEqual(try store.residentCredentialCount(), 2)
        XCTAssertTrue(try store.integrityCheck())
    }

    func testRelyingPartiesListsVisibleRPsAndFollowsDeletes() throws {
        let a1 = makeCredential(rpID: "a.example", rpName: "A")
        let a2 = makeCredential(rpID: "a.example", rpName: "A")
        let b = makeCredential(rpID: "b.example", rpName: nil)
        let hiddenOnly = makeCredential(rpID: "c.example", hiddenSince: 1)
        for credential in [a1, a2, b, hiddenOnly] { try store.saveResidentCredential(credential) }
        XCTAssertEqual(try store.relyingParties(), [
            RelyingPartyEntry(rpID: "a.example", rpIDHash: rpIDHash("a.example"), name: "A"),
            RelyingPartyEntry(rpID: "b.example", rpIDHash: rpIDHash("b.example"), name: nil),
        ])
        try store.deleteResidentCredential(id: a1.credentialID)
        XCTAssertEqual(try store.relyingParties().map(\.rpID), ["a.example", "b.example"])
        try store.deleteResidentCredential(id: a2.credentialID)
        XCTAssertEqual(try store.relyingParties().map(\.rpID), ["b.example"])
        try store.deleteResidentCredential(id: b.credentialID)
        XCTAssertEqual(try store.relyingParties(), [])
        XCTAssertTrue(try store.integrityCheck())
    }

    func testRPNameFollowsTheNewestRegistrationThatHasOne() throws {
        try store.saveResidentCredential(makeCredential(rpID: "a.example", rpName: "Old Name"))
        try store.saveResidentCredential(makeCredential(rpID: "a.example", rpName: "New Name"))
        XCTAssertEqual(try store.relyingParties().map(\.name), ["New Name"])
        try store.saveResidentCredential(makeCredential(rpID: "a.example", rpName: nil))
        XCTAssertEqual(try store.relyingParties().map(\.name), ["New Name"])
    }

    func testPINStateRoundTripAndRemoval() throws {
        XCTAssertNil(try store.loadPINState())
        let state = PINState(pinHash: SecretBytes(SecureRandom.bytes(count: 16)), pinCodePoints: 6, retries: 7, forcePINChange: true)
        try store.savePINState(state)
        XCTAssertEqual(try store.loadPINState(), state)
        let noHash = PINState(pinHash: nil, pinCodePoints: 0, retries: 8, forcePINChange: false)
        try store.savePINState(noHash)
        XCTAssertEqual(try store.loadPINState(), noHash)
        try store.savePINState(nil)
        XCTAssertNil(try store.loadPINState())
    }

    func testSettingsRoundTripAndRemoval() throws {
        XCTAssertNil(try store.loadSetting("alwaysUv"))
        try store.saveSetting("alwaysUv", value: [1])
        try store.saveSetting("minPINLength", value: [6])
        try store.saveSetting("empty", value: [])
        XCTAssertEqual(try store.loadSetting("alwaysUv"), [1])
        XCTAssertEqual(try store.loadSetting("minPINLength"), [6])
        XCTAssertEqual(try store.loadSetting("empty"), [])
        try store.saveSetting("alwaysUv", value: nil)
        XCTAssertNil(try store.loadSetting("alwaysUv"))
    }

    func testUpdateSettingTransformsTheStoredValue() throws {
        var seen: [[UInt8]?] = []
        try store.updateSetting("counter") { old in seen.append(old); return [1] }
        try store.updateSetting("counter") { old in seen.append(old); return old.map { $0 + [2] } }
        XCTAssertEqual(seen, [nil, [1]])
        XCTAssertEqual(try store.loadSetting("counter"), [1, 2])
        try store.updateSetting("counter") { _ in nil }
        XCTAssertNil(try store.loadSetting("counter"), "nil removes it")
    }

    // CTAP 2.1 §6.6 authenticatorReset: credentials, PIN and settings go; AAGUID and attestation stay.
    func testResetClearsCredentialsPINAndSettingsButKeepsAttestation() throws {
        let secrets = try store.loadDeviceSecrets { makeDeviceSecrets() }
        let credential = makeCredential()
        try store.saveResidentCredential(credential)
        try store.savePINState(PINState(pinHash: SecretBytes(SecureRandom.bytes(count: 16)), pinCodePoints: 4, retries: 8, forcePINChange: false))
        try store.saveSetting("alwaysUv", value: [1])
        let global = try store.nextSignatureCounter(credentialID: nil)
        let newKey = SecretBytes(randomCount: 32)

        try store.reset(newWrappingKey: newKey)

        XCTAssertEqual(try store.residentCredentialCount(), 0)
        XCTAssertNil(try store.residentCredential(id: credential.credentialID))
        XCTAssertEqual(try store.relyingParties(), [])
        XCTAssertNil(try store.loadPINState())
        XCTAssertNil(try store.loadSetting("alwaysUv"))
        let after = try store.loadDeviceSecrets { XCTFail("must not create"); return makeDeviceSecrets() }
        XCTAssertEqual(after.aaguid, secrets.aaguid)
        assertSameSecret(after.attestationPrivateKey, secrets.attestationPrivateKey, "attestation kept")
        XCTAssertEqual(after.attestationCertificate, secrets.attestationCertificate)
        assertSameSecret(after.wrappingKey, newKey, "wrapping key replaced")
        XCTAssertGreaterThan(try store.nextSignatureCounter(credentialID: nil), global)
        XCTAssertTrue(try store.integrityCheck())
    }

    func testAllResidentCredentials() throws {
        let visible = makeCredential(createdAt: 10)
        let hidden = makeCredential(rpID: "b.example", createdAt: 20, hiddenSince: 30)
        try store.saveResidentCredentials([visible, hidden])
        XCTAssertEqual(try store.allResidentCredentials(includeHidden: true).map(\.credentialID),
                       [hidden.credentialID, visible.credentialID])
        XCTAssertEqual(try store.allResidentCredentials(includeHidden: false).map(\.credentialID),
                       [visible.credentialID])
    }

    func testClosedStoreReportsIOErrors() throws {
        store.close()
        XCTAssertThrowsError(try store.residentCredentialCount()) { error in
            guard case StoreError.io = error else { return XCTFail("\(error)") }
        }
        store.close()   // idempotent
    }

    func testUsableFromSeveralThreads() throws {
        let store = self.store!
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<25 {
                do {
                    try store.saveResidentCredential(makeCredential())
                    _ = try store.nextSignatureCounter(credentialID: nil)
                } catch {
                    XCTFail("\(error)")
                }
            }
        }
        XCTAssertEqual(try store.residentCredentialCount(), 100)
        XCTAssertTrue(try store.integrityCheck())
    }
}
