import CSecret
import FIDOCrypto
import Glibc

/// A store's wrapping key kept in the login keyring through the Secret Service API (libsecret;
/// issue 14): gnome-keyring or KeePassXC's Secret Service, unlocked with the desktop session.
/// master.key holds the master key sealed under the wrapping key and the item's random name;
/// the keyring holds the wrapping key under that name. A copy of the directory then opens only
/// where the user's keyring is unlocked.
///
/// The item lives in the default collection ("login" on GNOME) under the schema
/// `org.latchkey.MasterKey` with one attribute, `item` (32 hex digits, new for every seal), so a
/// re-seal writes a new item before master.key names it, and the old one is cleared after: no
/// moment without a valid pair on disk.
public enum KeyringSeal {
    /// Attribute names and the schema, made once (libsecret keeps pointers to them).
    static let schemaName = "org.latchkey.MasterKey"
    static let itemAttribute = "item"

    nonisolated(unsafe) static let schema: UnsafePointer<SecretSchema> = {
        let types = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, nil)
        g_hash_table_insert(types, g_strdup(itemAttribute), nil)   // GINT_TO_POINTER(SECRET_SCHEMA_ATTRIBUTE_STRING = 0)
        let schema = secret_schema_newv(schemaName, SECRET_SCHEMA_NONE, types)
        g_hash_table_unref(types)
        return UnsafePointer(schema!)
    }()

    /// A new random item name.
    public static func newItemName() -> String {
        SecureRandom.bytes(count: 16).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Stores `key` (32 bytes) under `item`, labelled for the user's keyring manager.
    public static func store(_ key: SecretBytes, item: String, label: String) throws(SealError) {
        var raw = key.copyBytes()
        var text = hex(raw) + [0]
        raw.wipe()
        defer { text.wipe() }
        var error: UnsafeMutablePointer<GError>?
        let stored = withAttributes(item: item) { attributes in
            text.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { password in
                    secret_password_storev_sync(schema, attributes, SECRET_COLLECTION_DEFAULT, label, password, nil, &error)
                }
            }
        }
        if stored == 0 || error != nil {
            throw .sealed("the login keyring did not take the store's key: \(take(&error)); " + fix)
        }
    }

    /// The key stored under `item`.
    public static func lookup(item: String, path: String) throws(SealError) -> SecretBytes {
        var error: UnsafeMutablePointer<GError>?
        let found = withAttributes(item: item) { attributes in
            secret_password_lookupv_sync(schema, attributes, nil, &error)
        }
        if error != nil {
            if let found { secret_password_free(found) }
            throw .sealed("the master key (\(path)) is sealed with the login keyring, which cannot be read: "
                + "\(take(&error)); " + fix)
        }
        guard let found else {
            if isLocked(item: item) {
                throw .sealed("the master key (\(path)) is sealed with the login keyring, and the keyring is locked (it was not "
                    + "unlocked when asked): unlock it — log in to the desktop session, or open your keyring manager (Seahorse, "
                    + "KeePassXC) and unlock \"Login\" — and try again. Nothing was changed")
            }
            throw .sealed("the master key (\(path)) is sealed with the login keyring, and this keyring has no key for it "
                + "(\(schemaName) item \(item)): the directory was copied from another account or machine, or the item was "
                + "deleted. Open it where it was sealed (and `latchkey store seal --passphrase` there to move it)")
        }
        defer { secret_password_free(found) }   // wipes it
        let length = strlen(found)
        var text = Array(UnsafeBufferPointer(start: UnsafeRawPointer(found).assumingMemoryBound(to: UInt8.self), count: length))
        defer { text.wipe() }
        guard var key = unhex(text), key.count == MasterKeyFile.keyCount else {
            throw .corrupt("the login keyring's item for \(path) (\(schemaName), item \(item)) is not a Latchkey key")
        }
        defer { key.wipe() }
        return SecretBytes(key)
    }

    /// Whether the keyring holds `item` but locked (a lookup gives nothing then, not an error,
    /// once the unlock prompt fails or is dismissed).
    static func isLocked(item: String) -> Bool {
        var error: UnsafeMutablePointer<GError>?
        let found = withAttributes(item: item) { attributes in
            secret_service_search_sync(nil, schema, attributes, SECRET_SEARCH_ALL, nil, &error)
        }
        if error != nil { _ = take(&error) }
        guard let found else { return false }
        defer { g_list_free_full(found, g_object_unref) }
        var node: UnsafeMutablePointer<GList>? = found
        while let current = node {
            if let item = current.pointee.data, secret_item_get_locked(item.assumingMemoryBound(to: SecretItem.self)) != 0 { return true }
            node = current.pointee.next
        }
        return false
    }

    /// Removes the item (after master.key stopped naming it). Best effort: a leftover item opens
    /// nothing without the master.key that named it.
    public static func clear(item: String) {
        var error: UnsafeMutablePointer<GError>?
        _ = withAttributes(item: item) { attributes in
            secret_password_clearv_sync(schema, attributes, nil, &error)
        }
        if error != nil { _ = take(&error) }
    }

    /// Whether a Secret Service answers (doctor, store status): nil when it does, else why not.
    public static func probe() -> String? {
        var error: UnsafeMutablePointer<GError>?
        let found = withAttributes(item: "probe") { attributes in
            secret_password_lookupv_sync(schema, attributes, nil, &error)
        }
        if let found { secret_password_free(found) }
        return error == nil ? nil : take(&error)
    }

    /// Forgets the process's connection (tests start and stop their own keyring daemons).
    public static func disconnect() { secret_service_disconnect() }

    static let fix = "is a desktop session with its keyring unlocked running (gnome-keyring-daemon or KeePassXC's Secret "
        + "Service; DBUS_SESSION_BUS_ADDRESS set)? Unlock it by logging in, or use another method: latchkey store seal --passphrase"

    private static func withAttributes<R>(item: String, _ body: (OpaquePointer?) -> R) -> R {
        let attributes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)
        g_hash_table_insert(attributes, g_strdup(itemAttribute), g_strdup(item))
        defer { g_hash_table_unref(attributes) }
        return body(attributes)
    }

    /// The key as lowercase hex text (Secret Service passwords are text), in bytes that can be wiped.
    static func hex(_ bytes: [UInt8]) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return text
    }

    static func unhex(_ text: [UInt8]) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var bytes = [UInt8]()
        bytes.reserveCapacity(text.count / 2)
        for i in stride(from: 0, to: text.count, by: 2) {
            guard let high = value(text[i]), let low = value(text[i + 1]) else { bytes.wipe(); return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// The error's message, freed.
    private static func take(_ error: inout UnsafeMutablePointer<GError>?) -> String {
        guard let current = error else { return "no answer" }
        defer { g_error_free(current); error = nil }
        guard let message = current.pointee.message else { return "error \(current.pointee.code)" }
        return String(cString: message)
    }
}
