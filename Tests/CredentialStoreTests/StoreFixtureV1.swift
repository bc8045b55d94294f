import Authenticator
@testable import CredentialStore
import FIDOCrypto
import Foundation

/// A store written by schema version 1 of this module, frozen as an SQL dump and its master
/// key, so that every later build proves it still opens and reads version-1 stores.
///
/// Regenerate only if version 1 itself was wrong (never after release):
/// `LATCHKEY_STORE_WRITE_FIXTURE=/tmp/fx swift test --filter SchemaMigrationTests/testWriteFixture`,
/// then `sqlite3 /tmp/fx/credentials.sqlite .dump` into `sql` below.
enum StoreFixtureV1 {
    static let masterKey: [UInt8] = (0..<32).map { UInt8($0) }
    static let clock: Int64 = 1_750_000_000
    static let globalCounterHighWater: Int64 = 1024

    static func pattern(_ seed: UInt8, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: Int(seed) &* 31 &+ $0 &* 7) }
    }

    static var credentials: [ResidentCredential] {
        [
            ResidentCredential(credentialID: pattern(1, count: 48), rpID: "fixture.example", rpIDHash: rpIDHash("fixture.example"),
                               rpName: "Fixture RP", userHandle: pattern(2, count: 16), userName: "alice@fixture.example",
                               userDisplayName: "Alice Fixture", algorithm: -7, privateKey: SecretBytes(pattern(3, count: 32)),
                               createdAt: clock - 100, credProtect: .userVerificationOptionalWithCredentialIDList,
                               credBlob: pattern(4, count: 8),
                               largeBlobKey: SecretBytes(pattern(5, count: 32)),
                               hmacSecretWithUV: SecretBytes(pattern(6, count: 32)),
                               hmacSecretWithoutUV: SecretBytes(pattern(7, count: 32))),
            ResidentCredential(credentialID: pattern(8, count: 32), rpID: "fixture.example", rpIDHash: rpIDHash("fixture.example"),
                               rpName: "Fixture RP", userHandle: pattern(9, count: 8), userName: nil,
                               userDisplayName: nil, algorithm: -8, privateKey: SecretBytes(pattern(10, count: 32)),
                               createdAt: clock - 50, hiddenSince: clock - 10),
            ResidentCredential(credentialID: pattern(11, count: 64), rpID: "second.example", rpIDHash: rpIDHash("second.example"),
                               rpName: nil, userHandle: pattern(12, count: 64), userName: "bob", userDisplayName: "",
                               algorithm: -7, privateKey: SecretBytes(pattern(13, count: 32)), createdAt: clock),
        ]
    }

    static var secrets: DeviceSecrets {
        DeviceSecrets(aaguid: pattern(20, count: 16), wrappingKey: SecretBytes(pattern(21, count: 32)),
                      attestationPrivateKey: SecretBytes(pattern(22, count: 32)),
                      attestationCertificate: pattern(23, count: 40), attestationCACertificate: pattern(24, count: 30))
    }

    static let pin = PINState(pinHash: SecretBytes(pattern(30, count: 16)), pinCodePoints: 6, retries: 7, forcePINChange: true)
    static let settings: [String: [UInt8]] = ["alwaysUv": [1], "minPINLength": [6]]

    /// Writes the fixture store (used once to produce `sql`).
    static func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let keyPath = directory + "/master.key"
        _ = FileManager.default.createFile(atPath: keyPath, contents: Data(masterKey), attributes: [.posixPermissions: 0o600])
        let store = try SQLiteCredentialStore.open(directory: directory, options: StoreOptions(now: { clock }))
        try store.saveResidentCredentials(credentials)
        _ = try store.loadDeviceSecrets { secrets }
        try store.savePINState(pin)
        for (key, value) in settings { try store.saveSetting(key, value: value) }
        _ = try store.nextSignatureCounter(credentialID: nil)
        store.close()
    }

    /// Recreates the version-1 store from `sql` in `directory`.
    static func materialize(in directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        _ = FileManager.default.createFile(atPath: directory + "/master.key", contents: Data(masterKey),
                                       attributes: [.posixPermissions: 0o600])
        _ = FileManager.default.createFile(atPath: directory + "/credentials.sqlite", contents: Data(),
                                       attributes: [.posixPermissions: 0o600])
        let db = try SQLiteConnection(path: directory + "/credentials.sqlite")
        try db.execute(sql + "\nPRAGMA user_version = 1;")
        db.close()
    }

    static let sql = """
        PRAGMA foreign_keys=OFF;
        BEGIN TRANSACTION;
        CREATE TABLE meta (
            name  TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO meta VALUES('credential_count',3);
        CREATE TABLE device (
            name   TEXT PRIMARY KEY,
            sealed BLOB NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO device VALUES('keycheck',X'0c41d3a44a98287e56c88fea6f68165a30b2305ec3732c567df909f632f5955965664e286f2eff7f41dc35f63f4d5b0abbcb911ee9ece9c5b45d64dc');
        INSERT INTO device VALUES('pin',X'1d6fbb73793b96330e774590b81174035bce7cb33b4962113c9d16b0e18a96bbd6ed1f9e79aaa445ad8925512a1ac9d8f72acda7329691f4adbfdcf960c39bbff8927058fb4c94c0c073b192eff5512e4f8058');
        INSERT INTO device VALUES('secrets',X'a4c88fa85a6fb4d95937715d051f8bcb393ada278b3b7c809602f6a7fbb8a0ef0154cb974a98d1757d920b7d8eadbdcc1a6d246aaecd986e0109fbbc9bd25c272b0ef733ce35a537efac8026bbf020283cb8861d77619bc8a8ad2e3e635dc0c740a338b3e0327bf0f156b5b53853dfe7ff8056e60a01f430c89942eb7add6bedaf55a047ac68c33c3ee47cb81ace9e6d12d270fd19671578dd64080834ba2ee599b58b4ec2bc84f5facc9e91edb5af288b55d60e5b71a64ed11f0864b222a94119dc848cf7cb50937a865969cf');
        INSERT INTO device VALUES('setting:alwaysUv',X'65ea2f3fa39036ba9e7e9139aa579f516ba71bf429086e884e458bd143fd2ae5c2519a97');
        INSERT INTO device VALUES('setting:minPINLength',X'7d8b1c67e45541b6a607a794e6c435770c3e4ad3d6de77e3da4b655a427f9344ce3ad552');
        CREATE TABLE counters (
            scope      TEXT PRIMARY KEY,
            high_water INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO counters VALUES('global',1024);
        CREATE TABLE rps (
            rp_key           BLOB PRIMARY KEY,
            sealed           BLOB NOT NULL,
            credential_count INTEGER NOT NULL DEFAULT 0,
            visible_count    INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        INSERT INTO rps VALUES(X'9eca52f1720882da36138eca608e4f298f430028853493ae09a1830b569f62ec',X'8c6f204b011be8a98a805f33662e12dbb3f93f26df26f8133bf071966d36c1bd549b45006dc8e996404792f3851a0f0f8f5759cc1d32080c39fe7d085e967108fd1889ec1bef249e70f073a18f3d2d2dd3c489096444',1,1);
        INSERT INTO rps VALUES(X'e5523ba0fd6e81bc2de0dc7238db765bebfbbb8058a15c9772e9bfb1974ee82d',X'6d86c583ef21dfcfe3ad338a9fc63affcb191c430de29026ac81f7e344edb17dc0d377679f3fba81abd792e313900fe57fc0be93e8f07fc3b57aef9f8df04b48fd9ea31ee19af460a406798dc487bea2b8c2b8652b37b191d475c79b6373caf91a2523d857ae',2,1);
        CREATE TABLE credentials (
            cred_key     BLOB PRIMARY KEY,
            rp_key       BLOB NOT NULL REFERENCES rps (rp_key),
            user_key     BLOB NOT NULL UNIQUE,
            created_at   INTEGER NOT NULL,
            hidden_since INTEGER,
            counter_hw   INTEGER NOT NULL DEFAULT 0,
            sealed       BLOB NOT NULL
        );
        INSERT INTO credentials VALUES(X'08ed90a8841a90930414c2b1de918d4151f532016c63f2efc3f7ffdea3f85c7d',X'e5523ba0fd6e81bc2de0dc7238db765bebfbbb8058a15c9772e9bfb1974ee82d',X'dc58cf8ada298aacde935e7df3a8e7797d713f111e5d618b5f71a443fb63c2f6',1749999900,NULL,0,X'2275abccf13d4a6e9d6dd427c0ff2a91b2937e31c98d46462cc808ae3c67783b70f9fb8feb726fe82c4de09adce573f5442cc62195a79fee9e3d2270e236ee41222d5b15b0506082fc681193218f7d1febd8f9b7c9ad4fee6d8870fe78139ae1f7e1fb42da57750152e78ea28d3210acd368131261a79549dd4e75311da2df28e56b3a6f6924171e36fa83fb3df6ec630a48ed48cb980454f6d297b1ba729a244c1b060a6faa691d42956d8320e8d5e3afd599716daf3eeaa47f00939863eac0381a040785639c4856c56190dd733bb0d386ec5d8344d14dc5a4eab9e57433f7c5ead89329605f52cb26aa77e5e9e7b6e1327d85b19f6be37dd39d30f187413e93b9f62311b1295567b08ccc41a2f0c1d993f2e7324e4b12b2542295f37738650f57f23916ebc4bb875ecd83b4b8a9f1696837ace3f4fa37c864975c2de57b1e6b2b83d581cf548059b6d36e226c7ac8bff965533a694f286fa4e0f3901f653c6c8ad4e42b3df74f52858eff06ed60addf0dfe9da4ab9fa9f9fc81381046d0e3f9aa29234e8863bfb6a914b77c419b6fb0ded175dd756b');
        INSERT INTO credentials VALUES(X'20c5a5130bee2b6caecb40a460ad9d23c872ff28ee21bea467b7656b2f37b566',X'e5523ba0fd6e81bc2de0dc7238db765bebfbbb8058a15c9772e9bfb1974ee82d',X'b87de3bd9e8d044297b2fc70d9012759a26ca44aea9252aa473d927b5fd6c81c',1749999950,1749999990,0,X'8fa9e56526dde0caee31d670f7b03db96a2bcf564177ee661d004c3f7f8d4917b90bf0f862837ac6aef8413918afeff590303ae998e614053cdbfd1604683bda754da6dd498d089dab7c70f5fd91607c1b7e0fb29ca258a9ced3f8879ebb51ab77ed1bc1fa074ac2fd78ebc2385c52508c77be0e42c137f87aced02e73db38096ff38b7c8edd858341fe2bedbd079a5cbfaaa1c602b0a307fa51c675201b4f9f1655ec14ef8408f5e4dba9bc391a175dbedecbde32d25044979f996847a9c6e31bf90cfd3fae0856ea2bbc502f2b066af8eb7f4fae9342');
        INSERT INTO credentials VALUES(X'ceb4451aff4e4f8d10a52a507d6e7f6ba5b14306e3c63d7a18677bc84a767107',X'9eca52f1720882da36138eca608e4f298f430028853493ae09a1830b569f62ec',X'058e4e69a050b7e4a9d5e7519ae0aedfc3ea75b2f03f651e9b8e6d8ed8a4b8e8',1750000000,NULL,0,X'0ca16aea8e1ab0a43eb9f06932d607e2f3811f252890584eab889ed78c2949806c74684e69fb3f655d10452e3f5d772a5d3d3f389dd1c82e0d97a03d030f6d2b9079b29061a505c9a199a73e13b9c7bd4b59dd0d64f263c852b8677c82154fa05b6cb29ecc4906a0102d4d5a3ab42827c0cbe3ab8482ab41961ba6d096c20dbe8b04af1ee6198d134f49cd4bdbccf06e3c1762f021e98284d7d79c7ffc1990a49c7b711acb674839ec058e75e859f367c0f5adb712e98cd3b253c5de0997869cbda76052f2a5e776ff69c0617f52290fb0767facb67ddcee15506967626a946710773348d87476ae6e5053a8c378236ebd69fd1a83a1d2b4931d0db5a3e09bab314776411145cd1e18f5c4ec687e8b912e091294a7e9a9e9af8bffdc3c4cbba99765c17dd55f996ccd15b98c');
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
        COMMIT;
        """
}
