import XCTest
@testable import CTAPHID

final class CTAPHIDKeepaliveTests: XCTestCase {
    private func keepalive(_ channel: UInt32, _ status: KeepaliveStatus, to connection: ConnectionID) -> CTAPHIDAction {
        .send(report: initReport(channel, 0x3B, data: [status.rawValue]), to: connection)
    }

    func test_keepalives_every100msWhileACBORRequestRuns() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 4)
        guard let request = machine.startCBOR(a, from: 4, now: t(1000)) else { return }
        XCTAssertEqual(machine.nextDeadline(), t(1100))
        XCTAssertEqual(machine.tick(now: t(1050)), [])
        XCTAssertEqual(machine.tick(now: t(1099)), [])
        let first = machine.tick(now: t(1100))
        XCTAssertEqual(first, [keepalive(a, .processing, to: 4)])
        // Wire layout: CID, 0xBB, BCNT 1, status.
        XCTAssertEqual(Array(first.reports[0][4...7]), [0xBB, 0x00, 0x01, 0x01])
        XCTAssertEqual(machine.tick(now: t(1150)), [])
        XCTAssertEqual(machine.tick(now: t(1200)), [keepalive(a, .processing, to: 4)])
        XCTAssertEqual(machine.tick(now: t(1200)), [])
        XCTAssertEqual(machine.tick(now: t(1300)), [keepalive(a, .processing, to: 4)])
        XCTAssertEqual(machine.nextDeadline(), t(1400))
        _ = machine.complete(transactionID: request.transactionID, response: [0], now: t(1350))
        XCTAssertNil(machine.nextDeadline())
        XCTAssertEqual(machine.tick(now: t(1400)), [])
    }

    func test_keepalive_afterALateTick_doesNotBurst() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        guard machine.startCBOR(a, now: t(0)) != nil else { return }
        XCTAssertEqual(machine.tick(now: t(750)).count, 1)
        XCTAssertEqual(machine.nextDeadline(), t(850))
        XCTAssertEqual(machine.tick(now: t(760)), [])
    }

    func test_keepalive_isSentImmediatelyWhenTheStatusChangesToUPNEEDED() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 2)
        guard let request = machine.startCBOR(a, from: 2, now: t(0)) else { return }
        let id = request.transactionID
        XCTAssertEqual(machine.updateKeepalive(transactionID: id, status: .processing, now: t(10)), [])  // no change
        XCTAssertEqual(machine.updateKeepalive(transactionID: id, status: .userPresenceNeeded, now: t(30)),
                       [keepalive(a, .userPresenceNeeded, to: 2)])
        XCTAssertEqual(machine.updateKeepalive(transactionID: id, status: .userPresenceNeeded, now: t(40)), [])
        XCTAssertEqual(machine.tick(now: t(100)), [])  // the next one is a full interval after the change
        XCTAssertEqual(machine.tick(now: t(130)), [keepalive(a, .userPresenceNeeded, to: 2)])
        XCTAssertEqual(machine.updateKeepalive(transactionID: id, status: .processing, now: t(150)),
                       [keepalive(a, .processing, to: 2)])
        XCTAssertEqual(machine.updateKeepalive(transactionID: id + 1, status: .userPresenceNeeded, now: t(160)), [])
    }

    func test_MSGRequests_getNoKeepalives() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        guard let request = machine.send(a, 0x03, [0, 1, 0, 0]).dispatched.first else { return XCTFail("not dispatched") }
        XCTAssertNil(machine.nextDeadline())
        XCTAssertEqual(machine.tick(now: t(1000)), [])
        XCTAssertEqual(machine.updateKeepalive(transactionID: request.transactionID, status: .userPresenceNeeded, now: t(1000)), [])
        XCTAssertTrue(machine.isBusy)
    }

    func test_keepaliveInterval_isConfigurable() {
        var machine = CTAPHIDStateMachine(configuration: .init(keepaliveIntervalMilliseconds: 40))
        let a = machine.allocateChannel()
        guard machine.startCBOR(a, now: t(0)) != nil else { return }
        XCTAssertEqual(machine.tick(now: t(39)), [])
        XCTAssertEqual(machine.tick(now: t(40)).count, 1)
        XCTAssertEqual(machine.tick(now: t(80)).count, 1)
    }

    func test_keepalives_continueAfterCANCEL_untilTheRequestCompletes() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        guard let request = machine.startCBOR(a, now: t(0)) else { return }
        _ = machine.receive(report: initReport(a, 0x11), from: 0, now: t(50))
        XCTAssertEqual(machine.tick(now: t(100)), [keepalive(a, .processing, to: 0)])
        _ = machine.complete(transactionID: request.transactionID, response: [0x2D], now: t(120))
        XCTAssertEqual(machine.tick(now: t(200)), [])
    }
}
