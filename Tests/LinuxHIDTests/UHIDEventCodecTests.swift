import Glibc
@testable import LinuxHID
import XCTest

final class UHIDEventCodecTests: XCTestCase {
    private static let allEvents: [UHIDEvent] = [
        .create2(name: "Latchkey", phys: "latchkey/uhid", uniq: "LK-0001", bus: 3,
                 vendor: 0x1209, product: 0x000B, version: 0x0102, country: 0,
                 descriptor: UHIDDevice.fidoReportDescriptor),
        .destroy,
        .start(flags: 0x0000_0001_0000_0004),
        .stop, .open, .close,
        .output(data: [0] + KernelBytes.report(1), reportType: 1),
        .input2(data: KernelBytes.report(9)),
        .getReport(id: 0xDEAD_BEEF, reportNumber: 3, reportType: 0),
        .getReportReply(id: 7, error: 5, data: [1, 2, 3]),
        .setReport(id: 8, reportNumber: 1, reportType: 2, data: [4, 5]),
        .setReportReply(id: 9, error: 5),
        .unknown(type: 99),
    ]

    func testEveryEventEncodesToFullStructAndDecodesBack() throws {
        for event in Self.allEvents {
            let bytes = event.encoded()
            XCTAssertEqual(bytes.count, 4380, "\(event)")
            XCTAssertEqual(try UHIDEvent(decoding: bytes), event)
        }
    }

    func testTypeNumbersOnTheWire() {
        let expected: [(UHIDEvent, UInt32)] = [
            (Self.allEvents[0], 11), (.destroy, 1), (.start(flags: 0), 2), (.stop, 3), (.open, 4),
            (.close, 5), (.output(data: [], reportType: 1), 6), (.input2(data: []), 12),
            (.getReport(id: 0, reportNumber: 0, reportType: 0), 9),
            (.getReportReply(id: 0, error: 0, data: []), 10),
            (.setReport(id: 0, reportNumber: 0, reportType: 0, data: []), 13),
            (.setReportReply(id: 0, error: 0), 14),
        ]
        for (event, type) in expected {
            XCTAssertEqual(KernelBytes.u32(event.encoded(), at: 0), type, "\(event)")
        }
    }

    func testLegacyTypesDecodeAsUnknown() throws {
        for legacy: UInt32 in [0, 7, 8, 15, 0xFFFF_FFFF] {
            XCTAssertEqual(try UHIDEvent(decoding: KernelBytes(type: legacy).bytes), .unknown(type: legacy))
        }
    }

    func testCreate2FieldsAtKernelOffsets() {
        let descriptor = UHIDDevice.fidoReportDescriptor
        let bytes = UHIDEvent.create2(
            name: "Latchkey", phys: "usb-latchkey", uniq: "serial-é€1", bus: 0x03,
            vendor: 0x0001_1209, product: 0xAB, version: 0x0304, country: 33,
            descriptor: descriptor).encoded()
        XCTAssertEqual(KernelBytes.u32(bytes, at: 0), 11)
        XCTAssertEqual(Array(bytes[4..<12]), Array("Latchkey".utf8))
        XCTAssertEqual(bytes[12], 0)
        XCTAssertEqual(Array(bytes[132..<144]), Array("usb-latchkey".utf8))
        // uniq is ASCII only: each non-ASCII scalar becomes '?'.
        XCTAssertEqual(Array(bytes[196..<206]), Array("serial-??1".utf8))
        XCTAssertEqual(bytes[206], 0)
        XCTAssertEqual(KernelBytes.u16(bytes, at: 260), UInt16(descriptor.count))
        XCTAssertEqual(KernelBytes.u16(bytes, at: 262), 0x03)
        XCTAssertEqual(KernelBytes.u32(bytes, at: 264), 0x0001_1209)
        XCTAssertEqual(KernelBytes.u32(bytes, at: 268), 0xAB)
        XCTAssertEqual(KernelBytes.u32(bytes, at: 272), 0x0304)
        XCTAssertEqual(KernelBytes.u32(bytes, at: 276), 33)
        XCTAssertEqual(Array(bytes[280..<280 + descriptor.count]), descriptor)
        XCTAssertEqual(Array(bytes[(280 + descriptor.count)...]), [UInt8](repeating: 0, count: 4380 - 280 - descriptor.count))
    }

    func testCreate2StringsAreCutToTheirFieldsAtCharacterBoundaries() throws {
        let longName = String(repeating: "a", count: 126) + "é"   // 126 + 2 bytes > 127
        let bytes = UHIDEvent.create2(
            name: longName, phys: String(repeating: "p", count: 100), uniq: "u\0v", bus: 3,
            vendor: 1, product: 2, version: 3, country: 0, descriptor: []).encoded()
        XCTAssertEqual(Array(bytes[4..<131]), Array(repeating: UInt8(ascii: "a"), count: 126) + [0])
        XCTAssertEqual(bytes[131], 0)       // name[127] stays NUL
        XCTAssertEqual(bytes[132 + 63], 0)  // phys: 63 bytes of text, then NUL
        XCTAssertEqual(Array(bytes[196..<200]), Array("u?v".utf8) + [0])
        guard case let .create2(name, phys, uniq, _, _, _, _, _, _) = try UHIDEvent(decoding: bytes) else {
            return XCTFail("not create2")
        }
        XCTAssertEqual(name, String(repeating: "a", count: 126))
        XCTAssertEqual(phys, String(repeating: "p", count: 63))
        XCTAssertEqual(uniq, "u?v")
    }

    func testIdentitySanitizesUniq() {
        var identity = UHIDDevice.Identity(name: "Latchkey", vendorID: 1, productID: 2, uniq: "ñ-1")
        XCTAssertEqual(identity.uniq, "?-1")
        identity.uniq = "ok\u{7F}ü"
        XCTAssertEqual(identity.uniq, "ok??")
    }

    func testInput2Layout() {
        let report = KernelBytes.report(0x40)
        let bytes = UHIDEvent.input2(data: report).encoded()
        XCTAssertEqual(KernelBytes.u32(bytes, at: 0), 12)
        XCTAssertEqual(KernelBytes.u16(bytes, at: 4), 64)
        XCTAssertEqual(Array(bytes[6..<70]), report)
        XCTAssertTrue(bytes[70...].allSatisfy { $0 == 0 })
    }

    func testReplyLayouts() {
        let get = UHIDEvent.getReportReply(id: 0x0102_0304, error: UInt16(EIO), data: []).encoded()
        XCTAssertEqual(KernelBytes.u32(get, at: 0), 10)
        XCTAssertEqual(KernelBytes.u32(get, at: 4), 0x0102_0304)
        XCTAssertEqual(KernelBytes.u16(get, at: 8), 5)
        XCTAssertEqual(KernelBytes.u16(get, at: 10), 0)
        let set = UHIDEvent.setReportReply(id: 42, error: UInt16(EIO)).encoded()
        XCTAssertEqual(KernelBytes.u32(set, at: 0), 14)
        XCTAssertEqual(KernelBytes.u32(set, at: 4), 42)
        XCTAssertEqual(KernelBytes.u16(set, at: 8), 5)
    }

    /// A hidraw write of one report reaches uhid as UHID_OUTPUT of 65 bytes:
    /// the report-ID byte 0x00, then the 64-byte report (docs/testing.md).
    func testHandBuiltOutputOf65BytesYieldsTheReportWithoutReportID() throws {
        let report = KernelBytes.report(0xA0)
        var kernel = KernelBytes(type: 6)
        kernel.put([0x00] + report, at: 4)    // data[4096]
        kernel.put16(65, at: 4100)            // size
        kernel.bytes[4102] = 1                // rtype = UHID_OUTPUT_REPORT
        let event = try UHIDEvent(decoding: kernel.bytes)
        XCTAssertEqual(event, .output(data: [0x00] + report, reportType: 1))
        guard case let .output(data, reportType) = event else { return XCTFail() }
        XCTAssertEqual(UHIDDevice.report(fromOutput: data, reportType: reportType), .report(report, from: 0))
    }

    func testOutputOfExactly64BytesIsAcceptedAndOtherSizesAreDropped() {
        let report = KernelBytes.report(3)
        XCTAssertEqual(UHIDDevice.report(fromOutput: report, reportType: 1), .report(report, from: 0))
        XCTAssertEqual(UHIDDevice.report(fromOutput: [0] + report + [0], reportType: 1),
                       .droppedPacket(size: 66, from: 0))
        XCTAssertEqual(UHIDDevice.report(fromOutput: [1] + report, reportType: 1),
                       .droppedPacket(size: 65, from: 0))   // a report ID the descriptor does not have
        XCTAssertEqual(UHIDDevice.report(fromOutput: [], reportType: 1), .droppedPacket(size: 0, from: 0))
        XCTAssertEqual(UHIDDevice.report(fromOutput: [0] + report, reportType: 0),
                       .droppedPacket(size: 65, from: 0))   // feature report: not CTAPHID
    }

    func testHandBuiltGetAndSetReportDecode() throws {
        var get = KernelBytes(type: 9)
        get.put32(77, at: 4)
        get.bytes[8] = 2
        get.bytes[9] = 0
        XCTAssertEqual(try UHIDEvent(decoding: get.bytes), .getReport(id: 77, reportNumber: 2, reportType: 0))
        var set = KernelBytes(type: 13)
        set.put32(78, at: 4)
        set.bytes[8] = 1
        set.bytes[9] = 1
        set.put16(3, at: 10)
        set.put([9, 8, 7], at: 12)
        XCTAssertEqual(try UHIDEvent(decoding: set.bytes),
                       .setReport(id: 78, reportNumber: 1, reportType: 1, data: [9, 8, 7]))
        var start = KernelBytes(type: 2)
        start.put32(4, at: 4)
        XCTAssertEqual(try UHIDEvent(decoding: start.bytes), .start(flags: 4))
    }

    func testTruncatedInputThrowsInsteadOfTrapping() {
        for event in Self.allEvents {
            for length in 0..<4 {   // not even the type field
                XCTAssertThrowsError(try UHIDEvent(decoding: Array(event.encoded().prefix(length))))
            }
        }
        // OUTPUT's size and rtype follow its 4096-byte data array.
        XCTAssertThrowsError(try UHIDEvent(decoding: Array(UHIDEvent.output(data: [1], reportType: 1).encoded().prefix(4102)))) { error in
            guard case let .system(_, errno, message) = error as? TransportError else { return XCTFail("\(error)") }
            XCTAssertEqual(errno, EBADMSG)
            XCTAssertTrue(message.contains("too short"), message)
        }
        XCTAssertThrowsError(try UHIDEvent(decoding: Array(UHIDEvent.start(flags: 1).encoded().prefix(11))))
        XCTAssertThrowsError(try UHIDEvent(decoding: Array(UHIDEvent.input2(data: [1, 2, 3]).encoded().prefix(8))))
        XCTAssertNoThrow(try UHIDEvent(decoding: Array(UHIDEvent.input2(data: [1, 2, 3]).encoded().prefix(9))))
        XCTAssertThrowsError(try UHIDEvent(decoding: Array(Self.allEvents[0].encoded().prefix(300))))
    }

    func testSizeFieldLargerThanItsArrayThrows() {
        var output = KernelBytes(type: 6)
        output.put16(4097, at: 4100)
        XCTAssertThrowsError(try UHIDEvent(decoding: output.bytes))
        var input = KernelBytes(type: 12)
        input.put16(0xFFFF, at: 4)
        XCTAssertThrowsError(try UHIDEvent(decoding: input.bytes))
        var create = KernelBytes(type: 11)
        create.put16(4097, at: 260)
        XCTAssertThrowsError(try UHIDEvent(decoding: create.bytes))
    }

    /// Every prefix of every event is fed to the decoder: each one throws or
    /// decodes, none traps (checked on a stride to stay fast).
    func testEveryPrefixIsHandledTotally() {
        for event in Self.allEvents {
            let bytes = event.encoded()
            for length in stride(from: 0, through: bytes.count, by: 7) {
                _ = try? UHIDEvent(decoding: Array(bytes[..<length]))
            }
        }
    }

    func testOversizedDataIsCutToTheKernelArray() throws {
        let big = [UInt8](repeating: 0xEE, count: 5000)
        XCTAssertEqual(try UHIDEvent(decoding: UHIDEvent.input2(data: big).encoded()),
                       .input2(data: Array(big.prefix(4096))))
    }
}
