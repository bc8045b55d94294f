import Authenticator
@testable import CredentialStore
import FIDOCrypto
import XCTest

/// docs/architecture.md, Credentials and the store: secrets and identifying data are sealed; indexes reveal nothing.
/// The raw bytes of the database and its WAL must not contain any of them in clear.
final class StoreSecrecyTests: XCTestCase {
    func testRawDatabaseFilesContainNoNamesHandlesRPIDsOrKeys() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        var needles: [(String, [UInt8])] = []
        var credentials: [ResidentCredential] = []
        for index in 0..<5 {
            let credential = makeCredential(rpID: "secret-rp-\(index).example.org", rpName: "Secret RP Name \(index)",
                                            userHandle: SecureRandom.bytes(count: 32),
                                            userName: "user.name.\(index)@private.example",
                                            displayName: "Display Name Number \(index)")
            credentials.append(credential)
            needles += [
                ("rpId", Array(credential.rpID.utf8)), ("rp name", Array(credential.rpName!.utf8)),
                ("user name", Array(credential.userName!.utf8)), ("display name", Array(credential.userDisplayName!.utf8)),
                ("user handle", credential.userHandle), ("credential ID", credential.credentialID),
                ("private key", credential.privateKey.copyBytes()), ("credBlob", credential.credBlob!),
                ("largeBlobKey", credential.largeBlobKey!.copyBytes()),
                ("hmac secret", credential.hmacSecretWithUV!.copyBytes()),
                ("rpIdHash", credential.rpIDHash),
            ]
        }
        try store.saveResidentCredentials(Array(credentials.prefix(2)))
        for credential in credentials.dropFirst(2) { try store.saveResidentCredential(credential) }
        try store.updateUser(credentialID: credentials[0].credentialID, name: "renamed.user@private.example",
                             displayName: "Renamed Display")
        needles += [("new name", Array("renamed.user@private.example".utf8)), ("new display", Array("Renamed Display".utf8))]
        let secrets = try store.loadDeviceSecrets { makeDeviceSecrets() }
        needles += [("wrapping key", secrets.wrappingKey.copyBytes()),
                    ("attestation key", secrets.attestationPrivateKey.copyBytes()),
                    ("AAGUID", secrets.aaguid),
                    ("attestation cert", Array(secrets.attestationCertificate.prefix(32)))]
        let pinHash = SecureRandom.bytes(count: 16)
        try store.savePINState(PINState(pinHash: SecretBytes(pinHash), pinCodePoints: 6, retries: 8, forcePINChange: false))
        needles.append(("PIN hash", pinHash))
        var masterKey = try Array(Data(contentsOf: URL(fileURLWithPath: temporary.storePath + "/master.key")))
        needles.append(("master key", masterKey))

        // While open, the changes are in the WAL; after close, in the main file.
        func assertClean(_ moment: String) throws {
            var checked = 0
            for name in ["credentials.sqlite", "credentials.sqlite-wal", "credentials.sqlite-shm"] {
                let path = temporary.storePath + "/" + name
                guard let raw = FileManager.default.contents(atPath: path) else { continue }
                checked += raw.count
                let bytes = [UInt8](raw)
                for (what, needle) in needles {
                    XCTAssertFalse(contains(bytes, needle), "\(what) in clear in \(name) (\(moment))")
                }
            }
            XCTAssertGreaterThan(checked, 4096, moment)
        }
        try assertClean("open")
        store.close()
        try assertClean("closed")
        wipe(&masterKey)
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        let first = needle[0]
        var index = 0
        while let start = haystack[index...].firstIndex(of: first) {
            if start + needle.count > haystack.count { return false }
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
            index = start + 1
        }
        return false
    }

    func testErrorMessagesCarryNoSecrets() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let credential = makeCredential(userName: "very-private-name")
        try store.saveResidentCredential(credential)
        try store.withDatabaseForTesting { db throws(StoreError) in
            try db.execute("UPDATE credentials SET sealed = substr(sealed, 1, length(sealed) - 1) || x'00'")
        }
        do {
            _ = try store.residentCredential(id: credential.credentialID)
            XCTFail("tampered row must not open")
        } catch {
            let text = "\(error)"
            XCTAssertFalse(text.contains("very-private-name"))
            XCTAssertFalse(text.contains(credential.rpID))
        }
    }
}
