import Authenticator
/// One step of the store schema. Steps are applied in order, each in its own transaction,
/// when `PRAGMA user_version` is below `version`; the transaction also sets `user_version`.
struct SchemaMigration: Sendable {
    let version: Int
    let summary: String
    let apply: @Sendable (SQLiteConnection) throws(StoreError) -> Void

    init(version: Int, summary: String,
         apply: @escaping @Sendable (SQLiteConnection) throws(StoreError) -> Void) {
        self.version = version
        self.summary = summary
        self.apply = apply
    }

    /// A step that runs an SQL script.
    init(version: Int, summary: String, sql: String) {
        self.init(version: version, summary: summary) { (db: SQLiteConnection) throws(StoreError) in
            try db.execute(sql)
        }
    }
}

/// Brings a database up to the newest schema a migration list knows.
enum SchemaMigrator {
    /// Applies the missing steps; returns the resulting schema version.
    /// A database newer than the list is refused rather than misread.
    @discardableResult
    static func migrate(_ db: SQLiteConnection, migrations: [SchemaMigration]) throws(StoreError) -> Int {
        for (index, migration) in migrations.enumerated() where migration.version != index + 1 {
            throw .io("schema migration list is not numbered 1…n (step \(index + 1) has version \(migration.version))")
        }
        let latest = migrations.count
        let current = try db.userVersion()
        guard current <= latest else {
            throw .io("\(db.path) has schema version \(current), newer than this build of Latchkey understands (\(latest)); upgrade Latchkey")
        }
        for migration in migrations where migration.version > current {
            try db.transaction { () throws(StoreError) in
                // Another process may have applied this step since we read user_version.
                guard try db.userVersion() < migration.version else { return }
                try migration.apply(db)
                try db.execute("PRAGMA user_version = \(migration.version)")
            }
        }
        return try db.userVersion()
    }
}
