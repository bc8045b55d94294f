import Authenticator
import Glibc

/// Tells whether the database may have changed, without a read transaction: the WAL-index
/// header at the start of the `-shm` mapping (sqlite.org/walformat.html §2.1: two copies of a
/// 48-byte header, rewritten by every commit of any connection in any process — its `iChange`
/// counts transactions, `mxFrame` the WAL's frames, the salts change with every WAL restart).
/// A commit becomes visible to readers only when it rewrites this header, so an unchanged
/// header means an unchanged database, and a changed or untrustworthy one means "read again".
enum WALIndexHeader {
    static let length = 96

    /// Whether `after` follows `before` by exactly one transaction: its `iChange` (offset 8, a
    /// native-endian 32-bit counter every commit increments — and a WAL restart too, which then
    /// reads as two) is one more. Read around a transaction of this process's own, it tells
    /// that no other connection committed in between.
    static func isOneTransaction(_ after: [UInt8], after before: [UInt8]) -> Bool {
        guard after.count == length, before.count == length else { return false }
        func change(_ header: [UInt8]) -> UInt32 {
            header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt32.self) }
        }
        return change(after) == change(before) &+ 1
    }

    /// The header as it is now; nil when it cannot be trusted (no mapping, the two copies
    /// differ — a commit is rewriting them —, or not initialised).
    static func current(_ connection: SQLiteConnection) -> [UInt8]? {
        guard let bytes = connection.walIndexPrefix(count: length), bytes.count == length,
              bytes[12] != 0,   // isInit
              bytes.withUnsafeBytes({ memcmp($0.baseAddress!, $0.baseAddress! + 48, 48) == 0 }) else { return nil }
        return bytes
    }
}

/// The serving key's recently read credentials, decrypted and decoded, valid while the
/// WAL-index header is the one they were read under (`WALIndexHeader`). A getAssertion by
/// allowList and a discoverable one then skip the statement, the decryption and the decoding
/// (the store's whole share of an assertion, `scripts/profile store-lookup`), yet a credential
/// that another process deletes, hides or renames is read again on the very next request: any
/// commit rewrites the header, this process's own commits included.
///
/// Only a store holding the exclusive lock caches (the one that serves); others read every time.
/// Entries hold credentials' `SecretBytes` (in the secure heap): a few dozen at most.
struct CredentialReadCache {
    static let capacity = 32

    struct DiscoverableKey: Hashable {
        var rpIDHash: ByteKey
        var userVerified: Bool
    }

    private var header: [UInt8]?
    private var byID: [ByteKey: ResidentCredential?] = [:]
    private var discoverable: [DiscoverableKey: DiscoverableCredentials?] = [:]
    /// The PIN state as last read (`.some(nil)`: no PIN row): every makeCredential asks whether
    /// a PIN is set, and the query cost a fifth of the store's share of one.
    private var pin: PINState??
    /// How many credentials the store holds: every makeCredential checks that one more fits.
    private var count: Int?

    /// Drops everything unless `current` is the header the entries were read under. Call first,
    /// with the header read before any statement (`WALIndexHeader.current`).
    mutating func validate(_ current: [UInt8]?) {
        // Compared eight bytes at a time: this runs before every statement of the serving key.
        guard let now = current, let then = header, ByteKey.sameBytes(now, then) else {
            clear()
            header = current
            return
        }
    }

    mutating func clear() {
        byID.removeAll()
        discoverable.removeAll()
        pin = nil
        count = nil
        header = nil
    }

    var pinState: PINState?? { header == nil ? nil : pin }

    var residentCount: Int? { header == nil ? nil : count }

    mutating func insert(residentCount: Int) {
        guard header != nil else { return }
        count = residentCount
    }

    /// This process committed a transaction that changed credentials and nothing else (a
    /// resident credential saved), between the headers `before` (read inside it, under the write
    /// lock) and `after`, leaving
    /// `residentCount` credentials in the store (counted inside it). The credentials read are
    /// dropped; the PIN state read under `before` is kept under `after`, with the new count, when
    /// nothing else committed in between — every makeCredential asks whether a PIN is set and
    /// whether one more credential fits, and its own last commit would otherwise send both
    /// questions back to the database each time.
    mutating func credentialsCommitted(before: [UInt8]?, after: [UInt8]?, residentCount: Int) {
        var continues = false
        if let before, let after, let header {
            continues = ByteKey.sameBytes(before, header) && WALIndexHeader.isOneTransaction(after, after: before)
        }
        let keptPIN = pin
        clear()
        if continues, let after {
            header = after
            pin = keptPIN
            count = residentCount
        }
    }

    mutating func insert(pinState: PINState?) {
        guard header != nil else { return }
        pin = .some(pinState)
    }

    /// `.some(nil)`: known not to be stored.
    func credential(id: [UInt8]) -> ResidentCredential?? { header == nil ? nil : byID[ByteKey(id)] }

    mutating func insert(_ credential: ResidentCredential?, id: [UInt8]) {
        guard header != nil else { return }
        if byID.count >= Self.capacity { byID.removeAll() }
        byID[ByteKey(id)] = .some(credential)
    }

    func discoverableCredentials(_ key: DiscoverableKey) -> DiscoverableCredentials?? {
        header == nil ? nil : discoverable[key]
    }

    mutating func insert(_ credentials: DiscoverableCredentials?, for key: DiscoverableKey) {
        guard header != nil else { return }
        if discoverable.count >= Self.capacity { discoverable.removeAll() }
        discoverable[key] = .some(credentials)
    }
}
