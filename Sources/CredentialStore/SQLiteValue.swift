/// A value bound to a statement parameter. Secrets never appear here in clear: the store binds
/// only keyed hashes, sealed blobs, row metadata (times, counters) and fixed names.
enum SQLiteValue {
    case integer(Int64)
    case blob([UInt8])
    case text(String)
    case null
}

extension SQLiteValue {
    static func integer(_ value: Int) -> SQLiteValue { .integer(Int64(value)) }

    static func optionalInteger(_ value: Int64?) -> SQLiteValue {
        value.map { .integer($0) } ?? .null
    }
}
