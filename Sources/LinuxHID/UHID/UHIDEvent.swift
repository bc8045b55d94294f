import Glibc

/// One `struct uhid_event` (<linux/uhid.h>), the unit of every read from and
/// write to /dev/uhid. A pure codec: `encoded()` gives the kernel's bytes,
/// `init(decoding:)` reads them; layout in `UHIDEventLayout`.
public enum UHIDEvent: Sendable, Equatable {
    /// UHID_CREATE2 (11), written: create the HID device. Strings are
    /// NUL-terminated in fixed fields (name 127, phys 63, uniq 63 bytes of
    /// text at most; longer text is cut at a character boundary); `uniq` is
    /// written as ASCII, anything else becoming '?'.
    case create2(name: String, phys: String, uniq: String, bus: UInt16, vendor: UInt32,
                 product: UInt32, version: UInt32, country: UInt32, descriptor: [UInt8])
    /// UHID_DESTROY (1), written: remove the device.
    case destroy
    /// UHID_START (2), read: a HID driver bound; `flags` are uhid_dev_flag bits.
    case start(flags: UInt64)
    /// UHID_STOP (3), read.
    case stop
    /// UHID_OPEN (4), read: the first hidraw (or other) user opened the device.
    case open
    /// UHID_CLOSE (5), read: the last user closed it.
    case close
    /// UHID_OUTPUT (6), read: an output report; `reportType` is uhid_report_type.
    case output(data: [UInt8], reportType: UInt8)
    /// UHID_INPUT2 (12), written: an input report for the readers of the device.
    case input2(data: [UInt8])
    /// UHID_GET_REPORT (9), read: the kernel waits for a GET_REPORT_REPLY with `id`.
    case getReport(id: UInt32, reportNumber: UInt8, reportType: UInt8)
    /// UHID_GET_REPORT_REPLY (10), written; `error` is an errno, 0 for success.
    case getReportReply(id: UInt32, error: UInt16, data: [UInt8])
    /// UHID_SET_REPORT (13), read: the kernel waits for a SET_REPORT_REPLY with `id`.
    case setReport(id: UInt32, reportNumber: UInt8, reportType: UInt8, data: [UInt8])
    /// UHID_SET_REPORT_REPLY (14), written.
    case setReportReply(id: UInt32, error: UInt16)
    /// A type this codec does not know (including the legacy 0, 7, 8).
    case unknown(type: UInt32)

    private typealias Layout = UHIDEventLayout

    // MARK: Encoding

    /// The full `struct uhid_event`, sizeof = 4380 bytes, zero-filled where
    /// unused. Data longer than its kernel array (4096 bytes) is cut to fit.
    public func encoded() -> [UInt8] {
        var event = EventBytes()
        switch self {
        case let .create2(name, phys, uniq, bus, vendor, product, version, country, descriptor):
            event.store(Layout.EventType.create2.rawValue, at: Layout.typeOffset)
            event.storeCString(name, at: Layout.Create2.name, capacity: Layout.Create2.nameCapacity)
            event.storeCString(phys, at: Layout.Create2.phys, capacity: Layout.Create2.physCapacity)
            event.storeCString(Self.asciiSanitized(uniq), at: Layout.Create2.uniq,
                               capacity: Layout.Create2.uniqCapacity)
            let descriptor = descriptor.prefix(Layout.descriptorCapacity)
            event.store(UInt16(descriptor.count), at: Layout.Create2.descriptorSize)
            event.store(bus, at: Layout.Create2.bus)
            event.store(vendor, at: Layout.Create2.vendor)
            event.store(product, at: Layout.Create2.product)
            event.store(version, at: Layout.Create2.version)
            event.store(country, at: Layout.Create2.country)
            event.storeBytes(descriptor, at: Layout.Create2.descriptor)
        case .destroy:
            event.store(Layout.EventType.destroy.rawValue, at: Layout.typeOffset)
        case let .start(flags):
            event.store(Layout.EventType.start.rawValue, at: Layout.typeOffset)
            event.store(flags, at: Layout.Start.flags)
        case .stop:
            event.store(Layout.EventType.stop.rawValue, at: Layout.typeOffset)
        case .open:
            event.store(Layout.EventType.open.rawValue, at: Layout.typeOffset)
        case .close:
            event.store(Layout.EventType.close.rawValue, at: Layout.typeOffset)
        case let .output(data, reportType):
            let data = data.prefix(Layout.dataCapacity)
            event.store(Layout.EventType.output.rawValue, at: Layout.typeOffset)
            event.storeBytes(data, at: Layout.Output.data)
            event.store(UInt16(data.count), at: Layout.Output.size)
            event.store(reportType, at: Layout.Output.reportType)
        case let .input2(data):
            let data = data.prefix(Layout.dataCapacity)
            event.store(Layout.EventType.input2.rawValue, at: Layout.typeOffset)
            event.store(UInt16(data.count), at: Layout.Input2.size)
            event.storeBytes(data, at: Layout.Input2.data)
        case let .getReport(id, reportNumber, reportType):
            event.store(Layout.EventType.getReport.rawValue, at: Layout.typeOffset)
            event.store(id, at: Layout.GetReport.id)
            event.store(reportNumber, at: Layout.GetReport.reportNumber)
            event.store(reportType, at: Layout.GetReport.reportType)
        case let .getReportReply(id, error, data):
            let data = data.prefix(Layout.dataCapacity)
            event.store(Layout.EventType.getReportReply.rawValue, at: Layout.typeOffset)
            event.store(id, at: Layout.GetReportReply.id)
            event.store(error, at: Layout.GetReportReply.error)
            event.store(UInt16(data.count), at: Layout.GetReportReply.size)
            event.storeBytes(data, at: Layout.GetReportReply.data)
        case let .setReport(id, reportNumber, reportType, data):
            let data = data.prefix(Layout.dataCapacity)
            event.store(Layout.EventType.setReport.rawValue, at: Layout.typeOffset)
            event.store(id, at: Layout.SetReport.id)
            event.store(reportNumber, at: Layout.SetReport.reportNumber)
            event.store(reportType, at: Layout.SetReport.reportType)
            event.store(UInt16(data.count), at: Layout.SetReport.size)
            event.storeBytes(data, at: Layout.SetReport.data)
        case let .setReportReply(id, error):
            event.store(Layout.EventType.setReportReply.rawValue, at: Layout.typeOffset)
            event.store(id, at: Layout.SetReportReply.id)
            event.store(error, at: Layout.SetReportReply.error)
        case let .unknown(type):
            event.store(type, at: Layout.typeOffset)
        }
        return event.bytes
    }

    // MARK: Decoding

    /// Reads one event. Total: input too short for the fields its type
    /// needs, or a size field larger than its array, throws `.system`
    /// (EBADMSG); it never traps. Bytes past the needed fields (normally up
    /// to the full 4380) are not required: the kernel copies whole events,
    /// but this decoder only needs what it reads.
    public init(decoding bytes: [UInt8]) throws(TransportError) {
        let reader = EventReader(bytes: bytes)
        let rawType: UInt32 = try reader.load(at: Layout.typeOffset, for: "type")
        guard let type = Layout.EventType(rawValue: rawType) else {
            self = .unknown(type: rawType)
            return
        }
        switch type {
        case .create2:
            let size = Int(try reader.load(at: Layout.Create2.descriptorSize, for: "create2") as UInt16)
            self = .create2(
                name: try reader.cString(at: Layout.Create2.name, capacity: Layout.Create2.nameCapacity, for: "create2"),
                phys: try reader.cString(at: Layout.Create2.phys, capacity: Layout.Create2.physCapacity, for: "create2"),
                uniq: try reader.cString(at: Layout.Create2.uniq, capacity: Layout.Create2.uniqCapacity, for: "create2"),
                bus: try reader.load(at: Layout.Create2.bus, for: "create2"),
                vendor: try reader.load(at: Layout.Create2.vendor, for: "create2"),
                product: try reader.load(at: Layout.Create2.product, for: "create2"),
                version: try reader.load(at: Layout.Create2.version, for: "create2"),
                country: try reader.load(at: Layout.Create2.country, for: "create2"),
                descriptor: try reader.bytes(at: Layout.Create2.descriptor, count: size,
                                             capacity: Layout.descriptorCapacity, for: "create2"))
        case .destroy:
            self = .destroy
        case .start:
            self = .start(flags: try reader.load(at: Layout.Start.flags, for: "start"))
        case .stop:
            self = .stop
        case .open:
            self = .open
        case .close:
            self = .close
        case .output:
            let size = Int(try reader.load(at: Layout.Output.size, for: "output") as UInt16)
            let reportType: UInt8 = try reader.load(at: Layout.Output.reportType, for: "output")
            self = .output(data: try reader.bytes(at: Layout.Output.data, count: size,
                                                  capacity: Layout.dataCapacity, for: "output"),
                           reportType: reportType)
        case .input2:
            let size = Int(try reader.load(at: Layout.Input2.size, for: "input2") as UInt16)
            self = .input2(data: try reader.bytes(at: Layout.Input2.data, count: size,
                                                  capacity: Layout.dataCapacity, for: "input2"))
        case .getReport:
            self = .getReport(id: try reader.load(at: Layout.GetReport.id, for: "get_report"),
                              reportNumber: try reader.load(at: Layout.GetReport.reportNumber, for: "get_report"),
                              reportType: try reader.load(at: Layout.GetReport.reportType, for: "get_report"))
        case .getReportReply:
            let size = Int(try reader.load(at: Layout.GetReportReply.size, for: "get_report_reply") as UInt16)
            self = .getReportReply(
                id: try reader.load(at: Layout.GetReportReply.id, for: "get_report_reply"),
                error: try reader.load(at: Layout.GetReportReply.error, for: "get_report_reply"),
                data: try reader.bytes(at: Layout.GetReportReply.data, count: size,
                                       capacity: Layout.dataCapacity, for: "get_report_reply"))
        case .setReport:
            let size = Int(try reader.load(at: Layout.SetReport.size, for: "set_report") as UInt16)
            self = .setReport(
                id: try reader.load(at: Layout.SetReport.id, for: "set_report"),
                reportNumber: try reader.load(at: Layout.SetReport.reportNumber, for: "set_report"),
                reportType: try reader.load(at: Layout.SetReport.reportType, for: "set_report"),
                data: try reader.bytes(at: Layout.SetReport.data, count: size,
                                       capacity: Layout.dataCapacity, for: "set_report"))
        case .setReportReply:
            self = .setReportReply(id: try reader.load(at: Layout.SetReportReply.id, for: "set_report_reply"),
                                   error: try reader.load(at: Layout.SetReportReply.error, for: "set_report_reply"))
        }
    }

    /// `text` with every Unicode scalar outside printable ASCII (0x20–0x7E)
    /// replaced by '?': the kernel and hidraw clients treat `uniq` as ASCII.
    static func asciiSanitized(_ text: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            result.append((0x20...0x7E).contains(scalar.value) ? scalar : "?")
        }
        return String(result)
    }
}

/// A zero-filled `struct uhid_event` being written, integers in host order.
private struct EventBytes {
    var bytes = [UInt8](repeating: 0, count: UHIDEventLayout.eventSize)

    mutating func store<Value: FixedWidthInteger>(_ value: Value, at offset: Int) {
        withUnsafeBytes(of: value) { raw in
            bytes.replaceSubrange(offset..<offset + raw.count, with: raw)
        }
    }

    mutating func storeBytes(_ data: ArraySlice<UInt8>, at offset: Int) {
        bytes.replaceSubrange(offset..<offset + data.count, with: data)
    }

    /// A NUL-terminated string in a field of `capacity` bytes: at most
    /// `capacity - 1` bytes of UTF-8, cut between characters; NUL → '?'.
    mutating func storeCString(_ text: String, at offset: Int, capacity: Int) {
        var utf8: [UInt8] = []
        for character in text {
            let encoded = character == "\0" ? [UInt8(ascii: "?")] : Array(character.utf8)
            if utf8.count + encoded.count > capacity - 1 { break }
            utf8 += encoded
        }
        storeBytes(utf8[...], at: offset)
    }
}

/// Bounds-checked reads from a received event; every failure is a thrown
/// EBADMSG naming the event type and the bytes it lacked.
private struct EventReader {
    let bytes: [UInt8]

    func load<Value: FixedWidthInteger>(at offset: Int, for type: String) throws(TransportError) -> Value {
        try require(offset + MemoryLayout<Value>.size, for: type)
        return bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: Value.self) }
    }

    func bytes(at offset: Int, count: Int, capacity: Int, for type: String) throws(TransportError) -> [UInt8] {
        guard count <= capacity else {
            throw TransportError.system(
                call: "read(uhid)", errno: EBADMSG,
                message: "uhid \(type) event claims \(count) bytes of data, more than its \(capacity)-byte array")
        }
        try require(offset + count, for: type)
        return Array(bytes[offset..<offset + count])
    }

    /// The text of a NUL-terminated field (all of it if unterminated),
    /// decoded as UTF-8 with invalid sequences repaired.
    func cString(at offset: Int, capacity: Int, for type: String) throws(TransportError) -> String {
        try require(offset + capacity, for: type)
        let field = bytes[offset..<offset + capacity]
        let text = field.prefix { $0 != 0 }
        return String(decoding: text, as: UTF8.self)
    }

    private func require(_ end: Int, for type: String) throws(TransportError) {
        guard bytes.count >= end else {
            throw TransportError.system(
                call: "read(uhid)", errno: EBADMSG,
                message: "uhid \(type) event is \(bytes.count) bytes, too short: its fields need \(end) bytes")
        }
    }
}
