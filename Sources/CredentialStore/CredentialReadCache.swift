import Authenticator
import Glibc
import SystemIO

/// Tells whether the database may have changed, without a read transaction: the WAL-index
/// header at the start of `credentials.sqlite-shm` (sqlite.org/walformat.html §2.1: two copies of
/// a 48-byte header, rewritten by every commit of any connection in any process — its `iChange`
/// counts transactions, `mxFrame` the WAL's frames, the salts change with every WAL restart).
///
/// One `pread(2)` of 96 bytes from the page cache (never a mapping: a truncated file would be a
/// SIGBUS, a short read is just "unknown"). A commit becomes visible to readers only when it
/// rewrites this header, so an unchanged header means an unchanged database, and a changed or
/// unreadable one means "read it again".
final class WALIndexProbe: @unchecked Sendable {
    static let headerLength = 96
    private let descriptor: FileDescriptor

    init?(shmPath: String) {
        guard let descriptor = try? FileDescriptor.open(shmPath, flags: O_RDONLY | O_NOFOLLOW) else { return nil }
        self.descriptor = descriptor
    }

    deinit { descriptor.close() }

    /// The header as it is now; nil when it cannot be trusted (short read, the two copies
    /// differ — a commit is rewriting them —, or not initialised).
    func header() -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: Self.headerLength)
        let count = bytes.withUnsafeMutableBytes { buffer in (try? descriptor.read(into: buffer, atOffset: 0)) ?? 0 }
        guard count == Self.headerLength, bytes[12] != 0,   // isInit
              bytes[0..<48].elementsEqual(bytes[48..<96]) else { return nil }
        return bytes
    }
}

/// The serving key's recently read credentials, decrypted and decoded, valid while the
/// WAL-index header is the one they were read under (`WALIndexProbe`). A getAssertion by
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
        var rpIDHash: [UInt8]
        var userVerified: Bool
    }

    private var header: [UInt8]?
    private var byID: [[UInt8]: ResidentCredential?] = [:]
    private var discoverable: [DiscoverableKey: DiscoverableCredentials?] = [:]

    /// Drops everything unless `current` is the header the entries were read under. Call first,
    /// with the header read before any statement (`WALIndexProbe.header()`).
    mutating func validate(_ current: [UInt8]?) {
        guard let current, current == header else {
            clear()
            header = current
            return
        }
    }

    mutating func clear() {
        byID.removeAll()
        discoverable.removeAll()
        header = nil
    }

    /// `.some(nil)`: known not to be stored.
    func credential(id: [UInt8]) -> ResidentCredential?? { header == nil ? nil : byID[id] }

    mutating func insert(_ credential: ResidentCredential?, id: [UInt8]) {
        guard header != nil else { return }
        if byID.count >= Self.capacity { byID.removeAll() }
        byID[id] = .some(credential)
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
