import Authenticator
@testable import CredentialStore
import FIDOCrypto
import XCTest

/// What a store holds comes back equal after close and reopen.
final class StorePersistenceTests: XCTestCase {
    func testEverythingComesBackAfterReopen() throws {
        let temporary = TemporaryDirectory()
        let credentials = (0..<20).map { index in
            makeCredential(rpID: "rp\(index % 3).example", createdAt: 1_700_000_000 + Int64(index),
                           hiddenSince: index == 7 ? 1_700_000_500 : nil)
        }
        let secrets = makeDeviceSecrets()
        let pin = PINState(pinHash: SecretBytes(SecureRandom.bytes(count: 16)), pinCodePoints: 8, retries: 5, forcePINChange: true)

        let options = StoreOptions(now: ManualClock(1_700_001_000).function)   // hidden 500 s ago
        var store: SQLiteCredentialStore? = try SQLiteCredentialStore.open(directory: temporary.storePath, options: options)
        for credential in credentials { try store!.saveResidentCredential(credential) }
        _ = try store!.loadDeviceSecrets { secrets }
        try store!.savePINState(pin)
        try store!.saveSetting("alwaysUv", value: [1])
        try store!.saveSetting("minPINLength", value: [8])
        let rps = try store!.relyingParties()
        store!.close()
        store = nil

        let reopened = try SQLiteCredentialStore.open(directory: temporary.storePath, options: options)
        defer { reopened.close() }
        for credential in credentials {
            assertSameCredential(try reopened.residentCredential(id: credential.credentialID), credential)
        }
        XCTAssertEqual(try reopened.residentCredentialCount(), 20)
        assertSameSecrets(try reopened.loadDeviceSecrets { XCTFail("must not create"); return makeDeviceSecrets() }, secrets)
        XCTAssertEqual(try reopened.loadPINState(), pin)
        XCTAssertEqual(try reopened.loadSetting("alwaysUv"), [1])
        XCTAssertEqual(try reopened.loadSetting("minPINLength"), [8])
        XCTAssertEqual(try reopened.relyingParties(), rps)
        XCTAssertEqual(try reopened.residentCredentials(rpIDHash: rpIDHash("rp1.example")).map(\.credentialID),
                       credentials.filter { $0.rpID == "rp1.example" && $0.hiddenSince == nil }.reversed().map(\.credentialID))
        XCTAssertTrue(try reopened.integrityCheck())
    }

    func testDeinitWithoutCloseReleasesTheStore() throws {
        let temporary = TemporaryDirectory()
        let credential = makeCredential()
        do {
            let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
            try store.saveResidentCredential(credential)
        }
        let reopened = try SQLiteCredentialStore.open(directory: temporary.storePath)
        assertSameCredential(try reopened.residentCredential(id: credential.credentialID), credential)
    }

    func testAnotherMasterKeyIsRefusedAtOpen() throws {
        let temporary = TemporaryDirectory()
        try SQLiteCredentialStore.open(directory: temporary.storePath).close()
        let keyPath = temporary.storePath + "/master.key"
        try Data(SecureRandom.bytes(count: 32)).write(to: URL(fileURLWithPath: keyPath))
        chmod(keyPath, 0o600)
        XCTAssertThrowsError(try SQLiteCredentialStore.open(directory: temporary.storePath)) { error in
            guard case StoreError.corrupt(let message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("master.key"), message)
        }
    }

    func testMissingMasterKeyBesideADatabaseIsRefusedNotReplaced() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        try store.saveResidentCredential(makeCredential())
        store.close()
        XCTAssertEqual(unlink(temporary.storePath + "/master.key"), 0)
        XCTAssertThrowsError(try SQLiteCredentialStore.open(directory: temporary.storePath)) { error in
            guard case StoreError.corrupt(let message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("master.key"), message)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: temporary.storePath + "/master.key"))
    }

    func testTamperedRowIsCorruptNotGarbage() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        defer { store.close() }
        let a = makeCredential()
        let b = makeCredential()
        try store.saveResidentCredentials([a, b])
        // Swap the sealed blobs of two rows: the AAD binds each blob to its row.
        try store.withDatabaseForTesting { db throws(StoreError) in
            try db.execute("""
                UPDATE credentials SET sealed = (SELECT sealed FROM credentials c2 WHERE c2.cred_key != credentials.cred_key)
                """)
        }
        XCTAssertThrowsError(try store.residentCredential(id: a.credentialID)) { error in
            guard case StoreError.corrupt = error else { return XCTFail("\(error)") }
        }
    }
}
