import Authenticator

/// What one signal changed: the IDs of the credentials it hid, un-hid and renamed.
public struct SignalChanges: Sendable, Equatable {
    /// How many of the store's credentials the signal named (0: none, and nothing changed):
    /// the user's credentials at the RP, or the one credential of that ID at that RP.
    public var matched: Int
    public var hidden: [[UInt8]] = []
    public var unhidden: [[UInt8]] = []
    public var renamed: [[UInt8]] = []
    /// Of `hidden`, those that have given PRF (hmac-secret) outputs: a site may have encrypted
    /// data with them, so whoever applied the signal warns (not journaled: it describes the
    /// credential, not the change).
    public var hiddenAfterPRFUse: [[UInt8]] = []

    public init(matched: Int, hidden: [[UInt8]] = [], unhidden: [[UInt8]] = [], renamed: [[UInt8]] = []) {
        self.matched = matched
        self.hidden = hidden
        self.unhidden = unhidden
        self.renamed = renamed
    }
}

/// One applied signal in the store's audit trail (`latchkey signal log`): when, who sent it
/// (a website's origin as the browser gave it, or `cli`), the RP and what changed. Sealed
/// like every identifying row; the newest `SignalJournal.capacity` entries are kept.
public struct SignalJournalEntry: Sendable, Equatable {
    /// Unix seconds.
    public var time: Int64
    /// `https://site.example` for a website's signal (through the native-messaging host),
    /// `SignalJournalEntry.commandLine` for `latchkey signal` and `credentials unhide`.
    public var source: String
    public var rpID: String
    /// `allAcceptedCredentials`, `unknownCredential`, `currentUserDetails` (the W3C names,
    /// without "signal") or `unhide`.
    public var method: String
    public var changes: SignalChanges

    public static let commandLine = "cli"

    public init(time: Int64, source: String, rpID: String, method: String, changes: SignalChanges) {
        self.time = time
        self.source = source
        self.rpID = rpID
        self.method = method
        self.changes = changes
    }
}

/// The signal method names the journal records.
public enum SignalMethod: String, Sendable, CaseIterable {
    case allAcceptedCredentials
    case unknownCredential
    case currentUserDetails
    case unhide
}

public enum SignalJournal {
    /// Entries kept; older ones are dropped as new ones come (a row each, so an insert stays
    /// one B-tree append and one range delete).
    public static let capacity: Int64 = 10_000
}

/// Fields of a `RecordKind.signalJournalEntry` record.
enum SignalJournalField {
    static let source: UInt8 = 1
    static let rpID: UInt8 = 2
    static let method: UInt8 = 3
    /// Each list: (UInt16 BE length ‖ credential ID)*.
    static let hidden: UInt8 = 4
    static let unhidden: UInt8 = 5
    static let renamed: UInt8 = 6
    static let matched: UInt8 = 7
    /// Unix seconds, sealed (the `at` column is for ordering and pruning; a record whose sealed
    /// time differs from it was edited).
    static let time: UInt8 = 8
}

extension SQLiteCredentialStore {
    /// Appends `entry` inside the caller's transaction, so a signal and its record commit together.
    func appendJournal(_ entry: SignalJournalEntry, db: SQLiteConnection) throws(StoreError) {
        let sequence = (try db.queryFirst("SELECT coalesce(max(seq), 0) + 1 FROM signal_journal") { $0.int64(0) }) ?? 1
        var writer = RecordWriter(kind: .signalJournalEntry)
        writer.append(SignalJournalField.source, string: entry.source)
        writer.append(SignalJournalField.rpID, string: entry.rpID)
        writer.append(SignalJournalField.method, string: entry.method)
        writer.append(SignalJournalField.hidden, bytes: Self.packIDs(entry.changes.hidden))
        writer.append(SignalJournalField.unhidden, bytes: Self.packIDs(entry.changes.unhidden))
        writer.append(SignalJournalField.renamed, bytes: Self.packIDs(entry.changes.renamed))
        writer.append(SignalJournalField.matched, integer: Int64(entry.changes.matched))
        writer.append(SignalJournalField.time, integer: entry.time)
        var record = writer.bytes
        let sealed = try sealer.seal(&record, binding: .journal(sequence: sequence))
        try db.run("INSERT INTO signal_journal (seq, at, sealed) VALUES (?, ?, ?)",
                   [.integer(sequence), .integer(entry.time), .blob(sealed)])
        try db.run("DELETE FROM signal_journal WHERE seq <= ?", [.integer(sequence - SignalJournal.capacity)])
    }

    /// The newest `limit` entries of the audit trail, oldest first.
    public func signalJournal(limit: Int = Int(SignalJournal.capacity)) throws(StoreError) -> [SignalJournalEntry] {
        try withConnection { db throws(StoreError) in
            let rows = try db.query("SELECT seq, at, sealed FROM signal_journal ORDER BY seq DESC LIMIT ?",
                                    [.integer(Int64(max(0, limit)))]) { row throws(StoreError) in
                let column = row.int64(1)
                return try sealer.openRecord(row.blob(2), binding: .journal(sequence: row.int64(0)),
                                             kind: .signalJournalEntry) { record throws(StoreError) in
                    let time = try record.requiredInteger(SignalJournalField.time, "time")
                    guard time == column else { throw .corrupt("signal_journal: a row's time was altered") }
                    return SignalJournalEntry(
                        time: time,
                        source: try record.requiredString(SignalJournalField.source, "source"),
                        rpID: try record.requiredString(SignalJournalField.rpID, "rpID"),
                        method: try record.requiredString(SignalJournalField.method, "method"),
                        changes: SignalChanges(
                            matched: Int(try record.integer(SignalJournalField.matched) ?? 0),
                            hidden: try Self.unpackIDs(record.bytes(SignalJournalField.hidden)),
                            unhidden: try Self.unpackIDs(record.bytes(SignalJournalField.unhidden)),
                            renamed: try Self.unpackIDs(record.bytes(SignalJournalField.renamed))))
                }
            }
            return rows.reversed()
        }
    }

    static func packIDs(_ ids: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = []
        for id in ids {
            let count = min(id.count, Int(UInt16.max))
            bytes += [UInt8(count >> 8), UInt8(count & 0xFF)] + id.prefix(count)
        }
        return bytes
    }

    static func unpackIDs(_ bytes: [UInt8]?) throws(StoreError) -> [[UInt8]] {
        guard let bytes else { return [] }
        var ids: [[UInt8]] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 2 else { throw .corrupt("signal_journal: ID list truncated") }
            let count = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            offset += 2
            guard bytes.count - offset >= count else { throw .corrupt("signal_journal: ID list truncated") }
            ids.append(Array(bytes[offset..<(offset + count)]))
            offset += count
        }
        return ids
    }
}

extension RowBinding {
    /// A `signal_journal` row: bound to its sequence number, so entries cannot be reordered.
    static func journal(sequence: Int64) -> RowBinding {
        RowBinding(table: "signal_journal", keys: [SealedRecord.bigEndian(sequence)])
    }
}
