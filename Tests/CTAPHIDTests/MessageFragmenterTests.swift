import XCTest
@testable import CTAPHID

final class MessageFragmenterTests: XCTestCase {
    func test_emptyPayload_isOneInitializationPacketWithLengthZero() {
        let reports = MessageFragmenter.reports(channel: 0x0A0B_0C0D, command: 0x01, payload: [])
        XCTAssertEqual(reports, [[0x0A, 0x0B, 0x0C, 0x0D, 0x81, 0, 0] + [UInt8](repeating: 0, count: 57)])
    }

    func test_continuationPackets_carrySequence0Through127_andTheLastIsZeroPadded() {
        let payload = pattern(7609)
        let reports = MessageFragmenter.reports(channel: 1, command: 0x10, payload: payload)
        XCTAssertEqual(reports.count, 129)
        XCTAssertEqual(reports[0][4], 0x90)
        XCTAssertEqual(reports[0][5], 0x1D)  // 7609 = 0x1DB9
        XCTAssertEqual(reports[0][6], 0xB9)
        for (index, report) in reports.dropFirst().enumerated() {
            XCTAssertEqual(report[4], UInt8(index))
        }
        let sixtyBytes = MessageFragmenter.reports(channel: 1, command: 0x10, payload: pattern(60))
        XCTAssertEqual(sixtyBytes.count, 2)
        XCTAssertEqual(Array(sixtyBytes[1][5..<8]), Array(pattern(60)[57..<60]))
        XCTAssertEqual(Array(sixtyBytes[1][8...]), [UInt8](repeating: 0, count: 56))
    }

    func test_fragmentThenReassemble_isIdentity_forEveryLength0Through7609() {
        let full = pattern(CTAPHIDPacket.maxMessageLength, salt: 7)
        for length in 0...CTAPHIDPacket.maxMessageLength {
            let payload = Array(full[0..<length])
            let reports = MessageFragmenter.reports(channel: 0xCAFE_0001, command: 0x10, payload: payload)
            let expectedCount = length <= 57 ? 1 : 1 + (length - 57 + 58) / 59
            guard reports.count == expectedCount else {
                return XCTFail("length \(length): \(reports.count) reports, expected \(expectedCount)")
            }
            var assembler = MessageAssembler(channel: 0xCAFE_0001)
            for (index, report) in reports.enumerated() {
                let result = assembler.feed(report: report)
                if index < reports.count - 1 {
                    guard result == .needMore else { return XCTFail("length \(length), report \(index): \(result)") }
                } else {
                    guard result == .complete(command: 0x10, payload: payload) else {
                        return XCTFail("length \(length): reassembly differs")
                    }
                }
            }
        }
    }

    func test_forEachReport_handsOutTheSameReportsInOrder() {
        for length in [0, 1, 57, 58, 116, 117, 500, 7609] {
            var handed: [[UInt8]] = []
            MessageFragmenter.forEachReport(channel: 0x0102_0304, command: 0x10, payload: pattern(length)) { handed.append($0) }
            let reports = MessageFragmenter.reports(channel: 0x0102_0304, command: 0x10, payload: pattern(length))
            XCTAssertEqual(handed, reports, "length \(length)")
            XCTAssertEqual(reports.count, MessageFragmenter.reportCount(payloadCount: length))
            XCTAssertEqual(reports.first.map { Array($0[0..<7]) }, [1, 2, 3, 4, 0x90, UInt8(length >> 8), UInt8(length & 0xFF)])
        }
    }
}
