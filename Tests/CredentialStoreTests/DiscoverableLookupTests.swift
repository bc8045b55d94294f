import Authenticator
@testable import CredentialStore
import CTAP
import FIDOCrypto
import XCTest

/// `discoverableCredentials`: what a getAssertion without an allowList may use, counted and
/// ordered from the index, with only the first credential decrypted.
final class DiscoverableLookupTests: XCTestCase {
    func credential(_ rpID: String, level: CredentialProtectionPolicy, createdAt: Int64, hidden: Bool = false) -> ResidentCredential {
        var credential = makeCredential(rpID: rpID, createdAt: createdAt, hiddenSince: hidden ? createdAt + 1 : nil)
        credential.credProtect = level
        return credential
    }

    /// A store with two credentials of rp.example, the newer first.
    func storeWithTwoAccounts() throws -> (TemporaryDirectory, SQLiteCredentialStore, ResidentCredential, ResidentCredential) {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let newest = credential("rp.example", level: .userVerificationOptional, createdAt: 200)
        let older = credential("rp.example", level: .userVerificationOptional, createdAt: 100)
        try store.saveResidentCredentials([newest, older])
        return (temporary, store, newest, older)
    }

    func testNewestFirstVisibleOnlyAndCredProtectNeedsUV() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let open1 = credential("rp.example", level: .userVerificationOptional, createdAt: 100)
        let open2 = credential("rp.example", level: .userVerificationOptional, createdAt: 300)
        let optional = credential("rp.example", level: .userVerificationOptionalWithCredentialIDList, createdAt: 200)
        let required = credential("rp.example", level: .userVerificationRequired, createdAt: 400)
        let hidden = credential("rp.example", level: .userVerificationOptional, createdAt: 500, hidden: true)
        let elsewhere = credential("other.example", level: .userVerificationOptional, createdAt: 600)
        try store.saveResidentCredentials([open1, open2, optional, required, hidden, elsewhere])

        func ids(userVerified: Bool) throws -> [[UInt8]] {
            guard let found = try store.discoverableCredentials(rpIDHash: rpIDHash("rp.example"), userVerified: userVerified) else {
                return []
            }
            let rest = try found.remaining.map { try XCTUnwrap(store.residentCredential(reference: $0)) }
            XCTAssertEqual(found.count, 1 + rest.count)
            return ([found.first] + rest).map(\.credentialID)
        }
        XCTAssertEqual(try ids(userVerified: false), [open2, open1].map(\.credentialID))
        XCTAssertEqual(try ids(userVerified: true), [required, open2, optional, open1].map(\.credentialID))
        XCTAssertNil(try store.discoverableCredentials(rpIDHash: rpIDHash("none.example"), userVerified: true))

        // The same answer as the port's generic default, built from residentCredentials(rpIDHash:)
        // (the in-memory store orders by when credentials were saved, so save them in time order).
        let generic = InMemoryCredentialStore()
        for credential in [open1, optional, open2, required, hidden, elsewhere] { try generic.saveResidentCredential(credential) }
        let viaDefault = try XCTUnwrap(generic.discoverableCredentials(rpIDHash: rpIDHash("rp.example"), userVerified: true))
        XCTAssertEqual(([viaDefault.first] + viaDefault.remaining.map { try! generic.residentCredential(reference: $0)! }).map(\.credentialID),
                       [required, open2, optional, open1].map(\.credentialID))
    }

    /// Only the first row is decrypted: a damaged older row does not stop the lookup, and is
    /// reported when (and only when) it is read by its reference.
    func testOnlyTheFirstCredentialIsDecrypted() throws {
        let (temporary, store, newest, older) = try storeWithTwoAccounts()
        defer { withExtendedLifetime(temporary) {} }
        let olderKey = store.sealer.credentialKey(credentialID: older.credentialID)
        try store.withDatabaseForTesting { db throws(StoreError) in
            try db.run("UPDATE credentials SET sealed = zeroblob(80) WHERE cred_key = ?", [.blob(olderKey)])
        }
        let found = try XCTUnwrap(store.discoverableCredentials(rpIDHash: rpIDHash("rp.example"), userVerified: false))
        XCTAssertEqual(found.first.credentialID, newest.credentialID)
        XCTAssertEqual(found.count, 2)
        XCTAssertThrowsError(try store.residentCredential(reference: found.references[1]))
    }

    func testADeletedReferenceReadsAsNil() throws {
        let (temporary, store, _, older) = try storeWithTwoAccounts()
        defer { withExtendedLifetime(temporary) {} }
        let found = try XCTUnwrap(store.discoverableCredentials(rpIDHash: rpIDHash("rp.example"), userVerified: false))
        XCTAssertTrue(try store.deleteResidentCredential(id: older.credentialID))
        XCTAssertNil(try store.residentCredential(reference: found.references[1]))
    }
}

/// cred_protect lives outside the sealed record, so nothing may trust it alone.
final class DiscoverableLookupTamperingTests: XCTestCase {
    /// A uvRequired credential whose column was edited to 1 is not offered without UV.
    func testAnEditedCredProtectColumnNeverSkipsUserVerification() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        var protected = makeCredential(rpID: "rp.example", createdAt: 200)
        protected.credProtect = .userVerificationRequired
        try store.saveResidentCredential(protected)
        let key = store.sealer.credentialKey(credentialID: protected.credentialID)
        try store.withDatabaseForTesting { db throws(StoreError) in
            try db.run("UPDATE credentials SET cred_protect = 1 WHERE cred_key = ?", [.blob(key)])
        }
        XCTAssertThrowsError(try store.discoverableCredentials(rpIDHash: rpIDHash("rp.example"), userVerified: false)) { error in
            guard case StoreError.corrupt = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try store.discoverableCredentials(rpIDHash: rpIDHash("rp.example"), userVerified: true)?.first.credentialID,
                       protected.credentialID)
    }

    /// A row that does not open does not stop the store from opening (and classifying the rest).
    func testAnUndecryptableUnclassifiedRowDoesNotStopTheOpen() throws {
        let temporary = TemporaryDirectory()
        let good = makeCredential(rpID: "rp.example", createdAt: 100, full: false)
        let bad = makeCredential(rpID: "rp.example", createdAt: 200, full: false)
        do {
            let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
            try store.saveResidentCredentials([good, bad])
            let badKey = store.sealer.credentialKey(credentialID: bad.credentialID)
            try store.withDatabaseForTesting { db throws(StoreError) in
                try db.run("UPDATE credentials SET cred_protect = NULL")   // as a version-1 store had them
                try db.run("UPDATE credentials SET sealed = zeroblob(80) WHERE cred_key = ?", [.blob(badKey)])
            }
            store.close()
        }
        let reopened = try SQLiteCredentialStore.open(directory: temporary.storePath)
        XCTAssertEqual(try reopened.discoverableCredentials(rpIDHash: rpIDHash("rp.example"), userVerified: false)?.first.credentialID,
                       good.credentialID, "the good row was classified; the bad one stays out")
    }
}
