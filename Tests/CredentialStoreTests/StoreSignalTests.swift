import Authenticator
@testable import CredentialStore
import FIDOCrypto
import XCTest

/// The WebAuthn Signal API's three calls (W3C semantics; docs/architecture.md, Credentials and the store),
/// and purging after the retention period, with a manual clock.
final class StoreSignalTests: XCTestCase {
    private var temporary: TemporaryDirectory!
    private var clock: ManualClock!
    private var store: SQLiteCredentialStore!
    private let day: Int64 = 86_400

    override func setUpWithError() throws {
        temporary = TemporaryDirectory()
        clock = ManualClock()
        store = try openStore()
    }

    override func tearDown() {
        store?.close()
        store = nil
    }

    private func openStore() throws -> SQLiteCredentialStore {
        try SQLiteCredentialStore.open(directory: temporary.storePath,
                                       options: StoreOptions(hiddenRetentionSeconds: 30 * day, now: clock.function))
    }

    // signalAllAcceptedCredentials: credentials of that user not in the list become hidden.
    func testAllAcceptedHidesTheUnlistedAndUnhidesTheListed() throws {
        let user = SecureRandom.bytes(count: 16)
        let credential = makeCredential(rpID: "example.com", userHandle: user)
        let otherUser = makeCredential(rpID: "example.com")
        try store.saveResidentCredentials([credential, otherUser])

        let decoys = (0..<10_000).map { _ in SecureRandom.bytes(count: 48) }
        let started = ContinuousClock.now
        let result = try store.signalAllAcceptedCredentials(rpID: "example.com", userHandle: user, acceptedIDs: decoys)
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2), "10,000 IDs handled in one pass")
        XCTAssertEqual(result, SignalChanges(matched: 1, hidden: [credential.credentialID]))
        XCTAssertEqual(try store.residentCredential(id: credential.credentialID)?.hiddenSince, clock.now)
        XCTAssertEqual(try store.residentCredentials(rpIDHash: rpIDHash("example.com")).map(\.credentialID),
                       [otherUser.credentialID], "hidden credentials are not offered")

        // Hiding again keeps the first mark.
        clock.advance(by: 100)
        XCTAssertEqual(try store.signalAllAcceptedCredentials(rpID: "example.com", userHandle: user, acceptedIDs: []).hidden, [])
        XCTAssertEqual(try store.residentCredential(id: credential.credentialID)?.hiddenSince, clock.now - 100)

        let back = try store.signalAllAcceptedCredentials(rpID: "example.com", userHandle: user,
                                                          acceptedIDs: decoys + [credential.credentialID])
        XCTAssertEqual(back, SignalChanges(matched: 1, unhidden: [credential.credentialID]))
        XCTAssertNil(try store.residentCredential(id: credential.credentialID)?.hiddenSince)
        XCTAssertEqual(try store.residentCredentials(rpIDHash: rpIDHash("example.com")).count, 2)
        XCTAssertTrue(try store.integrityCheck())
    }

    // Both hiding signals name the hidden credentials that gave PRF outputs (their callers warn).
    func testHidingSignalsNameTheHiddenCredentialsThatGavePRFOutputs() throws {
        let user = SecureRandom.bytes(count: 16)
        var used = makeCredential(rpID: "example.com", userHandle: user)
        used.usedHMACSecret = true
        let unused = makeCredential(rpID: "example.com")
        var usedElsewhere = makeCredential(rpID: "other.example")
        usedElsewhere.usedHMACSecret = true
        try store.saveResidentCredentials([used, unused, usedElsewhere])

        let accepted = try store.signalAllAcceptedCredentials(rpID: "example.com", userHandle: user, acceptedIDs: [])
        XCTAssertEqual(accepted.hiddenAfterPRFUse, [used.credentialID])
        XCTAssertEqual(try store.signalUnknownCredential(rpID: "example.com", credentialID: unused.credentialID).hiddenAfterPRFUse, [])
        XCTAssertEqual(try store.signalUnknownCredential(rpID: "other.example", credentialID: usedElsewhere.credentialID).hiddenAfterPRFUse,
                       [usedElsewhere.credentialID])
        XCTAssertEqual(try store.signalUnknownCredential(rpID: "other.example", credentialID: usedElsewhere.credentialID).hiddenAfterPRFUse,
                       [], "already hidden: not hidden by this signal")
    }

    func testAllAcceptedForAnotherRPOrUserChangesNothing() throws {
        let user = SecureRandom.bytes(count: 16)
        let credential = makeCredential(rpID: "example.com", userHandle: user)
        try store.saveResidentCredential(credential)
        let otherRP = try store.signalAllAcceptedCredentials(rpID: "other.example", userHandle: user, acceptedIDs: [])
        let otherUser = try store.signalAllAcceptedCredentials(rpID: "example.com", userHandle: [1, 2], acceptedIDs: [])
        XCTAssertEqual(otherRP, SignalChanges(matched: 0))
        XCTAssertEqual(otherUser, SignalChanges(matched: 0))
        XCTAssertEqual(try store.signalJournal(), [], "a signal that names no credential is not journaled")
        XCTAssertNil(try store.residentCredential(id: credential.credentialID)?.hiddenSince)
    }

    // signalUnknownCredential: that credential becomes hidden, only at its own RP.
    func testUnknownCredentialHidesOnlyAtItsRP() throws {
        let credential = makeCredential(rpID: "example.com")
        try store.saveResidentCredential(credential)
        XCTAssertEqual(try store.signalUnknownCredential(rpID: "evil.example", credentialID: credential.credentialID),
                       SignalChanges(matched: 0))
        XCTAssertNil(try store.residentCredential(id: credential.credentialID)?.hiddenSince)
        XCTAssertEqual(try store.signalUnknownCredential(rpID: "example.com", credentialID: [9, 9, 9]).matched, 0)
        XCTAssertEqual(try store.signalUnknownCredential(rpID: "example.com", credentialID: credential.credentialID),
                       SignalChanges(matched: 1, hidden: [credential.credentialID]))
        XCTAssertEqual(try store.residentCredential(id: credential.credentialID)?.hiddenSince, clock.now)
        XCTAssertEqual(try store.relyingParties(), [], "an RP with only hidden credentials is not enumerated")
        XCTAssertEqual(try store.residentCredentialCount(), 1, "hidden credentials still take space")
    }

    // signalCurrentUserDetails: names are replaced.
    func testCurrentUserDetailsRenames() throws {
        let user = SecureRandom.bytes(count: 16)
        let credential = makeCredential(rpID: "example.com", userHandle: user, userName: "old", displayName: "Old")
        try store.saveResidentCredential(credential)
        XCTAssertEqual(try store.signalCurrentUserDetails(rpID: "example.com", userHandle: user,
                                                          name: "new", displayName: "New").renamed, [credential.credentialID])
        var renamed = try XCTUnwrap(try store.residentCredential(id: credential.credentialID))
        XCTAssertEqual(renamed.userName, "new")
        XCTAssertEqual(renamed.userDisplayName, "New")
        XCTAssertEqual(try store.signalCurrentUserDetails(rpID: "example.com", userHandle: user,
                                                          name: nil, displayName: "Only Display").renamed, [credential.credentialID])
        XCTAssertEqual(try store.signalCurrentUserDetails(rpID: "example.com", userHandle: user, name: "new", displayName: nil),
                       SignalChanges(matched: 1), "a name that is already so is not a change")
        renamed = try XCTUnwrap(try store.residentCredential(id: credential.credentialID))
        XCTAssertEqual(renamed.userName, "new")
        XCTAssertEqual(renamed.userDisplayName, "Only Display")
        var expected = credential
        expected.userName = "new"
        expected.userDisplayName = "Only Display"
        assertSameCredential(renamed, expected)
        XCTAssertEqual(try store.signalCurrentUserDetails(rpID: "other.example", userHandle: user,
                                                          name: "x", displayName: "y"), SignalChanges(matched: 0))
    }

    func testPurgeDeletesOnlyCredentialsHiddenLongerThanRetention() throws {
        let early = makeCredential()
        let late = makeCredential()
        let visible = makeCredential()
        try store.saveResidentCredentials([early, late, visible])
        XCTAssertEqual(try store.signalUnknownCredential(rpID: "example.com", credentialID: early.credentialID).matched, 1)
        clock.advance(by: 10 * day)
        XCTAssertEqual(try store.signalUnknownCredential(rpID: "example.com", credentialID: late.credentialID).matched, 1)

        clock.advance(by: 20 * day)   // early: hidden exactly 30 days — not longer
        XCTAssertEqual(try store.purgeHidden(), 0)
        clock.advance(by: 1)
        XCTAssertEqual(try store.purgeHidden(), 1)
        XCTAssertNil(try store.residentCredential(id: early.credentialID))
        XCTAssertNotNil(try store.residentCredential(id: late.credentialID))

        // Open also purges.
        clock.advance(by: 10 * day)
        store.close()
        store = try openStore()
        XCTAssertNil(try store.residentCredential(id: late.credentialID))
        XCTAssertNotNil(try store.residentCredential(id: visible.credentialID))
        XCTAssertEqual(try store.residentCredentialCount(), 1)
        XCTAssertTrue(try store.integrityCheck())
    }

    func testUnhiddenCredentialIsNotPurged() throws {
        let credential = makeCredential()
        try store.saveResidentCredential(credential)
        _ = try store.signalUnknownCredential(rpID: "example.com", credentialID: credential.credentialID)
        _ = try store.signalAllAcceptedCredentials(rpID: "example.com", userHandle: credential.userHandle,
                                                   acceptedIDs: [credential.credentialID])
        clock.advance(by: 31 * day)
        XCTAssertEqual(try store.purgeHidden(), 0)
        XCTAssertEqual(try store.relyingParties().count, 1)
    }

    // The audit trail: each applied signal, sealed, in order, with what it changed.
    func testAppliedSignalsAreJournaledInOrder() throws {
        let user = SecureRandom.bytes(count: 16)
        let kept = makeCredential(rpID: "example.com", userHandle: user)
        try store.saveResidentCredential(kept)
        _ = try store.signalUnknownCredential(rpID: "example.com", credentialID: kept.credentialID,
                                              source: "https://example.com")
        clock.advance(by: 5)
        _ = try store.signalAllAcceptedCredentials(rpID: "example.com", userHandle: user, acceptedIDs: [kept.credentialID],
                                                   source: "https://login.example.com")
        _ = try store.signalCurrentUserDetails(rpID: "example.com", userHandle: user, name: "n", displayName: nil)
        let journal = try store.signalJournal()
        XCTAssertEqual(journal.map(\.method), ["unknownCredential", "allAcceptedCredentials", "currentUserDetails"])
        XCTAssertEqual(journal.map(\.source), ["https://example.com", "https://login.example.com", "cli"])
        XCTAssertEqual(journal[0].time, clock.now - 5)
        XCTAssertEqual(journal[0].changes.hidden, [kept.credentialID])
        XCTAssertEqual(journal[1].changes.unhidden, [kept.credentialID])
        XCTAssertEqual(journal[2].changes.renamed, [kept.credentialID])
        XCTAssertEqual(try store.signalJournal(limit: 1).map(\.method), ["currentUserDetails"], "the newest ones")

        // Sealed: neither the site nor the RP ID is in the file in the clear.
        store.close()
        let database = try XCTUnwrap(FileManager.default.contents(atPath: temporary.storePath + "/credentials.sqlite"))
        XCTAssertNil(database.firstRange(of: Data("login.example.com".utf8)))
        store = try openStore()
        XCTAssertEqual(try store.signalJournal().count, 3)

        // The time is sealed too: an entry whose clear `at` column was edited is refused.
        try store.withDatabaseForTesting { db throws(StoreError) in
            try db.execute("UPDATE signal_journal SET at = at - 86400 WHERE seq = 1")
        }
        XCTAssertThrowsError(try store.signalJournal())
    }

    func testUnhideUndoesAHideAndIsJournaled() throws {
        let credential = makeCredential(rpID: "example.com")
        try store.saveResidentCredential(credential)
        XCTAssertNil(try store.unhideCredential(credentialID: [1, 2, 3]))
        XCTAssertEqual(try store.unhideCredential(credentialID: credential.credentialID)?.wasHidden, false)
        _ = try store.signalUnknownCredential(rpID: "example.com", credentialID: credential.credentialID)
        let undone = try XCTUnwrap(try store.unhideCredential(credentialID: credential.credentialID))
        XCTAssertEqual(undone.rpID, "example.com")
        XCTAssertTrue(undone.wasHidden)
        XCTAssertNil(try store.residentCredential(id: credential.credentialID)?.hiddenSince)
        XCTAssertEqual(try store.signalJournal().last?.method, "unhide")
        XCTAssertEqual(try store.signalJournal().last?.changes.unhidden, [credential.credentialID])
        XCTAssertTrue(try store.integrityCheck())
    }

    func testTheJournalKeepsTheNewestEntriesAndResetClearsIt() throws {
        let credential = makeCredential(rpID: "example.com")
        try store.saveResidentCredential(credential)
        try store.withDatabaseForTesting { db throws(StoreError) in
            // As if the journal were full: the next entry drops the oldest.
            try db.execute("INSERT INTO signal_journal (seq, at, sealed) VALUES (1, 0, x'00'), (\(SignalJournal.capacity), 0, x'00')")
        }
        _ = try store.signalUnknownCredential(rpID: "example.com", credentialID: credential.credentialID)
        let sequences = try store.withDatabaseForTesting { db throws(StoreError) in
            try db.query("SELECT seq FROM signal_journal ORDER BY seq") { $0.int64(0) }
        }
        XCTAssertEqual(sequences, [SignalJournal.capacity, SignalJournal.capacity + 1])
        try store.reset(newWrappingKey: SecretBytes(SecureRandom.bytes(count: 32)))
        XCTAssertEqual(try store.signalJournal(), [])
    }
}

extension StoreSignalTests {
    /// CTAP 2.3 encCredStoreState's source: credentialChangeCount moves on every credential made,
    /// hidden, shown, renamed or deleted, not on reads or counter updates, and survives reopening.
    func testCredentialChangeCountMovesWithCredentialsOnly() throws {
        let user = SecureRandom.bytes(count: 16)
        let credential = makeCredential(rpID: "example.com", userHandle: user)
        var last = try store.credentialChangeCount()
        func moved(_ what: String) throws {
            let now = try store.credentialChangeCount()
            XCTAssertGreaterThan(now, last, what)
            last = now
        }
        try store.saveResidentCredential(credential)
        try moved("made")
        _ = try store.residentCredentials(rpIDHash: rpIDHash("example.com"))
        _ = try store.nextSignatureCounter(credentialID: credential.credentialID)
        XCTAssertEqual(try store.credentialChangeCount(), last, "reads and counters leave it")
        _ = try store.signalAllAcceptedCredentials(rpID: "example.com", userHandle: user, acceptedIDs: [])
        try moved("hidden")
        _ = try store.signalAllAcceptedCredentials(rpID: "example.com", userHandle: user, acceptedIDs: [credential.credentialID])
        try moved("shown")
        try store.updateUser(credentialID: credential.credentialID, name: "new", displayName: nil)
        try moved("renamed")
        store.close()
        store = try openStore()
        XCTAssertEqual(try store.credentialChangeCount(), last, "kept across a restart")
        XCTAssertTrue(try store.deleteResidentCredential(id: credential.credentialID))
        try moved("deleted")
    }
}
