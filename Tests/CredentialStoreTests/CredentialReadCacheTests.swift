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

    /// The PIN state is kept across the serving key's own credential saves (each makeCredential
    /// asks whether a PIN is set) but never across anyone else's commit: a PIN set, changed or
    /// removed by another connection is what the next read returns, whether it came before or
    /// after such a save.
    func testThePINStateSurvivesOwnSavesButNotAnotherConnectionsCommits() throws {
        let temporary = TemporaryDirectory()
        let serving = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let cli = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        func pinState(codePoints: Int) -> PINState {
            PINState(pinHash: SecretBytes(SecureRandom.bytes(count: 16)), pinCodePoints: codePoints, retries: 8, forcePINChange: false)
        }
        XCTAssertNil(try serving.loadPINState())
        try serving.saveResidentCredential(makeCredential())
        XCTAssertNil(try serving.loadPINState(), "kept across its own save")
        try cli.savePINState(pinState(codePoints: 4))
        XCTAssertEqual(try serving.loadPINState()?.pinCodePoints, 4, "another connection's PIN")
        try serving.saveResidentCredential(makeCredential())
        XCTAssertEqual(try serving.loadPINState()?.pinCodePoints, 4)
        // Another connection commits between the serving key's read and its save: the save's
        // headers then differ by two transactions, and the PIN is read again.
        try cli.savePINState(pinState(codePoints: 6))
        try serving.saveResidentCredential(makeCredential())
        XCTAssertEqual(try serving.loadPINState()?.pinCodePoints, 6)
        try serving.savePINState(pinState(codePoints: 8))
        XCTAssertEqual(try serving.loadPINState()?.pinCodePoints, 8, "its own PIN change")
        try cli.savePINState(nil)
        XCTAssertNil(try serving.loadPINState(), "removed by another connection")
    }

    /// The credential count carried across the key's own saves is the one counted inside them:
    /// one more for a new account, the same for a replaced one, and another connection's
    /// additions and deletions are counted again.
    func testTheCredentialCountFollowsOwnSavesAndOtherConnections() throws {
        let temporary = TemporaryDirectory()
        let serving = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let cli = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        XCTAssertEqual(try serving.residentCredentialCount(), 0)
        let alice = makeCredential(rpID: "rp.example", userHandle: [1])
        try serving.saveResidentCredential(alice)
        XCTAssertEqual(try serving.residentCredentialCount(), 1)
        try serving.saveResidentCredential(makeCredential(rpID: "rp.example", userHandle: [2]))
        XCTAssertEqual(try serving.residentCredentialCount(), 2)
        try serving.saveResidentCredential(makeCredential(rpID: "rp.example", userHandle: [1]))
        XCTAssertEqual(try serving.residentCredentialCount(), 2, "alice's credential replaced")
        try cli.saveResidentCredential(makeCredential(rpID: "other.example", userHandle: [3]))
        XCTAssertEqual(try serving.residentCredentialCount(), 3, "another connection's")
        try serving.saveResidentCredential(makeCredential(rpID: "rp.example", userHandle: [4]))
        XCTAssertEqual(try serving.residentCredentialCount(), 4)
        XCTAssertFalse(try cli.deleteResidentCredential(id: alice.credentialID), "replaced already")
        XCTAssertEqual(try cli.residentCredentials(rpIDHash: rpIDHash("rp.example")).count, 3)
        let first = try XCTUnwrap(cli.residentCredentials(rpIDHash: rpIDHash("rp.example")).first)
        XCTAssertTrue(try cli.deleteResidentCredential(id: first.credentialID))
        XCTAssertEqual(try serving.residentCredentialCount(), 3, "another connection's deletion")
    }

    func testOnlyTheNextTransactionCountsAsOne() {
        var before = [UInt8](repeating: 0, count: WALIndexHeader.length)
        before.withUnsafeMutableBytes { $0.storeBytes(of: UInt32.max, toByteOffset: 8, as: UInt32.self) }
        var after = before
        after.withUnsafeMutableBytes { $0.storeBytes(of: 0, toByteOffset: 8, as: UInt32.self) }
        XCTAssertTrue(WALIndexHeader.isOneTransaction(after, after: before), "the counter wraps")
        after.withUnsafeMutableBytes { $0.storeBytes(of: 1, toByteOffset: 8, as: UInt32.self) }
        XCTAssertFalse(WALIndexHeader.isOneTransaction(after, after: before), "two transactions")
        XCTAssertFalse(WALIndexHeader.isOneTransaction(before, after: before), "none")
        XCTAssertFalse(WALIndexHeader.isOneTransaction(Array(after.prefix(48)), after: before))
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
