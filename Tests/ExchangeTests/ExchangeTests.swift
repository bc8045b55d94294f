import Authenticator
import CBOR
import CredentialStore
import CTAP
@testable import Exchange
import FIDOCrypto
import Foundation
import LatchkeyTestSupport
import XCTest
import Encoding

/// CXF writing and reading, the encrypted file, and the import plan against a real store.
final class ExchangeTests: XCTestCase {
    private func credential(_ name: String, rpID: String = "example.com", counterless: Bool = true,
                            algorithm: COSEAlgorithm = .es256) throws -> ResidentCredential {
        let secret: SecretBytes = algorithm == .edDSA ? try Ed25519.PrivateKey().rawRepresentation
                                                      : try ECDSA.PrivateKey(suite: .es256).rawRepresentation
        var credential = ResidentCredential(
            credentialID: Array("id-\(name)".utf8), rpID: rpID, rpIDHash: SHA256.hash(Array(rpID.utf8)), rpName: "Example",
            userHandle: Array("handle-\(name)".utf8), userName: name, userDisplayName: name.capitalized,
            algorithm: algorithm.rawValue, privateKey: secret, createdAt: 1_700_000_000,
            hmacSecretWithUV: SecretBytes(randomCount: 32), hmacSecretWithoutUV: SecretBytes(randomCount: 32))
        credential.counterless = counterless
        credential.credBlob = Array("blob-\(name)".utf8)
        return credential
    }

    private func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    // MARK: The CXF writer, against the published member names

    func testTheWriterUsesCXFsMemberNamesAndUnpaddedBase64URL() throws {
        let alice = try credential("alice")
        let (document, excluded) = PasskeyExport.document(of: [alice], rpIDs: nil, largeBlobArray: LargeBlobStorage.emptyArray,
                                                          keyName: "default", now: 1_764_547_200)
        XCTAssertEqual(excluded, [])
        let header = try object(try document.json())
        XCTAssertEqual(Set(header.keys), ["version", "exporterRpId", "exporterDisplayName", "timestamp", "accounts"])
        XCTAssertEqual(header["version"] as? [String: Int], ["major": 1, "minor": 0])
        XCTAssertEqual(header["timestamp"] as? Int, 1_764_547_200)
        let account = try XCTUnwrap((header["accounts"] as? [[String: Any]])?.first)
        XCTAssertEqual(Set(account.keys), ["id", "username", "email", "collections", "items"])
        let item = try XCTUnwrap((account["items"] as? [[String: Any]])?.first)
        XCTAssertEqual(Set(item.keys), ["id", "creationAt", "modifiedAt", "title", "scope", "credentials"])
        XCTAssertEqual((item["scope"] as? [String: Any])?["urls"] as? [String], ["https://example.com"])
        let passkey = try XCTUnwrap((item["credentials"] as? [[String: Any]])?.first)
        XCTAssertEqual(Set(passkey.keys), ["type", "credentialId", "rpId", "username", "userDisplayName", "userHandle", "key",
                                           "fido2Extensions"])
        XCTAssertEqual(passkey["type"] as? String, "passkey")
        XCTAssertEqual(passkey["credentialId"] as? String, Base64URL.encode(alice.credentialID))
        XCTAssertEqual(passkey["userHandle"] as? String, Base64URL.encode(alice.userHandle))
        let key = try XCTUnwrap(passkey["key"] as? String)
        XCTAssertFalse(key.contains("=") || key.contains("+") || key.contains("/"), "base64url without padding")
        let (type, scalar) = try PKCS8PrivateKey.decode(try XCTUnwrap(Base64URL.decode(key)))
        XCTAssertEqual(type, .p256)
        XCTAssertTrue(constantTimeEquals(scalar, alice.privateKey))
        let extensions = try XCTUnwrap(passkey["fido2Extensions"] as? [String: Any])
        let hmac = try XCTUnwrap(extensions["hmacCredentials"] as? [String: String])
        XCTAssertEqual(Set(hmac.keys), ["algorithm", "credWithUV", "credWithoutUV"])
        XCTAssertEqual(hmac["algorithm"], "hmac-sha256")
        XCTAssertEqual(extensions["credBlob"] as? String, Base64URL.encode(Array("blob-alice".utf8)))
    }

    func testExportLeavesCountingHiddenAndStoredOnlyCredentialsBehindAndFiltersByRP() throws {
        let counting = try credential("counting", counterless: false)
        var hidden = try credential("hidden")
        hidden.hiddenSince = 1
        var storedOnly = try credential("stored-only")
        storedOnly.discoverable = false
        let other = try credential("other", rpID: "other.example")
        let kept = try credential("kept")
        let (document, excluded) = PasskeyExport.document(of: [counting, hidden, storedOnly, other, kept], rpIDs: ["example.com"],
                                                          largeBlobArray: LargeBlobStorage.emptyArray, keyName: "k", now: 0)
        XCTAssertEqual(document.passkeyCount, 1)
        XCTAssertEqual(document.accounts[0].items[0].passkeys[0].credentialId, kept.credentialID)
        XCTAssertEqual(Set(excluded.map(\.credentialID)), [counting.credentialID, hidden.credentialID, storedOnly.credentialID],
                       "other.example is not asked for, so not listed")
        XCTAssertTrue(try XCTUnwrap(excluded.first { $0.credentialID == counting.credentialID }).reason.contains("counting signature counter"))
    }

    /// A credential whose key a TPM made (`serve --keys tpm`) has no private key here to write:
    /// it stays, named with why, even when counterless.
    func testExportLeavesTPMBoundCredentialsBehind() throws {
        var bound = try credential("bound")
        bound.privateKey = DeviceKey(x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32),
                                     blob: [UInt8](repeating: 3, count: 200)).stored
        let kept = try credential("kept")
        let (document, excluded) = PasskeyExport.document(of: [bound, kept], rpIDs: nil, largeBlobArray: LargeBlobStorage.emptyArray,
                                                          keyName: "k", now: 0)
        XCTAssertEqual(document.passkeyCount, 1)
        XCTAssertEqual(excluded.map(\.credentialID), [bound.credentialID])
        XCTAssertTrue(excluded[0].reason.contains("TPM"), excluded[0].reason)
    }

    // MARK: Reading

    func testAWrittenDocumentReadsBackWithItsExtensionsAndLargeBlob() throws {
        var bob = try credential("bob", algorithm: .edDSA)
        bob.largeBlobKey = SecretBytes(randomCount: 32)
        bob.credProtect = .userVerificationRequired
        let blob = Array("a large blob".utf8)
        let array = try LargeBlobStorage.replacingBlob(in: LargeBlobStorage.emptyArray, key: try XCTUnwrap(bob.largeBlobKey),
                                                       with: blob, maxLength: 4096, random: SystemRandom())
        let (document, _) = PasskeyExport.document(of: [bob], rpIDs: nil, largeBlobArray: array, keyName: "k", now: 0)
        let file = try PasskeyFile(try document.json())
        XCTAssertEqual(file.format, .cxf)
        let passkey = try XCTUnwrap(file.passkeys.first)
        XCTAssertEqual(passkey.userName, "bob")
        XCTAssertEqual(passkey.userDisplayName, "Bob")
        XCTAssertEqual(passkey.credBlob, Array("blob-bob".utf8))
        XCTAssertEqual(passkey.largeBlob?.uncompressedSize, blob.count)
        XCTAssertEqual(try RawDeflate.inflate(try XCTUnwrap(passkey.largeBlob?.data), maxOutput: 100), blob)
        XCTAssertTrue(constantTimeEquals(try XCTUnwrap(passkey.hmacCredentials?.withUV), try XCTUnwrap(bob.hmacSecretWithUV)))
        // credProtect travels in Latchkey's own member, so a passkey that needed UV still does.
        XCTAssertEqual(passkey.credProtect, 3)
        let plan = PasskeyImport(file: file, existing: [], algorithms: COSEAlgorithm.credentialAlgorithms, maxCredBlobLength: 32,
                                 conflicts: .refuse, now: 0, random: SystemRandom())
        XCTAssertEqual(plan.credentials.first?.credProtect, .userVerificationRequired)
    }

    func testReadingRefusesWhatIsWrongAndNamesWhere() throws {
        func refusal(_ json: String) -> String {
            do {
                _ = try PasskeyFile(Array(json.utf8))
                return "accepted"
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(refusal(#"{"version":{"major":2,"minor":1},"accounts":[]}"#), "CXF version 2.1: this reads version 1.x")
        XCTAssertEqual(refusal(#"{"version":{"major":1,"minor":0},"accounts":[{"items":[{"credentials":[{"type":"passkey"}]}]}]}"#),
                       "accounts[0].items[0].credentials[0].key is missing")
        XCTAssertEqual(refusal(#"{"version":{"major":1,"minor":0},"accounts":[{"items":[{"credentials":[{"type":"passkey","key":"!!"}]}]}]}"#),
                       "accounts[0].items[0].credentials[0].key is not base64url")
        XCTAssertTrue(refusal(#"{"version":{"major":1},"acc"#).contains("not JSON"))
        XCTAssertTrue(refusal("[]").contains("not an object"))
        XCTAssertTrue(refusal(#"{"encrypted":true,"items":[]}"#).contains("encrypted Bitwarden export"))
    }

    func testBitwardenCredentialIDs() {
        XCTAssertEqual(PasskeyFile.bitwardenCredentialID("7b1f5c2e-3a44-4d6e-9f10-21a2b3c4d5e6"),
                       [0x7B, 0x1F, 0x5C, 0x2E, 0x3A, 0x44, 0x4D, 0x6E, 0x9F, 0x10, 0x21, 0xA2, 0xB3, 0xC4, 0xD5, 0xE6])
        XCTAssertEqual(PasskeyFile.bitwardenCredentialID("b64.AQID"), [1, 2, 3])
        XCTAssertNil(PasskeyFile.bitwardenCredentialID("7b1f5c2e3a444d6e9f1021a2b3c4d5e6"), "no dashes: not a GUID")
        XCTAssertNil(PasskeyFile.bitwardenCredentialID("b64."))
        XCTAssertNil(PasskeyFile.bitwardenCredentialID("7b1f5c2e-3a44-4d6e-9f10-21a2b3c4d5eZ"))
    }

    // MARK: The encrypted file

    func testEncryptedFilesOpenOnlyAsTheyWereSealedAndTheirHeaderIsAuthenticated() throws {
        let secret = Array("{\"passkeys\":1}".utf8)
        let recipient = try X25519.PrivateKey()
        let sealed = try EncryptedExport.seal(secret, contents: .cxf, to: recipient.publicKey)
        let reread = try XCTUnwrap(try PasskeyFile.encryptedExport(in: sealed.json()))
        XCTAssertEqual(try reread.open(with: recipient).withUnsafeBytes { Array($0) }, secret)
        XCTAssertThrowsError(try reread.open(with: X25519.PrivateKey())) {
            XCTAssertTrue(($0 as? ExchangeError)?.description.contains("encrypted to another key") ?? false, "\($0)")
        }
        XCTAssertThrowsError(try reread.open(passphrase: SecretBytes(Array("x".utf8))))
        XCTAssertFalse(String(decoding: sealed.json(), as: UTF8.self).contains("passkeys"), "nothing in the clear")

        let cheap = Scrypt.Parameters(logN: 10, r: 8, p: 1)
        let passphrase = SecretBytes(Array("correct horse".utf8))
        let locked = try EncryptedExport.seal(secret, contents: .cxf, passphrase: passphrase, parameters: cheap)
        XCTAssertEqual(try locked.open(passphrase: passphrase).withUnsafeBytes { Array($0) }, secret)
        XCTAssertThrowsError(try locked.open(passphrase: SecretBytes(Array("wrong".utf8))))
        // Another cost in the header (here a higher one) is refused: the header is the AAD.
        guard case let .passphrase(_, salt, nonce) = locked.method else { return XCTFail("method") }
        var changed = locked
        changed.method = .passphrase(parameters: Scrypt.Parameters(logN: 11, r: 8, p: 1), salt: salt, nonce: nonce)
        XCTAssertThrowsError(try changed.open(passphrase: passphrase))
        // Unreasonable parameters are refused before any work.
        var text = String(decoding: locked.json(), as: UTF8.self)
        text = text.replacingOccurrences(of: "\"logN\":10", with: "\"logN\":40")
        XCTAssertThrowsError(try PasskeyFile.encryptedExport(in: Array(text.utf8))) {
            XCTAssertTrue("\($0)".contains("outside 10 to 22"), "\($0)")
        }
        // Bounded work, not only memory (issue 34: logN 10, r 1, p 16000000 ran for hours at 1 MiB).
        let hostile = String(decoding: locked.json(), as: UTF8.self).replacingOccurrences(of: "\"r\":8", with: "\"r\":1")
            .replacingOccurrences(of: "\"p\":1", with: "\"p\":16000000")
        XCTAssertNotEqual(hostile, String(decoding: locked.json(), as: UTF8.self))
        let started = Date()
        XCTAssertThrowsError(try PasskeyFile.encryptedExport(in: Array(hostile.utf8))) {
            XCTAssertTrue("\($0)".contains("p = 16000000 is more than 16"), "\($0)")
        }
        let greedy = String(decoding: locked.json(), as: UTF8.self).replacingOccurrences(of: "\"logN\":10", with: "\"logN\":22")
            .replacingOccurrences(of: "\"p\":1", with: "\"p\":16")
        XCTAssertThrowsError(try PasskeyFile.encryptedExport(in: Array(greedy.utf8))) {
            XCTAssertTrue("\($0)".contains("more than 2^24"), "\($0)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 1, "refused before any derivation")
    }

    // MARK: The import plan, against a real store

    func testAnImportIsAllOrNothingAndConflictsNeedARule() throws {
        let directory = try ShortTempDirectory()
        let store = try SQLiteCredentialStore.open(directory: directory.path + "/store", lock: .none)
        defer { store.close() }
        let alice = try credential("alice")
        try store.saveResidentCredential(alice)
        let before = try store.allResidentCredentials(includeHidden: true).map(\.credentialID)

        var carol = try credential("carol")
        carol.counterless = true
        let (document, _) = PasskeyExport.document(of: [alice, carol], rpIDs: nil, largeBlobArray: LargeBlobStorage.emptyArray,
                                                   keyName: "k", now: 0)
        let file = try PasskeyFile(try document.json())
        let algorithms = COSEAlgorithm.credentialAlgorithms
        let refused = PasskeyImport(file: file, existing: try store.allResidentCredentials(includeHidden: true), algorithms: algorithms,
                                    maxCredBlobLength: 32, conflicts: .refuse, now: 0, random: SystemRandom())
        XCTAssertFalse(refused.canApply)
        XCTAssertEqual(refused.outcomes.map(\.action).filter { if case .conflict = $0 { true } else { false } }.count, 1)

        let skipping = PasskeyImport(file: file, existing: try store.allResidentCredentials(includeHidden: true), algorithms: algorithms,
                                     maxCredBlobLength: 32, conflicts: .skipExisting, now: 0, random: SystemRandom())
        XCTAssertTrue(skipping.canApply)
        XCTAssertEqual(skipping.credentials.map(\.credentialID), [carol.credentialID])
        try skipping.apply(to: store, maxLargeBlobArray: 4096, random: SystemRandom())
        let imported = try XCTUnwrap(store.residentCredential(id: carol.credentialID))
        XCTAssertTrue(imported.counterless)
        XCTAssertEqual(imported.userName, "carol")
        XCTAssertEqual(imported.credBlob, Array("blob-carol".utf8))
        XCTAssertEqual(Set(try store.allResidentCredentials(includeHidden: true).map(\.credentialID)), Set(before + [carol.credentialID]))

        // A credBlob the key cannot keep refuses the whole import.
        var big = try credential("big")
        big.credBlob = [UInt8](repeating: 1, count: 33)
        let (bigDocument, _) = PasskeyExport.document(of: [big, try credential("fine")], rpIDs: nil,
                                                      largeBlobArray: LargeBlobStorage.emptyArray, keyName: "k", now: 0)
        let tooBig = PasskeyImport(file: try PasskeyFile(try bigDocument.json()), existing: [], algorithms: algorithms,
                                   maxCredBlobLength: 32, conflicts: .refuse, now: 0, random: SystemRandom())
        XCTAssertFalse(tooBig.canApply)
        XCTAssertEqual(tooBig.outcomes.map(\.action).first, .refused("credBlob is 33 bytes; this key keeps at most 32"))

        // An algorithm the key does not make is refused by name.
        let (edDocument, _) = PasskeyExport.document(of: [try credential("ed", algorithm: .edDSA)], rpIDs: nil,
                                                     largeBlobArray: LargeBlobStorage.emptyArray, keyName: "k", now: 0)
        let onlyES256 = PasskeyImport(file: try PasskeyFile(try edDocument.json()), existing: [], algorithms: [.es256],
                                      maxCredBlobLength: 32, conflicts: .refuse, now: 0, random: SystemRandom())
        guard case let .refused(reason) = try XCTUnwrap(onlyES256.outcomes.first).action else { return XCTFail("accepted") }
        XCTAssertTrue(reason.contains("does not make"), reason)
    }

    func testLargeBlobsThatDoNotFitRefuseTheWholeImport() throws {
        let directory = try ShortTempDirectory()
        let store = try SQLiteCredentialStore.open(directory: directory.path + "/store", lock: .none)
        defer { store.close() }
        var dana = try credential("dana")
        dana.largeBlobKey = SecretBytes(randomCount: 32)
        let blob = SecureRandom.bytes(count: 3000)   // random: does not compress
        let array = try LargeBlobStorage.replacingBlob(in: LargeBlobStorage.emptyArray, key: try XCTUnwrap(dana.largeBlobKey),
                                                       with: blob, maxLength: 1 << 20, random: SystemRandom())
        let (document, _) = PasskeyExport.document(of: [dana], rpIDs: nil, largeBlobArray: array, keyName: "k", now: 0)
        let plan = PasskeyImport(file: try PasskeyFile(try document.json()), existing: [], algorithms: COSEAlgorithm.credentialAlgorithms,
                                 maxCredBlobLength: 32, conflicts: .refuse, now: 0, random: SystemRandom())
        XCTAssertTrue(plan.canApply)
        XCTAssertThrowsError(try plan.apply(to: store, maxLargeBlobArray: 1024, random: SystemRandom()))
        XCTAssertEqual(try store.allResidentCredentials(includeHidden: true).count, 0, "the credential did not go in without its blob")
        try plan.apply(to: store, maxLargeBlobArray: 8192, random: SystemRandom())
        let stored = try XCTUnwrap(store.residentCredential(id: dana.credentialID))
        XCTAssertEqual(try LargeBlobStorage.blob(in: LargeBlobStorage.serializedArray(in: store), key: try XCTUnwrap(stored.largeBlobKey)),
                       blob)
    }
}

/// A whole-key backup: snapshot, encode, decode, restore into a new store that opens with the
/// same credentials; a restore into a store that is not empty, or of a damaged database, writes nothing.
final class KeyBackupTests: XCTestCase {
    func testASnapshotRestoresIntoANewStoreAndOnlyThere() throws {
        let directory = try ShortTempDirectory()
        let store = try SQLiteCredentialStore.open(directory: directory.path + "/a", lock: .none)
        var credential = ResidentCredential(
            credentialID: [1, 2, 3], rpID: "example.com", rpIDHash: SHA256.hash(Array("example.com".utf8)), rpName: nil,
            userHandle: [9], userName: "zoe", userDisplayName: nil, algorithm: COSEAlgorithm.es256.rawValue,
            privateKey: try ECDSA.PrivateKey(suite: .es256).rawRepresentation, createdAt: 5)
        credential.counterless = true
        try store.saveResidentCredential(credential)
        let snapshot = try StoreBackup.snapshot(of: store)
        store.close()
        XCTAssertEqual(try FileSystemEntries.names(directory.path + "/a").filter { $0.hasPrefix("backup.tmp") }, [], "no snapshot left behind")

        var encoded = KeyBackup.encode(snapshot, created: 42)
        let (decoded, created) = try KeyBackup.decode(encoded)
        encoded.wipe()
        XCTAssertEqual(created, 42)
        try StoreBackup.restore(decoded, into: directory.path + "/b")
        let restored = try SQLiteCredentialStore.open(directory: directory.path + "/b", lock: .none)
        let again = try XCTUnwrap(restored.residentCredential(id: [1, 2, 3]))
        XCTAssertEqual(again.userName, "zoe")
        XCTAssertTrue(again.counterless)
        restored.close()

        XCTAssertThrowsError(try StoreBackup.restore(decoded, into: directory.path + "/b")) {
            XCTAssertTrue("\($0)".contains("is not empty"), "\($0)")
        }
        var damaged = decoded
        damaged.database = Array(decoded.database.prefix(100))
        XCTAssertThrowsError(try StoreBackup.restore(damaged, into: directory.path + "/c"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.path + "/c"), "nothing left of a failed restore")
        XCTAssertThrowsError(try KeyBackup.decode(Array("not cbor".utf8)))
    }
}

private enum FileSystemEntries {
    static func names(_ path: String) throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: path) }
}

/// The passkey-endpoints document (W3C Working Draft 2026-01-14).
final class PasskeyEndpointsTests: XCTestCase {
    func testLinksAreKeptOnlyWhenTheyAreHTTPSURLs() throws {
        let document = #"{"enroll":"https://a.example/new","manage":"http://a.example/keys","prfUsageDetails":7,"other":"x"}"#
        let endpoints = try PasskeyEndpoints(json: Array(document.utf8))
        XCTAssertEqual(endpoints, PasskeyEndpoints(enroll: "https://a.example/new"))
        XCTAssertTrue(try PasskeyEndpoints(json: Array("{}".utf8)).isEmpty)
        XCTAssertThrowsError(try PasskeyEndpoints(json: Array("[]".utf8)))
        XCTAssertThrowsError(try PasskeyEndpoints(json: Array("{".utf8)))
        XCTAssertEqual(try PasskeyEndpoints(json: Array(#"{"manage":"https:///nohost"}"#.utf8)), PasskeyEndpoints())
    }

    func testOnlyDomainsAreAskedAndTheCacheAnswersWithoutTheNetwork() throws {
        let directory = try ShortTempDirectory()
        let cache = directory.path + "/cache/endpoints.json"
        let client = PasskeyEndpointsClient(cachePath: cache)
        XCTAssertEqual(client.endpoints(rpID: "bad host/x", now: 100), .failed("bad host/x is not a domain to ask"))
        // What the cache file holds is answered from it within its lifetime, in a new client too.
        let written = #"{"cached.example":{"at":1000,"manage":"https://cached.example/keys"}}"#
        try Data(written.utf8).write(to: URL(fileURLWithPath: cache))
        let reader = PasskeyEndpointsClient(cachePath: cache)
        XCTAssertEqual(reader.endpoints(rpID: "cached.example", now: 1000 + 3600), .found(PasskeyEndpoints(manage: "https://cached.example/keys")))
    }
}

/// Dates in imported files: RFC 3339 only, parsed without ICU (whose formatter died of SIGFPE on
/// an 80-digit fraction: FuzzImport's finding, kept in Fuzz/corpus/FuzzImport).
final class InternetDateTimeTests: XCTestCase {
    func testValuesAgainstPythonsDatetime() {
        // python3: int(datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp())
        XCTAssertEqual(InternetDateTime.unixSeconds("1970-01-01T00:00:00Z"), 0)
        XCTAssertEqual(InternetDateTime.unixSeconds("2025-11-30T12:00:00Z"), 1_764_504_000)
        XCTAssertEqual(InternetDateTime.unixSeconds("2025-11-30T12:00:00.000Z"), 1_764_504_000)
        XCTAssertEqual(InternetDateTime.unixSeconds("2000-02-29T23:59:59+01:00"), 951_865_199)
        XCTAssertEqual(InternetDateTime.unixSeconds("1969-12-31T23:59:59Z"), -1)
        XCTAssertEqual(InternetDateTime.unixSeconds("2024-06-01T08:30:15.5-07:30"), 1_717_257_615)
        XCTAssertEqual(InternetDateTime.unixSeconds("0000-01-01T00:00:00Z"), -62_167_219_200)
    }

    func testTheFuzzersFractionAndMalformedDatesAreNotDates() {
        XCTAssertEqual(InternetDateTime.unixSeconds("2025-11-30T12:00:00." + String(repeating: "0", count: 40) + "Z"),
                       1_764_504_000, "a long fraction is read and dropped")
        XCTAssertNil(InternetDateTime.unixSeconds("2025-11-30T12:00:00." + String(repeating: "0", count: 80) + "Z"),
                     "longer than any date: refused before reading")
        for text in ["2025-02-29T00:00:00Z", "2025-13-01T00:00:00Z", "2025-11-31T00:00:00Z", "2025-11-30T24:00:00Z",
                     "2025-11-30T12:60:00Z", "2025-11-30 12:00:00Z", "2025-11-30T12:00:00", "2025-11-30T12:00:00+24:00",
                     "2025-11-30T12:00:00.Z", "+2025-11-30T12:00:00Z", "2025-11-30T12:00:00Zjunk", "", "٢٠٢٥-11-30T12:00:00Z"] {
            XCTAssertNil(InternetDateTime.unixSeconds(text), text)
        }
    }
}
