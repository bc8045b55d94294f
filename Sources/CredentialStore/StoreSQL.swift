/// The statements the store runs (each prepared once per connection). Kept together so that
/// tests can check their query plans (`EXPLAIN QUERY PLAN`: index searches, no table scans).
enum StoreSQL {
    static let credentialColumns = "cred_key, rp_key, user_key, created_at, hidden_since, sealed"

    static let credentialByKey =
        "SELECT \(credentialColumns) FROM credentials WHERE cred_key = ?"
    static let credentialsByUser =
        "SELECT \(credentialColumns) FROM credentials WHERE user_key = ?"
    static let visibleCredentialsByRP =
        "SELECT \(credentialColumns) FROM credentials WHERE rp_key = ? AND hidden_since IS NULL ORDER BY created_at DESC, rowid DESC"
    static let allCredentials =
        "SELECT \(credentialColumns) FROM credentials ORDER BY created_at DESC, rowid DESC"
    /// Every row in storage order: no sort, so reading them all holds one row at a time.
    static let everyCredentialUnordered = "SELECT \(credentialColumns) FROM credentials"
    static let allVisibleCredentials =
        "SELECT \(credentialColumns) FROM credentials WHERE hidden_since IS NULL ORDER BY created_at DESC, rowid DESC"
    static let credentialPlacement =
        "SELECT rp_key, hidden_since FROM credentials WHERE cred_key = ?"

    static let deleteCredentialByKey = "DELETE FROM credentials WHERE cred_key = ? RETURNING cred_key"
    static let deleteCredentialByUser = "DELETE FROM credentials WHERE user_key = ? RETURNING cred_key"
    /// The newest of an RP's visible credentials that may be used without a credential ID list
    /// (credProtect 1, or any level when ?2 is 1: user verified; never cred_protect 0, a
    /// credential that is not discoverable), with its row ID (for the
    /// position) and how many such there are (the RP row's counts, kept by triggers): one
    /// statement, so the count and the row come from one snapshot.
    static let firstDiscoverableCredential = """
        SELECT \(credentialColumns), rowid,
               (SELECT CASE WHEN ?2 THEN listed_count ELSE open_count END FROM rps WHERE rp_key = ?1)
        FROM credentials WHERE rp_key = ?1 AND hidden_since IS NULL AND (cred_protect = 1 OR (?2 AND cred_protect IS NOT 0))
        ORDER BY created_at DESC, rowid DESC LIMIT 1
        """
    /// The next of them after the one created at ?3 with row ID ?4, in the same order: first
    /// one of the same second with a smaller row ID, else the newest older one. Two statements,
    /// because each is an index range (the index ends in the row ID: `rp_key = AND created_at =
    /// AND rowid <` is one; a single `(created_at, rowid) <` condition walks every row of the
    /// second, and a bulk import makes thousands in one second).
    static let nextDiscoverableCredentialSameSecond = """
        SELECT \(credentialColumns), rowid FROM credentials
        WHERE rp_key = ?1 AND created_at = ?3 AND rowid < ?4 AND hidden_since IS NULL AND (cred_protect = 1 OR (?2 AND cred_protect IS NOT 0))
        ORDER BY rowid DESC LIMIT 1
        """
    static let nextDiscoverableCredentialOlder = """
        SELECT \(credentialColumns), rowid FROM credentials
        WHERE rp_key = ?1 AND created_at < ?3 AND hidden_since IS NULL AND (cred_protect = 1 OR (?2 AND cred_protect IS NOT 0))
        ORDER BY created_at DESC, rowid DESC LIMIT 1
        """
    static let unclassifiedCredentials =
        "SELECT \(credentialColumns) FROM credentials WHERE cred_protect IS NULL"
    static let setCredProtect = "UPDATE credentials SET cred_protect = ? WHERE cred_key = ?"

    static let insertCredential = """
        INSERT INTO credentials (cred_key, rp_key, user_key, created_at, hidden_since, counter_hw, sealed, cred_protect)
        VALUES (?, ?, ?, ?, ?, 0, ?, ?)
        """
    static let updateCredentialSealed = "UPDATE credentials SET sealed = ?, cred_protect = ? WHERE cred_key = ?"
    static let updateHiddenSince = "UPDATE credentials SET hidden_since = ? WHERE cred_key = ?"
    static let purgeHidden =
        "DELETE FROM credentials WHERE hidden_since IS NOT NULL AND hidden_since < ? RETURNING cred_key"
    static let deleteAllCredentials = "DELETE FROM credentials"

    static let upsertRelyingParty = """
        INSERT INTO rps (rp_key, sealed) VALUES (?, ?)
        ON CONFLICT (rp_key) DO UPDATE SET sealed = excluded.sealed
        """
    static let insertRelyingPartyIfAbsent =
        "INSERT INTO rps (rp_key, sealed) VALUES (?, ?) ON CONFLICT (rp_key) DO NOTHING"
    static let visibleRelyingParties = "SELECT rp_key, sealed FROM rps WHERE listed_count > 0"
    static let deleteAllRelyingParties = "DELETE FROM rps"

    static let credentialCount = "SELECT value FROM meta WHERE name = 'credential_count'"
    /// Through the partial index credentials_stored_only (schema v4): it reads only those rows.
    static let storedOnlyCount = "SELECT count(*) FROM credentials WHERE cred_protect = 0"

    static let deviceRow = "SELECT sealed FROM device WHERE name = ?"
    static let upsertDeviceRow = """
        INSERT INTO device (name, sealed) VALUES (?, ?)
        ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed
        """
    static let insertDeviceRowIfAbsent = "INSERT INTO device (name, sealed) VALUES (?, ?) ON CONFLICT (name) DO NOTHING"
    static let deleteDeviceRow = "DELETE FROM device WHERE name = ?"
    static let deleteSettings = "DELETE FROM device WHERE name GLOB 'setting:*'"

    static let credentialHighWater = "SELECT counter_hw FROM credentials WHERE cred_key = ?"
    static let setCredentialHighWater = "UPDATE credentials SET counter_hw = ? WHERE cred_key = ?"
    static let scopeHighWater = "SELECT high_water FROM counters WHERE scope = ?"
    static let setScopeHighWater = """
        INSERT INTO counters (scope, high_water) VALUES (?, ?)
        ON CONFLICT (scope) DO UPDATE SET high_water = excluded.high_water
        """
}

/// Names of the rows of the `device` table.
enum DeviceRow {
    static let secrets = "secrets"
    static let pin = "pin"
    static let keyCheck = "keycheck"
    static func setting(_ key: String) -> String { "setting:" + key }
}
