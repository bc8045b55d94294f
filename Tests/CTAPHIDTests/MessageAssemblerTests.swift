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
}
