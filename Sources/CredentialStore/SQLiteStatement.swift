import Authenticator
import CSQLite
import CShims

/// One prepared statement; the only owner of its `sqlite3_stmt*` (finalized in `deinit`).
///
/// Statements live in their connection's cache. Every use ends with `reset()` so that a
/// finished SELECT never keeps a WAL read snapshot open between calls.
final class SQLiteStatement {
    let handle: OpaquePointer
    let sql: String

    init(handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Binds `values` to parameters 1…n.
    func bind(_ values: [SQLiteValue]) throws(SQLiteCallFailure) {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .integer(let number):
                rc = sqlite3_bind_int64(handle, index, number)
            case .null:
                rc = sqlite3_bind_null(handle, index)
            case .blob(let bytes):
                if bytes.isEmpty {
                    // A zero-length blob bound from a nil pointer would read back as NULL.
                    rc = sqlite3_bind_zeroblob(handle, index, 0)
                } else {
                    rc = bytes.withUnsafeBytes { raw in
                        lk_sqlite3_bind_blob_transient(handle, index, raw.baseAddress, Int32(raw.count))
                    }
                }
            case .text(let string):
                var utf8 = Array(string.utf8)
                if utf8.isEmpty { utf8 = [0] }   // a valid pointer; count 0 binds ''
                let count = Int32(string.utf8.count)
                rc = utf8.withUnsafeBufferPointer { buffer in
                    buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                        lk_sqlite3_bind_text_transient(handle, index, $0, count)
                    }
                }
            }
            if rc != SQLITE_OK { throw SQLiteCallFailure(code: rc, call: "binding parameter \(index)") }
        }
    }

    /// Steps once: true when a row is available, false when done.
    func step() throws(SQLiteCallFailure) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw SQLiteCallFailure(code: rc, call: "running a statement")
    }

    /// Ends the current use: releases the read snapshot and clears bindings.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    var row: SQLiteRow { SQLiteRow(handle: handle) }
}

/// A statement's SQLite call that failed: its result code and what it was doing. The connection
/// turns it into a StoreError with the database's message (`SQLiteConnection.check`).
struct SQLiteCallFailure: Error {
    let code: Int32
    let call: String
}
