import Glibc
import KeySealing

/// How `SQLiteCredentialStore.open` guards the store against other processes.
public enum StoreLock: Sendable {
    /// flock(LOCK_EX | LOCK_NB) on `DIR/lock` for the store's lifetime; a second holder gets
    /// `StoreError.locked`. Used by `latchkey serve`: one running key per store. Only the holder
    /// reserves signature counters (see `nextSignatureCounter`).
    case exclusive
    /// No store lock: CLI tools that edit the store while the key runs. SQLite's own locking
    /// (busy_timeout 5000 ms) serializes the writes.
    case none
}

/// Tunables of a store. Defaults suit a real key; tests shrink or inject them.
public struct StoreOptions: Sendable {
    /// The most resident credentials the store accepts (`StoreError.full` beyond).
    public var maxResidentCredentials: Int
    /// How long a hidden credential is kept before `purgeHidden()` deletes it.
    public var hiddenRetentionSeconds: Int64
    /// How many signature counter values one durable commit reserves per scope.
    public var counterReservationBlock: Int
    /// Unix seconds; used for hidden-since marks and purging.
    public var now: @Sendable () -> Int64
    /// The schema steps, in order (tests append hypothetical later steps).
    var migrations: [SchemaMigration] = StoreSchema.migrations
    /// How a store that does not exist yet is sealed when this open creates it: its master.key
    /// is then written sealed from the first byte (`MasterKeySeal.create`). Nil: 32 raw bytes,
    /// as test rigs keep it. An existing store is opened as it is.
    public var sealNewStore: MasterKeySeal.Method?

    public init(maxResidentCredentials: Int = 1_000_000,
                hiddenRetentionSeconds: Int64 = 30 * 86_400,
                counterReservationBlock: Int = 1024,
                now: @escaping @Sendable () -> Int64 = StoreOptions.systemClock) {
        self.maxResidentCredentials = maxResidentCredentials
        self.hiddenRetentionSeconds = hiddenRetentionSeconds
        self.counterReservationBlock = counterReservationBlock
        self.now = now
    }

    /// The system clock in Unix seconds.
    public static let systemClock: @Sendable () -> Int64 = { Int64(time(nil)) }
}
