import Authenticator

/// A signature counter: the device-global one, or one resident credential's own.
enum CounterScope {
    case global
    /// Keyed by the credential's `cred_key` (its durable mark is `credentials.counter_hw`).
    case credential(key: [UInt8])

    /// The `counters.scope` name of scopes kept in the counters table.
    static let globalName = "global"
}

/// A block of counter values reserved durably and handed out from memory.
///
/// docs/architecture.md, Credentials and the store: a signature counter never goes backwards, even across a crash —
/// what is durable is always at or above any value handed out. So a block `(last, limit]` is
/// committed as `high_water = limit` *before* its first value leaves, and after a crash the
/// scope restarts at the durable mark (unused values of the block are skipped).
struct CounterReservation {
    /// The last value handed out (the next is `last + 1`).
    var last: UInt64
    /// The durable high-water mark this process committed: values ≤ limit may be handed out.
    var limit: UInt64
    /// `PRAGMA data_version` when the durable mark was last seen equal to `limit`. When another
    /// process commits, the mark is re-read: if someone reserved past us, the block is dropped.
    var verifiedDataVersion: Int64

    var isExhausted: Bool { last >= limit }
}

/// The reservations of one open store, per scope.
struct CounterReservations {
    /// The global scope's block apart: every non-resident assertion draws from it, and a
    /// dictionary look-up (hashing the scope) cost a fifth of the store's share of one.
    private var global: CounterReservation?
    /// Keyed by `cred_key`, hashed in one pass (`ByteKey`): a resident assertion looks its block
    /// up twice.
    private var blocks: [ByteKey: CounterReservation] = [:]

    subscript(scope: CounterScope) -> CounterReservation? {
        get {
            switch scope {
            case .global: return global
            case .credential(let key): return blocks[ByteKey(key)]
            }
        }
        set {
            switch scope {
            case .global: global = newValue
            case .credential(let key): blocks[ByteKey(key)] = newValue
            }
        }
    }

    /// Forgets the blocks of credentials this process deleted or replaced, so that a row
    /// re-created with the same ID (durable mark 0) never draws from a stale block.
    mutating func forgetCredentials<S: Sequence>(keys: S) where S.Element == [UInt8] {
        for key in keys { blocks[ByteKey(key)] = nil }
    }

    mutating func forgetAllCredentials() {
        blocks = [:]
    }
}
