import Authenticator
@testable import CredentialStore
import FIDOCrypto
import XCTest

/// docs/architecture.md, Credentials and the store: a signature counter never goes backwards, even across a crash.
final class SignatureCounterTests: XCTestCase {
    func testGlobalCounterStrictlyIncreasesOver3000CallsAndAcrossReopen() throws {
        let temporary = TemporaryDirectory()
        var last: UInt32 = 0
        for _ in 0..<2 {
            let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
            for _ in 0..<3000 {
                let value = try store.nextSignatureCounter(credentialID: nil)
                XCTAssertGreaterThan(value, last)
                last = value
            }
            store.close()
        }
    }

    /// The rig's addCredential with a signCount: the next signature counts above it, and a
    /// raise never moves the counter back — within a reserved block or across a reopen.
    func testRaisedCounterContinuesAboveTheValueAndNeverGoesBack() throws {
        let temporary = TemporaryDirectory()
        let credential = makeCredential()
        var store = try SQLiteCredentialStore.open(directory: temporary.storePath, options: StoreOptions(counterReservationBlock: 100))
        try store.saveResidentCredentials([credential])
        XCTAssertTrue(try store.raiseSignatureCounter(credentialID: credential.credentialID, to: 41))
        XCTAssertEqual(try store.nextSignatureCounter(credentialID: credential.credentialID), 42)
        XCTAssertEqual(try store.nextSignatureCounter(credentialID: credential.credentialID), 43)
        // Below what is durably reserved (the block up to 141): the next value is above the block.
        XCTAssertTrue(try store.raiseSignatureCounter(credentialID: credential.credentialID, to: 10))
        XCTAssertGreaterThan(try store.nextSignatureCounter(credentialID: credential.credentialID), 43)
        // Above it: the next value is just above the raise.
        XCTAssertTrue(try store.raiseSignatureCounter(credentialID: credential.credentialID, to: 5_000))
        XCTAssertEqual(try store.nextSignatureCounter(credentialID: credential.credentialID), 5_001)
        XCTAssertFalse(try store.raiseSignatureCounter(credentialID: makeCredential().credentialID, to: 5))
        store.close()
        store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        XCTAssertGreaterThan(try store.nextSignatureCounter(credentialID: credential.credentialID), 5_001)
        store.close()
    }

    func testFirstValueIsOne() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        XCTAssertEqual(try store.nextSignatureCounter(credentialID: nil), 1)
        XCTAssertEqual(try store.nextSignatureCounter(credentialID: nil), 2)
    }

    func testResidentCredentialsHaveTheirOwnCountersAcrossReopen() throws {
        let temporary = TemporaryDirectory()
        let a = makeCredential()
        let b = makeCredential()
        var lastA: UInt32 = 0
        var lastB: UInt32 = 0
        for round in 0..<3 {
            let store = try SQLiteCredentialStore.open(directory: temporary.storePath,
                                                       options: StoreOptions(counterReservationBlock: 7))
            if round == 0 { try store.saveResidentCredentials([a, b]) }
            for _ in 0..<20 {
                let valueA = try store.nextSignatureCounter(credentialID: a.credentialID)
                XCTAssertGreaterThan(valueA, lastA)
                lastA = valueA
            }
            let valueB = try store.nextSignatureCounter(credentialID: b.credentialID)
            XCTAssertGreaterThan(valueB, lastB)
            lastB = valueB
            store.close()
        }
        XCTAssertLessThan(lastB, lastA, "b's counter does not move with a's")
    }

    func testUnknownCredentialUsesTheGlobalCounter() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let first = try store.nextSignatureCounter(credentialID: nil)
        let unknown = try store.nextSignatureCounter(credentialID: SecureRandom.bytes(count: 32))
        XCTAssertGreaterThan(unknown, first)
        XCTAssertGreaterThan(try store.nextSignatureCounter(credentialID: nil), unknown)
    }

    /// Reserve, do not close (the process "crashes" with its reservation in memory), reopen:
    /// the next value is above every value handed out.
    func testCounterAfterSimulatedCrashIsAboveEveryValueHandedOut() throws {
        let temporary = TemporaryDirectory()
        let credential = makeCredential()
        let crashed = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        try crashed.saveResidentCredential(credential)
        var maxGlobal: UInt32 = 0
        var maxOwn: UInt32 = 0
        for _ in 0..<1500 {
            maxGlobal = try crashed.nextSignatureCounter(credentialID: nil)
            maxOwn = try crashed.nextSignatureCounter(credentialID: credential.credentialID)
        }
        // `crashed` is never closed (its memory is "lost"); a new process opens the store.
        let recovered = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        XCTAssertGreaterThan(try recovered.nextSignatureCounter(credentialID: nil), maxGlobal)
        XCTAssertGreaterThan(try recovered.nextSignatureCounter(credentialID: credential.credentialID), maxOwn)
        withExtendedLifetime(crashed) {}
    }

    /// Only the holder of the store lock hands out counters, so the running key may trust the
    /// blocks it reserved: a lock-less store (the CLI) is refused while the key runs, and after it
    /// stops, continues above everything the key handed out. Two lock-less stores taking turns
    /// never go below each other either (each re-checks the durable mark).
    func testOnlyTheLockHolderHandsOutCountersAndNobodyGoesBelow() throws {
        let temporary = TemporaryDirectory()
        let key = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .exclusive)
        let cli = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        var last: UInt32 = 0
        for _ in 0..<5 { last = try key.nextSignatureCounter(credentialID: nil) }
        XCTAssertThrowsError(try cli.nextSignatureCounter(credentialID: nil)) { error in
            XCTAssertEqual(error as? StoreError, .locked)
        }
        key.close()
        let other = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        for step in 0..<300 {
            let store = (step / 3) % 2 == 0 ? cli : other
            let value = try store.nextSignatureCounter(credentialID: nil)
            XCTAssertGreaterThan(value, last, "step \(step)")
            last = value
        }
    }

    func testDeletedAndRecreatedCredentialDoesNotReuseAStaleBlock() throws {
        let temporary = TemporaryDirectory()
        let credential = makeCredential()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        try store.saveResidentCredential(credential)
        _ = try store.nextSignatureCounter(credentialID: credential.credentialID)
        try store.deleteResidentCredential(id: credential.credentialID)
        try store.saveResidentCredential(credential)   // re-imported: durable mark starts again
        let handedOut = try store.nextSignatureCounter(credentialID: credential.credentialID)
        let other = try SQLiteCredentialStore.open(directory: temporary.storePath, lock: .none)
        XCTAssertGreaterThan(try other.nextSignatureCounter(credentialID: credential.credentialID), handedOut)
    }

    func testCounterSaturatesAtUInt32Max() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        _ = try store.withDatabaseForTesting { db throws(StoreError) in
            try db.run("INSERT INTO counters (scope, high_water) VALUES ('global', ?)", [.integer(Int64(UInt32.max) - 2)])
        }
        XCTAssertEqual(try store.nextSignatureCounter(credentialID: nil), UInt32.max - 1)
        XCTAssertEqual(try store.nextSignatureCounter(credentialID: nil), UInt32.max)
        XCTAssertEqual(try store.nextSignatureCounter(credentialID: nil), UInt32.max)
    }

    func testOneDurableCommitPerBlock() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath,
                                                   options: StoreOptions(counterReservationBlock: 100))
        for _ in 0..<250 { _ = try store.nextSignatureCounter(credentialID: nil) }
        let durable = try store.withDatabaseForTesting { db throws(StoreError) in
            try db.queryFirst("SELECT high_water FROM counters WHERE scope = 'global'") { $0.int64(0) }
        }
        XCTAssertEqual(durable, 300)
    }
}
