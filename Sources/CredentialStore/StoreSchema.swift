/// The store schema, as an ordered list of migrations (SchemaMigrator). Never edit a released
/// step: add a new one. Identifying columns hold keyed hashes (RowSealer); everything else that
/// identifies or is secret is inside a `sealed` blob.
enum StoreSchema {
    static let migrations: [SchemaMigration] = [version1, version2, version3, version4, version5, version6]

    static let version1 = SchemaMigration(version: 1, summary: "credentials, rps, device, counters, meta", sql: """
        CREATE TABLE meta (
            name  TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO meta (name, value) VALUES ('credential_count', 0);

        -- Device secrets ('secrets'), PIN state ('pin'), settings ('setting:<key>'), 'keycheck'.
        CREATE TABLE device (
            name   TEXT PRIMARY KEY,
            sealed BLOB NOT NULL
        ) WITHOUT ROWID;

        -- Durable signature counter high-water marks of scopes other than resident credentials.
        CREATE TABLE counters (
            scope      TEXT PRIMARY KEY,
            high_water INTEGER NOT NULL
        ) WITHOUT ROWID;

        -- One row per RP with resident credentials; counts kept in step by the triggers below,
        -- so that enumerating RPs never scans credentials.
        CREATE TABLE rps (
            rp_key           BLOB PRIMARY KEY,
            sealed           BLOB NOT NULL,
            credential_count INTEGER NOT NULL DEFAULT 0,
            visible_count    INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;

        CREATE TABLE credentials (
            cred_key     BLOB PRIMARY KEY,
            rp_key       BLOB NOT NULL REFERENCES rps (rp_key),
            user_key     BLOB NOT NULL UNIQUE,
            created_at   INTEGER NOT NULL,
            hidden_since INTEGER,
            counter_hw   INTEGER NOT NULL DEFAULT 0,
            sealed       BLOB NOT NULL
        );
        CREATE INDEX credentials_by_rp ON credentials (rp_key, created_at);
        CREATE INDEX credentials_hidden ON credentials (hidden_since) WHERE hidden_since IS NOT NULL;

        CREATE TRIGGER credentials_after_insert AFTER INSERT ON credentials BEGIN
            UPDATE rps SET credential_count = credential_count + 1,
                           visible_count = visible_count + (NEW.hidden_since IS NULL)
             WHERE rp_key = NEW.rp_key;
            UPDATE meta SET value = value + 1 WHERE name = 'credential_count';
        END;

        CREATE TRIGGER credentials_after_delete AFTER DELETE ON credentials BEGIN
            UPDATE rps SET credential_count = credential_count - 1,
                           visible_count = visible_count - (OLD.hidden_since IS NULL)
             WHERE rp_key = OLD.rp_key;
            DELETE FROM rps WHERE rp_key = OLD.rp_key AND credential_count <= 0;
            UPDATE meta SET value = value - 1 WHERE name = 'credential_count';
        END;

        CREATE TRIGGER credentials_after_visibility AFTER UPDATE OF hidden_since ON credentials
        WHEN (OLD.hidden_since IS NULL) != (NEW.hidden_since IS NULL) BEGIN
            UPDATE rps SET visible_count = visible_count + (NEW.hidden_since IS NULL) - (OLD.hidden_since IS NULL)
             WHERE rp_key = OLD.rp_key;
        END;

        CREATE TRIGGER credentials_no_rp_change BEFORE UPDATE OF rp_key ON credentials BEGIN
            SELECT RAISE(ABORT, 'rp_key is immutable');
        END;
        """)

    /// credProtect in the clear, so a discoverable getAssertion counts and orders an RP's usable
    /// credentials from the index and decrypts only the one it signs with (a level 1–3 policy value,
    /// no more telling than `created_at`). Rows of older stores are filled in at open
    /// (`SQLiteCredentialStore.classifyCredentials`), found through the partial index.
    static let version2 = SchemaMigration(version: 2, summary: "credentials.cred_protect", sql: """
        ALTER TABLE credentials ADD COLUMN cred_protect INTEGER;
        CREATE INDEX credentials_unclassified ON credentials (cred_key) WHERE cred_protect IS NULL;
        """)

    /// How many of an RP's credentials a getAssertion without an allowList may use, kept by
    /// triggers: `open_count` without UV (visible, credProtect 1), `listed_count` with UV (visible
    /// and discoverable: cred_protect not 0, the mark of a credential kept only for allowLists) —
    /// so a discoverable getAssertion counts its accounts with one row read, whatever their
    /// number, and credential management lists the RPs with `listed_count` > 0. `IS`: an
    /// unclassified row (NULL, until `classifyCredentials`) is not open, but is listed, as before.
    static let version3 = SchemaMigration(version: 3, summary: "rps.open_count, rps.listed_count", sql: """
        ALTER TABLE rps ADD COLUMN open_count INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE rps ADD COLUMN listed_count INTEGER NOT NULL DEFAULT 0;
        UPDATE rps SET
            open_count = (SELECT count(*) FROM credentials AS c
                           WHERE c.rp_key = rps.rp_key AND c.hidden_since IS NULL AND c.cred_protect IS 1),
            listed_count = (SELECT count(*) FROM credentials AS c
                             WHERE c.rp_key = rps.rp_key AND c.hidden_since IS NULL AND c.cred_protect IS NOT 0);

        CREATE TRIGGER credentials_counts_after_insert AFTER INSERT ON credentials BEGIN
            UPDATE rps SET open_count = open_count + (NEW.hidden_since IS NULL AND NEW.cred_protect IS 1),
                           listed_count = listed_count + (NEW.hidden_since IS NULL AND NEW.cred_protect IS NOT 0)
             WHERE rp_key = NEW.rp_key;
        END;

        CREATE TRIGGER credentials_counts_after_delete AFTER DELETE ON credentials BEGIN
            UPDATE rps SET open_count = open_count - (OLD.hidden_since IS NULL AND OLD.cred_protect IS 1),
                           listed_count = listed_count - (OLD.hidden_since IS NULL AND OLD.cred_protect IS NOT 0)
             WHERE rp_key = OLD.rp_key;
        END;

        CREATE TRIGGER credentials_counts_after_update AFTER UPDATE OF hidden_since, cred_protect ON credentials BEGIN
            UPDATE rps SET open_count = open_count + (NEW.hidden_since IS NULL AND NEW.cred_protect IS 1)
                                                   - (OLD.hidden_since IS NULL AND OLD.cred_protect IS 1),
                           listed_count = listed_count + (NEW.hidden_since IS NULL AND NEW.cred_protect IS NOT 0)
                                                       - (OLD.hidden_since IS NULL AND OLD.cred_protect IS NOT 0)
             WHERE rp_key = OLD.rp_key;
        END;
        """)

    /// Credentials stored for allowLists only (cred_protect 0) are counted by getCredsMetadata
    /// without reading the rest: a partial index holds just them.
    static let version4 = SchemaMigration(version: 4, summary: "credentials_stored_only index", sql: """
        CREATE INDEX credentials_stored_only ON credentials (rp_key) WHERE cred_protect = 0;
        """)

    /// The audit trail of applied signals (`SignalJournal`): a sealed record per signal.
    static let version5 = SchemaMigration(version: 5, summary: "signal_journal", sql: """
        CREATE TABLE signal_journal (
            seq    INTEGER PRIMARY KEY,
            at     INTEGER NOT NULL,
            sealed BLOB NOT NULL
        );
        """)

    /// CTAP 2.3's encCredStoreState: a number that moves whenever the credentials a client could
    /// list change — one made, deleted, hidden or shown again, or its record rewritten (a new
    /// user name) — and never on a read or an assertion (counters live in their own column).
    static let version6 = SchemaMigration(version: 6, summary: "credential_changes", sql: """
        INSERT OR IGNORE INTO meta (name, value) VALUES ('credential_changes', 0);
        CREATE TRIGGER credential_changes_after_insert AFTER INSERT ON credentials BEGIN
            UPDATE meta SET value = value + 1 WHERE name = 'credential_changes';
        END;
        CREATE TRIGGER credential_changes_after_delete AFTER DELETE ON credentials BEGIN
            UPDATE meta SET value = value + 1 WHERE name = 'credential_changes';
        END;
        CREATE TRIGGER credential_changes_after_update AFTER UPDATE OF hidden_since, sealed ON credentials BEGIN
            UPDATE meta SET value = value + 1 WHERE name = 'credential_changes';
        END;
        """)
}
