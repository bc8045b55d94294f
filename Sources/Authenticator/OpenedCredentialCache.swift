/// A credential ID that has been opened (unsealed) and whose private key is ready to sign.
struct OpenedCredential {
    var isResident: Bool
    var credProtect: UInt8
    var hasHMACSecret: Bool
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
        guard let index = entries.lastIndex(where: { $0.credentialID == id && $0.rpIDHash == rpIDHash }) else { return nil }
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
