@testable import Authenticator
import FIDOCrypto
import XCTest

final class RPIDHashCacheTests: XCTestCase {
    func testHashesAreSHA256OfTheUTF8Bytes() {
        var cache = RPIDHashCache(capacity: 2)
        for rpID in ["example.com", "example.com", "b.example", "example.com", "\u{E9}.example", "e\u{301}.example"] {
            XCTAssertEqual(cache.hash(of: rpID), SHA256.hash(Array(rpID.utf8)), rpID)
        }
    }

    /// Canonically equivalent spellings are different RP IDs (different bytes, different hash).
    func testCanonicallyEquivalentRPIDsAreNotMerged() {
        var cache = RPIDHashCache()
        let composed = cache.hash(of: "\u{E9}.example")
        let decomposed = cache.hash(of: "e\u{301}.example")
        XCTAssertNotEqual(composed, decomposed)
    }

    func testEvictsTheLeastRecentlyUsed() {
        var cache = RPIDHashCache(capacity: 2)
        _ = cache.hash(of: "a")
        _ = cache.hash(of: "b")
        _ = cache.hash(of: "a")           // a is now the most recent
        _ = cache.hash(of: "c")           // evicts b
        XCTAssertEqual(cache.cachedRPIDs, ["a", "c"])
    }
}
