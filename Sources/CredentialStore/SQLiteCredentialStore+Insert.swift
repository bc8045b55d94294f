import Authenticator

/// A resident credential's rows as they are written: the keyed row hashes and the sealed records.
struct SealedCredentialRows {
    var credentialKey: [UInt8]
    var relyingPartyKey: [UInt8]
    var userKey: [UInt8]
    /// The RP's sealed row, and whether it carries a name (a nameless one never replaces a name).
    var relyingParty: [UInt8]
    var relyingPartyNamed: Bool
    var credential: [UInt8]
    var createdAt: Int64
    var hiddenSince: Int64?
    var protection: Int64
}

extension SQLiteCredentialStore {
    /// Inserts one credential inside the caller's transaction, replacing the same account's
    /// (and the same ID's) row. CTAP 2.1 §6.1.2 step 17: a new discoverable credential for the
    /// same (rpId, user handle) overwrites the old one.
    func insert(_ credential: ResidentCredential, db: SQLiteConnection) throws(StoreError) {
        try insert(try sealedRows(credential), db: db)
    }

    /// The work of a save before any SQL: three keyed hashes and two sealed records.
    func sealedRows(_ credential: ResidentCredential) throws(StoreError) -> SealedCredentialRows {
        let credentialKey = sealer.credentialKey(credentialID: credential.credentialID)
        let relyingPartyKey = sealer.relyingPartyKey(rpIDHash: credential.rpIDHash)
        let userKey = sealer.userKey(rpIDHash: credential.rpIDHash, userHandle: credential.userHandle)
        var rpRecord = RelyingPartyEntry(rpID: credential.rpID, rpIDHash: credential.rpIDHash,
                                         name: credential.rpName).record()
        let rpSealed = try sealer.seal(&rpRecord, binding: .relyingParty(relyingPartyKey: relyingPartyKey))
        var record = credential.record()
        let sealed = try sealer.seal(&record, binding: .credential(
            credentialKey: credentialKey, relyingPartyKey: relyingPartyKey, userKey: userKey))
        return SealedCredentialRows(credentialKey: credentialKey, relyingPartyKey: relyingPartyKey, userKey: userKey,
                                    relyingParty: rpSealed, relyingPartyNamed: credential.rpName != nil,
                                    credential: sealed, createdAt: credential.createdAt,
                                    hiddenSince: credential.hiddenSince, protection: credential.protectionColumn)
    }

    /// The SQL of a save: the replaced rows deleted, the count checked, the RP upserted, the row
    /// inserted. Returns how many credentials the store holds with it.
    @discardableResult
    func insert(_ rows: SealedCredentialRows, db: SQLiteConnection) throws(StoreError) -> Int {
        var removed = try db.query(StoreSQL.deleteCredentialByUser, [.blob(rows.userKey)]) { $0.blob(0) }
        removed += try db.query(StoreSQL.deleteCredentialByKey, [.blob(rows.credentialKey)]) { $0.blob(0) }
        counters.forgetCredentials(keys: removed + [rows.credentialKey])

        let count = try credentialCount(db: db)
        guard count < maxResidentCredentials else { throw .full }

        // The newest registration names the RP; one without a name keeps the name already known.
        try db.run(rows.relyingPartyNamed ? StoreSQL.upsertRelyingParty : StoreSQL.insertRelyingPartyIfAbsent,
                   [.blob(rows.relyingPartyKey), .blob(rows.relyingParty)])
        try db.run(StoreSQL.insertCredential, [
            .blob(rows.credentialKey), .blob(rows.relyingPartyKey), .blob(rows.userKey),
            .integer(rows.createdAt), .optionalInteger(rows.hiddenSince), .blob(rows.credential),
            .integer(rows.protection),
        ])
        return count + 1
    }
}

// MARK: - The SQL-only baseline of a save (latchkey-bench)

/// A resident credential sealed once, for `latchkey-bench`'s baseline of a resident
/// makeCredential: the SQL a save runs, without the sealing and hashing before it (callgrind's
/// "SQL-only insert of its row"). Not part of the store's interface: `@_spi(Benchmarks)`.
@_spi(Benchmarks)
public struct SealedResidentCredential {
    let rows: SealedCredentialRows
}

@_spi(Benchmarks)
extension SQLiteCredentialStore {
    public func sealedForBenchmark(_ credential: ResidentCredential) throws(StoreError) -> SealedResidentCredential {
        try withConnection { _ throws(StoreError) in SealedResidentCredential(rows: try sealedRows(credential)) }
    }

    /// Saves `sealed` as `saveResidentCredential` saves a credential — the same transaction and
    /// statements, the first counter block included — as account `index`: its credential and user
    /// keys get `index` in their first bytes (a fresh row each time, with no hash computed).
    public func saveSealedForBenchmark(_ sealed: SealedResidentCredential, index: UInt64) throws(StoreError) {
        var rows = sealed.rows
        let distinct = withUnsafeBytes(of: index.bigEndian) { Array($0) }
        rows.credentialKey.replaceSubrange(0..<distinct.count, with: distinct)
        rows.userKey.replaceSubrange(0..<distinct.count, with: distinct)
        try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                try insert(rows, db: db)
                if holdsExclusiveLock { try reserveFirstCounterBlock(credentialKey: rows.credentialKey, db: db) }
            }
        }
    }
}
