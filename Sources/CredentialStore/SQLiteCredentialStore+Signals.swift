import Authenticator
import FIDOCrypto

// The WebAuthn Signal API's three calls as store operations (docs/architecture.md, Credentials and the store).
// Latchkey takes signals from websites (SignalBridge, through its browser extension) and from its
// CLI. Each applied signal is journaled in the same transaction (`signalJournal`), so the record
// and the change commit together; a signal that names no credential of the store is not applied
// and not journaled.
extension SQLiteCredentialStore {
    /// signalAllAcceptedCredentials: of this user's credentials at this RP, those whose ID is
    /// not in `acceptedIDs` become hidden (their hidden-since mark is kept if already hidden);
    /// listed ones become visible again. One transaction.
    ///
    /// Cost does not grow with the store: the user's rows come from the `user_key` index (a
    /// store keeps one credential per account), and membership is a set lookup.
    public func signalAllAcceptedCredentials(rpID: String, userHandle: [UInt8], acceptedIDs: [[UInt8]],
                                             source: String = SignalJournalEntry.commandLine) throws(StoreError) -> SignalChanges {
        let rpIDHash = Self.rpIDHash(rpID)
        let accepted = Set(acceptedIDs)
        let now = options.now()
        return try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> SignalChanges in
                let userKey = sealer.userKey(rpIDHash: rpIDHash, userHandle: userHandle)
                let rows = try db.query(StoreSQL.credentialsByUser, [.blob(userKey)]) { row throws(StoreError) in
                    (key: row.blob(0), credential: try credential(from: row))
                }
                var changes = SignalChanges(matched: rows.count)
                for (key, credential) in rows {
                    let isAccepted = accepted.contains(credential.credentialID)
                    if isAccepted, credential.hiddenSince != nil {
                        try db.run(StoreSQL.updateHiddenSince, [.null, .blob(key)])
                        changes.unhidden.append(credential.credentialID)
                    } else if !isAccepted, credential.hiddenSince == nil {
                        try db.run(StoreSQL.updateHiddenSince, [.integer(now), .blob(key)])
                        changes.hidden.append(credential.credentialID)
                        if credential.usedHMACSecret { changes.hiddenAfterPRFUse.append(credential.credentialID) }
                    }
                }
                try journal(.allAcceptedCredentials, rpID: rpID, source: source, changes: changes, now: now, db: db)
                return changes
            }
        }
    }

    /// signalUnknownCredential: hides the credential when it belongs to `rpID` (`matched` 1,
    /// `hidden` empty when it already was); a credential of another RP is left alone (`matched` 0).
    public func signalUnknownCredential(rpID: String, credentialID: [UInt8],
                                        source: String = SignalJournalEntry.commandLine) throws(StoreError) -> SignalChanges {
        let relyingPartyKey = sealer.relyingPartyKey(rpIDHash: Self.rpIDHash(rpID))
        let now = options.now()
        return try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> SignalChanges in
                let key = sealer.credentialKey(credentialID: credentialID)
                guard let placement = try db.queryFirst(StoreSQL.credentialPlacement, [.blob(key)], {
                    (rpKey: $0.blob(0), hiddenSince: $0.optionalInt64(1))
                }), constantTimeEquals(placement.rpKey, relyingPartyKey) else {
                    return SignalChanges(matched: 0)
                }
                var changes = SignalChanges(matched: 1)
                if placement.hiddenSince == nil {
                    try db.run(StoreSQL.updateHiddenSince, [.integer(now), .blob(key)])
                    changes.hidden.append(credentialID)
                    // The row is opened only for a credential this signal hides.
                    let hidden = try db.queryFirst(StoreSQL.credentialByKey, [.blob(key)]) { row throws(StoreError) in
                        try credential(from: row)
                    }
                    if hidden?.usedHMACSecret == true { changes.hiddenAfterPRFUse.append(credentialID) }
                }
                try journal(.unknownCredential, rpID: rpID, source: source, changes: changes, now: now, db: db)
                return changes
            }
        }
    }

    /// signalCurrentUserDetails: sets the user name and display name of this user's
    /// credentials at this RP (hidden ones too); nil leaves a field as it is. `renamed` lists
    /// the credentials whose names changed (one already named so is not rewritten).
    public func signalCurrentUserDetails(rpID: String, userHandle: [UInt8], name: String?, displayName: String?,
                                         source: String = SignalJournalEntry.commandLine) throws(StoreError) -> SignalChanges {
        let rpIDHash = Self.rpIDHash(rpID)
        let now = options.now()
        return try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> SignalChanges in
                let userKey = sealer.userKey(rpIDHash: rpIDHash, userHandle: userHandle)
                let rows = try db.query(StoreSQL.credentialsByUser, [.blob(userKey)]) { row throws(StoreError) in
                    try credential(from: row)
                }
                var changes = SignalChanges(matched: rows.count)
                for var credential in rows {
                    let before = (credential.userName, credential.userDisplayName)
                    if let name { credential.userName = name }
                    if let displayName { credential.userDisplayName = displayName }
                    guard (credential.userName, credential.userDisplayName) != before else { continue }
                    try rewrite(credential, db: db)
                    changes.renamed.append(credential.credentialID)
                }
                try journal(.currentUserDetails, rpID: rpID, source: source, changes: changes, now: now, db: db)
                return changes
            }
        }
    }

    /// Undoes a hide (`latchkey credentials unhide`): the credential becomes visible again.
    /// Returns its RP ID and whether it was hidden; nil when the store has no such credential.
    public func unhideCredential(credentialID: [UInt8],
                                 source: String = SignalJournalEntry.commandLine) throws(StoreError) -> (rpID: String, wasHidden: Bool)? {
        let now = options.now()
        return try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> (rpID: String, wasHidden: Bool)? in
                let key = sealer.credentialKey(credentialID: credentialID)
                guard let credential = try db.queryFirst(StoreSQL.credentialByKey, [.blob(key)], { row throws(StoreError) in
                    try credential(from: row)
                }) else { return nil }
                var changes = SignalChanges(matched: 1)
                if credential.hiddenSince != nil {
                    try db.run(StoreSQL.updateHiddenSince, [.null, .blob(key)])
                    changes.unhidden.append(credentialID)
                }
                try journal(.unhide, rpID: credential.rpID, source: source, changes: changes, now: now, db: db)
                return (credential.rpID, credential.hiddenSince != nil)
            }
        }
    }

    /// Journals an applied signal (one that named at least one credential).
    private func journal(_ method: SignalMethod, rpID: String, source: String, changes: SignalChanges,
                         now: Int64, db: SQLiteConnection) throws(StoreError) {
        guard changes.matched > 0 else { return }
        try appendJournal(SignalJournalEntry(time: now, source: source, rpID: rpID, method: method.rawValue,
                                             changes: changes), db: db)
    }

    /// Deletes credentials hidden for longer than `hiddenRetentionSeconds`; returns how many.
    /// Also run by `open`.
    @discardableResult
    public func purgeHidden() throws(StoreError) -> Int {
        let cutoff = options.now() - options.hiddenRetentionSeconds
        return try withConnection { db throws(StoreError) in
            let removed = try db.transaction { () throws(StoreError) -> [[UInt8]] in
                try db.query(StoreSQL.purgeHidden, [.integer(cutoff)]) { $0.blob(0) }
            }
            counters.forgetCredentials(keys: removed)
            return removed.count
        }
    }

    /// Every resident credential, newest first (for `latchkey credentials list` and export).
    public func allResidentCredentials(includeHidden: Bool) throws(StoreError) -> [ResidentCredential] {
        try withConnection { db throws(StoreError) in
            try db.query(includeHidden ? StoreSQL.allCredentials : StoreSQL.allVisibleCredentials) {
                row throws(StoreError) in try credential(from: row)
            }
        }
    }

    /// Opens every credential's row (hidden ones too) and keeps none: whether the master key opens
    /// them all, in memory that does not grow with the store (a restore's check).
    public func checkEveryCredentialOpens() throws(StoreError) {
        try withConnection { db throws(StoreError) in
            // Unordered: an ORDER BY would have SQLite's sorter hold every row (25 MB at 60,000).
            _ = try db.query(StoreSQL.everyCredentialUnordered) { row throws(StoreError) in _ = try credential(from: row) }
        }
    }

    /// Saves many credentials in one transaction (import, benchmarks), each with the
    /// replacement rule of `saveResidentCredential`. All or nothing: `.full` stores none.
    public func saveResidentCredentials(_ credentials: [ResidentCredential]) throws(StoreError) {
        try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                for credential in credentials {
                    try insert(credential, db: db)
                }
            }
        }
    }

    /// An import: the credentials and a change to one setting (the large-blob array that holds
    /// their blobs) in one transaction, so that a crash or a refusal (`.full`, a `transform`
    /// that throws) leaves the store as it was. The credentials replace as
    /// `saveResidentCredential` does.
    public func saveResidentCredentials(_ credentials: [ResidentCredential], updatingSetting key: String,
                                        _ transform: ([UInt8]?) throws(StoreError) -> [UInt8]?) throws(StoreError) {
        try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) in
                for credential in credentials {
                    try insert(credential, db: db)
                }
                let old = try readSetting(key, db: db)
                let new = try transform(old)
                if new != old { try writeSetting(key, new, db: db) }
            }
        }
    }

    /// SQLite's `PRAGMA integrity_check` is "ok", no foreign key is dangling, and the kept
    /// counts (per RP, in total) match the rows. Reads every page: for `latchkey doctor`.
    public func integrityCheck() throws(StoreError) -> Bool {
        try withConnection { db throws(StoreError) in
            guard try db.textRows("PRAGMA integrity_check") == ["ok"] else { return false }
            guard try db.textRows("PRAGMA foreign_key_check").isEmpty else { return false }
            let total = try db.queryFirst("SELECT count(*) FROM credentials") { $0.int64(0) } ?? -1
            guard Int(total) == (try credentialCount(db: db)) else { return false }
            let mismatched = try db.queryFirst("""
                SELECT count(*) FROM rps WHERE
                  credential_count != (SELECT count(*) FROM credentials c WHERE c.rp_key = rps.rp_key)
                  OR visible_count != (SELECT count(*) FROM credentials c
                                       WHERE c.rp_key = rps.rp_key AND c.hidden_since IS NULL)
                  OR open_count != (SELECT count(*) FROM credentials c
                                    WHERE c.rp_key = rps.rp_key AND c.hidden_since IS NULL AND c.cred_protect IS 1)
                  OR listed_count != (SELECT count(*) FROM credentials c
                                      WHERE c.rp_key = rps.rp_key AND c.hidden_since IS NULL AND c.cred_protect IS NOT 0)
                """) { $0.int64(0) }
            return mismatched == 0
        }
    }

    /// rpIdHash = SHA-256(UTF-8 rpId) (WebAuthn §6.1).
    static func rpIDHash(_ rpID: String) -> [UInt8] {
        FIDOCrypto.SHA256.hash(Array(rpID.utf8))
    }
}

// MARK: - Test and diagnostics support

extension SQLiteCredentialStore {
    /// `EXPLAIN QUERY PLAN` details of `sql` (tests check that lookups search an index).
    func queryPlan(_ sql: String) throws(StoreError) -> [String] {
        try withConnection { db throws(StoreError) in
            try db.textRows("EXPLAIN QUERY PLAN " + sql, column: 3)
        }
    }

    /// The schema version of the open database.
    func schemaVersion() throws(StoreError) -> Int {
        try withConnection { db throws(StoreError) in try db.userVersion() }
    }

    /// Runs `body` on the connection (tests inspect the schema through it).
    func withDatabaseForTesting<R>(_ body: (SQLiteConnection) throws(StoreError) -> R) throws(StoreError) -> R {
        try withConnection(body)
    }
}
