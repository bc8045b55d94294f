import XCTest
@testable import CTAPHID

final class CTAPHIDInitTests: XCTestCase {
    func test_INIT_onBroadcast_allocatesUniqueChannelIDs() {
        var machine = CTAPHIDStateMachine()
        let channels = (0..<200).map { _ in machine.allocateChannel() }
        XCTAssertEqual(Set(channels).count, 200)
        XCTAssertFalse(channels.contains(0))
        XCTAssertFalse(channels.contains(broadcast))
        XCTAssertEqual(machine.allocatedChannelCount, 200)
    }

    func test_INIT_allocation_isDeterministicFromTheSeed_andSkipsReservedAndBroadcastIDs() {
        var machine = CTAPHIDStateMachine(configuration: .init(channelIDSeed: 0xFFFF_FFFE))
        XCTAssertEqual(machine.allocateChannel(), 0xFFFF_FFFE)
        XCTAssertEqual(machine.allocateChannel(), 1)  // skips 0xFFFFFFFF (broadcast) and 0 (reserved)
        XCTAssertEqual(machine.allocateChannel(), 2)
    }

    func test_INIT_allocation_skipsIDsInUse() {
        var machine = CTAPHIDStateMachine(configuration: .init(channelIDSeed: 10))
        // A host adopts channel 11 by INIT on it; the counter must not hand it out again.
        XCTAssertEqual(machine.receive(report: initReport(11, 0x06, data: nonce), from: 0, now: t(0)).count, 1)
        XCTAssertEqual(machine.allocateChannel(), 10)
        XCTAssertEqual(machine.allocateChannel(), 12)
    }

    func test_INIT_response_layout_byteByByte() {
        let configuration = CTAPHIDConfiguration(deviceVersion: (major: 3, minor: 4, build: 5), channelIDSeed: 0x0102_0304)
        var machine = CTAPHIDStateMachine(configuration: configuration)
        let actions = machine.receive(report: initReport(broadcast, 0x06, data: nonce), from: 7, now: t(0))
        var expected: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF,  // on the broadcast channel it came on
                                 0x86,                    // INIT | 0x80
                                 0x00, 17]                // BCNT
        expected += nonce                                 // nonce echoed
        expected += [0x01, 0x02, 0x03, 0x04]              // new CID, big-endian
        expected += [2]                                   // CTAPHID protocol version
        expected += [3, 4, 5]                             // major, minor, build
        expected += [0x07]                                // WINK | LOCK | CBOR (MSG supported: no NMSG)
        expected += [UInt8](repeating: 0, count: 64 - expected.count)
        XCTAssertEqual(actions, [.send(report: expected, to: 7)])
    }

    func test_INIT_capabilities_areConfigurable() {
        var machine = CTAPHIDStateMachine(configuration: .init(capabilities: 0x0C))
        let actions = machine.receive(report: initReport(broadcast, 0x06, data: nonce), from: 0, now: t(0))
        XCTAssertEqual(actions.message()?.payload.last, 0x0C)
    }

    func test_INIT_onExistingChannel_resynchronises_answeringWithTheSameCIDOnThatChannel() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        let otherNonce: [UInt8] = [9, 8, 7, 6, 5, 4, 3, 2]
        let actions = machine.receive(report: initReport(a, 0x06, data: otherNonce), from: 0, now: t(0))
        guard let message = actions.message() else { return }
        XCTAssertEqual(message.channel, a)
        XCTAssertEqual(message.command, 0x06)
        XCTAssertEqual(Array(message.payload[0..<8]), otherNonce)
        XCTAssertEqual(Array(message.payload[8..<12]), [UInt8(a >> 24), UInt8(a >> 16 & 0xFF), UInt8(a >> 8 & 0xFF), UInt8(a & 0xFF)])
        XCTAssertEqual(machine.allocatedChannelCount, 1)
    }

    func test_INIT_resync_abortsOnlyThatChannelsTransaction() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        let b = machine.allocateChannel()
        guard let request = machine.startCBOR(a) else { return }

        // INIT on B resynchronises B only: A's request keeps running.
        let onB = machine.receive(report: initReport(b, 0x06, data: nonce), from: 0, now: t(10))
        XCTAssertEqual(onB.cancelled, [])
        XCTAssertEqual(onB.message()?.channel, b)
        XCTAssertTrue(machine.isBusy)

        // INIT on A aborts A's request: cancel first, then the INIT response.
        let onA = machine.receive(report: initReport(a, 0x06, data: nonce), from: 0, now: t(20))
        XCTAssertEqual(onA.first, .cancelRequest(transactionID: request.transactionID))
        XCTAssertEqual(onA.message()?.channel, a)
        XCTAssertFalse(machine.isBusy)
        XCTAssertNil(machine.nextDeadline())
    }

    func test_INIT_resync_dropsThatChannelsPartialMessage() {
        var machine = CTAPHIDStateMachine()
        let a = machine.allocateChannel()
        XCTAssertEqual(machine.receive(report: initReport(a, 0x01, length: 100, data: pattern(57)), from: 0, now: t(0)), [])
        XCTAssertEqual(machine.receive(report: initReport(a, 0x06, data: nonce), from: 0, now: t(1)).message()?.command, 0x06)
        XCTAssertEqual(machine.receive(report: contReport(a, seq: 0, data: pattern(59)), from: 0, now: t(2)), [])
        XCTAssertEqual(machine.tick(now: t(10_000)), [])
    }

    func test_INIT_withPayloadOtherThan8Bytes_isInvalidLength() {
        var machine = CTAPHIDStateMachine()
        for length in [0, 7, 9, 57] {
            let actions = machine.receive(report: initReport(broadcast, 0x06, length: length, data: pattern(length)), from: 0, now: t(0))
            XCTAssertEqual(actions, [.send(report: errorReport(broadcast, .invalidLength), to: 0)], "length \(length)")
        }
        // A multi-packet declared length is refused at once, not assembled.
        let long = machine.receive(report: initReport(broadcast, 0x06, length: 100, data: pattern(57)), from: 0, now: t(0))
        XCTAssertEqual(long, [.send(report: errorReport(broadcast, .invalidLength), to: 0)])
        XCTAssertEqual(machine.allocatedChannelCount, 0)
        XCTAssertNil(machine.nextDeadline())
    }

    func test_INIT_onUnallocatedChannel_adoptsThatChannelID() {
        var machine = CTAPHIDStateMachine()
        let actions = machine.receive(report: initReport(0x5555_0001, 0x06, data: nonce), from: 0, now: t(0))
        XCTAssertEqual(actions.message()?.channel, 0x5555_0001)
        XCTAssertEqual(Array(actions.message()?.payload[8..<12] ?? []), [0x55, 0x55, 0x00, 0x01])
        XCTAssertEqual(machine.send(0x5555_0001, 0x01, [1]).message()?.payload, [1])
    }

    /// A U2F-only key (no CBOR capability) does not know CTAPHID_CBOR, as a CTAP1 key does not;
    /// a key that says it has no MSG does not take MSG. The capability byte says so in INIT.
    func test_capabilities_gateCBORAndMSG() {
        var u2fOnly = CTAPHIDStateMachine(configuration: .init(capabilities: CTAPHIDConfiguration.capabilityWink
                                                                   | CTAPHIDConfiguration.capabilityLock))
        let initActions = u2fOnly.receive(report: initReport(broadcast, 0x06, data: nonce), from: 0, now: t(0))
        XCTAssertEqual(initActions.message()?.payload[16], 0x03, "WINK | LOCK, no CBOR")
        let channel = u2fOnly.allocateChannel()
        XCTAssertEqual(u2fOnly.send(channel, 0x10, [0x04]).reports, [errorReport(channel, .invalidCommand)])
        XCTAssertEqual(u2fOnly.send(channel, 0x03, [0x00, 0x03, 0x00, 0x00, 0x00]).dispatched.count, 1)

        var noMSG = CTAPHIDStateMachine(configuration: .init(capabilities: CTAPHIDConfiguration.capabilityCBOR
                                                                 | CTAPHIDConfiguration.capabilityNoMSG))
        let other = noMSG.allocateChannel()
        XCTAssertEqual(noMSG.send(other, 0x03, [0x00, 0x03, 0x00, 0x00, 0x00]).reports, [errorReport(other, .invalidCommand)])
        XCTAssertEqual(noMSG.send(other, 0x10, [0x04]).dispatched.count, 1)
    }
}
