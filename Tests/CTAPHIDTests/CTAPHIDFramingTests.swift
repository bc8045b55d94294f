import XCTest
@testable import CTAPHID

final class CTAPHIDFramingTests: XCTestCase {
    func test_PING_echoesPayload_ofLengths0_57_58_116_117_7609() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 4)
        for length in [0, 57, 58, 116, 117, 7609] {
            let payload = pattern(length, salt: length)
            let actions = machine.send(a, 0x01, payload, from: 4)
            let expectedReports = length <= 57 ? 1 : 1 + (length - 57 + 58) / 59
            XCTAssertEqual(actions.count, expectedReports, "length \(length)")
            XCTAssertEqual(Set(actions.destinations), [4])
            guard let message = actions.message() else { continue }
            XCTAssertEqual(message.channel, a)
            XCTAssertEqual(message.command, 0x01)
            XCTAssertEqual(message.payload, payload, "length \(length)")
        }
        XCTAssertFalse(machine.isBusy)
    }

    func test_declaredLength7610_isInvalidLength() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        XCTAssertEqual(machine.receive(report: initReport(a, 0x01, length: 7610, data: pattern(57)), from: 0, now: t(0)),
                       [.send(report: errorReport(a, .invalidLength), to: 0)])
        XCTAssertEqual(machine.receive(report: contReport(a, seq: 0), from: 0, now: t(0)), [])  // nothing in progress
        XCTAssertNil(machine.nextDeadline())
    }

    func test_wrongSEQ_isInvalidSequence_andDropsTheMessage() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        let reports = MessageFragmenter.reports(channel: a, command: 0x01, payload: pattern(200))
        XCTAssertEqual(machine.receive(report: reports[0], from: 0, now: t(0)), [])
        XCTAssertEqual(machine.receive(report: reports[1], from: 0, now: t(0)), [])
        XCTAssertEqual(machine.receive(report: reports[3], from: 0, now: t(0)),  // SEQ 2 instead of 1
                       [.send(report: errorReport(a, .invalidSequence), to: 0)])
        XCTAssertEqual(machine.receive(report: reports[2], from: 0, now: t(0)), [])  // dropped: now stray
        XCTAssertNil(machine.nextDeadline())
        XCTAssertEqual(machine.send(a, 0x01, pattern(200)).message()?.payload, pattern(200))
    }

    func test_newInitPacketMidMessage_isInvalidSequence_andDropsThePartialMessage() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        let b = machine.allocateChannel()
        XCTAssertEqual(machine.receive(report: initReport(a, 0x01, length: 100, data: pattern(57)), from: 0, now: t(0)), [])
        XCTAssertEqual(machine.receive(report: initReport(a, 0x01, data: [1]), from: 0, now: t(1)),
                       [.send(report: errorReport(a, .invalidSequence), to: 0)])
        XCTAssertEqual(machine.receive(report: contReport(a, seq: 0, data: pattern(43)), from: 0, now: t(2)), [])
        // The device is idle again: another channel is served.
        XCTAssertEqual(machine.send(b, 0x01, [7], now: t(3)).message()?.payload, [7])
    }

    func test_CANCELMidMessage_dropsThePartialMessage_withoutAReply() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        XCTAssertEqual(machine.receive(report: initReport(a, 0x10, length: 100, data: pattern(57)), from: 0, now: t(0)), [])
        XCTAssertEqual(machine.receive(report: initReport(a, 0x11), from: 0, now: t(1)), [])
        XCTAssertNil(machine.nextDeadline())
        XCTAssertEqual(machine.receive(report: contReport(a, seq: 0, data: pattern(43)), from: 0, now: t(2)), [])
    }

    func test_strayContinuation_isIgnored() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        XCTAssertEqual(machine.receive(report: contReport(a, seq: 0, data: [1]), from: 0, now: t(0)), [])
        XCTAssertEqual(machine.receive(report: contReport(0x4242_4242, seq: 3), from: 0, now: t(0)), [])
        XCTAssertEqual(machine.receive(report: contReport(broadcast, seq: 0), from: 0, now: t(0)), [])
        XCTAssertEqual(machine.receive(report: contReport(0, seq: 0), from: 0, now: t(0)), [])
        XCTAssertNil(machine.nextDeadline())
    }

    func test_continuationFromAnotherConnection_isIgnored() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 1)
        let reports = MessageFragmenter.reports(channel: a, command: 0x01, payload: pattern(100))
        XCTAssertEqual(machine.receive(report: reports[0], from: 1, now: t(0)), [])
        XCTAssertEqual(machine.receive(report: reports[1], from: 2, now: t(0)), [])
        let echo = machine.receive(report: reports[1], from: 1, now: t(0))
        XCTAssertEqual(echo.message()?.payload, pattern(100))
        XCTAssertEqual(Set(echo.destinations), [1])
    }

    func test_MSG_TIMEOUT_after500ms_notAt490ms() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 6)
        XCTAssertEqual(machine.receive(report: initReport(a, 0x01, length: 100, data: pattern(57)), from: 6, now: t(1000)), [])
        XCTAssertEqual(machine.nextDeadline(), t(1500))
        XCTAssertEqual(machine.tick(now: t(1490)), [])
        XCTAssertEqual(machine.tick(now: t(1500)), [.send(report: errorReport(a, .messageTimeout), to: 6)])
        XCTAssertNil(machine.nextDeadline())
        XCTAssertEqual(machine.tick(now: t(2000)), [])
        // The assembly was dropped: a late continuation is stray.
        XCTAssertEqual(machine.receive(report: contReport(a, seq: 0, data: pattern(43)), from: 6, now: t(1600)), [])
    }

    func test_MSG_TIMEOUT_restartsWithEachContinuation() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        let reports = MessageFragmenter.reports(channel: a, command: 0x01, payload: pattern(300))
        XCTAssertEqual(machine.receive(report: reports[0], from: 0, now: t(0)), [])
        XCTAssertEqual(machine.receive(report: reports[1], from: 0, now: t(400)), [])
        XCTAssertEqual(machine.nextDeadline(), t(900))
        XCTAssertEqual(machine.tick(now: t(899)), [])
        XCTAssertEqual(machine.tick(now: t(900)), [.send(report: errorReport(a, .messageTimeout), to: 0)])
    }

    /// A message trickled in, each packet just inside the 500 ms gap, still times out 3 s after
    /// its INIT, and other channels are served again at once.
    func test_MSG_TIMEOUT_wholeMessageBudget() {
        var machine = CTAPHIDStateMachine()
        let slow = machine.allocateChannel(from: 1)
        let other = machine.allocateChannel(from: 2)
        let reports = MessageFragmenter.reports(channel: slow, command: 0x01, payload: pattern(7609))
        XCTAssertEqual(machine.receive(report: reports[0], from: 1, now: t(0)), [])
        var now: UInt64 = 0
        for report in reports[1..<7] {
            now += 490
            XCTAssertEqual(machine.tick(now: t(now)), [])
            XCTAssertEqual(machine.receive(report: report, from: 1, now: t(now)), [])
        }
        XCTAssertEqual(now, 2940)
        XCTAssertEqual(machine.nextDeadline(), t(3000), "the budget, not the 500 ms gap, comes first")
        XCTAssertEqual(machine.receive(report: initReport(other, 0x01, data: [7]), from: 2, now: t(2950)),
                       [.send(report: errorReport(other, .channelBusy), to: 2)])
        XCTAssertEqual(machine.tick(now: t(3000)), [.send(report: errorReport(slow, .messageTimeout), to: 1)])
        XCTAssertEqual(machine.receive(report: reports[7], from: 1, now: t(3010)), [], "the rest is stray")
        let echo = machine.receive(report: initReport(other, 0x01, length: 1, data: [7]), from: 2, now: t(3020))
        XCTAssertEqual(echo.message()?.payload, [7])
        // A message that arrives at USB speed is untouched by the budget.
        let fast = MessageFragmenter.reports(channel: slow, command: 0x01, payload: pattern(7609))
        var answer: [CTAPHIDAction] = []
        for (index, report) in fast.enumerated() { answer = machine.receive(report: report, from: 1, now: t(4000 + UInt64(index))) }
        XCTAssertEqual(answer.message()?.payload, pattern(7609))
    }

    func test_MSG_TIMEOUT_isConfigurable() {
        var machine = CTAPHIDStateMachine(configuration: .init(messageTimeoutMilliseconds: 50))
        let a = machine.allocateChannel()
        _ = machine.receive(report: initReport(a, 0x01, length: 100, data: pattern(57)), from: 0, now: t(0))
        XCTAssertEqual(machine.tick(now: t(49)), [])
        XCTAssertEqual(machine.tick(now: t(50)), [.send(report: errorReport(a, .messageTimeout), to: 0)])
    }

    func test_unknownCommand_isInvalidCommand() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        for command: UInt8 in [0x00, 0x02, 0x05, 0x07, 0x12, 0x3B, 0x3F, 0x40, 0x7F] {
            XCTAssertEqual(machine.receive(report: initReport(a, command, data: [1]), from: 0, now: t(0)),
                           [.send(report: errorReport(a, .invalidCommand), to: 0)], "command \(command)")
        }
        XCTAssertFalse(machine.isBusy)
    }

    func test_configuredVendorCommand_isDispatched_andAnsweredWithTheSameCommand() {
        var machine = CTAPHIDStateMachine(configuration: .init(vendorCommands: [0x41]))
        let a = machine.allocateChannel()
        let actions = machine.send(a, 0x41, [1, 2])
        guard let request = actions.dispatched.first else { return XCTFail("not dispatched: \(actions)") }
        XCTAssertEqual(request.command, 0x41)
        XCTAssertEqual(machine.complete(transactionID: request.transactionID, response: [3], now: t(1)),
                       [.send(report: initReport(a, 0x41, data: [3]), to: 0)])
        XCTAssertEqual(machine.receive(report: initReport(a, 0x42, data: [1]), from: 0, now: t(2)),
                       [.send(report: errorReport(a, .invalidCommand), to: 0)])
    }

    func test_reportOfWrongSize_isDropped() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        for size in [0, 1, 63, 65, 128] {
            var report = initReport(a, 0x01, data: [1])
            report = size <= 64 ? Array(report.prefix(size)) : report + [UInt8](repeating: 0, count: size - 64)
            XCTAssertEqual(machine.receive(report: report, from: 0, now: t(0)), [], "size \(size)")
        }
        var tooLongINIT = initReport(broadcast, 0x06, data: nonce)
        tooLongINIT.insert(0, at: 0)  // e.g. a report-ID byte left in
        XCTAssertEqual(machine.receive(report: tooLongINIT, from: 0, now: t(0)), [])
        XCTAssertEqual(machine.allocatedChannelCount, 1)
    }
}
