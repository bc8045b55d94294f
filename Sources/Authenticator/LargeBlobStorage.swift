import CBOR
import CTAP
import FIDOCrypto

/// The per-credential large blobs inside the key's large-blob array (CTAP 2.1 §6.10.3), read
/// and written the way a client does: the authenticator itself only stores the opaque array,
/// but a test rig plants a credential with its blob and reports the blob a browser wrote
/// (WebDriver `addCredential` / `getCredential` `largeBlob`).
public enum LargeBlobStorage {
    /// The largest blob read back: far above any array a key stores (maxSerializedLargeBlobArray
    /// is a few KiB), low enough that a hostile origSize or DEFLATE bomb costs nothing.
    public static let maxBlobLength = 1 << 20

    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// The stored array does not parse (its hash, or its CBOR).
        case unreadableArray(LargeBlobArray.Failure)
        /// The array with the new blob would exceed the key's maxSerializedLargeBlobArray.
        case arrayFull(needed: Int, limit: Int)
        case store(StoreError)
        case crypto(CryptoError)

        public var description: String {
            switch self {
            case let .unreadableArray(failure): "\(failure)"
            case let .arrayFull(needed, limit):
                "the large-blob array would need \(needed) bytes, more than this key's maxSerializedLargeBlobArray (\(limit))"
            case let .store(error): "the store failed: \(error)"
            case let .crypto(error): "sealing the blob failed: \(error)"
            }
        }
    }

    /// The serialized array the store holds (the empty default until a client writes one). Read
    /// from the store each time: the authenticator does not cache it (AuthenticatorSettings).
    public static func serializedArray(in store: CredentialStorePort) throws(StoreError) -> [UInt8] {
        try store.loadSetting(AuthenticatorSetting.largeBlobArray) ?? Authenticator.defaultLargeBlobArray
    }

    /// The store setting the array is kept under, for a writer that changes it in its own
    /// transaction (an import), and the array a key starts with.
    public static let settingName = AuthenticatorSetting.largeBlobArray
    public static var emptyArray: [UInt8] { Authenticator.defaultLargeBlobArray }

    /// Stores a whole serialized array (one transaction).
    public static func save(_ serialized: [UInt8], in store: CredentialStorePort) throws(StoreError) {
        try store.saveSetting(AuthenticatorSetting.largeBlobArray, value: serialized)
    }

    /// The blob sealed under `key`, or nil if no element of the array opens with it (elements
    /// that are no large-blob map, fail to open, do not inflate or inflate to another length
    /// than their origSize are someone else's or damaged, and skipped, as §6.10.3's readers do).
    public static func blob(in serialized: [UInt8], key: SecretBytes) throws(Failure) -> [UInt8]? {
        for element in try parse(serialized).elements {
            if let blob = open(element, key: key) { return blob }
        }
        return nil
    }

    /// In the store's array, the blob sealed under `key` replaced by `blob` (removed if nil),
    /// read and written in one transaction: a client's write that commits meanwhile is kept.
    public static func replaceBlob(_ blob: [UInt8]?, key: SecretBytes, maxLength: Int, random: RandomSource,
                                   in store: CredentialStorePort) throws(Failure) {
        var failure: Failure?
        do throws(StoreError) {
            try store.updateSetting(AuthenticatorSetting.largeBlobArray) { (old: [UInt8]?) -> [UInt8]? in
                do throws(Failure) {
                    return try replacingBlob(in: old ?? Authenticator.defaultLargeBlobArray, key: key, with: blob,
                                             maxLength: maxLength, random: random)
                } catch {
                    failure = error
                    return old   // unchanged
                }
            }
        } catch {
            throw .store(error)
        }
        if let failure { throw failure }
    }

    /// `serialized` with the blob sealed under `key` replaced by `blob` (removed if nil), within
    /// `maxLength` bytes. Every element sealed under `key` goes, even one that does not inflate
    /// (as python-fido2's put_blob); elements under other keys, and ones nobody can read, stay.
    public static func replacingBlob(in serialized: [UInt8], key: SecretBytes, with blob: [UInt8]?,
                                     maxLength: Int, random: RandomSource) throws(Failure) -> [UInt8] {
        var array = try parse(serialized)
        array.elements.removeAll { isSealed($0, under: key) }
        if let blob {
            array.elements.append(try seal(blob, key: key, random: random).cborValue)
        }
        let result = array.serialized(hash: SHA256.hash)
        guard result.count <= maxLength else { throw .arrayFull(needed: result.count, limit: maxLength) }
        return result
    }

    /// `blob` as a large-blob map: compressed, then sealed under a fresh nonce.
    public static func seal(_ blob: [UInt8], key: SecretBytes, random: RandomSource) throws(Failure) -> LargeBlobEntry {
        let nonce = random.bytes(count: 12)
        var entry = LargeBlobEntry(ciphertext: [], nonce: nonce, originalSize: UInt64(blob.count))
        do {
            let (ciphertext, tag) = try AES256GCM.seal(RawDeflate.deflate(blob), key: key, nonce: nonce,
                                                       authenticating: entry.associatedData)
            entry.ciphertext = ciphertext + tag
        } catch {
            throw .crypto(error)
        }
        return entry
    }

    private static func parse(_ serialized: [UInt8]) throws(Failure) -> LargeBlobArray {
        do {
            return try LargeBlobArray(serialized: serialized, hash: SHA256.hash)
        } catch {
            throw .unreadableArray(error)
        }
    }

    /// The blob in `element` if it is a large-blob map sealed under `key`.
    static func open(_ element: CBORValue, key: SecretBytes) -> [UInt8]? {
        guard let entry = LargeBlobEntry(element), entry.originalSize <= UInt64(maxBlobLength),
              let compressed = decrypt(entry, key: key),
              let blob = try? RawDeflate.inflate(compressed, maxOutput: Int(entry.originalSize)),
              blob.count == Int(entry.originalSize) else { return nil }
        return blob
    }

    /// Whether `element` is a large-blob map that authenticates under `key`.
    static func isSealed(_ element: CBORValue, under key: SecretBytes) -> Bool {
        LargeBlobEntry(element).flatMap { decrypt($0, key: key) } != nil
    }

    private static func decrypt(_ entry: LargeBlobEntry, key: SecretBytes) -> [UInt8]? {
        try? AES256GCM.open(Array(entry.ciphertext.dropLast(16)), tag: Array(entry.ciphertext.suffix(16)),
                            key: key, nonce: entry.nonce, authenticating: entry.associatedData)
    }
}
