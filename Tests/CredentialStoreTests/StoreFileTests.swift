import Authenticator
@testable import CredentialStore
import FIDOCrypto
import XCTest

/// docs/architecture.md, Credentials and the store: mode 0600 files in a 0700 directory; `latchkey serve` holds the lock.
final class StoreFileTests: XCTestCase {
    func testCreatesPrivateDirectoryAndFilesWhateverTheUmask() throws {
        let temporary = TemporaryDirectory()
        let previous = umask(0)
        defer { umask(previous) }
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath + "/nested")
        try store.saveResidentCredential(makeCredential())
        let directory = temporary.storePath + "/nested"
        XCTAssertEqual(fileMode(temporary.storePath), 0o700)
        XCTAssertEqual(fileMode(directory), 0o700)
        for file in ["credentials.sqlite", "credentials.sqlite-wal", "credentials.sqlite-shm", "master.key", "lock"] {
            XCTAssertEqual(fileMode(directory + "/" + file), 0o600, file)
        }
        var info = stat()
        XCTAssertEqual(stat(directory + "/master.key", &info), 0)
        XCTAssertEqual(info.st_size, 32)
        store.close()
    }

    func testGroupReadableDirectoryIsRefused() throws {
        let temporary = TemporaryDirectory()
        try SQLiteCredentialStore.open(directory: temporary.storePath).close()
        XCTAssertEqual(chmod(temporary.storePath, 0o755), 0)
        assertPermissionsError(naming: temporary.storePath) { () throws(StoreError) in
            try SQLiteCredentialStore.open(directory: temporary.storePath)
        }
        XCTAssertEqual(chmod(temporary.storePath, 0o700), 0)
        XCTAssertNoThrow(try SQLiteCredentialStore.open(directory: temporary.storePath).close())
    }

    func testReadableMasterKeyIsRefused() throws {
        let temporary = TemporaryDirectory()
        try SQLiteCredentialStore.open(directory: temporary.storePath).close()
        let key = temporary.storePath + "/master.key"
        XCTAssertEqual(chmod(key, 0o644), 0)
        assertPermissionsError(naming: key) { () throws(StoreError) in
            try SQLiteCredentialStore.open(directory: temporary.storePath)
        }
    }

    func testWritableDatabaseIsRefused() throws {
        let temporary = TemporaryDirectory()
        try SQLiteCredentialStore.open(directory: temporary.storePath).close()
        let database = temporary.storePath + "/credentials.sqlite"
        XCTAssertEqual(chmod(database, 0o620), 0)
        assertPermissionsError(naming: database) { () throws(StoreError) in
            try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        }
    }

    func testSymlinkedMasterKeyIsRefused() throws {
        let temporary = TemporaryDirectory()
        try SQLiteCredentialStore.open(directory: temporary.storePath).close()
        let key = temporary.storePath + "/master.key"
        XCTAssertEqual(rename(key, temporary.root + "/elsewhere.key"), 0)
        XCTAssertEqual(symlink(temporary.root + "/elsewhere.key", key), 0)
        XCTAssertThrowsError(try SQLiteCredentialStore.open(directory: temporary.storePath)) { error in
            guard case StoreError.permissions = error else { return XCTFail("\(error)") }
        }
    }

    func testSecondExclusiveOpenIsLockedAndNoLockOpenSeesChanges() throws {
        let temporary = TemporaryDirectory()
        let serving = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .exclusive)
        assertThrows(.locked) { () throws(StoreError) in
            try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .exclusive)
        }
        let cli = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        let credential = makeCredential()
        try serving.saveResidentCredential(credential)
        assertSameCredential(try cli.residentCredential(id: credential.credentialID), credential)
        // …and the running key sees the CLI's edits on its next call.
        try cli.updateUser(credentialID: credential.credentialID, name: "renamed", displayName: nil)
        XCTAssertEqual(try serving.residentCredential(id: credential.credentialID)?.userName, "renamed")
        XCTAssertTrue(try cli.deleteResidentCredential(id: credential.credentialID))
        XCTAssertEqual(try serving.residentCredentialCount(), 0)
        cli.close()
        serving.close()
        // Closing releases the lock.
        XCTAssertNoThrow(try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .exclusive).close())
    }

    func testNewerSchemaIsRefused() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        try store.withDatabaseForTesting { db throws(StoreError) in try db.execute("PRAGMA user_version = 99") }
        store.close()
        XCTAssertThrowsError(try SQLiteCredentialStore.open(directory: temporary.storePath)) { error in
            guard case StoreError.io(let message) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("newer"), message)
        }
    }

    func testSQLitePragmasAreInForce() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        try store.withDatabaseForTesting { db throws(StoreError) in
            XCTAssertEqual(try db.textRows("PRAGMA journal_mode"), ["wal"])
            XCTAssertEqual(try db.textRows("PRAGMA synchronous"), ["2"])   // FULL
            XCTAssertEqual(try db.textRows("PRAGMA foreign_keys"), ["1"])
            XCTAssertEqual(try db.textRows("PRAGMA busy_timeout"), ["5000"])
        }
    }
}
