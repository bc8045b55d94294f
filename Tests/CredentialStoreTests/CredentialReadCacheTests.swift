import Authenticator
@testable import CredentialStore
import CTAP
import FIDOCrypto
import XCTest

/// The serving store's cache of decoded credentials (`CredentialReadCache`), kept only while the
/// WAL-index header shows no commit: what another process (here: a `.none` store, as the CLI
/// opens it) changes is what the very next lookup returns.
final class CredentialReadCacheTests: XCTestCase {
    func testTheWALIndexHeaderChangesWithEveryCommitOfAnyConnectionOnly() throws {
        let temporary = TemporaryDirectory()
        let serving = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let cli = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        func header(_ store: SQLiteCredentialStore) throws -> [UInt8]? {
            try store.withDatabaseForTesting { db throws(StoreError) in WALIndexHeader.current(db) }
        }
        let first = try XCTUnwrap(header(serving))
        XCTAssertEqual(first.count, 96)
        XCTAssertEqual(try header(cli), first, "one header for every connection: the same -shm")
        _ = try serving.residentCredential(id: [1, 2, 3])
        _ = try cli.loadSetting("x")
        XCTAssertEqual(try header(serving), first, "reads leave it as it was")
        try cli.saveSetting("x", value: [1])
        let second = try XCTUnwrap(header(serving))
        XCTAssertNotEqual(second, first, "another connection's commit")
        try serving.saveSetting("x", value: [2])
        XCTAssertNotEqual(try XCTUnwrap(header(serving)), second, "this connection's own commit")
        serving.close()
        XCTAssertThrowsError(try header(serving), "a closed store has no connection")
    }

    func testChangesFromAnotherConnectionAreSeenByTheNextLookup() throws {
        let temporary = TemporaryDirectory()
        let serving = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let credential = makeCredential(rpID: "rp.example", userName: "old")
        try serving.saveResidentCredential(credential)
        let hash = rpIDHash("rp.example")
        // Read twice, so the second is answered from the cache.
        for _ in 0..<2 {
            XCTAssertEqual(try serving.residentCredential(id: credential.credentialID)?.userName, "old")
            XCTAssertEqual(try serving.discoverableCredentials(rpIDHash: hash, userVerified: true)?.count, 1)
        }
        XCTAssertNil(try serving.residentCredential(id: [9, 9, 9]))

        let cli = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        try cli.updateUser(credentialID: credential.credentialID, name: "new", displayName: nil)
        XCTAssertEqual(try serving.residentCredential(id: credential.credentialID)?.userName, "new")

        let another = makeCredential(rpID: "rp.example", id: [9, 9, 9], createdAt: 1_800_000_000)
        try cli.saveResidentCredential(another)
        XCTAssertNotNil(try serving.residentCredential(id: [9, 9, 9]), "a credential stored since is found: no cached absence")
        let found = try XCTUnwrap(serving.discoverableCredentials(rpIDHash: hash, userVerified: true))
        XCTAssertEqual(found.count, 2)
        XCTAssertEqual(found.first.credentialID, [9, 9, 9], "the newer one first")

        XCTAssertEqual(try cli.signalUnknownCredential(rpID: "rp.example", credentialID: [9, 9, 9]).matched, 1)
        XCTAssertNotNil(try serving.residentCredential(id: [9, 9, 9])?.hiddenSince, "hidden since")
        XCTAssertEqual(try serving.discoverableCredentials(rpIDHash: hash, userVerified: true)?.count, 1)

        XCTAssertTrue(try cli.deleteResidentCredential(id: credential.credentialID))
        XCTAssertNil(try serving.residentCredential(id: credential.credentialID), "a deleted credential is gone at once")
        XCTAssertNil(try serving.discoverableCredentials(rpIDHash: hash, userVerified: true))
    }

    func testItsOwnChangesAreSeenToo() throws {
        let temporary = TemporaryDirectory()
        let serving = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let credential = makeCredential(rpID: "rp.example", userName: "old")
        try serving.saveResidentCredential(credential)
        XCTAssertEqual(try serving.residentCredential(id: credential.credentialID)?.userName, "old")
        try serving.updateUser(credentialID: credential.credentialID, name: "new", displayName: nil)
        XCTAssertEqual(try serving.residentCredential(id: credential.credentialID)?.userName, "new")
        XCTAssertTrue(try serving.updateBackupState(credentialID: credential.credentialID, eligible: true, backedUp: true))
        XCTAssertEqual(try serving.residentCredential(id: credential.credentialID)?.backedUp, true)
        XCTAssertTrue(try serving.deleteResidentCredential(id: credential.credentialID))
        XCTAssertNil(try serving.residentCredential(id: credential.credentialID))
    }

    func testTheCacheKeepsNothingUnderAnUnknownHeader() {
        var cache = CredentialReadCache()
        let credential = makeCredential()
        cache.validate(nil)
        cache.insert(credential, id: credential.credentialID)
        XCTAssertNil(cache.credential(id: credential.credentialID) as Any?, "nothing kept without a header")
        cache.validate([1])
        cache.insert(credential, id: credential.credentialID)
        XCTAssertNotNil(cache.credential(id: credential.credentialID) as Any?)
        cache.validate([1])
        XCTAssertNotNil(cache.credential(id: credential.credentialID) as Any?, "the same header keeps it")
        cache.validate([2])
        XCTAssertNil(cache.credential(id: credential.credentialID) as Any?, "another header drops it")
        cache.insert(nil, id: [7])
        XCTAssertEqual(cache.credential(id: [7]).map { $0 == nil }, true, "a known absence")
    }
}
