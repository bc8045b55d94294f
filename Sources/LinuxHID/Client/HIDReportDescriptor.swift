/// What a HID report descriptor declares, as far as finding FIDO devices needs
/// it (HID 1.11 §6.2.2, "Report Descriptor"): the usage pages, and the usages
/// of the top-level application collections.
///
/// Items are walked one by one:
///
///     short item: prefix bSize(bits 0-1: 0,1,2,4 bytes) bType(bits 2-3: main, global, local) bTag(bits 4-7)
///                 then bSize data bytes, little-endian
///     long item:  0xFE bDataSize bLongItemTag then bDataSize data bytes (skipped)
///
/// FIDO authenticators declare Usage Page 0xF1D0 and Usage 0x01 (CTAPHID) on
/// their application collection (CTAP 2.1 §11.2.8.1), usually as `06 D0 F1 09 01`
/// (a 2-byte usage page), sometimes as an extended 4-byte usage `0B 01 00 D0 F1`.
/// The parser is total and bounded: any input gives a value or an error.
public struct HIDReportDescriptor: Sendable, Equatable {
    /// A usage: page and ID (HID Usage Tables).
    public struct Usage: Sendable, Hashable, CustomStringConvertible {
        public var page: UInt16
        public var id: UInt16

        public init(page: UInt16, id: UInt16) {
            self.page = page
            self.id = id
        }

        public var description: String {
            hex4(page) + ":" + hex4(id)
        }
    }

    /// The kernel's HID_MAX_DESCRIPTOR_SIZE: no real descriptor is longer.
    public static let maximumSize = 4096
    /// CTAP 2.1 §11.2.8.1: the FIDO Alliance usage page.
    public static let fidoUsagePage: UInt16 = 0xF1D0
    /// CTAP 2.1 §11.2.8.1: usage CTAPHID (U2F Authenticator Device) on the FIDO page.
    public static let ctaphidUsage = Usage(page: fidoUsagePage, id: 0x01)

    /// Every usage page the descriptor selects (Global item Usage Page, and the
    /// page half of extended usages), in order of first appearance.
    public private(set) var usagePages: [UInt16] = []
    /// The usage of each top-level application collection, in order.
    public private(set) var applicationCollections: [Usage] = []
    /// The descriptor as the device gave it (`latchkey proxy` presents the same one).
    public private(set) var bytes: [UInt8] = []

    /// A FIDO authenticator: a top-level application collection with usage
    /// page 0xF1D0, usage 0x01 (what libfido2, browsers and systemd's `fido_id`
    /// look for).
    public var isFIDO: Bool {
        applicationCollections.contains(Self.ctaphidUsage)
    }

    /// Parses `bytes`; a descriptor that is empty, longer than 4096 bytes, or
    /// whose last item runs past the end is an error.
    public init(bytes: [UInt8]) throws(HIDReportDescriptorError) {
        guard !bytes.isEmpty else { throw .empty }
        guard bytes.count <= Self.maximumSize else { throw .tooLong(size: bytes.count) }
        self.bytes = bytes

        var offset = 0
        var usagePage: UInt16 = 0
        var pageStack: [UInt16] = []      // Push/Pop of the global state (only the page matters here)
        var localUsages: [(value: UInt32, isExtended: Bool)] = []
        var depth = 0

        while offset < bytes.count {
            let prefix = bytes[offset]
            // HID 1.11 §6.2.2.3: prefix 0xFE introduces a long item: bDataSize, bLongItemTag, data.
            if prefix == 0xFE {
                guard offset + 2 < bytes.count else { throw .truncatedItem(offset: offset) }
                let end = offset + 3 + Int(bytes[offset + 1])
                guard end <= bytes.count else { throw .truncatedItem(offset: offset) }
                offset = end
                continue
            }
            // HID 1.11 §6.2.2.2: bSize 3 means four data bytes.
            let sizeCode = Int(prefix & 0x03)
            let size = sizeCode == 3 ? 4 : sizeCode
            let type = (prefix >> 2) & 0x03
            let tag = prefix >> 4
            guard offset + 1 + size <= bytes.count else { throw .truncatedItem(offset: offset) }
            var value: UInt32 = 0
            for index in 0..<size {
                value |= UInt32(bytes[offset + 1 + index]) << (8 * index)
            }
            offset += 1 + size

            switch (type, tag) {
            case (1, 0x0):   // Global: Usage Page
                usagePage = UInt16(truncatingIfNeeded: value)
                note(page: usagePage)
            case (1, 0xA):   // Global: Push
                if pageStack.count < 64 { pageStack.append(usagePage) }
            case (1, 0xB):   // Global: Pop
                if let saved = pageStack.popLast() { usagePage = saved }
            case (2, 0x0):   // Local: Usage (a 4-byte usage carries its own page in the high half)
                if localUsages.count < 256 { localUsages.append((value, size == 4)) }
                if size == 4 { note(page: UInt16(truncatingIfNeeded: value >> 16)) }
            case (0, 0xA):   // Main: Collection (data 0x01: Application)
                if depth == 0 && value == 0x01, let first = localUsages.first {
                    applicationCollections.append(first.isExtended
                        ? Usage(page: UInt16(truncatingIfNeeded: first.value >> 16),
                                id: UInt16(truncatingIfNeeded: first.value))
                        : Usage(page: usagePage, id: UInt16(truncatingIfNeeded: first.value)))
                }
                depth += 1
                localUsages.removeAll()
            case (0, 0xC):   // Main: End Collection
                depth = max(0, depth - 1)
                localUsages.removeAll()
            case (0, _):     // Main: Input, Output, Feature — local items apply to one main item only
                localUsages.removeAll()
            default:
                break        // other global and local items, reserved types
            }
        }
    }

    private mutating func note(page: UInt16) {
        if !usagePages.contains(page) { usagePages.append(page) }
    }
}

/// Why a report descriptor could not be read.
public enum HIDReportDescriptorError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    /// Longer than the kernel's HID_MAX_DESCRIPTOR_SIZE (4096).
    case tooLong(size: Int)
    /// The item starting at `offset` needs more bytes than are left.
    case truncatedItem(offset: Int)

    public var description: String {
        switch self {
        case .empty: return "the report descriptor is empty"
        case .tooLong(let size): return "the report descriptor is \(size) bytes, more than HID's 4096"
        case .truncatedItem(let offset): return "the report descriptor is truncated (item at byte \(offset))"
        }
    }
}

/// "0xF1D0" style, four upper-case hex digits.
func hex4(_ value: UInt16) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
