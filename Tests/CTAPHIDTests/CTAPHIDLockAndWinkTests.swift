import XCTest
@testable import CTAPHID

final class CTAPHIDLockAndWinkTests: XCTestCase {
    func test_WINK_withEmptyPayload_repliesEmptyWINK_andEmitsWink() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 3)
        XCTAssertEqual(machine.send(a, 0x08, [], from: 3), [.send(report: initReport(a, 0x08), to: 3), .wink])
    }

    func test_WINK_withPayload_isInvalidLength() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        XCTAssertEqual(machine.send(a, 0x08, [1]), [.send(report: errorReport(a, .invalidLength), to: 0)])
    }

    func test_LOCK_blocksOtherChannels_exceptINIT_untilReleased() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 1)
        let b = machine.allocateChannel(from: 2)
        XCTAssertEqual(machine.send(a, 0x04, [5], from: 1), [.send(report: initReport(a, 0x04), to: 1)])
        XCTAssertEqual(machine.send(b, 0x01, [1], from: 2), [.send(report: errorReport(b, .channelBusy), to: 2)])
        XCTAssertEqual(machine.send(b, 0x10, [4], from: 2), [.send(report: errorReport(b, .channelBusy), to: 2)])
        XCTAssertEqual(machine.send(b, 0x04, [1], from: 2), [.send(report: errorReport(b, .channelBusy), to: 2)])
        XCTAssertEqual(machine.send(b, 0x11, [], from: 2), [])  // CANCEL is never answered
        XCTAssertEqual(machine.send(b, 0x06, nonce, from: 2).message()?.channel, b)
        XCTAssertEqual(machine.send(broadcast, 0x06, nonce, from: 2).message()?.payload.count, 17)
        // The lock holder is served.
        XCTAssertEqual(machine.send(a, 0x01, [9], from: 1).message()?.payload, [9])
        XCTAssertEqual(machine.startCBOR(a, from: 1)?.channel, a)
        _ = machine.complete(transactionID: 1, response: [0], now: t(1))
        // LOCK 0 releases.
        XCTAssertEqual(machine.send(a, 0x04, [0], from: 1), [.send(report: initReport(a, 0x04), to: 1)])
        XCTAssertEqual(machine.send(b, 0x01, [1], from: 2).message()?.payload, [1])
    }

    func test_LOCK_expiresAfterItsDuration() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        let b = machine.allocateChannel()
        XCTAssertEqual(machine.send(a, 0x04, [2], now: t(1000)).count, 1)
        XCTAssertEqual(machine.nextDeadline(), t(3000))
        XCTAssertEqual(machine.send(b, 0x01, [1], now: t(2999)), [.send(report: errorReport(b, .channelBusy), to: 0)])
        XCTAssertEqual(machine.send(b, 0x01, [1], now: t(3000)).message()?.payload, [1])
        XCTAssertNil(machine.nextDeadline())
    }

    func test_LOCK_expiry_viaTick() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        _ = machine.send(a, 0x04, [10], now: t(0))
        XCTAssertEqual(machine.nextDeadline(), t(10_000))
        XCTAssertEqual(machine.tick(now: t(10_000)), [])
        XCTAssertNil(machine.nextDeadline())
    }

    func test_LOCK_canBeRenewedByItsHolder() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        let b = machine.allocateChannel()
        _ = machine.send(a, 0x04, [1], now: t(0))
        _ = machine.send(a, 0x04, [3], now: t(500))
        XCTAssertEqual(machine.send(b, 0x01, [1], now: t(3499)), [.send(report: errorReport(b, .channelBusy), to: 0)])
        XCTAssertEqual(machine.send(b, 0x01, [1], now: t(3500)).message()?.payload, [1])
    }

    func test_LOCK_withDurationAbove10OrWrongLength_isInvalidParameter() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        let b = machine.allocateChannel()
        for payload: [UInt8] in [[11], [0xFF], [], [1, 2]] {
            XCTAssertEqual(machine.send(a, 0x04, payload), [.send(report: errorReport(a, .invalidParameter), to: 0)], "\(payload)")
        }
        XCTAssertNil(machine.nextDeadline())
        XCTAssertEqual(machine.send(b, 0x01, [1]).message()?.payload, [1])  // no lock taken
    }

    func test_LOCK_isReleasedWhenItsConnectionCloses() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 1)
        let b = machine.allocateChannel(from: 2)
        _ = machine.send(a, 0x04, [10], from: 1)
        XCTAssertEqual(machine.connectionClosed(1), [])
        XCTAssertEqual(machine.send(b, 0x01, [1], from: 2).message()?.payload, [1])
    }
}
