import Authenticator
@testable import CredentialStore
import CTAP
import FIDOCrypto
import XCTest

/// `discoverableCredentials`: what a getAssertion without an allowList may use, counted from
/// the RP's row and ordered from the index, with only the first credential decrypted; and
/// `discoverableCredential(after:)`, which continues from a position one credential at a time.
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

    /// Every credential of rp.example the store hands out from the first, with the count checked.
    func walk(_ store: CredentialStorePort, userVerified: Bool) throws -> [[UInt8]] {
        let hash = rpIDHash("rp.example")
        guard let found = try store.discoverableCredentials(rpIDHash: hash, userVerified: userVerified) else { return [] }
        var ids = [found.first.credentialID], position = found.position
        while let next = try store.discoverableCredential(after: position, rpIDHash: hash, userVerified: userVerified) {
            ids.append(next.credential.credentialID)
            position = next.position
            XCTAssertLessThanOrEqual(ids.count, found.count, "more than counted")
            if ids.count > found.count { break }
        }
        XCTAssertEqual(found.count, ids.count, "counted as many as handed out")
        return ids
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

        XCTAssertEqual(try walk(store, userVerified: false), [open2, open1].map(\.credentialID))
        XCTAssertEqual(try walk(store, userVerified: true), [required, open2, optional, open1].map(\.credentialID))
        XCTAssertNil(try store.discoverableCredentials(rpIDHash: rpIDHash("none.example"), userVerified: true))

        // The same answer from the in-memory store (it orders by when credentials were saved, so
        // save them in time order).
        let generic = InMemoryCredentialStore()
        for credential in [open1, optional, open2, required, hidden, elsewhere] { try generic.saveResidentCredential(credential) }
        XCTAssertEqual(try walk(generic, userVerified: true), [required, open2, optional, open1].map(\.credentialID))
        XCTAssertEqual(try walk(generic, userVerified: false), [open2, open1].map(\.credentialID))
    }

    /// Only the first row is decrypted: a damaged older row does not stop the lookup, and is
    /// reported when (and only when) it is read.
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
        XCTAssertThrowsError(try store.discoverableCredential(after: found.position, rpIDHash: rpIDHash("rp.example"), userVerified: false))
    }

    /// One deleted or hidden after the count is skipped; one made after it is not reached.
    func testContinuingSkipsWhatWentAndNeverReachesWhatCameSince() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let accounts = (1...4).map { credential("rp.example", level: .userVerificationOptional, createdAt: Int64($0) * 100) }
        try store.saveResidentCredentials(accounts)
        let hash = rpIDHash("rp.example")
        let found = try XCTUnwrap(store.discoverableCredentials(rpIDHash: hash, userVerified: false))
        XCTAssertEqual(found.first.credentialID, accounts[3].credentialID)
        XCTAssertEqual(found.count, 4)
        XCTAssertTrue(try store.deleteResidentCredential(id: accounts[2].credentialID))
        try store.saveResidentCredential(credential("rp.example", level: .userVerificationOptional, createdAt: 900))
        let next = try XCTUnwrap(store.discoverableCredential(after: found.position, rpIDHash: hash, userVerified: false))
        XCTAssertEqual(next.credential.credentialID, accounts[1].credentialID, "the deleted one skipped, the new one not reached")
        _ = try store.signalUnknownCredential(rpID: "rp.example", credentialID: accounts[0].credentialID)
        XCTAssertNil(try store.discoverableCredential(after: next.position, rpIDHash: hash, userVerified: false), "hidden since")
        XCTAssertThrowsError(try store.discoverableCredential(after: CredentialReference([1, 2, 3]), rpIDHash: hash, userVerified: false),
                             "a position the store did not make")
    }

    /// Rows created in the same second are ordered (and continued) by row ID, none lost or repeated.
    func testSameSecondCredentialsAreEachHandedOutOnce() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let accounts = (0..<5).map { _ in credential("rp.example", level: .userVerificationOptional, createdAt: 500) }
        try store.saveResidentCredentials(accounts)
        XCTAssertEqual(try walk(store, userVerified: false), accounts.reversed().map(\.credentialID))
    }

    /// The counts follow inserts, deletes, hiding, un-hiding and replacement (the triggers).
    func testTheCountsFollowEveryChange() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let hash = rpIDHash("rp.example")
        func counts() throws -> [Int] {
            try [false, true].map { try store.discoverableCredentials(rpIDHash: hash, userVerified: $0)?.count ?? 0 }
        }
        let open = credential("rp.example", level: .userVerificationOptional, createdAt: 100)
        let protected = credential("rp.example", level: .userVerificationRequired, createdAt: 200)
        try store.saveResidentCredentials([open, protected])
        XCTAssertEqual(try counts(), [1, 2])
        _ = try store.signalUnknownCredential(rpID: "rp.example", credentialID: open.credentialID)
        XCTAssertEqual(try counts(), [0, 1])
        _ = try store.signalAllAcceptedCredentials(rpID: "rp.example", userHandle: open.userHandle, acceptedIDs: [open.credentialID])
        XCTAssertEqual(try counts(), [1, 2], "un-hidden")
        var replacement = credential("rp.example", level: .userVerificationRequired, createdAt: 300)
        replacement.userHandle = open.userHandle
        try store.saveResidentCredential(replacement)
        XCTAssertEqual(try counts(), [0, 2], "the account's credential replaced by one that needs UV")
        XCTAssertTrue(try store.deleteResidentCredential(id: protected.credentialID))
        XCTAssertEqual(try counts(), [0, 1])
        try store.reset(newWrappingKey: SecretBytes(randomCount: 32))
        XCTAssertEqual(try counts(), [0, 0])
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

/// A credential kept only for allowLists (`discoverable` false: a rig's non-resident
/// credential) is found by its ID and nowhere else.
final class StoredOnlyCredentialTests: XCTestCase {
    func testItIsFoundByIDOnlyAndCountedNowhere() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        var storedOnly = makeCredential(rpID: "rp.example", createdAt: 300, full: false)
        storedOnly.discoverable = false
        storedOnly.userHandle = ResidentCredential.storedOnlyUserHandle(credentialID: storedOnly.credentialID)
        let listed = makeCredential(rpID: "rp.example", createdAt: 100, full: false)
        try store.saveResidentCredentials([storedOnly, listed])
        let hash = rpIDHash("rp.example")

        assertSameCredential(try store.residentCredential(id: storedOnly.credentialID), storedOnly)
        for userVerified in [false, true] {
            let found = try XCTUnwrap(store.discoverableCredentials(rpIDHash: hash, userVerified: userVerified))
            XCTAssertEqual(found.first.credentialID, listed.credentialID, "the newer one is not discoverable")
            XCTAssertEqual(found.count, 1)
            XCTAssertNil(try store.discoverableCredential(after: found.position, rpIDHash: hash, userVerified: userVerified))
        }
        XCTAssertEqual(try store.relyingParties().map(\.rpID), ["rp.example"])
        XCTAssertTrue(try store.deleteResidentCredential(id: listed.credentialID))
        XCTAssertNil(try store.discoverableCredentials(rpIDHash: hash, userVerified: true))
        XCTAssertEqual(try store.relyingParties(), [], "an RP with only such credentials is not listed")
        XCTAssertEqual(try store.residentCredentialCount(), 1, "it still takes space")
        XCTAssertEqual(try store.storedOnlyCredentialCount(), 1)
        let plan = try store.withDatabaseForTesting { db throws(StoreError) in
            try db.textRows("EXPLAIN QUERY PLAN " + StoreSQL.storedOnlyCount, column: 3)
        }
        XCTAssertTrue(plan.contains { $0.contains("credentials_stored_only") }, "counted through its partial index: \(plan)")
        XCTAssertTrue(try store.integrityCheck(), "the triggers' counts match the rows")

        // The sealed record has the last word over an edited column.
        let key = store.sealer.credentialKey(credentialID: storedOnly.credentialID)
        try store.withDatabaseForTesting { db throws(StoreError) in
            try db.run("UPDATE credentials SET cred_protect = 1 WHERE cred_key = ?", [.blob(key)])
        }
        XCTAssertThrowsError(try store.discoverableCredentials(rpIDHash: hash, userVerified: false)) { error in
            guard case StoreError.corrupt = error else { return XCTFail("\(error)") }
        }
    }
}
