import XCTest
@testable import CTAPHID

final class MessageAssemblerTests: XCTestCase {
    func test_singlePacketMessage_completesAtOnce_ignoringPadding() {
        var assembler = MessageAssembler()
        XCTAssertEqual(assembler.feed(report: initReport(5, 0x01, data: [1, 2, 3])),
                       .complete(command: 0x01, payload: [1, 2, 3]))
        XCTAssertFalse(assembler.isAssembling)
    }

    func test_keepalive_isReturnedAsOneByteMessage_byDefault() {
        var assembler = MessageAssembler(channel: 5)
        XCTAssertEqual(assembler.feed(report: initReport(5, 0x3B, data: [2])), .complete(command: 0x3B, payload: [2]))
    }

    func test_keepalive_isIgnored_whenTheCallerAsksToSkipThem() {
        var assembler = MessageAssembler(channel: 5, skipKeepalives: true)
        XCTAssertEqual(assembler.feed(report: initReport(5, 0x3B, data: [1])), .ignored)
        XCTAssertEqual(assembler.feed(report: initReport(5, 0x10, data: [0])), .complete(command: 0x10, payload: [0]))
    }

    func test_channelFilter_ignoresOtherChannels() {
        var assembler = MessageAssembler(channel: 5)
        XCTAssertEqual(assembler.feed(report: initReport(6, 0x01, data: [1])), .ignored)
        XCTAssertEqual(assembler.feed(report: initReport(5, 0x01, length: 60, data: pattern(57))), .needMore)
        XCTAssertEqual(assembler.feed(report: contReport(6, seq: 0, data: pattern(3))), .ignored)
        XCTAssertEqual(assembler.feed(report: contReport(5, seq: 0, data: Array(pattern(60)[57...]))),
                       .complete(command: 0x01, payload: pattern(60)))
    }

    func test_wrongSequence_isInvalidSequence_andDropsTheMessage() {
        var assembler = MessageAssembler()
        XCTAssertEqual(assembler.feed(report: initReport(5, 0x01, length: 200, data: pattern(57))), .needMore)
        XCTAssertEqual(assembler.feed(report: contReport(5, seq: 1)), .error(.invalidSequence))
        XCTAssertFalse(assembler.isAssembling)
        XCTAssertEqual(assembler.feed(report: contReport(5, seq: 0)), .ignored)
    }

    func test_initializationPacketMidMessage_isInvalidSequence() {
        var assembler = MessageAssembler()
        XCTAssertEqual(assembler.feed(report: initReport(5, 0x01, length: 200, data: pattern(57))), .needMore)
        XCTAssertEqual(assembler.feed(report: initReport(5, 0x01, data: [1])), .error(.invalidSequence))
        XCTAssertFalse(assembler.isAssembling)
    }

    func test_strayContinuation_isIgnored() {
        var assembler = MessageAssembler()
        XCTAssertEqual(assembler.feed(report: contReport(5, seq: 0)), .ignored)
    }

    func test_declaredLengthAbove7609_isInvalidLength() {
        var assembler = MessageAssembler()
        XCTAssertEqual(assembler.feed(report: initReport(5, 0x01, length: 7610, data: pattern(57))), .error(.invalidLength))
        XCTAssertEqual(assembler.feed(report: initReport(5, 0x01, length: 7609, data: pattern(57))), .needMore)
    }

    func test_reset_dropsTheMessageInProgress() {
        var assembler = MessageAssembler()
        _ = assembler.feed(report: initReport(5, 0x01, length: 100, data: pattern(57)))
        assembler.reset()
        XCTAssertEqual(assembler.feed(report: contReport(5, seq: 0)), .ignored)
    }

    /// The key reads reports without making packets; tools feed packets. Both ways answer alike,
    /// a packet with fewer data bytes than its report included (its report is zero-padded).
    func test_reportsAndPacketsAreAssembledAlike() {
        let packets: [CTAPHIDPacket] = [
            .initialization(channel: 5, command: 0x10, declaredLength: 3, data: [1, 2, 3]),
            .initialization(channel: 5, command: 0x10, declaredLength: 130, data: pattern(57)),
            .continuation(channel: 6, sequence: 0, data: pattern(59)),
            .continuation(channel: 5, sequence: 0, data: pattern(59, salt: 1)),
            .continuation(channel: 5, sequence: 2, data: pattern(59)),
            .initialization(channel: 5, command: 0x01, declaredLength: 70, data: pattern(57)),
            .continuation(channel: 5, sequence: 0, data: pattern(13)),
            .initialization(channel: 5, command: 0x3B, declaredLength: 1, data: [2]),
            .initialization(channel: 5, command: 0x01, declaredLength: 7610, data: pattern(57)),
        ]
        var byReport = MessageAssembler()
        var byPacket = MessageAssembler()
        var results: [MessageAssembler.Result] = []
        for packet in packets {
            let result = byReport.feed(report: packet.report)
            XCTAssertEqual(result, byPacket.feed(packet), "\(packet)")
            results.append(result)
        }
        XCTAssertEqual(results, [.complete(command: 0x10, payload: [1, 2, 3]), .needMore, .ignored, .needMore,
                                 .error(.invalidSequence), .needMore,
                                 .complete(command: 0x01, payload: pattern(57) + Array(pattern(13).prefix(13))),
                                 .complete(command: 0x3B, payload: [2]), .error(.invalidLength)])
    }
}
