import Authenticator
import FIDOCrypto

// The WebAuthn Signal API's three calls as store operations (ARCHITECTURE.md, Credential model).
// Latchkey takes signals from its CLI and control socket; browsers do not pass them to keys.
extension SQLiteCredentialStore {
    /// signalAllAcceptedCredentials: of this user's credentials at this RP, those whose ID is
    /// not in `acceptedIDs` become hidden (their hidden-since mark is kept if already hidden);
    /// listed ones become visible again. Returns how many changed each way. One transaction.
    ///
    /// Cost does not grow with the store: the user's rows come from the `user_key` index (a
    /// store keeps one credential per account), and membership is a set lookup.
    public func signalAllAcceptedCredentials(rpID: String, userHandle: [UInt8],
                                             acceptedIDs: [[UInt8]]) throws(StoreError) -> (hidden: Int, unhidden: Int) {
        let rpIDHash = Self.rpIDHash(rpID)
        let accepted = Set(acceptedIDs)
        let now = options.now()
        return try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> (hidden: Int, unhidden: Int) in
                let userKey = sealer.userKey(rpIDHash: rpIDHash, userHandle: userHandle)
                let rows = try db.query(StoreSQL.credentialsByUser, [.blob(userKey)]) { row throws(StoreError) in
                    (key: row.blob(0), credential: try credential(from: row))
                }
                var hidden = 0
                var unhidden = 0
                for (key, credential) in rows {
                    let isAccepted = accepted.contains(credential.credentialID)
                    if isAccepted, credential.hiddenSince != nil {
                        try db.run(StoreSQL.updateHiddenSince, [.null, .blob(key)])
                        unhidden += 1
                    } else if !isAccepted, credential.hiddenSince == nil {
                        try db.run(StoreSQL.updateHiddenSince, [.integer(now), .blob(key)])
                        hidden += 1
                    }
                }
                return (hidden, unhidden)
            }
        }
    }

    /// signalUnknownCredential: hides the credential when it belongs to `rpID`. Returns true
    /// when it does (and is now hidden, whether or not it already was), false otherwise.
    public func signalUnknownCredential(rpID: String, credentialID: [UInt8]) throws(StoreError) -> Bool {
        let relyingPartyKey = sealer.relyingPartyKey(rpIDHash: Self.rpIDHash(rpID))
        let now = options.now()
        return try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> Bool in
                let key = sealer.credentialKey(credentialID: credentialID)
                guard let placement = try db.queryFirst(StoreSQL.credentialPlacement, [.blob(key)], {
                    (rpKey: $0.blob(0), hiddenSince: $0.optionalInt64(1))
                }), constantTimeEquals(placement.rpKey, relyingPartyKey) else {
                    return false
                }
                if placement.hiddenSince == nil {
                    try db.run(StoreSQL.updateHiddenSince, [.integer(now), .blob(key)])
                }
                return true
            }
        }
    }

    /// signalCurrentUserDetails: sets the user name and display name of this user's
    /// credentials at this RP (hidden ones too); nil leaves a field as it is. Returns how many
    /// credentials were renamed.
    public func signalCurrentUserDetails(rpID: String, userHandle: [UInt8], name: String?,
                                         displayName: String?) throws(StoreError) -> Int {
        let rpIDHash = Self.rpIDHash(rpID)
        return try withConnection { db throws(StoreError) in
            try db.transaction { () throws(StoreError) -> Int in
                let userKey = sealer.userKey(rpIDHash: rpIDHash, userHandle: userHandle)
                let rows = try db.query(StoreSQL.credentialsByUser, [.blob(userKey)]) { row throws(StoreError) in
                    try credential(from: row)
                }
                for var credential in rows {
                    if let name { credential.userName = name }
                    if let displayName { credential.userDisplayName = displayName }
                    try rewrite(credential, db: db)
                }
                return rows.count
            }
        }
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
