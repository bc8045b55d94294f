import Authenticator
extension SQLiteCredentialStore {
    /// The next value of `scope`, or nil when the scope is a credential that is not stored.
    /// Called with the connection held (`withConnection`).
    func nextCounter(_ scope: CounterScope, db: SQLiteConnection) throws(StoreError) -> UInt32? {
        // Only `latchkey serve` signs, and it holds the exclusive lock: while we hold it no other
        // process can reserve counters, so our blocks cannot go stale and the check below (a read
        // transaction with its fcntl locks: ~3 µs, a tenth of a getAssertion) is skipped.
        let dataVersion = holdsExclusiveLock ? 0 : try db.dataVersion()
        if var block = counters[scope] {
            var usable = true
            if block.verifiedDataVersion != dataVersion {
                // Another process committed something. Our block stays usable only while the
                // durable mark is still the one we wrote: if someone reserved past it, values
                // from our block could fall below theirs.
                if try highWater(scope, db: db) == block.limit {
                    block.verifiedDataVersion = dataVersion
                    counters[scope] = block
                } else {
                    counters[scope] = nil
                    usable = false
                }
            }
            if usable, !block.isExhausted {
                block.last += 1
                counters[scope] = block
                return UInt32(block.last)
            }
        }

        // Reserve the next block durably before the first of its values leaves.
        let blockSize = UInt64(max(1, options.counterReservationBlock))
        let ceiling = UInt64(UInt32.max)
        let base = try db.transaction { () throws(StoreError) -> UInt64? in
            guard let durable = try highWater(scope, db: db) else { return nil }
            let limit = min(durable + blockSize, ceiling)
            if limit > durable { try setHighWater(scope, limit, db: db) }
            return durable
        }
        guard let base else {
            counters[scope] = nil
            return nil
        }
        guard base < ceiling else {
            return UInt32.max   // saturated: a 32-bit counter cannot move further
        }
        let block = CounterReservation(last: base + 1, limit: min(base + blockSize, ceiling),
                                       verifiedDataVersion: dataVersion)
        counters[scope] = block
        return UInt32(block.last)
    }

    /// Inside the transaction that inserts a credential: its durable mark moves to one block
    /// and the block (none of it handed out) is kept in memory. Only for the exclusive lock's
    /// holder, whose blocks need no re-check (`nextCounter`).
    func reserveFirstCounterBlock(credentialKey key: [UInt8], db: SQLiteConnection) throws(StoreError) {
        let limit = UInt64(max(1, options.counterReservationBlock))
        try setHighWater(.credential(key: key), limit, db: db)
        counters[.credential(key: key)] = CounterReservation(last: 0, limit: limit, verifiedDataVersion: 0)
    }

    /// The durable high-water mark of `scope`; nil for a credential that is not stored.
    private func highWater(_ scope: CounterScope, db: SQLiteConnection) throws(StoreError) -> UInt64? {
        switch scope {
        case .global:
            let value = try db.queryFirst(StoreSQL.scopeHighWater, [.text(CounterScope.globalName)]) { $0.int64(0) }
            return UInt64(max(0, value ?? 0))
        case .credential(let key):
            return try db.queryFirst(StoreSQL.credentialHighWater, [.blob(key)]) { UInt64(max(0, $0.int64(0))) }
        }
    }

    private func setHighWater(_ scope: CounterScope, _ value: UInt64, db: SQLiteConnection) throws(StoreError) {
        switch scope {
        case .global:
            try db.run(StoreSQL.setScopeHighWater, [.text(CounterScope.globalName), .integer(Int64(value))])
        case .credential(let key):
            try db.run(StoreSQL.setCredentialHighWater, [.integer(Int64(value)), .blob(key)])
        }
    }
}

extension SQLiteCredentialStore {
    /// Moves a resident credential's counter so that the next signature counts above `value`
    /// (a rig's `addCredential` with a `signCount`, an imported credential keeping its count).
    /// A counter never goes backwards: a value at or below the durable mark changes nothing.
    /// False when no such resident credential is stored.
    @discardableResult
    public func raiseSignatureCounter(credentialID: [UInt8], to value: UInt32) throws(StoreError) -> Bool {
        try withConnection { db throws(StoreError) in
            let temporaryLock = holdsExclusiveLock ? nil : try files.lockExclusively()
            return try withExtendedLifetime(temporaryLock) { () throws(StoreError) -> Bool in
                let key = sealer.credentialKey(credentialID: credentialID)
                let scope = CounterScope.credential(key: key)
                guard let durable = try highWater(scope, db: db) else { return false }
                // What may have been handed out: with the exclusive lock nobody else signs, so it
                // is this process's block's last value (its reserved rest was never given);
                // otherwise the durable mark. Moving the mark to `value` is safe above that.
                let handedOut = holdsExclusiveLock ? (counters[scope]?.last ?? durable) : durable
                counters.forgetCredentials(keys: [key])
                if UInt64(value) > handedOut { try setHighWater(scope, UInt64(value), db: db) }
                return true
            }
        }
    }
}
