import CTAP
import FIDOCrypto

/// A credential ID that has been opened (unsealed) and whose private key is ready to sign.
struct OpenedCredential {
    var isResident: Bool
    var credProtect: CredentialProtectionPolicy
    var hasHMACSecret: Bool
    var isThirdPartyPayment = false
    var key: CredentialPrivateKey
}

/// The last few credentials opened, so that repeated assertions with the same credential skip
/// the AES-GCM open and the private-key import (about as costly as the signature itself).
/// Entries are bound to the rpIdHash they were opened for; the cache is dropped on reset and
/// power cycle. Resident credentials are still looked up in the store on every use (deleted or
/// hidden ones must stop working), only their key import is saved.
struct OpenedCredentialCache {
    private struct Entry {
        var credentialID: [UInt8]
        var rpIDHash: [UInt8]
        var credential: OpenedCredential
    }

    private var entries: [Entry] = []   // most recently used last
    let capacity: Int

    init(capacity: Int = 16) { self.capacity = capacity }

    mutating func credential(id: [UInt8], rpIDHash: [UInt8]) -> OpenedCredential? {
        guard let index = entries.lastIndex(where: { ByteKey.sameBytes($0.credentialID, id) && ByteKey.sameBytes($0.rpIDHash, rpIDHash) }) else {
            return nil
        }
        let entry = entries.remove(at: index)
        entries.append(entry)
        return entry.credential
    }

    mutating func insert(_ credential: OpenedCredential, id: [UInt8], rpIDHash: [UInt8]) {
        entries.removeAll { $0.credentialID == id }
        if entries.count >= capacity { entries.removeFirst() }
        entries.append(Entry(credentialID: id, rpIDHash: rpIDHash, credential: credential))
    }

    mutating func removeAll() { entries.removeAll() }
}

/// SHA-256 of the last few RP IDs seen. Clients repeat the same RP ID request after request, and
/// a one-shot EVP digest of a short string costs about as much as the rest of the request
/// parsing (see `scripts/profile`). RP IDs and their hashes are public, so nothing here is secret.
struct RPIDHashCache {
    private var entries: [(rpID: String, hash: [UInt8])] = []   // most recently used last
    let capacity: Int

    init(capacity: Int = 8) { self.capacity = capacity }

    mutating func hash(of rpID: String) -> [UInt8] {
        if let index = entries.lastIndex(where: { ByteKey.sameUTF8($0.rpID, rpID) }) {
            if index != entries.count - 1 { entries.append(entries.remove(at: index)) }
            return entries[entries.count - 1].hash
        }
        let hash = SHA256.hash(Array(rpID.utf8))
        if entries.count >= capacity { entries.removeFirst() }
        entries.append((rpID, hash))
        return hash
    }

    /// The cached RP IDs, least recently used first (for tests).
    var cachedRPIDs: [String] { entries.map(\.rpID) }
}
