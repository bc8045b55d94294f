import Authenticator
@testable import CredentialStore
import FIDOCrypto
import Foundation
import XCTest

/// Versioned schema: `PRAGMA user_version` and an ordered list of migration steps.
final class SchemaMigrationTests: XCTestCase {
    /// A hypothetical later step, as a future issue would add it.
    /// The first version after the real list (the tests add hypothetical steps from there).
    private static let next = StoreSchema.migrations.count + 1
    private static let step2 = SchemaMigration(version: next, summary: "credentials.sync_state", sql: """
        ALTER TABLE credentials ADD COLUMN sync_state INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX credentials_sync ON credentials (sync_state) WHERE sync_state != 0;
        """)

    /// Writes the fixture store when asked to; a no-op otherwise (see StoreFixtureV1).
    func testWriteFixture() throws {
        guard let directory = ProcessInfo.processInfo.environment["LATCHKEY_STORE_WRITE_FIXTURE"] else { return }
        try StoreFixtureV1.write(to: directory)
    }

    func testNewStoreIsAtTheLatestVersion() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        XCTAssertEqual(try store.schemaVersion(), StoreSchema.migrations.count)
    }

    /// A store written by version 1 opens under this build and reads back exactly.
    func testVersion1FixtureOpensAndReads() throws {
        let temporary = TemporaryDirectory()
        try StoreFixtureV1.materialize(in: temporary.storePath)
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath,
                                                   options: StoreOptions(now: { StoreFixtureV1.clock }))
        defer { store.close() }
        XCTAssertTrue(try store.integrityCheck())
        for credential in StoreFixtureV1.credentials {
            assertSameCredential(try store.residentCredential(id: credential.credentialID), credential)
        }
        XCTAssertEqual(try store.residentCredentialCount(), 3)
        XCTAssertEqual(try store.relyingParties(), [
            RelyingPartyEntry(rpID: "fixture.example", rpIDHash: rpIDHash("fixture.example"), name: "Fixture RP"),
            RelyingPartyEntry(rpID: "second.example", rpIDHash: rpIDHash("second.example"), name: nil),
        ])
        assertSameSecrets(try store.loadDeviceSecrets { makeDeviceSecrets() }, StoreFixtureV1.secrets)
        XCTAssertEqual(try store.loadPINState(), StoreFixtureV1.pin)
        for (key, value) in StoreFixtureV1.settings {
            XCTAssertEqual(try store.loadSetting(key), value)
        }
        XCTAssertGreaterThan(Int64(try store.nextSignatureCounter(credentialID: nil)), StoreFixtureV1.globalCounterHighWater)
        try store.saveResidentCredential(makeCredential(rpID: "fixture.example"))
        XCTAssertEqual(try store.residentCredentials(rpIDHash: rpIDHash("fixture.example")).count, 2)

        // Version 2 classified the version-1 rows by credProtect at open, from their sealed records.
        let classified = try store.withDatabaseForTesting { db throws(StoreError) in
            try db.query("SELECT cred_protect FROM credentials", []) { $0.optionalInt64(0) }
        }
        XCTAssertFalse(classified.contains(nil), "every row has cred_protect")
        for credential in StoreFixtureV1.credentials where credential.hiddenSince == nil {
            var found = try store.discoverableCredentials(rpIDHash: credential.rpIDHash, userVerified: true)
                .map { DiscoverableCredential(credential: $0.first, position: $0.position) }
            var ids: [[UInt8]] = []
            while let current = found {
                ids.append(current.credential.credentialID)
                found = try store.discoverableCredential(after: current.position, rpIDHash: credential.rpIDHash, userVerified: true)
            }
            XCTAssertTrue(ids.contains(credential.credentialID))
        }
    }

    /// A version-1 store is upgraded by a later step, in place, keeping its data.
    func testHypotheticalStep2UpgradesAVersion1Store() throws {
        let temporary = TemporaryDirectory()
        try StoreFixtureV1.materialize(in: temporary.storePath)
        var options = StoreOptions(now: { StoreFixtureV1.clock })
        options.migrations = StoreSchema.migrations + [Self.step2]
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath, options: options)
        XCTAssertEqual(try store.schemaVersion(), Self.next)
        let columns = try store.withDatabaseForTesting { db throws(StoreError) in
            try db.textRows("SELECT name FROM pragma_table_info('credentials')")
        }
        XCTAssertTrue(columns.contains("sync_state"))
        for credential in StoreFixtureV1.credentials {
            assertSameCredential(try store.residentCredential(id: credential.credentialID), credential)
        }
        try store.saveResidentCredential(makeCredential())
        XCTAssertTrue(try store.integrityCheck())
        store.close()

        // Reopening at version 2 applies nothing again; a build that only knows version 1 refuses.
        XCTAssertNoThrow(try SQLiteCredentialStore.open(directory: temporary.storePath, options: options).close())
        XCTAssertThrowsError(try SQLiteCredentialStore.open(directory: temporary.storePath)) { error in
            guard case StoreError.io(let message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("newer"), message)
        }
    }

    func testFailingStepRollsBackAndLeavesTheStoreAtItsVersion() throws {
        let temporary = TemporaryDirectory()
        try SQLiteCredentialStore.open(directory: temporary.storePath).close()
        var options = StoreOptions()
        options.migrations = StoreSchema.migrations + [
            SchemaMigration(version: Self.next, summary: "fails halfway") { (db: SQLiteConnection) throws(StoreError) in
                try db.execute("CREATE TABLE half_done (x INTEGER)")
                throw .io("step 2 failed")
            },
        ]
        assertThrows(.io("step 2 failed")) { () throws(StoreError) in
            try SQLiteCredentialStore.open(directory: temporary.storePath, options: options)
        }
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        XCTAssertEqual(try store.schemaVersion(), StoreSchema.migrations.count)
        let tables = try store.withDatabaseForTesting { db throws(StoreError) in
            try db.textRows("SELECT name FROM sqlite_schema WHERE type = 'table'")
        }
        XCTAssertFalse(tables.contains("half_done"))
    }

    func testMigrationListMustBeNumberedFromOne() throws {
        let temporary = TemporaryDirectory()
        var options = StoreOptions()
        options.migrations = StoreSchema.migrations + [SchemaMigration(version: Self.next + 1, summary: "gap", sql: "SELECT 1")]
        XCTAssertThrowsError(try SQLiteCredentialStore.open(directory: temporary.storePath, options: options))
    }
}
