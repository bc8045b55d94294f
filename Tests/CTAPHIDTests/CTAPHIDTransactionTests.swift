import XCTest
@testable import CTAPHID

final class CTAPHIDTransactionTests: XCTestCase {
    func test_CBOR_and_MSG_completeMessages_areDispatchedToTheWorker() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 2)
        let cbor = machine.send(a, 0x10, pattern(300), from: 2)
        XCTAssertEqual(cbor.dispatched, [CTAPHIDRequest(transactionID: 1, channel: a, command: 0x10, payload: pattern(300), connection: 2)])
        XCTAssertTrue(machine.isBusy)
        XCTAssertEqual(machine.complete(transactionID: 1, response: [0], now: t(1)).count, 1)
        XCTAssertFalse(machine.isBusy)

        let msg = machine.send(a, 0x03, [0, 3, 0, 0], from: 2)
        XCTAssertEqual(msg.dispatched, [CTAPHIDRequest(transactionID: 2, channel: a, command: 0x03, payload: [0, 3, 0, 0], connection: 2)])
    }

    func test_CBOR_withEmptyPayload_isInvalidLength() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        XCTAssertEqual(machine.send(a, 0x10, []), [.send(report: errorReport(a, .invalidLength), to: 0)])
        XCTAssertFalse(machine.isBusy)
    }

    func test_otherChannelWhileAssembling_isChannelBusy() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 1)
        let b = machine.allocateChannel(from: 2)
        let reports = MessageFragmenter.reports(channel: a, command: 0x01, payload: pattern(100))
        XCTAssertEqual(machine.receive(report: reports[0], from: 1, now: t(0)), [])
        XCTAssertEqual(machine.receive(report: initReport(b, 0x01, data: [1]), from: 2, now: t(1)),
                       [.send(report: errorReport(b, .channelBusy), to: 2)])
        XCTAssertEqual(machine.receive(report: initReport(b, 0x10, data: [4]), from: 2, now: t(1)),
                       [.send(report: errorReport(b, .channelBusy), to: 2)])
        // B's INIT is served meanwhile, and A's message still completes.
        XCTAssertEqual(machine.receive(report: initReport(b, 0x06, data: nonce), from: 2, now: t(2)).message()?.command, 0x06)
        XCTAssertEqual(machine.receive(report: reports[1], from: 1, now: t(3)).message()?.payload, pattern(100))
    }

    func test_otherChannelWhileARequestRuns_isChannelBusy_butItsINITWorks() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 1)
        let b = machine.allocateChannel(from: 2)
        guard let request = machine.startCBOR(a, from: 1) else { return }
        for command: UInt8 in [0x01, 0x03, 0x04, 0x08, 0x10] {
            XCTAssertEqual(machine.receive(report: initReport(b, command, data: [1]), from: 2, now: t(1)),
                           [.send(report: errorReport(b, .channelBusy), to: 2)], "command \(command)")
        }
        // INIT on broadcast allocates, INIT on B resynchronises B: both served at once.
        let allocation = machine.receive(report: initReport(broadcast, 0x06, data: nonce), from: 2, now: t(2))
        XCTAssertEqual(allocation.message()?.payload.count, 17)
        XCTAssertEqual(machine.receive(report: initReport(b, 0x06, data: nonce), from: 2, now: t(3)).message()?.channel, b)
        XCTAssertTrue(machine.isBusy)
        XCTAssertEqual(machine.complete(transactionID: request.transactionID, response: [0], now: t(4)).destinations, [1])
        XCTAssertEqual(machine.send(b, 0x01, [5], from: 2).message()?.payload, [5])
    }

    func test_sameChannelWhileItsRequestRuns_isChannelBusy() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        guard machine.startCBOR(a) != nil else { return }
        XCTAssertEqual(machine.send(a, 0x01, [1]), [.send(report: errorReport(a, .channelBusy), to: 0)])
    }

    func test_CANCEL_onTheChannelWithARunningCBORRequest_emitsCancelRequest_andNoReply() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 1)
        guard let request = machine.startCBOR(a, from: 1) else { return }
        XCTAssertEqual(machine.receive(report: initReport(a, 0x11), from: 1, now: t(10)),
                       [.cancelRequest(transactionID: request.transactionID)])
        XCTAssertEqual(machine.receive(report: initReport(a, 0x11), from: 1, now: t(11)), [])  // already requested
        XCTAssertTrue(machine.isBusy)  // until the worker answers
        // The authenticator answers CTAP2_ERR_KEEPALIVE_CANCEL, forwarded as the CBOR response.
        XCTAssertEqual(machine.complete(transactionID: request.transactionID, response: [0x2D], now: t(20)),
                       [.send(report: initReport(a, 0x10, data: [0x2D]), to: 1)])
        XCTAssertFalse(machine.isBusy)
    }

    func test_CANCEL_withNothingRunning_isIgnored() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        let b = machine.allocateChannel()
        XCTAssertEqual(machine.receive(report: initReport(a, 0x11), from: 0, now: t(0)), [])
        // CANCEL from B while A's request runs: nothing of B's to cancel, no reply, A unaffected.
        guard machine.startCBOR(a) != nil else { return }
        XCTAssertEqual(machine.receive(report: initReport(b, 0x11), from: 0, now: t(1)), [])
        XCTAssertTrue(machine.isBusy)
    }

    func test_CANCEL_ofARunningMSGRequest_isIgnored() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        XCTAssertEqual(machine.send(a, 0x03, [0, 1, 0, 0]).dispatched.count, 1)
        XCTAssertEqual(machine.receive(report: initReport(a, 0x11), from: 0, now: t(1)), [])
    }

    func test_complete_fragmentsTheResponse_toTheRequestingConnectionAndChannel() {
        var machine = CTAPHIDStateMachine()
        _ = machine.allocateChannel(from: 1)
        let a = machine.allocateChannel(from: 3)
        guard let request = machine.startCBOR(a, payload: [0x01, 0xA0], from: 3) else { return }
        XCTAssertEqual(request.connection, 3)
        let response = pattern(200, salt: 3)
        let actions = machine.complete(transactionID: request.transactionID, response: response, now: t(5))
        XCTAssertEqual(actions.count, 4)  // 57 + 3 * 59 >= 200
        XCTAssertEqual(actions.destinations, [3, 3, 3, 3])
        guard let message = actions.message() else { return }
        XCTAssertEqual(message.channel, a)
        XCTAssertEqual(message.command, 0x10)
        XCTAssertEqual(message.payload, response)
        XCTAssertFalse(machine.isBusy)
        // Completed once: a second completion is stale.
        XCTAssertEqual(machine.complete(transactionID: request.transactionID, response: response, now: t(6)), [])
    }

    func test_complete_ofAnUnframeableResponse_isErrOther() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        guard let request = machine.startCBOR(a) else { return }
        XCTAssertEqual(machine.complete(transactionID: request.transactionID, response: pattern(7610), now: t(1)),
                       [.send(report: errorReport(a, .other), to: 0)])
    }

    func test_staleComplete_afterResync_isDropped() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        guard let request = machine.startCBOR(a) else { return }
        _ = machine.receive(report: initReport(a, 0x06, data: nonce), from: 0, now: t(1))
        // A new request is already running when the aborted one's response arrives.
        guard let next = machine.startCBOR(a, now: t(2)) else { return }
        XCTAssertEqual(machine.complete(transactionID: request.transactionID, response: [0x2D], now: t(3)), [])
        XCTAssertTrue(machine.isBusy)
        XCTAssertEqual(machine.complete(transactionID: next.transactionID, response: [0], now: t(4)).count, 1)
    }

    func test_staleComplete_afterConnectionClose_isDropped() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 5)
        guard let request = machine.startCBOR(a, from: 5) else { return }
        XCTAssertEqual(machine.connectionClosed(5), [.cancelRequest(transactionID: request.transactionID)])
        XCTAssertFalse(machine.isBusy)
        XCTAssertNil(machine.nextDeadline())
        XCTAssertEqual(machine.complete(transactionID: request.transactionID, response: [0], now: t(1)), [])
        XCTAssertEqual(machine.complete(transactionID: 999, response: [0], now: t(1)), [])
    }

    func test_connectionClose_abortsItsPartialMessage_only() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 5)
        let b = machine.allocateChannel(from: 6)
        _ = machine.receive(report: initReport(a, 0x01, length: 100, data: pattern(57)), from: 5, now: t(0))
        XCTAssertEqual(machine.connectionClosed(6), [])
        XCTAssertNotNil(machine.nextDeadline())
        XCTAssertEqual(machine.connectionClosed(5), [])
        XCTAssertNil(machine.nextDeadline())
        XCTAssertEqual(machine.tick(now: t(10_000)), [])
        XCTAssertEqual(machine.send(b, 0x01, [1], from: 6).destinations, [6])
    }

    func test_twoConnections_repliesGoToTheSender() {
        var machine = CTAPHIDStateMachine()
        let initFrom1 = machine.receive(report: initReport(broadcast, 0x06, data: nonce), from: 1, now: t(0))
        XCTAssertEqual(initFrom1.destinations, [1])
        let a = machine.allocateChannel(from: 1)
        let b = machine.allocateChannel(from: 2)
        XCTAssertEqual(machine.send(a, 0x01, pattern(80), from: 1).destinations, [1, 1])
        XCTAssertEqual(machine.send(b, 0x01, [1], from: 2).destinations, [2])
        XCTAssertEqual(machine.send(a, 0x42, [1], from: 1), [.send(report: errorReport(a, .invalidCommand), to: 1)])

        guard let request = machine.startCBOR(b, from: 2, now: t(0)) else { return }
        XCTAssertEqual(machine.send(a, 0x01, [1], from: 1), [.send(report: errorReport(a, .channelBusy), to: 1)])
        XCTAssertEqual(machine.tick(now: t(100)).destinations, [2])  // keepalive to the requester
        XCTAssertEqual(machine.complete(transactionID: request.transactionID, response: [0], now: t(150)).destinations, [2])
        // Closing the other connection does not disturb anything.
        XCTAssertEqual(machine.connectionClosed(1), [])
    }
}
