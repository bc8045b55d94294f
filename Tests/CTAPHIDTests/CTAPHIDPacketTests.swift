import XCTest
@testable import CTAPHID

final class CTAPHIDPacketTests: XCTestCase {
    func test_initializationPacket_isCIDBigEndian_CMDWithBit7_BCNTHBCNTL_57DataBytes() {
        var report = [UInt8](repeating: 0, count: 64)
        report[0...6] = [0x01, 0x02, 0x03, 0x04, 0x90, 0x01, 0x02]
        report[7] = 0xAA
        report[63] = 0xBB
        guard case let .initialization(channel, command, length, data) = CTAPHIDPacket(report: report) else {
            return XCTFail("not an initialization packet")
        }
        XCTAssertEqual(channel, 0x0102_0304)
        XCTAssertEqual(command, 0x10)
        XCTAssertEqual(length, 0x0102)
        XCTAssertEqual(data.count, 57)
        XCTAssertEqual(data.first, 0xAA)
        XCTAssertEqual(data.last, 0xBB)
    }

    func test_continuationPacket_isCIDBigEndian_SEQ_59DataBytes() {
        var report = [UInt8](repeating: 0, count: 64)
        report[0...4] = [0xDE, 0xAD, 0xBE, 0xEF, 0x7F]
        report[5] = 0xAA
        report[63] = 0xBB
        guard case let .continuation(channel, sequence, data) = CTAPHIDPacket(report: report) else {
            return XCTFail("not a continuation packet")
        }
        XCTAssertEqual(channel, 0xDEAD_BEEF)
        XCTAssertEqual(sequence, 0x7F)
        XCTAssertEqual(data.count, 59)
        XCTAssertEqual(data.first, 0xAA)
        XCTAssertEqual(data.last, 0xBB)
    }

    func test_packetBuild_padsWithZerosTo64Bytes_andParsesBack() {
        let initPacket = CTAPHIDPacket.initialization(channel: 7, command: 0x01, declaredLength: 3, data: [1, 2, 3])
        let report = initPacket.report
        XCTAssertEqual(report, [0, 0, 0, 7, 0x81, 0, 3, 1, 2, 3] + [UInt8](repeating: 0, count: 54))
        XCTAssertEqual(CTAPHIDPacket(report: report),
                       .initialization(channel: 7, command: 0x01, declaredLength: 3, data: [1, 2, 3] + [UInt8](repeating: 0, count: 54)))

        let cont = CTAPHIDPacket.continuation(channel: 7, sequence: 5, data: [9])
        XCTAssertEqual(cont.report, [0, 0, 0, 7, 5, 9] + [UInt8](repeating: 0, count: 58))
    }

    func test_reportThatIsNot64Bytes_doesNotParse() {
        XCTAssertNil(CTAPHIDPacket(report: []))
        XCTAssertNil(CTAPHIDPacket(report: [UInt8](repeating: 0, count: 63)))
        XCTAssertNil(CTAPHIDPacket(report: [UInt8](repeating: 0, count: 65)))
    }

    func test_largestMessage_is57Plus128Times59() {
        XCTAssertEqual(CTAPHIDPacket.maxMessageLength, 7609)
    }

    func test_monotonicTime_addingMilliseconds_andSaturates() {
        XCTAssertEqual(UInt64(5).addingMilliseconds(2), 2_000_005)
        XCTAssertEqual((UInt64.max - 1).addingMilliseconds(1), .max)
        XCTAssertEqual(UInt64(0).addingMilliseconds(.max), .max)
        XCTAssertLessThan(t(1), t(2))
    }
}
