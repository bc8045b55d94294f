import LinuxHID
import XCTest

final class HIDReportDescriptorParserTests: XCTestCase {
    /// HID 1.11 Appendix B.1: the boot protocol keyboard.
    static let bootKeyboard: [UInt8] = [
        0x05, 0x01,        // Usage Page (Generic Desktop)
        0x09, 0x06,        // Usage (Keyboard)
        0xA1, 0x01,        // Collection (Application)
        0x05, 0x07,        //   Usage Page (Key Codes)
        0x19, 0xE0,        //   Usage Minimum (224)
        0x29, 0xE7,        //   Usage Maximum (231)
        0x15, 0x00,        //   Logical Minimum (0)
        0x25, 0x01,        //   Logical Maximum (1)
        0x75, 0x01,        //   Report Size (1)
        0x95, 0x08,        //   Report Count (8)
        0x81, 0x02,        //   Input (Data, Variable, Absolute): modifier byte
        0x95, 0x01,        //   Report Count (1)
        0x75, 0x08,        //   Report Size (8)
        0x81, 0x01,        //   Input (Constant): reserved byte
        0x95, 0x05,        //   Report Count (5)
        0x75, 0x01,        //   Report Size (1)
        0x05, 0x08,        //   Usage Page (LEDs)
        0x19, 0x01,        //   Usage Minimum (1)
        0x29, 0x05,        //   Usage Maximum (5)
        0x91, 0x02,        //   Output (Data, Variable, Absolute): LED report
        0x95, 0x01,        //   Report Count (1)
        0x75, 0x03,        //   Report Size (3)
        0x91, 0x01,        //   Output (Constant): padding
        0x95, 0x06,        //   Report Count (6)
        0x75, 0x08,        //   Report Size (8)
        0x15, 0x00,        //   Logical Minimum (0)
        0x25, 0x65,        //   Logical Maximum (101)
        0x05, 0x07,        //   Usage Page (Key Codes)
        0x19, 0x00,        //   Usage Minimum (0)
        0x29, 0x65,        //   Usage Maximum (101)
        0x81, 0x00,        //   Input (Data, Array): key arrays
        0xC0,              // End Collection
    ]

    func testLatchkeysOwnDescriptorIsFIDO() throws {
        let descriptor = try HIDReportDescriptor(bytes: UHIDDevice.fidoReportDescriptor)
        XCTAssertTrue(descriptor.isFIDO)
        XCTAssertEqual(descriptor.usagePages, [0xF1D0])
        XCTAssertEqual(descriptor.applicationCollections, [HIDReportDescriptor.Usage(page: 0xF1D0, id: 0x01)])
    }

    func testBootKeyboardIsNotFIDO() throws {
        let descriptor = try HIDReportDescriptor(bytes: Self.bootKeyboard)
        XCTAssertFalse(descriptor.isFIDO)
        XCTAssertEqual(descriptor.usagePages, [0x01, 0x07, 0x08])
        XCTAssertEqual(descriptor.applicationCollections, [HIDReportDescriptor.Usage(page: 0x01, id: 0x06)])
    }

    /// CTAP 2.1 §11.2.8.1 allows the page in the usage itself: Usage (0xF1D00001), 4 data bytes.
    func testExtendedUsageFormIsFIDO() throws {
        let descriptor = try HIDReportDescriptor(bytes: [
            0x0B, 0x01, 0x00, 0xD0, 0xF1,  // Usage (0xF1D0:0x0001), extended
            0xA1, 0x01,                    // Collection (Application)
            0xC0,                          // End Collection
        ])
        XCTAssertTrue(descriptor.isFIDO)
        XCTAssertEqual(descriptor.usagePages, [0xF1D0])
    }

    func testFourByteUsagePageForm() throws {
        let descriptor = try HIDReportDescriptor(bytes: [
            0x07, 0xD0, 0xF1, 0x00, 0x00,  // Usage Page (0xF1D0), 4 data bytes
            0x09, 0x01,                    // Usage (CTAPHID)
            0xA1, 0x01,                    // Collection (Application)
            0xC0,
        ])
        XCTAssertTrue(descriptor.isFIDO)
    }

    func testFIDOPageWithAnotherUsageIsNotCTAPHID() throws {
        let descriptor = try HIDReportDescriptor(bytes: [0x06, 0xD0, 0xF1, 0x09, 0x02, 0xA1, 0x01, 0xC0])
        XCTAssertEqual(descriptor.usagePages, [0xF1D0])
        XCTAssertFalse(descriptor.isFIDO)
    }

    /// A composite device: keyboard and FIDO as two top-level collections (one hidraw node).
    func testCompositeDescriptorWithAFIDOCollection() throws {
        let descriptor = try HIDReportDescriptor(bytes: Self.bootKeyboard + UHIDDevice.fidoReportDescriptor)
        XCTAssertTrue(descriptor.isFIDO)
        XCTAssertEqual(descriptor.applicationCollections.count, 2)
    }

    /// A FIDO usage on a nested (not top-level) collection does not make a FIDO device.
    func testNestedCollectionIsNotTopLevel() throws {
        let descriptor = try HIDReportDescriptor(bytes: [
            0x05, 0x01, 0x09, 0x06, 0xA1, 0x01,  // Generic Desktop / Keyboard, Collection (Application)
            0x06, 0xD0, 0xF1, 0x09, 0x01, 0xA1, 0x01, 0xC0,  // nested FIDO application collection
            0xC0,
        ])
        XCTAssertFalse(descriptor.isFIDO)
        XCTAssertEqual(descriptor.usagePages, [0x01, 0xF1D0])
    }

    func testPushAndPopRestoreTheUsagePage() throws {
        let descriptor = try HIDReportDescriptor(bytes: [
            0x06, 0xD0, 0xF1,  // Usage Page (FIDO)
            0xA4,              // Push
            0x05, 0x01,        // Usage Page (Generic Desktop)
            0xB4,              // Pop: FIDO again
            0x09, 0x01, 0xA1, 0x01, 0xC0,
        ])
        XCTAssertTrue(descriptor.isFIDO)
    }

    func testLongItemsAreSkipped() throws {
        let descriptor = try HIDReportDescriptor(bytes: [0xFE, 0x02, 0x10, 0xAA, 0xBB] + UHIDDevice.fidoReportDescriptor)
        XCTAssertTrue(descriptor.isFIDO)
    }

    func testTruncatedItemsAreErrors() {
        XCTAssertThrowsError(try HIDReportDescriptor(bytes: [0x06, 0xD0])) {
            XCTAssertEqual($0 as? HIDReportDescriptorError, .truncatedItem(offset: 0))
        }
        XCTAssertThrowsError(try HIDReportDescriptor(bytes: [0x09, 0x01, 0x0B, 0x01, 0x00, 0xD0])) {
            XCTAssertEqual($0 as? HIDReportDescriptorError, .truncatedItem(offset: 2))
        }
        XCTAssertThrowsError(try HIDReportDescriptor(bytes: [0xFE, 0x05, 0x00, 0x01])) {
            XCTAssertEqual($0 as? HIDReportDescriptorError, .truncatedItem(offset: 0))
        }
        XCTAssertThrowsError(try HIDReportDescriptor(bytes: [0xFE])) {
            XCTAssertEqual($0 as? HIDReportDescriptorError, .truncatedItem(offset: 0))
        }
        // Every proper prefix of the FIDO descriptor that cuts an item is an error, never a crash.
        for length in 1..<UHIDDevice.fidoReportDescriptor.count {
            _ = try? HIDReportDescriptor(bytes: Array(UHIDDevice.fidoReportDescriptor.prefix(length)))
        }
    }

    func testEmptyAndOversizedDescriptorsAreErrors() {
        XCTAssertThrowsError(try HIDReportDescriptor(bytes: [])) {
            XCTAssertEqual($0 as? HIDReportDescriptorError, .empty)
        }
        XCTAssertThrowsError(try HIDReportDescriptor(bytes: [UInt8](repeating: 0xC0, count: 4097))) {
            XCTAssertEqual($0 as? HIDReportDescriptorError, .tooLong(size: 4097))
            XCTAssertTrue("\($0)".contains("4097"))
        }
    }

    /// Garbage in, a value or an error out: no trap, whatever the bytes (unbalanced End
    /// Collections, endless Pushes, reserved item types).
    func testGarbageIsTotal() {
        var generator = SplitMix64(seed: 0x1A7C_4B3E)
        for _ in 0..<5_000 {
            let count = Int(generator.next() % 300) + 1
            let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            if let descriptor = try? HIDReportDescriptor(bytes: bytes) {
                XCTAssertLessThanOrEqual(descriptor.applicationCollections.count, bytes.count)
            }
        }
        XCTAssertNoThrow(try HIDReportDescriptor(bytes: [UInt8](repeating: 0xA4, count: 4096)))  // 4096 Pushes
        XCTAssertNoThrow(try HIDReportDescriptor(bytes: [UInt8](repeating: 0xC0, count: 100)))   // unbalanced ends
        XCTAssertNoThrow(try HIDReportDescriptor(bytes: [0x0C, 0xFC, 0xF0]))                    // reserved types
    }
}

/// A small deterministic generator for the garbage test.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
