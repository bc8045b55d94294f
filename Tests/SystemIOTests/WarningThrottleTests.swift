@testable import SystemIO
import XCTest

/// A client can make the key warn at will (bad packets, refused connections): the log stays bounded.
final class WarningThrottleTests: XCTestCase {
    func testABurstPerWindowThenACountOfWhatWasLeftOut() {
        var throttle = WarningThrottle(burst: 3, windowNanoseconds: 1_000)
        let lines = (0..<10).compactMap { throttle.line("bad packet \($0)", now: 100) }
        XCTAssertEqual(lines, ["bad packet 0", "bad packet 1", "bad packet 2"])
        XCTAssertEqual(throttle.line("bad packet 10", now: 1_099), nil, "same window")
        XCTAssertEqual(throttle.line("bad packet 11", now: 1_100), "bad packet 11 (8 more like it were not logged)")
        XCTAssertEqual(throttle.line("bad packet 12", now: 1_101), "bad packet 12")
    }

    func testTwentyThousandWarningsWriteAFewLines() {
        var throttle = WarningThrottle()
        var written = 0
        for index in 0..<20_000 {
            // 20,000 packets over 60 s: six windows of 10 s.
            if throttle.line("dropped", now: UInt64(index) * 3_000_000) != nil { written += 1 }
        }
        XCTAssertLessThanOrEqual(written, 7 * throttle.burst)
        XCTAssertGreaterThan(written, 0)
    }
}
