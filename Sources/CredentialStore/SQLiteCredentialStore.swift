import Authenticator
import FIDOCrypto
import SystemIO

/// The store port over SQLite (docs/architecture.md, Credentials and the store): one database per key in a 0700
/// directory, every identifying or secret field sealed with AES-256-GCM, lookups by keyed hash,
/// one transaction per logical change, signature counters reserved in durable blocks.
///
/// Thread-safe: calls are serialized on one connection. Other processes may use the same
/// store at the same time (`StoreLock.none`); SQLite's locking orders their writes and every
/// read sees the latest commit.
public final class SQLiteCredentialStore: CredentialStorePort, @unchecked Sendable {
    /// The store directory.
    public let directory: String
    public let maxResidentCredentials: Int

    let options: StoreOptions
    let files: StoreDirectory
    let sealer: RowSealer
    /// The store's master key, opened (a backup carries it: the restored store needs it).
    let masterKey: SecretBytes
    private let mutex = StoreMutex()

    // Guarded by `mutex`.
    private var connection: SQLiteConnection?
    private var lockFile: FileDescriptor?
    var counters = CounterReservations()
    private var readCache = CredentialReadCache()

    /// Opens the store in `directory`, creating it (0700) and its files (0600) when missing.
    ///
    /// - `lock: .exclusive` (`latchkey serve`) holds `DIR/lock` until `close()`; a second
    ///   exclusive open fails with `StoreError.locked`.
    /// - A directory or file that group or others can access is refused (`.permissions`, with
    ///   the fix in the message); a database without its master.key is `.corrupt`.
    /// - Hidden credentials past their retention are purged.
    public static func open(directory: String, lock: StoreLock = .exclusive,
                            options: StoreOptions = .init()) throws(StoreError) -> SQLiteCredentialStore {
        try open(directory: directory, lock: lock, options: options, knownMasterKey: nil)
    }

    /// A store `open` created and the caller could not finish (`latchkey init` failing after the
    /// master key was made): its files and keyring item go, and the directory when `removingDirectory`.
    public static func discardNewStore(directory: String, removingDirectory: Bool) {
        StoreDirectory(path: directory).discardNewStore(removingDirectory: removingDirectory)
    }

    /// As `open(directory:lock:options:)`; `knownMasterKey`: the master key a restore just put in
    /// place (so a sealed one is not opened by its method a second time).
    static func open(directory: String, lock: StoreLock, options: StoreOptions,
                     knownMasterKey: SecretBytes?) throws(StoreError) -> SQLiteCredentialStore {
        let files = StoreDirectory(path: directory)
        try files.createIfMissing()
        try files.checkPermissions()
        let lockFile: FileDescriptor?   // released (closed) on any failure below
        switch lock {
        case .exclusive: lockFile = try files.lockExclusively()
        case .none: lockFile = nil
        }
        files.removeStaleMasterKeyTemporaries()
        let masterKey = try files.loadOrCreateMasterKey(seal: options.sealNewStore, known: knownMasterKey)
        try files.createDatabaseFileIfMissing()
        let db = try SQLiteConnection(path: files.databasePath)
        try configure(db)
        try files.checkPermissions()   // now with -wal and -shm
        try SchemaMigrator.migrate(db, migrations: options.migrations)
        files.synchronizeDirectory()
        let store = SQLiteCredentialStore(files: files, options: options, masterKey: masterKey,
                                          connection: db, lockFile: lockFile)
        try store.verifyMasterKey()
        try store.classifyCredentials()
        try store.purgeHidden()
        return store
    }

    private init(files: StoreDirectory, options: StoreOptions, masterKey: SecretBytes,
                 connection: SQLiteConnection, lockFile: FileDescriptor?) {
        self.directory = files.path
        self.files = files
        self.options = options
        self.maxResidentCredentials = options.maxResidentCredentials
        self.sealer = RowSealer(masterKey: masterKey)
        self.masterKey = masterKey
        self.connection = connection
        self.lockFile = lockFile
    }

    /// The WAL-index header `readCache` is checked against; nil (no caching) for a store without
    /// the lock, which is not the serving key.
    private func cacheHeader(_ db: SQLiteConnection) -> [UInt8]? {
        holdsExclusiveLock ? WALIndexHeader.current(db) : nil
    }

    /// Whether this store holds `DIR/lock` (`StoreLock.exclusive`). Read with `mutex` held.
    var holdsExclusiveLock: Bool { lockFile != nil }

    deinit {
        connection?.close()   // before the lock file is released
        lockFile = nil
    }

    /// Closes the database and releases the store lock. Later calls fail with `.io`.
    public func close() {
        mutex.withLock {
            connection?.close()
            connection = nil
            lockFile = nil
            counters = CounterReservations()
            readCache.clear()
        }
    }

    private static func configure(_ db: SQLiteConnection) throws(StoreError) {
        try db.setBusyTimeout(milliseconds: 5000)
        let mode = try db.textRows("PRAGMA journal_mode = WAL").first
        guard mode == "wal" else { throw .io("\(db.path) cannot use WAL journaling (got \(mode ?? "nothing"))") }
        try db.execute("""
            PRAGMA synchronous = FULL;
            PRAGMA foreign_keys = ON;
            PRAGMA temp_store = MEMORY;
            PRAGMA trusted_schema = OFF;
            PRAGMA journal_size_limit = 16777216;
            """)
    }

    /// Runs `body` on the open connection, serialized with every other call.
    func withConnection<R>(_ body: (SQLiteConnection) throws(StoreError) -> R) throws(StoreError) -> R {
        try mutex.withLock { () throws(StoreError) -> R in
            guard let connection else { throw StoreError.io("the credential store at \(directory) is closed") }
            return try body(connection)
        }
    }

    /// A fixed record sealed under this master key: a different master.key fails here, at open,
    /// rather than on the first credential.
    private func verifyMasterKey() throws(StoreError) {
        try withConnection { db throws(StoreError) in
            let binding = RowBinding.device(name: DeviceRow.keyCheck)
            if let sealed = try db.queryFirst(StoreSQL.deviceRow, [.text(DeviceRow.keyCheck)], { $0.blob(0) }) {
                let value = try sealer.openRecord(sealed, binding: binding, kind: .keyCheck) { record throws(StoreError) in
                    record.bytes(ValueField.value)
                }
                guard value == Self.keyCheckValue else { throw .corrupt("the key check row of \(files.databasePath) is wrong") }
                return
            }
            var writer = RecordWriter(kind: .keyCheck)
            writer.append(ValueField.value, bytes: Self.keyCheckValue)
            var record = writer.bytes
            let sealed = try sealer.seal(&record, binding: binding)
            try db.transaction { () throws(StoreError) in
                try db.run(StoreSQL.insertDeviceRowIfAbsent, [.text(DeviceRow.keyCheck), .blob(sealed)])
            }
        }
    }

    private static let keyCheckValue = Array("latchkey master key check".utf8)

    // MARK: Rows

    /// Decrypts a row selected with `StoreSQL.credentialColumns`.
    func credential(from row: SQLiteRow) throws(StoreError) -> ResidentCredential {
        let binding = RowBinding.credential(credentialKey: row.blob(0), relyingPartyKey: row.blob(1),
                                            userKey: row.blob(2))
        return try sealer.openRecord(row.blob(5), binding: binding, kind: .residentCredential) { record throws(StoreError) in
            try ResidentCredential(record: record, createdAt: row.int64(3), hiddenSince: row.optionalInt64(4))
        }
    }

    /// Re-seals a changed credential into its row (same keys).
    func rewrite(_ credential: ResidentCredential, db: SQLiteConnection) throws(StoreError) {
        let credentialKey = sealer.credentialKey(credentialID: credential.credentialID)
        var record = credential.record()
        let sealed = try sealer.seal(&record, binding: .credential(
            credentialKey: credentialKey,
            relyingPartyKey: sealer.relyingPartyKey(rpIDHash: credential.rpIDHash),
            userKey: sealer.userKey(rpIDHash: credential.rpIDHash, userHandle: credential.userHandle)))
        try db.run(StoreSQL.updateCredentialSealed,
                   [.blob(sealed), .integer(credential.protectionColumn), .blob(credentialKey)])
    }

    func credentialCount(db: SQLiteConnection) throws(StoreError) -> Int {
        guard let count = try db.queryFirst(StoreSQL.credentialCount, [], { $0.int64(0) }) else {
            throw .corrupt("\(files.databasePath) has no credential count")
        }
        return Int(count)
    }

    func loadDeviceRow<R>(_ name: String, kind: RecordKind, db: SQLiteConnection,
                          _ decode: (RecordReader) throws(StoreError) -> R) throws(StoreError) -> R? {
        guard let sealed = try db.queryFirst(StoreSQL.deviceRow, [.text(name)], { $0.blob(0) }) else { return nil }
        return try sealer.openRecord(sealed, binding: .device(name: name), kind: kind, decode)
    }

    /// Seals `record` (and wipes it) into the device row `name`.
    func saveDeviceRow(_ name: String, record: inout [UInt8], db: SQLiteConnection) throws(StoreError) {
        let sealed = try sealer.seal(&record, binding: .device(name: name))
        try db.run(StoreSQL.upsertDeviceRow, [.text(name), .blob(sealed)])
    }
}

// MARK: - CredentialStorePort

extension SQLiteCredentialStore {
    /// `create` runs inside the store's write transaction (so that two processes opening a new
    /// store agree on one set of secrets) and must not call back into the store.
    public func loadDeviceSecrets(orCreate create: () throws -> DeviceSecrets) throws(StoreError) -> DeviceSecrets {
        try withConnection { db throws(StoreError) in
            let load = { () throws(StoreError) -> DeviceSecrets? in
                try self.loadDeviceRow(DeviceRow.secrets, kind: .deviceSecrets, db: db) { record throws(StoreError) in
                    try DeviceSecrets(record: record)
                }
            }
            if let secrets = try load() { return secrets }
            // Created inside the write transaction: two processes opening a new store at once
            // end up with the same secrets (the second finds the first's row).
            return try db.transaction { () throws(StoreError) -> DeviceSecrets in
                if let secrets = try load() { return secrets }
                let secrets: DeviceSecrets
                do {
                    secrets = try create()
                } catch let error as StoreError {
                    throw error
                } catch {
                    throw .io("creating device secrets failed (\(type(of: error)))")
                }
                var record = secrets.record()
                try saveDeviceRow(DeviceRow.secrets, record: &record, db: db)
                return secrets
            }
        }
    }

    public func replaceWrappingKey(_ key: SecretBytes) throws(StoreError) {
        try updateDeviceSecrets { $0.wrappingKey = key }
    }

    public func replaceAttestation(privateKey: SecretBytes, certificate: [UInt8], caCertificate: [UInt8]) throws(StoreError) {
        try updateDeviceSecrets {
            $0.attestationPrivateKey = privateKey
            $0.attestationCertificate = certificate
            $0.attestationCACertificate = caCertificate
        }
    }

    /// Read, change and write the device secrets row in one transaction.
    private func updateDeviceSecrets(_ change: (inout DeviceSecrets) -> Void) throws(StoreError) {
        try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                guard var secrets = try loadDeviceRow(DeviceRow.secrets, kind: .deviceSecrets, db: db, {
                    record throws(StoreError) in try DeviceSecrets(record: record)
                }) else {
                    throw .corrupt("\(files.databasePath) has no device secrets to update")
                }
                change(&secrets)
                var record = secrets.record()
                try saveDeviceRow(DeviceRow.secrets, record: &record, db: db)
            }
        }
    }

    public func residentCredentials(rpIDHash: [UInt8]) throws(StoreError) -> [ResidentCredential] {
        try withConnection { db throws(StoreError) in
            try db.query(StoreSQL.visibleCredentialsByRP, [.blob(sealer.relyingPartyKey(rpIDHash: rpIDHash))]) {
                row throws(StoreError) in try credential(from: row)
            }
        }
    }

    /// One decryption and one row read however many accounts the RP has: the count comes from
    /// the RP's row (kept by triggers), the first from the index (rp_key, created_at), and the
    /// position is (created_at, rowid) as two integers, so continuing needs neither a list nor a decryption.
    public func discoverableCredentials(rpIDHash: [UInt8], userVerified: Bool) throws(StoreError) -> DiscoverableCredentials? {
        try withConnection { db throws(StoreError) in
            let key = CredentialReadCache.DiscoverableKey(rpIDHash: ByteKey(rpIDHash), userVerified: userVerified)
            readCache.validate(cacheHeader(db))   // before the statement (CredentialReadCache)
            if let cached = readCache.discoverableCredentials(key) { return cached }
            let found = try db.queryFirst(StoreSQL.firstDiscoverableCredential,
                                          [.blob(sealer.relyingPartyKey(rpIDHash: rpIDHash)), .integer(userVerified ? 1 : 0)]) {
                row throws(StoreError) in
                let first = try discoverableCredential(from: row, userVerified: userVerified)
                return DiscoverableCredentials(first: first.credential, position: first.position, count: Int(row.int64(7)))
            }
            readCache.insert(found, for: key)
            return found
        }
    }

    public func discoverableCredential(after position: CredentialReference, rpIDHash: [UInt8],
                                       userVerified: Bool) throws(StoreError) -> DiscoverableCredential? {
        guard let integers = position.integers(count: 2) else {
            throw .corrupt("a discoverable credential position of \(position.bytes.count) bytes")
        }
        let (createdAt, rowID) = (integers[0], integers[1])
        let bindings: [SQLiteValue] = [.blob(sealer.relyingPartyKey(rpIDHash: rpIDHash)), .integer(userVerified ? 1 : 0),
                                       .integer(createdAt)]
        return try withConnection { db throws(StoreError) in
            for (statement, bindings) in [(StoreSQL.nextDiscoverableCredentialSameSecond, bindings + [.integer(rowID)]),
                                          (StoreSQL.nextDiscoverableCredentialOlder, bindings)] {
                if let next = try db.queryFirst(statement, bindings, { row throws(StoreError) in
                    try discoverableCredential(from: row, userVerified: userVerified)
                }) { return next }
            }
            return nil
        }
    }

    /// A row of the discoverable statements (credential columns, then rowid), with its position.
    private func discoverableCredential(from row: SQLiteRow, userVerified: Bool) throws(StoreError) -> DiscoverableCredential {
        let credential = try credential(from: row)
        // cred_protect is outside the sealed record: the record has the last word, so an edited
        // column can never offer a credential that needs UV without it.
        guard credential.isDiscoverable(userVerified: userVerified) else {
            throw .corrupt("credentials: cred_protect disagrees with the sealed record")
        }
        return DiscoverableCredential(credential: credential,
                                      position: CredentialReference(integers: [row.int64(3), row.int64(6)]))
    }

    /// Fills in `cred_protect` for rows written before schema version 2 (once; later opens find
    /// none through the partial index).
    func classifyCredentials() throws(StoreError) {
        try withConnection { db throws(StoreError) in
            // A row that does not open stays unclassified (and out of discoverable answers without
            // UV): it breaks only the lookups that touch it, as before, not the store's open.
            let rows = try db.query(StoreSQL.unclassifiedCredentials, []) { row throws(StoreError) in
                (row.blob(0), try? credential(from: row).protectionColumn)
            }.compactMap { key, level in level.map { (key, $0) } }
            guard !rows.isEmpty else { return }
            try db.transaction { () throws(StoreError) in
                for (key, level) in rows {
                    try db.run(StoreSQL.setCredProtect, [.integer(level), .blob(key)])
                }
            }
        }
    }

    public func residentCredential(id: [UInt8]) throws(StoreError) -> ResidentCredential? {
        try withConnection { db throws(StoreError) in
            readCache.validate(cacheHeader(db))   // before the statement (CredentialReadCache)
            if let cached = readCache.credential(id: id) { return cached }
            let found = try db.queryFirst(StoreSQL.credentialByKey, [.blob(sealer.credentialKey(credentialID: id))]) {
                row throws(StoreError) in try credential(from: row)
            }
            readCache.insert(found, id: id)
            return found
        }
    }

    /// One commit: the row, and — for the key that signs (the exclusive lock's holder) — the
    /// credential's first block of counter values, reserved in the same transaction, so that the
    /// makeCredential that stores it signs without a second durable commit.
    public func saveResidentCredential(_ credential: ResidentCredential) throws(StoreError) {
        try withConnection { db throws(StoreError) in
            var before: [UInt8]?
            let count = try db.transaction { () throws(StoreError) -> Int in
                // Read under the write lock (BEGIN IMMEDIATE), after any rebuild of the WAL index
                // the BEGIN did: read before it, a commit or a rebuild (which resets iChange) in
                // between could go unseen by the one-transaction check.
                before = cacheHeader(db)
                let rows = try sealedRows(credential)
                let count = try insert(rows, db: db)
                // The row's key as insert computed it: one keyed hash fewer than from the ID.
                if holdsExclusiveLock { try reserveFirstCounterBlock(credentialKey: rows.credentialKey, db: db) }
                return count
            }
            readCache.credentialsCommitted(before: before, after: cacheHeader(db), residentCount: count)
        }
    }

    @discardableResult
    public func deleteResidentCredential(id: [UInt8]) throws(StoreError) -> Bool {
        try withConnection { db throws(StoreError) in
            let key = sealer.credentialKey(credentialID: id)
            let removed = try db.transaction { () throws(StoreError) -> [[UInt8]] in
                try db.query(StoreSQL.deleteCredentialByKey, [.blob(key)]) { $0.blob(0) }
            }
            counters.forgetCredentials(keys: removed)
            return !removed.isEmpty
        }
    }

    /// Replaces the user name and display name; nil removes a field. No effect when the
    /// credential does not exist (the authenticator looks it up first).
    public func updateUser(credentialID: [UInt8], name: String?, displayName: String?) throws(StoreError) {
        try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let key = sealer.credentialKey(credentialID: credentialID)
                guard var stored = try db.queryFirst(StoreSQL.credentialByKey, [.blob(key)], {
                    row throws(StoreError) in try credential(from: row)
                }) else { return }
                stored.userName = name
                stored.userDisplayName = displayName
                try rewrite(stored, db: db)
            }
        }
    }

    public func updateBackupState(credentialID: [UInt8], eligible: Bool, backedUp: Bool) throws(StoreError) -> Bool {
        try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> Bool in
                let key = sealer.credentialKey(credentialID: credentialID)
                guard var stored = try db.queryFirst(StoreSQL.credentialByKey, [.blob(key)], {
                    row throws(StoreError) in try credential(from: row)
                }) else { return false }
                stored.backupEligible = eligible
                stored.backedUp = backedUp
                try rewrite(stored, db: db)
                return true
            }
        }
    }

    public func markHMACSecretUsed(credentialID: [UInt8]) throws(StoreError) {
        try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                let key = sealer.credentialKey(credentialID: credentialID)
                guard var stored = try db.queryFirst(StoreSQL.credentialByKey, [.blob(key)], {
                    row throws(StoreError) in try credential(from: row)
                }), !stored.usedHMACSecret else { return }
                stored.usedHMACSecret = true
                try rewrite(stored, db: db)
            }
        }
    }

    public func residentCredentialCount() throws(StoreError) -> Int {
        try withConnection { db throws(StoreError) in
            readCache.validate(cacheHeader(db))   // before the statement (CredentialReadCache)
            if let cached = readCache.residentCount { return cached }
            let count = try credentialCount(db: db)
            readCache.insert(residentCount: count)
            return count
        }
    }

    public func credentialChangeCount() throws(StoreError) -> UInt64 {
        try withConnection { db throws(StoreError) in
            UInt64(clamping: try db.queryFirst("SELECT value FROM meta WHERE name = 'credential_changes'", []) { $0.int64(0) } ?? 0)
        }
    }

    public func storedOnlyCredentialCount() throws(StoreError) -> Int {
        try withConnection { db throws(StoreError) in
            Int(try db.queryFirst(StoreSQL.storedOnlyCount, []) { $0.int64(0) } ?? 0)
        }
    }

    /// When `credentialID` names no stored resident credential (deleted meanwhile, or a
    /// non-resident ID), the device-global counter is used: still never going backwards.
    /// Counters are handed out only while this store holds `DIR/lock`: a store opened with
    /// `.exclusive` holds it throughout (and so may trust its reserved blocks without re-reading
    /// the database, see `nextCounter`); a `.none` store takes it for the call and gets
    /// `StoreError.locked` while a key is running on the store.
    public func nextSignatureCounter(credentialID: [UInt8]?) throws(StoreError) -> UInt32 {
        try withConnection { db throws(StoreError) in
            let temporaryLock = holdsExclusiveLock ? nil : try files.lockExclusively()
            return try withExtendedLifetime(temporaryLock) { () throws(StoreError) -> UInt32 in   // unlocked in deinit
                if let credentialID,
                   let value = try nextCounter(.credential(key: sealer.credentialKey(credentialID: credentialID)), db: db) {
                    return value
                }
                guard let value = try nextCounter(.global, db: db) else {
                    throw .io("the global signature counter is unavailable")
                }
                return value
            }
        }
    }

    public func relyingParties() throws(StoreError) -> [RelyingPartyEntry] {
        try withConnection { db throws(StoreError) in
            let entries = try db.query(StoreSQL.visibleRelyingParties) { row throws(StoreError) in
                try sealer.openRecord(row.blob(1), binding: .relyingParty(relyingPartyKey: row.blob(0)),
                                      kind: .relyingParty) { record throws(StoreError) in
                    try RelyingPartyEntry(record: record)
                }
            }
            return entries.sorted { $0.rpID < $1.rpID }
        }
    }

    public func loadPINState() throws(StoreError) -> PINState? {
        try withConnection { db throws(StoreError) in
            readCache.validate(cacheHeader(db))   // before the statement (CredentialReadCache)
            if let cached = readCache.pinState { return cached }
            let state = try loadDeviceRow(DeviceRow.pin, kind: .pinState, db: db) { record throws(StoreError) in
                try PINState(record: record)
            }
            readCache.insert(pinState: state)
            return state
        }
    }

    public func savePINState(_ state: PINState?) throws(StoreError) {
        try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                if let state {
                    var record = state.record()
                    try saveDeviceRow(DeviceRow.pin, record: &record, db: db)
                } else {
                    try db.run(StoreSQL.deleteDeviceRow, [.text(DeviceRow.pin)])
                }
            }
        }
    }

    public func loadSetting(_ key: String) throws(StoreError) -> [UInt8]? {
        try withConnection { db throws(StoreError) in try readSetting(key, db: db) }
    }

    public func saveSetting(_ key: String, value: [UInt8]?) throws(StoreError) {
        try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in try writeSetting(key, value, db: db) }
        }
    }

    public func updateSetting(_ key: String, _ transform: ([UInt8]?) -> [UInt8]?) throws(StoreError) {
        try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in try writeSetting(key, transform(try readSetting(key, db: db)), db: db) }
        }
    }

    func readSetting(_ key: String, db: SQLiteConnection) throws(StoreError) -> [UInt8]? {
        try loadDeviceRow(DeviceRow.setting(key), kind: .setting, db: db) { record throws(StoreError) in
            try record.requiredBytes(ValueField.value, "setting value")
        }
    }

    /// `value` as the setting's row; nil deletes it.
    func writeSetting(_ key: String, _ value: [UInt8]?, db: SQLiteConnection) throws(StoreError) {
        if let value {
            var writer = RecordWriter(kind: .setting)
            writer.append(ValueField.value, bytes: value)
            var record = writer.bytes
            try saveDeviceRow(DeviceRow.setting(key), record: &record, db: db)
        } else {
            try db.run(StoreSQL.deleteDeviceRow, [.text(DeviceRow.setting(key))])
        }
    }

    /// authenticatorReset (CTAP 2.1 §6.6): every credential, the PIN, the settings and the
    /// signal journal (it names credentials and sites) go; AAGUID and attestation stay; the wrapping key is replaced. The global signature counter is kept
    /// (it only ever moves forward). One transaction.
    public func reset(newWrappingKey: SecretBytes) throws(StoreError) {
        try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                try db.run(StoreSQL.deleteAllCredentials)
                try db.run(StoreSQL.deleteAllRelyingParties)
                try db.run("DELETE FROM signal_journal")
                try db.run(StoreSQL.deleteDeviceRow, [.text(DeviceRow.pin)])
                try db.run(StoreSQL.deleteSettings)
                if var secrets = try loadDeviceRow(DeviceRow.secrets, kind: .deviceSecrets, db: db, {
                    record throws(StoreError) in try DeviceSecrets(record: record)
                }) {
                    secrets.wrappingKey = newWrappingKey
                    var record = secrets.record()
                    try saveDeviceRow(DeviceRow.secrets, record: &record, db: db)
                }
            }
            counters.forgetAllCredentials()
        }
    }
}
