import Authenticator
import CSQLite

/// Column access to the current row of a stepping statement (valid only inside the row closure).
struct SQLiteRow {
    let handle: OpaquePointer

    func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    func optionalInt64(_ column: Int32) -> Int64? {
        isNull(column) ? nil : int64(column)
    }

    func blob(_ column: Int32) -> [UInt8] {
        // SQLite's documented order: fetch the pointer first, then the byte count.
        guard let pointer = sqlite3_column_blob(handle, column) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
}
