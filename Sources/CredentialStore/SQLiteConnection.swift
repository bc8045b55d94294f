import Authenticator
import CSQLite

/// One SQLite connection; the only owner of its `sqlite3*`, closed in `deinit` or `close()`.
///
/// Every SQLite return code goes through `check(_:_:)`, which turns failures into
/// `StoreError` carrying `sqlite3_errmsg` (SQLite's messages name tables and constraints, never
/// bound values, and every value the store binds is sealed or hashed anyway).
/// Prepared statements are cached per connection, keyed by their SQL text.
final class SQLiteConnection {
    private var handle: OpaquePointer?
    private var statements: [StatementKey: SQLiteStatement] = [:]
    let path: String

    /// Opens (creating if needed) the database at `path`. Symbolic links are refused.
    init(path: String) throws(StoreError) {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
            | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw .io("cannot open database \(path): \(message) (SQLite code \(rc))")
        }
        handle = db
    }

    deinit {
        close()
    }

    /// Finalizes every cached statement and closes the connection (idempotent).
    func close() {
        statements.removeAll()
        if let handle {
            // close_v2: even a statement still referenced elsewhere cannot leave a dangling handle.
            sqlite3_close_v2(handle)
        }
        handle = nil
    }

    /// The first `count` bytes (at most a region) of this connection's WAL-index, read from the
    /// mapping of `-shm` SQLite itself reads (the VFS's xShmMap, region 0, of WALINDEX_PGSZ bytes);
    /// nil when there is none (closed, not in WAL mode, not mapped yet). No descriptor of ours
    /// is opened on `-shm`: closing one would drop the process's fcntl locks on it, SQLite's
    /// included (sqlite.org/howtocorrupt.html §2.2).
    func walIndexPrefix(count: Int) -> [UInt8]? {
        let regionSize: Int32 = 32_768
        guard let handle, count <= Int(regionSize) else { return nil }
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK, let file,
              let methods = file.pointee.pMethods, methods.pointee.iVersion >= 2,
              let map = methods.pointee.xShmMap else { return nil }
        var region: UnsafeMutableRawPointer?
        guard map(file, 0, regionSize, 0, &region) == SQLITE_OK, let region else { return nil }
        return Array(UnsafeRawBufferPointer(start: region, count: count))
    }

    private func requireHandle() throws(StoreError) -> OpaquePointer {
        guard let handle else { throw .io("database \(path) is closed") }
        return handle
    }

    /// The one checking helper: OK/ROW/DONE pass, anything else becomes a `StoreError`.
    @discardableResult
    func check(_ rc: Int32, _ context: @autoclosure () -> String) throws(StoreError) -> Int32 {
        if rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE { return rc }
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
        let primary = rc & 0xFF
        let description = "\(context()): \(message) (SQLite code \(rc)) in \(path)"
        if primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB {
            throw .corrupt(description)
        }
        throw .io(description)
    }

    /// A statement's call, its failure checked as any other (`check`).
    private func checked<R>(_ body: () throws(SQLiteCallFailure) -> R) throws(StoreError) -> R {
        do {
            return try body()
        } catch {
            try check(error.code, error.call)
            throw .io("\(error.call): SQLite code \(error.code) in \(path)")   // check passes only success codes
        }
    }

    /// A cached prepared statement for `sql`, reset and ready to bind.
    func statement(_ sql: String) throws(StoreError) -> SQLiteStatement {
        if let cached = statements[StatementKey(sql)] {
            cached.reset()
            return cached
        }
        let db = try requireHandle()
        var prepared: OpaquePointer?
        try check(sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil),
                  "preparing a statement")
        guard let prepared else { throw .io("preparing an empty statement in \(path)") }
        let statement = SQLiteStatement(handle: prepared, sql: sql)
        statements[StatementKey(sql)] = statement
        return statement
    }

    /// Runs `sql` once per row, handing each row to `body`; returns what `body` returned.
    func query<R>(_ sql: String, _ bindings: [SQLiteValue] = [],
                  _ body: (SQLiteRow) throws(StoreError) -> R) throws(StoreError) -> [R] {
        let statement = try statement(sql)
        defer { statement.reset() }
        try checked { () throws(SQLiteCallFailure) in try statement.bind(bindings) }
        var results: [R] = []
        while try checked({ () throws(SQLiteCallFailure) in try statement.step() }) {
            results.append(try body(statement.row))
        }
        return results
    }

    /// The first row's result, or nil when there is none.
    func queryFirst<R>(_ sql: String, _ bindings: [SQLiteValue] = [],
                       _ body: (SQLiteRow) throws(StoreError) -> R) throws(StoreError) -> R? {
        let statement = try statement(sql)
        defer { statement.reset() }
        try checked { () throws(SQLiteCallFailure) in try statement.bind(bindings) }
        guard try checked({ () throws(SQLiteCallFailure) in try statement.step() }) else { return nil }
        return try body(statement.row)
    }

    /// Runs a statement that returns no rows (or whose rows are ignored); returns changed rows.
    @discardableResult
    func run(_ sql: String, _ bindings: [SQLiteValue] = []) throws(StoreError) -> Int {
        let statement = try statement(sql)
        defer { statement.reset() }
        try checked { () throws(SQLiteCallFailure) in try statement.bind(bindings) }
        while try checked({ () throws(SQLiteCallFailure) in try statement.step() }) {}
        return Int(sqlite3_changes(try requireHandle()))
    }

    /// Runs a script of one or more statements, uncached (schema changes, pragmas).
    func execute(_ script: String) throws(StoreError) {
        let db = try requireHandle()
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, script, nil, nil, &errorMessage)
        sqlite3_free(errorMessage)
        try check(rc, "executing SQL")
    }

    /// BEGIN IMMEDIATE … COMMIT around `body`; any error rolls back and is rethrown.
    /// One call is one logical change (architecture rule 7): a crash leaves the previous or the next state.
    @discardableResult
    func transaction<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        let db = try requireHandle()
        guard sqlite3_get_autocommit(db) != 0 else {
            throw .io("nested transaction in \(path)")
        }
        try run("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try run("COMMIT")
            return result
        } catch {
            if sqlite3_get_autocommit(db) == 0 {
                sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
            }
            throw error
        }
    }

    var isInTransaction: Bool {
        guard let handle else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    func setBusyTimeout(milliseconds: Int32) throws(StoreError) {
        try check(sqlite3_busy_timeout(try requireHandle(), milliseconds), "setting busy_timeout")
    }

    /// `PRAGMA user_version`: the schema version (SchemaMigrator).
    func userVersion() throws(StoreError) -> Int {
        Int(try queryFirst("PRAGMA user_version") { $0.int64(0) } ?? 0)
    }

    /// `PRAGMA data_version`: changes when another connection commits (not for our own commits).
    func dataVersion() throws(StoreError) -> Int64 {
        try queryFirst("PRAGMA data_version") { $0.int64(0) } ?? 0
    }

    /// Rows of a query as text, for pragmas and EXPLAIN QUERY PLAN.
    func textRows(_ sql: String, column: Int32 = 0) throws(StoreError) -> [String] {
        try query(sql) { $0.text(column) }
    }
}

/// A statement's SQL as the cache's key, hashed by its length and its first and last 16 bytes:
/// String's own hash reads all of it (a few hundred bytes, on every statement a request runs).
/// Equality compares every byte (with the hash, not String's canonical equivalence); texts that
/// share those 32 bytes only share a bucket.
private struct StatementKey: Hashable {
    let sql: String

    init(_ sql: String) { self.sql = sql }

    static func == (a: StatementKey, b: StatementKey) -> Bool { ByteKey.sameUTF8(a.sql, b.sql) }

    func hash(into hasher: inout Hasher) {
        let utf8 = sql.utf8
        hasher.combine(utf8.count)
        let hashed: Void? = utf8.withContiguousStorageIfAvailable { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.prefix(16)))
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.suffix(16)))
        }
        if hashed == nil { hasher.combine(sql) }
    }
}

