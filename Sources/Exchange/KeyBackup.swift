import CBOR
import CredentialStore
import FIDOCrypto

/// The plaintext of a `latchkey backup` file (inside an `EncryptedExport` whose contents are
/// `backup`): a CBOR map {1: "latchkey backup", 2: version 1, 3: master key, 4: the database
/// (StoreBackup's snapshot), 5: when it was made (UNIX seconds)}.
public enum KeyBackup {
    static let magic = "latchkey backup"

    /// The backup's bytes; the caller wipes them (they hold the master key).
    public static func encode(_ snapshot: StoreBackup.Snapshot, created: Int64) -> [UInt8] {
        var key = snapshot.masterKey.copyBytes()
        defer { key.wipe() }
        return CBORValue.map([1: .textString(magic), 2: .unsignedInt(1), 3: .byteString(key), 4: .byteString(snapshot.database),
                              5: .unsignedInt(UInt64(max(0, created)))]).encoded()
    }

    public static func decode(_ bytes: [UInt8]) throws(ExchangeError) -> (snapshot: StoreBackup.Snapshot, created: Int64) {
        guard let value = try? CBORDecoder.decode(bytes, limits: CBORDecodingLimits(maxDepth: 2, maxItems: 16, maxLength: 1 << 30)),
              value[1]?.stringValue == magic else {
            throw .malformed("not a Latchkey backup")
        }
        guard value[2]?.intValue == 1 else { throw .unsupportedVersion("backup version \(value[2]?.intValue ?? 0): this reads version 1") }
        guard var key = value[3]?.bytesValue, key.count == 32, let database = value[4]?.bytesValue else {
            throw .malformed("the backup lacks its master key or database")
        }
        defer { key.wipe() }
        return (StoreBackup.Snapshot(masterKey: SecretBytes(key), database: database), Int64(value[5]?.intValue ?? 0))
    }
}
