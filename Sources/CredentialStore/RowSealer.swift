import Authenticator
import FIDOCrypto
import Synchronization

/// Seals rows under keys derived from the master key, and computes the keyed lookup hashes.
///
/// docs/architecture.md, Credentials and the store: secrets and identifying data are sealed with AES-256-GCM; lookups use
/// keyed hashes so that indexes reveal nothing. From the 32-byte master key, HKDF-SHA-256 derives
/// `sealKey` (AES-256-GCM) and `indexKey` (HMAC-SHA-256), so the two uses never share a key.
///
/// A sealed blob is `nonce (12) ‖ ciphertext ‖ tag (16)`; the AAD names the table and the row's
/// key columns, so a blob copied into another row (or another table) fails to open.
struct RowSealer {
    static let nonceCount = 12
    static let tagCount = 16
    private static let salt = Array("latchkey credential store v1".utf8)

    private let sealKey: SecretBytes
    /// HMAC under `indexKey`, keyed once (lookups MAC on every request).
    private let indexMAC: HMACSHA256.KeyedContext
    private let recentCredentialKeys = RecentLookupKeys()
    private let recentRPKeys = RecentLookupKeys()

    init(masterKey: SecretBytes) {
        var master = masterKey.copyBytes()
        defer { wipe(&master) }
        var seal = HKDFSHA256.deriveKey(inputKeyMaterial: master, salt: Self.salt,
                                        info: Array("seal key".utf8), outputByteCount: 32)
        var index = HKDFSHA256.deriveKey(inputKeyMaterial: master, salt: Self.salt,
                                         info: Array("index key".utf8), outputByteCount: 32)
        sealKey = SecretBytes(seal)
        indexMAC = HMACSHA256.KeyedContext(key: SecretBytes(index))
        wipe(&seal)
        wipe(&index)
    }

    // MARK: Lookup keys (the only identifying columns, all keyed hashes)

    /// `cred_key = HMAC(indexKey, "cred" ‖ credentialID)`. An assertion needs it twice (the
    /// row, then its counter) and clients repeat IDs, so the last few are remembered: a lookup
    /// hash, as public as the index column it names.
    func credentialKey(credentialID: [UInt8]) -> [UInt8] {
        if let known = recentCredentialKeys.key(for: credentialID) { return known }
        let key = indexMAC.authenticationCode(Array("cred".utf8) + credentialID)
        recentCredentialKeys.remember(key, for: credentialID)
        return key
    }

    /// `rp_key = HMAC(indexKey, "rp" ‖ rpIDHash)`. Remembered like credential keys: a key
    /// registering account after account at one RP (a test rig), or reading its discoverable
    /// credentials again after each commit, asks for the same one.
    func relyingPartyKey(rpIDHash: [UInt8]) -> [UInt8] {
        if let known = recentRPKeys.key(for: rpIDHash) { return known }
        let key = indexMAC.authenticationCode(Array("rp".utf8) + rpIDHash)
        recentRPKeys.remember(key, for: rpIDHash)
        return key
    }

    /// `user_key = HMAC(indexKey, "user" ‖ rpIDHash ‖ userHandle)`
    func userKey(rpIDHash: [UInt8], userHandle: [UInt8]) -> [UInt8] {
        indexMAC.authenticationCode(Array("user".utf8) + rpIDHash + userHandle)
    }

    // MARK: Sealing

    /// Seals `plaintext` and wipes it.
    func seal(_ plaintext: inout [UInt8], binding aad: RowBinding) throws(StoreError) -> [UInt8] {
        defer { wipe(&plaintext) }
        let nonce = NoncePool.bytes(count: Self.nonceCount)
        do {
            // A fresh context each time, not one kept keyed: AES's key schedule begins with the key
            // itself, and a context kept would hold it outside the secure heap for the process's
            // life (the socket suite's secrets-at-rest check reads the key's memory for it).
            let (ciphertext, tag) = try AES256GCM.seal(plaintext, key: sealKey, nonce: nonce,
                                                       authenticating: aad.bytes)
            return nonce + ciphertext + tag
        } catch {
            throw .io("sealing a row of \(aad.table) failed")
        }
    }

    /// Opens a sealed blob; a wrong key, a tampered blob or a blob moved from another row is
    /// `.corrupt`. The caller wipes the returned plaintext.
    func open(_ sealed: [UInt8], binding aad: RowBinding) throws(StoreError) -> [UInt8] {
        guard sealed.count >= Self.nonceCount + Self.tagCount else {
            throw .corrupt("a sealed row of \(aad.table) is truncated")
        }
        let nonce = Array(sealed[0..<Self.nonceCount])
        let ciphertext = Array(sealed[Self.nonceCount..<(sealed.count - Self.tagCount)])
        let tag = Array(sealed[(sealed.count - Self.tagCount)...])
        do {
            return try AES256GCM.open(ciphertext, tag: tag, key: sealKey, nonce: nonce,
                                      authenticating: aad.bytes)
        } catch {
            throw .corrupt("a sealed row of \(aad.table) failed to authenticate (wrong master.key, or the row was altered)")
        }
    }

    /// Opens a sealed record and parses it; the plaintext is wiped when `body` returns.
    func openRecord<R>(_ sealed: [UInt8], binding aad: RowBinding, kind: RecordKind,
                       _ body: (RecordReader) throws(StoreError) -> R) throws(StoreError) -> R {
        var plaintext = try open(sealed, binding: aad)
        defer { wipe(&plaintext) }
        return try body(try RecordReader(plaintext, kind: kind, context: aad.table))
    }
}

/// The associated data that binds a sealed blob to its row:
/// `"latchkey.store.v1" 0x00 table 0x00 (len ‖ key column)*`.
struct RowBinding {
    let table: String
    let bytes: [UInt8]

    init(table: String, keys: [[UInt8]]) {
        self.table = table
        var bytes = Array("latchkey.store.v1".utf8) + [0] + Array(table.utf8) + [0]
        for key in keys {
            bytes.append(UInt8(truncatingIfNeeded: key.count >> 8))
            bytes.append(UInt8(truncatingIfNeeded: key.count))
            bytes += key
        }
        self.bytes = bytes
    }

    /// A credentials row: bound to all three of its lookup keys.
    static func credential(credentialKey: [UInt8], relyingPartyKey: [UInt8], userKey: [UInt8]) -> RowBinding {
        RowBinding(table: "credentials", keys: [credentialKey, relyingPartyKey, userKey])
    }

    static func relyingParty(relyingPartyKey: [UInt8]) -> RowBinding {
        RowBinding(table: "rps", keys: [relyingPartyKey])
    }

    /// A device row (`secrets`, `pin`, `setting:<name>`, `keycheck`).
    static func device(name: String) -> RowBinding {
        RowBinding(table: "device", keys: [Array(name.utf8)])
    }
}

/// The last few credential IDs' lookup keys (`RowSealer.credentialKey`), most recent last.
final class RecentLookupKeys: Sendable {
    static let capacity = 8
    private let entries = Mutex<[(id: [UInt8], key: [UInt8])]>([])

    func key(for id: [UInt8]) -> [UInt8]? {
        entries.withLock { entries in entries.last { ByteKey.sameBytes($0.id, id) }?.key }
    }

    func remember(_ key: [UInt8], for id: [UInt8]) {
        entries.withLock { entries in
            entries.removeAll { ByteKey.sameBytes($0.id, id) }
            if entries.count >= Self.capacity { entries.removeFirst() }
            entries.append((id, key))
        }
    }
}
