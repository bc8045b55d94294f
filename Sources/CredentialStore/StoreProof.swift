import FIDOCrypto

/// How a running key proves it holds a store (issue 44, item 10): a command that found a key by
/// its name asks it a challenge over the vendor CTAPHID command 0x4C before it sends a PIN, a
/// ceremony or a provider request, and checks the answer against the store it opened itself. A
/// device that only claims the name — another key of the same user, started on another store —
/// cannot answer: the answer is keyed by the store's master key, which never leaves the store.
///
///     request:  version (1) ‖ challenge (32 bytes)
///     response: 0x00 ‖ HMAC-SHA-256(K, "latchkey store proof v1" ‖ 0x00 ‖ challenge)
///               K = HKDF-SHA-256(master key, salt: none, info: "latchkey store proof key v1")
///               else one status byte: 0x03 (a request of another length), 0x02 (another version)
public enum StoreProof {
    /// The vendor CTAPHID command (CTAP 2.1 §11.2.9.3 reserves 0x40…0x7F for vendors).
    public static let command: UInt8 = 0x4C
    public static let version: UInt8 = 1
    public static let challengeLength = 32
    static let label = Array("latchkey store proof v1".utf8) + [0]

    /// The proof key of a store with `masterKey` (a one-way derivation: it opens nothing).
    public static func key(masterKey: SecretBytes) -> SecretBytes {
        var material = masterKey.copyBytes()
        defer { material.wipe() }
        return SecretBytes(wiping: HKDFSHA256.deriveKey(inputKeyMaterial: material, salt: [],
                                                        info: Array("latchkey store proof key v1".utf8), outputByteCount: 32))
    }

    /// The key's answer to a request (the vendor command's payload).
    public static func answer(_ request: [UInt8], key: SecretBytes) -> [UInt8] {
        guard request.count == 1 + challengeLength else { return [0x03] }
        guard request[0] == version else { return [0x02] }
        return [0x00] + expected(challenge: Array(request.dropFirst()), key: key)
    }

    /// What a key holding the store answers to `challenge`.
    public static func expected(challenge: [UInt8], key: SecretBytes) -> [UInt8] {
        HMACSHA256.authenticationCode(key: key, data: label + challenge)
    }

    /// A request with a fresh random challenge.
    public static func request() -> (payload: [UInt8], challenge: [UInt8]) {
        let challenge = SecureRandom.bytes(count: challengeLength)
        return ([version] + challenge, challenge)
    }
}

extension SQLiteCredentialStore {
    /// This store's proof key (`StoreProof`).
    public var proofKey: SecretBytes { StoreProof.key(masterKey: masterKey) }
}
