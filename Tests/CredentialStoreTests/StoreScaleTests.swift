import Authenticator
@testable import CredentialStore
import FIDOCrypto
import Foundation
import XCTest

/// Lookups stay index-based as the store grows (no `SCAN credentials` in any query plan),
/// and the hot paths stay fast with 100,000 credentials.
final class StoreScaleTests: XCTestCase {
    /// The statements that must search an index, never scan the credentials table.
    static let indexedStatements: [String: String] = [
        "credential by ID": StoreSQL.credentialByKey,
        "credentials of a user": StoreSQL.credentialsByUser,
        "visible credentials of an RP": StoreSQL.visibleCredentialsByRP,
        "first discoverable credential of an RP": StoreSQL.firstDiscoverableCredential,
        "next discoverable credential, same second": StoreSQL.nextDiscoverableCredentialSameSecond,
        "next discoverable credential, older": StoreSQL.nextDiscoverableCredentialOlder,
        "classify a row's cred_protect": StoreSQL.setCredProtect,
        "credential placement": StoreSQL.credentialPlacement,
        "delete by ID": StoreSQL.deleteCredentialByKey,
        "delete by user": StoreSQL.deleteCredentialByUser,
        "purge hidden": StoreSQL.purgeHidden,
        "credential counter": StoreSQL.credentialHighWater,
        "set credential counter": StoreSQL.setCredentialHighWater,
        "set hidden": StoreSQL.updateHiddenSince,
        "reseal": StoreSQL.updateCredentialSealed,
        "count": StoreSQL.credentialCount,
    ]

    func testQueryPlansSearchIndexes() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        try assertIndexed(store)
    }

    func test100kCredentialsStayIndexedAndFast() throws {
        let temporary = TemporaryDirectory()
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let total = 100_000
        let batch = 10_000
        var sample: [ResidentCredential] = []
        var insertTime = Duration.zero
        for start in stride(from: 0, to: total, by: batch) {
            let credentials = (start..<(start + batch)).map { index in
                makeCredential(rpID: "rp\(index % 100).scale.example", userHandle: withUnsafeBytes(of: index) { Array($0) },
                               createdAt: 1_700_000_000 + Int64(index), full: index % 10 == 0)
            }
            sample += credentials.enumerated().filter { $0.offset % 1000 == 0 }.map(\.element)
            let started = ContinuousClock.now
            try store.saveResidentCredentials(credentials)
            insertTime += ContinuousClock.now - started
        }

        var started = ContinuousClock.now
        XCTAssertEqual(try store.residentCredentialCount(), total)
        let countTime = ContinuousClock.now - started

        started = ContinuousClock.now
        for credential in sample {
            assertSameCredential(try store.residentCredential(id: credential.credentialID), credential)
        }
        let lookupTime = (ContinuousClock.now - started) / sample.count

        started = ContinuousClock.now
        let ofOneRP = try store.residentCredentials(rpIDHash: rpIDHash("rp7.scale.example"))
        let rpTime = ContinuousClock.now - started
        XCTAssertEqual(ofOneRP.count, total / 100)
        XCTAssertEqual(ofOneRP.first?.createdAt, 1_700_000_000 + Int64(total - 100 + 7), "newest first")

        started = ContinuousClock.now
        XCTAssertEqual(try store.relyingParties().count, 100)
        let rpsTime = ContinuousClock.now - started

        started = ContinuousClock.now
        var last: UInt32 = 0
        for _ in 0..<10_000 {
            let value = try store.nextSignatureCounter(credentialID: nil)
            XCTAssertGreaterThan(value, last)
            last = value
        }
        let counterTime = (ContinuousClock.now - started) / 10_000

        started = ContinuousClock.now
        for index in 0..<100 {
            try store.saveResidentCredential(makeCredential(rpID: "rp\(index).scale.example"))
        }
        let saveTime = (ContinuousClock.now - started) / 100

        try assertIndexed(store)
        store.close()
        started = ContinuousClock.now
        let reopened = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let openTime = ContinuousClock.now - started
        XCTAssertEqual(try reopened.residentCredentialCount(), total + 100)
        reopened.close()

        XCTAssertLessThan(countTime, .milliseconds(50))
        XCTAssertLessThan(lookupTime, .milliseconds(5))
        print("""
            scale(100k): insert \(insertTime) (\(insertTime / total) each), count \(countTime), \
            lookup by ID \(lookupTime), one RP's \(total / 100) credentials \(rpTime), \
            relyingParties \(rpsTime), counter \(counterTime) each, one durable save \(saveTime), reopen \(openTime)
            """)
    }

    /// The 1M-credential measurement behind the store's figures; runs only when
    /// LATCHKEY_STORE_BENCH_1M=1 (about two minutes in a debug build).
    func testMillionCredentialsBenchmark() throws {
        guard ProcessInfo.processInfo.environment["LATCHKEY_STORE_BENCH_1M"] == "1" else { return }
        let temporary = TemporaryDirectory()
        let options = StoreOptions(maxResidentCredentials: 2_000_000)
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath, options: options)
        let total = 1_000_000
        var sample: [[UInt8]] = []
        var started = ContinuousClock.now
        for start in stride(from: 0, to: total, by: 50_000) {
            let credentials = (start..<(start + 50_000)).map { index in
                makeCredential(rpID: "rp\(index % 1000).bench.example", userHandle: withUnsafeBytes(of: index) { Array($0) },
                               createdAt: Int64(index), full: false)
            }
            sample.append(credentials[0].credentialID)
            try store.saveResidentCredentials(credentials)
        }
        let insertTime = ContinuousClock.now - started
        started = ContinuousClock.now
        XCTAssertEqual(try store.residentCredentialCount(), total)
        let countTime = ContinuousClock.now - started
        started = ContinuousClock.now
        let scanCount = try store.withDatabaseForTesting { db throws(StoreError) in
            try db.queryFirst("SELECT count(*) FROM credentials") { $0.int64(0) }
        }
        let scanCountTime = ContinuousClock.now - started
        XCTAssertEqual(scanCount, Int64(total))
        started = ContinuousClock.now
        for id in sample { XCTAssertNotNil(try store.residentCredential(id: id)) }
        let lookupTime = (ContinuousClock.now - started) / sample.count
        started = ContinuousClock.now
        let save = makeCredential(rpID: "rp1.bench.example")
        try store.saveResidentCredential(save)
        let saveTime = ContinuousClock.now - started
        store.close()
        started = ContinuousClock.now
        let reopened = try SQLiteCredentialStore.open(directory: temporary.storePath, options: options)
        let openTime = ContinuousClock.now - started
        started = ContinuousClock.now
        let purged = try reopened.purgeHidden()
        let purgeTime = ContinuousClock.now - started
        XCTAssertEqual(purged, 0)
        reopened.close()
        let size = (try? FileManager.default.attributesOfItem(atPath: temporary.storePath + "/credentials.sqlite")[.size]) ?? 0
        print("""
            bench(1M): insert \(insertTime), residentCredentialCount \(countTime), SELECT count(*) \(scanCountTime), \
            lookup by ID \(lookupTime), one save \(saveTime), open \(openTime), purgeHidden \(purgeTime), file \(size) bytes
            """)
    }

    private func assertIndexed(_ store: SQLiteCredentialStore, file: StaticString = #filePath, line: UInt = #line) throws {
        // Run at every open: it walks the partial index of unclassified rows, empty once done.
        XCTAssertEqual(try store.queryPlan(StoreSQL.unclassifiedCredentials), ["SCAN credentials USING INDEX credentials_unclassified"],
                       file: file, line: line)
        // Continuing within one second is a range on the index's row ID (a bulk import makes
        // thousands of credentials in one second: walking them must not restart at the newest).
        XCTAssertEqual(try store.queryPlan(StoreSQL.nextDiscoverableCredentialSameSecond),
                       ["SEARCH credentials USING INDEX credentials_by_rp (rp_key=? AND created_at=? AND rowid<?)"],
                       file: file, line: line)
        for (name, sql) in Self.indexedStatements {
            let plan = try store.queryPlan(sql)
            XCTAssertFalse(plan.contains { $0.hasPrefix("SCAN") }, "\(name) scans: \(plan)", file: file, line: line)
            XCTAssertTrue(plan.contains { $0.contains("USING") && ($0.contains("INDEX") || $0.contains("PRIMARY KEY")) },
                          "\(name) uses no index: \(plan)", file: file, line: line)
        }
    }
}
