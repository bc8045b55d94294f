import XCTest
@testable import CTAPHID

final class CTAPHIDChannelTests: XCTestCase {
    func test_channelZero_isInvalidChannel() {
        var machine = CTAPHIDStateMachine()
        XCTAssertEqual(machine.receive(report: initReport(0, 0x01, data: [1]), from: 0, now: t(0)),
                       [.send(report: errorReport(0, .invalidChannel), to: 0)])
        XCTAssertEqual(machine.receive(report: initReport(0, 0x06, data: nonce), from: 0, now: t(0)),
                       [.send(report: errorReport(0, .invalidChannel), to: 0)])
    }

    func test_nonINITOnBroadcast_isInvalidChannel() {
        var machine = CTAPHIDStateMachine()
        for command: UInt8 in [0x01, 0x03, 0x04, 0x08, 0x10, 0x11] {
            XCTAssertEqual(machine.receive(report: initReport(broadcast, command, data: [1]), from: 0, now: t(0)),
                           [.send(report: errorReport(broadcast, .invalidChannel), to: 0)], "command \(command)")
        }
    }

    func test_unallocatedChannel_nonINIT_isInvalidChannel() {
        var machine = CTAPHIDStateMachine()
        _ = machine.allocateChannel()
        XCTAssertEqual(machine.receive(report: initReport(0x1234_5678, 0x01, data: [1]), from: 3, now: t(0)),
                       [.send(report: errorReport(0x1234_5678, .invalidChannel), to: 3)])
        XCTAssertEqual(machine.receive(report: initReport(0x1234_5678, 0x10, data: [4]), from: 3, now: t(0)),
                       [.send(report: errorReport(0x1234_5678, .invalidChannel), to: 3)])
        XCTAssertFalse(machine.isBusy)
    }

    func test_channelTable_isBounded() {
        var machine = CTAPHIDStateMachine()
        let channels = (0..<1100).map { _ in machine.allocateChannel() }
        XCTAssertEqual(machine.allocatedChannelCount, 1024)
        // The oldest were evicted; the newest still work.
        XCTAssertEqual(machine.send(channels[0], 0x01, [1]).reports, [errorReport(channels[0], .invalidChannel)])
        XCTAssertEqual(machine.send(channels[1099], 0x01, [1]).message()?.payload, [1])
    }

    func test_channelTable_evictsTheLeastRecentlyUsedChannel() {
        var machine = CTAPHIDStateMachine(configuration: .init(maxChannels: 3))
        let a = machine.allocateChannel()
        let b = machine.allocateChannel()
        let c = machine.allocateChannel()
        XCTAssertEqual(machine.send(a, 0x01, [1]).message()?.payload, [1])  // A is now more recent than B
        let d = machine.allocateChannel()
        XCTAssertEqual(machine.allocatedChannelCount, 3)
        XCTAssertEqual(machine.send(b, 0x01, [1]).reports, [errorReport(b, .invalidChannel)])
        for channel in [a, c, d] {
            XCTAssertEqual(machine.send(channel, 0x01, [2]).message()?.payload, [2])
        }
    }

    /// A connection allocating channels in a loop evicts its own, never an idle client's:
    /// the victim is the LRU channel of the connection that holds the most.
    func test_channelTable_floodEvictsTheFloodersChannelsNotAnIdleClients() {
        var machine = CTAPHIDStateMachine(configuration: .init(maxChannels: 8))
        let idle = machine.allocateChannel(from: 1)
        let flood = (0..<50).map { _ in machine.allocateChannel(from: 2) }
        XCTAssertEqual(machine.allocatedChannelCount, 8)
        XCTAssertEqual(machine.send(idle, 0x01, [1], from: 1).message()?.payload, [1], "the idle client's channel survives")
        XCTAssertEqual(machine.send(flood[0], 0x01, [1], from: 2).reports, [errorReport(flood[0], .invalidChannel)])
        XCTAssertEqual(machine.send(flood[49], 0x01, [2], from: 2).message()?.payload, [2])
    }

    func test_channelTable_sparesTheChannelWithARunningRequest() {
        var machine = CTAPHIDStateMachine(configuration: .init(maxChannels: 2))
        let a = machine.allocateChannel()
        guard let request = machine.startCBOR(a) else { return }
        let b = machine.allocateChannel()
        _ = machine.allocateChannel()  // table full: B goes, not the busy (and older) A
        XCTAssertEqual(machine.send(b, 0x01, [1]).reports, [errorReport(b, .invalidChannel)])
        XCTAssertEqual(machine.receive(report: initReport(a, 0x11), from: 0, now: t(1)),
                       [.cancelRequest(transactionID: request.transactionID)])
    }

    /// A channel belongs to the connection that allocated it (docs/architecture.md, How a request travels):
    /// another connection naming its CID cannot use it, resync it or cancel its request.
    func test_channelsBelongToTheirConnection() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 1)
        guard let request = machine.startCBOR(a, from: 1, now: t(0)) else { return }
        XCTAssertEqual(machine.send(a, 0x01, [7], from: 2), [.send(report: errorReport(a, .invalidChannel), to: 2)])
        XCTAssertEqual(machine.send(a, 0x10, [0x08], from: 2), [.send(report: errorReport(a, .invalidChannel), to: 2)],
                       "no getNextAssertion on another connection's channel")
        XCTAssertEqual(machine.send(a, 0x11, [], from: 2), [], "another connection's CANCEL is ignored (and never answered)")
        XCTAssertEqual(machine.send(a, 0x06, nonce, from: 2), [.send(report: errorReport(a, .invalidChannel), to: 2)],
                       "no INIT-resync of another connection's channel")
        XCTAssertTrue(machine.isBusy, "connection 1's request still runs")
        XCTAssertEqual(machine.send(a, 0x11, [], from: 1), [.cancelRequest(transactionID: request.transactionID)])
    }

    /// A closed connection's channels are gone: nobody can pick them up by their IDs.
    func test_closingAConnectionReleasesItsChannels() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel(from: 1)
        _ = machine.allocateChannel(from: 2)
        XCTAssertEqual(machine.allocatedChannelCount, 2)
        _ = machine.connectionClosed(1)
        XCTAssertEqual(machine.allocatedChannelCount, 1)
        XCTAssertEqual(machine.send(a, 0x01, [7], from: 2), [.send(report: errorReport(a, .invalidChannel), to: 2)])
        XCTAssertEqual(machine.send(a, 0x01, [7], from: 1), [.send(report: errorReport(a, .invalidChannel), to: 1)])
    }
}
