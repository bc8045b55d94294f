import CTAPHID
@testable import FIDOClient
import LatchkeyTestSupport
import LinuxHID
import XCTest

final class CTAPHIDClientTests: XCTestCase {
    let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]

    func client(_ link: FakeLink, clock: ManualClock = ManualClock(), limit: UInt64 = 30_000) -> CTAPHIDClient {
        link.clock = clock
        return CTAPHIDClient(link: link, replyTimeoutMilliseconds: 50, keepaliveLimitMilliseconds: limit,
                             clock: clock.read, nonceSource: { self.nonce })
    }

    /// A scripted device that answers INIT on channel 0x11223344 and hands other requests to `then`.
    func scripted(capabilities: UInt8 = 0x05, then: @escaping (CTAPHIDPacket) -> [[UInt8]]) -> FakeLink {
        FakeLink { report in
            if let nonce = initNonce(of: report) {
                return reports(channel: CTAPHIDPacket.broadcastChannel, command: .initialize,
                               payload: initResponse(nonce: nonce, channel: 0x1122_3344, capabilities: capabilities))
            }
            return CTAPHIDPacket(report: report).map(then) ?? []
        }
    }

    // MARK: INIT

    func testInitAgainstTheRealStateMachine() throws {
        let (link, _) = FakeLink.stateMachine()
        let client = client(link)
        let response = try client.initialize()
        XCTAssertEqual(response.channel, 0x0102_0304)
        XCTAssertEqual(client.channel, 0x0102_0304)
        XCTAssertEqual(response.protocolVersion, 2)
        XCTAssertEqual(response.deviceVersion, [1, 0, 0])
        XCTAssertEqual(response.capabilityNames, ["WINK", "LOCK", "CBOR"])
        XCTAssertTrue(response.supportsWink && response.supportsCBOR && response.supportsMSG)
        // §11.2.9.1.3: INIT goes to the broadcast channel with our 8-byte nonce.
        XCTAssertEqual(initNonce(of: link.sent[0]), nonce)
    }

    /// §11.2.9.1.3: every hidraw opener sees every INIT reply; one with another nonce is not ours.
    func testInitSkipsRepliesWithAnotherNonceAndOtherChannels() throws {
        let link = FakeLink { report in
            guard let nonce = initNonce(of: report) else { return [] }
            return reports(channel: 0x5555_5555, command: .ping, payload: [9, 9])    // another channel's traffic
                + reports(channel: CTAPHIDPacket.broadcastChannel, command: .initialize,
                          payload: initResponse(nonce: [8, 7, 6, 5, 4, 3, 2, 1], channel: 0xDEAD_BEEF))
                + reports(channel: CTAPHIDPacket.broadcastChannel, command: .initialize,
                          payload: initResponse(nonce: nonce, channel: 0x0A0B_0C0D, capabilities: 0x0D))
        }
        let response = try client(link).initialize()
        XCTAssertEqual(response.channel, 0x0A0B_0C0D)
        XCTAssertEqual(response.deviceVersion, [5, 4, 3])
        XCTAssertEqual(response.capabilityNames, ["WINK", "CBOR", "NMSG"])
        XCTAssertFalse(response.supportsMSG)
        XCTAssertFalse(response.supportsLock)
    }

    func testInitWithOnlyForeignNoncesIsNoReply() {
        let link = FakeLink { _ in
            reports(channel: CTAPHIDPacket.broadcastChannel, command: .initialize,
                    payload: initResponse(nonce: [0, 0, 0, 0, 0, 0, 0, 0], channel: 0x0101_0101))
        }
        XCTAssertThrowsError(try client(link).initialize()) { error in
            guard case .noReply(command: "INIT", milliseconds: 50, partial: false, afterKeepalives: 0)? =
                    error as? CTAPHIDClientError else { return XCTFail("\(error)") }
        }
    }

    func testShortInitReplyIsMalformed() {
        let link = FakeLink { report in
            reports(channel: CTAPHIDPacket.broadcastChannel, command: .initialize, payload: initNonce(of: report)! + [0, 0])
        }
        XCTAssertThrowsError(try client(link).initialize()) {
            XCTAssertEqual($0 as? CTAPHIDClientError, .malformedReply(command: "INIT", detail: "10 bytes, expected 17"))
        }
    }

    // MARK: PING, WINK, CBOR

    func testLargestPingEchoesByteForByte() throws {
        let (link, _) = FakeLink.stateMachine()
        let client = client(link)
        try client.initialize()
        let payload = (0..<7609).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        link.sent.removeAll()
        XCTAssertEqual(try client.ping(payload), payload)
        XCTAssertEqual(link.sent.count, 129, "57 + 128 × 59 bytes: one initialization and 128 continuation packets")
        XCTAssertThrowsError(try client.ping(payload + [0])) {
            XCTAssertEqual($0 as? CTAPHIDClientError, .payloadTooLong(7610))
        }
    }

    func testWinkAndCBOR() throws {
        let (link, winks) = FakeLink.stateMachine(cbor: { request in request == [0x04] ? [0x00, 0xA0] : [0x01] })
        let client = client(link)
        try client.initialize()
        try client.wink()
        XCTAssertEqual(winks.value, 1)
        XCTAssertEqual(try client.cbor([0x04]), [0x00, 0xA0])
    }

    func testRequestsNeedAChannelFirst() {
        let (link, _) = FakeLink.stateMachine()
        XCTAssertThrowsError(try client(link).ping([1])) {
            XCTAssertEqual($0 as? CTAPHIDClientError, .notInitialized)
        }
    }

    // MARK: KEEPALIVE, ERROR, silence

    /// §11.2.9.1.5: KEEPALIVE does not end the transaction; the reply that follows does.
    func testKeepalivesThenTheReply() throws {
        let link = scripted { packet in
            reports(channel: packet.channel, command: .keepalive, payload: [KeepaliveStatus.processing.rawValue])
                + reports(channel: packet.channel, command: .keepalive, payload: [KeepaliveStatus.userPresenceNeeded.rawValue])
                + reports(channel: packet.channel, command: .cbor, payload: [0x00, 0xA0])
        }
        let client = client(link)
        try client.initialize()
        XCTAssertEqual(try client.cbor([0x04]), [0x00, 0xA0])
        XCTAssertEqual(client.keepalives, [1, 2])
    }

    func testEndlessKeepalivesHitTheLimit() throws {
        let link = scripted { _ in [] }
        let clock = ManualClock()
        let client = client(link, clock: clock, limit: 1_000)
        try client.initialize()
        link.onIdle = { reports(channel: 0x1122_3344, command: .keepalive, payload: [2])[0] }
        XCTAssertThrowsError(try client.cbor([0x02])) { error in
            guard case .keepaliveLimit(command: "CBOR", milliseconds: 1_000, let statuses)? = error as? CTAPHIDClientError else {
                return XCTFail("\(error)")
            }
            XCTAssertFalse(statuses.isEmpty)
            XCTAssertTrue("\(error)".contains("waiting for a touch"), "\(error)")
        }
        // The client told the device it gave up: its last report is CTAPHID_CANCEL on the channel.
        XCTAssertEqual(link.sent.last.flatMap(CTAPHIDPacket.init(report:))?.channel, 0x1122_3344)
        XCTAssertEqual(Array(link.sent.last?[4...4] ?? []), [0x80 | CTAPHIDCommand.cancel.rawValue])
    }

    func testErrorReplyIsAClearError() throws {
        let link = scripted { packet in
            reports(channel: packet.channel, command: .error, payload: [CTAPHIDError.channelBusy.rawValue])
        }
        let client = client(link)
        try client.initialize()
        XCTAssertThrowsError(try client.ping([1, 2, 3])) { error in
            XCTAssertEqual(error as? CTAPHIDClientError, .deviceError(command: "PING", code: 0x06))
            XCTAssertEqual("\(error)", "the device answered CTAPHID_PING with CTAPHID_ERROR ERR_CHANNEL_BUSY (0x06)")
        }
        XCTAssertEqual(CTAPHIDClientError.errorName(0x42), "unknown error (0x42)")
    }

    func testSilentDeviceIsNoReplyNeverAHang() {
        let link = FakeLink()
        XCTAssertThrowsError(try client(link).initialize()) { error in
            XCTAssertEqual(error as? CTAPHIDClientError,
                           .noReply(command: "INIT", milliseconds: 50, partial: false, afterKeepalives: 0))
            XCTAssertTrue("\(error)".contains("the device is silent"), "\(error)")
        }
        XCTAssertEqual(link.receiveCalls, 1)
    }

    func testReplyThatStopsPartWay() throws {
        let link = scripted { packet in
            guard case .initialization = packet else { return [] }   // answer the request once, not per packet
            return Array(reports(channel: packet.channel, command: .ping, payload: [UInt8](repeating: 1, count: 200)).prefix(2))
        }
        let client = client(link)
        try client.initialize()
        XCTAssertThrowsError(try client.ping([UInt8](repeating: 1, count: 200))) { error in
            XCTAssertEqual(error as? CTAPHIDClientError,
                           .noReply(command: "PING", milliseconds: 50, partial: true, afterKeepalives: 0))
            XCTAssertTrue("\(error)".contains("stopped part-way"))
        }
    }

    func testOutOfOrderContinuationIsMalformed() throws {
        let link = scripted { packet in
            let message = reports(channel: packet.channel, command: .ping, payload: [UInt8](repeating: 1, count: 200))
            return [message[0], message[2]]
        }
        let client = client(link)
        try client.initialize()
        XCTAssertThrowsError(try client.ping([1])) { error in
            guard case .malformedReply(command: "PING", _)? = error as? CTAPHIDClientError else { return XCTFail("\(error)") }
        }
    }

    func testReplyWithAnotherCommandIsUnexpected() throws {
        let link = scripted { packet in reports(channel: packet.channel, command: .wink, payload: []) }
        let client = client(link)
        try client.initialize()
        XCTAssertThrowsError(try client.ping([1])) {
            XCTAssertEqual($0 as? CTAPHIDClientError, .unexpectedReply(command: "PING", received: 0x08))
        }
    }

    func testTransportFailuresPassThrough() {
        let link = FakeLink()
        link.failure = .system(call: "write", errno: 19, message: "/dev/hidraw9 went away")
        XCTAssertThrowsError(try client(link).initialize()) {
            XCTAssertEqual("\($0)", "/dev/hidraw9 went away (write, errno 19)")
        }
    }
}
