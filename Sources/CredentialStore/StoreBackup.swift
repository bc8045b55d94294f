import Authenticator
import FIDOCrypto
import Foundation
import KeySealing
import SystemIO

/// The whole store as one snapshot, and a new store made from one: what `latchkey backup` and
/// `restore` carry (encrypted) between machines. A snapshot is the database as of one read
/// transaction (SQLite's `VACUUM INTO`) and the opened master key, so it holds everything the key
/// is: the device secrets (AAGUID, the wrapping key behind every non-resident credential ID,
/// attestation), resident credentials, settings, the PIN state, the signal journal, and the
/// durable counter marks — which are at or above every counter value handed out before it, so a
/// restored key never signs below what the backup's key had signed.
public enum StoreBackup {
    public struct Snapshot: Sendable {
        public var masterKey: SecretBytes
        public var database: [UInt8]
        public init(masterKey: SecretBytes, database: [UInt8]) { self.masterKey = masterKey; self.database = database }
    }

    /// The largest database a backup holds; `latchkey restore` reads any backup that size makes.
    public static let maximumDatabaseBytes = 256 << 20

    /// A snapshot of `store` (open, a key may be running on it), in memory.
    public static func snapshot(of store: SQLiteCredentialStore) throws(StoreError) -> Snapshot {
        let snapshot = try snapshotFile(of: store)
        defer { snapshot.remove() }
        let database: [UInt8]
        do throws(Errno) {
            database = try snapshot.file.readAll(limit: maximumDatabaseBytes)
        } catch {
            throw .io("cannot read the snapshot \(snapshot.path): \(error.message)")
        }
        guard database.count <= maximumDatabaseBytes else {
            throw .io("the store's database is over \(maximumDatabaseBytes >> 20) MiB, more than a backup holds: "
                      + "copy the store's directory while no key runs instead")
        }
        return Snapshot(masterKey: store.masterKey, database: database)
    }

    /// A snapshot kept in a private file beside the store, for a backup that streams it: read it
    /// from `file`, then `remove()` it.
    public struct SnapshotFile {
        public let masterKey: SecretBytes
        public let path: String
        public let file: FileDescriptor
        public let size: Int

        public func remove() {
            file.close()
            try? FileSystem.remove(path)
        }
    }

    /// `store`'s database as of one read transaction (VACUUM INTO), in a private file.
    public static func snapshotFile(of store: SQLiteCredentialStore) throws(StoreError) -> SnapshotFile {
        let temporary = store.directory + "/backup.tmp-\(getpid())-" + SecureRandom.bytes(count: 4).map { String($0, radix: 16) }.joined()
        do throws(StoreError) {
            try store.withConnection { db throws(StoreError) in
                _ = try db.run("VACUUM INTO ?", [.text(temporary)])
            }
            do throws(Errno) {
                let file = try FileDescriptor.open(temporary, flags: O_RDONLY | O_CLOEXEC)
                do throws(Errno) {
                    try file.setMode(0o600)
                    let size = Int(try file.status().st_size)
                    return SnapshotFile(masterKey: store.masterKey, path: temporary, file: file, size: size)
                } catch {
                    file.close()
                    throw error
                }
            } catch {
                throw .io("cannot read the snapshot \(temporary): \(error.message)")
            }
        } catch {
            try? FileSystem.remove(temporary)
            throw error
        }
    }

    /// A new store in `directory` (which must not exist, or be empty) from `snapshot`: the database
    /// and an unsealed master key (seal it again with `latchkey store seal`), each written private
    /// and synced, then opened to check that the key opens the rows and the database is whole. On
    /// any failure nothing is left behind.
    /// `seal`: how the new store's master key is sealed (nil: raw, as the backup holds it).
    /// Returns how many resident credentials the new store holds.
    @discardableResult
    public static func restore(_ snapshot: Snapshot, into directory: String, seal: MasterKeySeal.Method? = nil) throws(StoreError) -> Int {
        try restore(masterKey: snapshot.masterKey, into: directory, seal: seal) { (file: FileDescriptor) throws(StoreError) in
            do throws(Errno) {
                try file.writeAll(snapshot.database)
            } catch {
                throw .io("cannot write the database: \(error.message)")
            }
        }
    }

    /// As `restore(_:into:seal:)`, the database written by `writeDatabase` into the new store's
    /// (private) database file a piece at a time: a backup read as a stream.
    @discardableResult
    public static func restore(masterKey: SecretBytes, into directory: String, seal: MasterKeySeal.Method? = nil,
                               writeDatabase: (FileDescriptor) throws(StoreError) -> Void) throws(StoreError) -> Int {
        let files = StoreDirectory(path: directory)
        var created = false
        if let entries = try? FileSystem.entries(directory) {
            guard entries.isEmpty else {
                throw .io("\(directory) is not empty: restore makes a new store (name a new --store or --name)")
            }
        } else {
            do {
                try FileSystem.createDirectories(directory, mode: 0o700)
                created = true
            } catch {
                throw .io("cannot create \(directory): \(error.message)")
            }
        }
        do throws(StoreError) {
            try files.createIfMissing()
            try files.checkPermissions()
            let file: FileDescriptor
            do {
                file = try FileDescriptor.createPrivateFile(files.databasePath, flags: O_RDWR | O_CLOEXEC)
            } catch {
                throw .io("cannot write \(files.databasePath): \(error.message)")
            }
            do {
                defer { file.close() }
                try writeDatabase(file)
                do {
                    try file.synchronize()
                    var start = [UInt8](repeating: 0, count: 16)
                    let read = start.withUnsafeMutableBytes { pread(file.rawValue, $0.baseAddress, 16, 0) }
                    guard read == 16, start == Array("SQLite format 3\u{0}".utf8) else {
                        throw StoreError.corrupt("the backup's database is not an SQLite database")
                    }
                    start.wipe()
                } catch let error as StoreError {
                    throw error
                } catch {
                    throw .io("cannot write \(files.databasePath): \(error)")
                }
            }
            var key = masterKey.copyBytes()
            defer { key.wipe() }
            try files.installMasterKey(key, seal: seal)
            // Opened with the key it now holds (verified against the database below), so a
            // sealed one is not opened by its method a second time.
            let store = try SQLiteCredentialStore.open(directory: directory, lock: .exclusive, options: .init(),
                                                       knownMasterKey: masterKey)
            defer { store.close() }
            guard try store.integrityCheck() else { throw .corrupt("the restored database fails its integrity check") }
            try store.checkEveryCredentialOpens()   // every row opens with the key
            return try store.residentCredentialCount()
        } catch {
            files.discardNewStore(removingDirectory: created)
            throw error
        }
    }
}
