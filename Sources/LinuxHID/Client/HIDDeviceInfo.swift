/// One hidraw device as `latchkey devices` shows it: where its node is, what
/// the HID core says about it (the `HID_*` properties of its HID parent),
/// what its USB parent says (real USB keys only: a uhid device has no USB
/// parent), and what its report descriptor declares.
///
/// Built the same way whether the facts came from libudev or from walking
/// sysfs (`HIDDeviceInfo.init(devicePath:sysfsPath:hidProperties:…)`).
public struct HIDDeviceInfo: Sendable, Equatable {
    /// The node clients open, e.g. `/dev/hidraw3`.
    public var devicePath: String
    /// The hidraw device in sysfs, e.g. `/sys/devices/virtual/misc/uhid/0003:1209:4C4B.0001/hidraw/hidraw3`.
    public var sysfsPath: String
    /// From `HID_ID` (`BUS:VENDOR:PRODUCT`, hex): bus 0x0003 is USB, 0x0005 Bluetooth.
    public var busType: UInt16?
    public var vendorID: UInt32?
    public var productID: UInt32?
    /// `HID_NAME`: the product name the HID core was given.
    public var name: String?
    /// `HID_UNIQ`: serial-like unique string (Latchkey: `latchkey:<key name>`); nil if empty.
    public var uniq: String?
    /// `HID_PHYS`; nil if empty.
    public var phys: String?
    /// The USB device's string descriptors, where there is a USB parent.
    public var manufacturer: String?
    public var product: String?
    public var serialNumber: String?
    /// The parsed report descriptor, or nil with `descriptorProblem` saying why.
    public var reportDescriptor: HIDReportDescriptor?
    public var descriptorProblem: String?
    /// Whether the current user may open the node read-write (access(2) R_OK|W_OK).
    public var isAccessible: Bool

    /// Usage page 0xF1D0, usage 0x01 on a top-level collection.
    public var isFIDO: Bool { reportDescriptor?.isFIDO ?? false }

    public init(devicePath: String, sysfsPath: String, busType: UInt16? = nil, vendorID: UInt32? = nil,
                productID: UInt32? = nil, name: String? = nil, uniq: String? = nil, phys: String? = nil,
                manufacturer: String? = nil, product: String? = nil, serialNumber: String? = nil,
                reportDescriptor: HIDReportDescriptor? = nil, descriptorProblem: String? = nil,
                isAccessible: Bool) {
        self.devicePath = devicePath; self.sysfsPath = sysfsPath; self.busType = busType
        self.vendorID = vendorID; self.productID = productID; self.name = name; self.uniq = uniq
        self.phys = phys; self.manufacturer = manufacturer; self.product = product
        self.serialNumber = serialNumber; self.reportDescriptor = reportDescriptor
        self.descriptorProblem = descriptorProblem; self.isAccessible = isAccessible
    }

    /// The one place raw facts become a record: `hidProperties` are the HID
    /// parent's uevent properties (`HID_ID`, `HID_NAME`, `HID_UNIQ`, `HID_PHYS`),
    /// `descriptorBytes` the contents of its `report_descriptor` (nil: unreadable),
    /// `usbStrings` the USB parent's `manufacturer`, `product`, `serial` attributes.
    public init(devicePath: String, sysfsPath: String, hidProperties: [String: String],
                descriptorBytes: [UInt8]?, usbStrings: [String: String], isAccessible: Bool) {
        self.init(devicePath: devicePath, sysfsPath: sysfsPath, isAccessible: isAccessible)
        if let id = hidProperties["HID_ID"], let parsed = Self.parseHIDID(id) {
            busType = parsed.bus
            vendorID = parsed.vendor
            productID = parsed.product
        }
        name = Self.nonEmpty(hidProperties["HID_NAME"])
        uniq = Self.nonEmpty(hidProperties["HID_UNIQ"])
        phys = Self.nonEmpty(hidProperties["HID_PHYS"])
        manufacturer = Self.nonEmpty(usbStrings["manufacturer"])
        product = Self.nonEmpty(usbStrings["product"])
        serialNumber = Self.nonEmpty(usbStrings["serial"])
        if let descriptorBytes {
            do {
                reportDescriptor = try HIDReportDescriptor(bytes: descriptorBytes)
            } catch {
                descriptorProblem = error.description
            }
        } else {
            descriptorProblem = "the report descriptor could not be read"
        }
    }

    /// `HID_ID=0003:00001209:00004C4B` → (bus 0x0003, vendor 0x1209, product 0x4C4B).
    public static func parseHIDID(_ text: String) -> (bus: UInt16, vendor: UInt32, product: UInt32)? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.count <= 8 }),
              let bus = UInt16(parts[0], radix: 16),
              let vendor = UInt32(parts[1], radix: 16),
              let product = UInt32(parts[2], radix: 16) else { return nil }
        return (bus, vendor, product)
    }

    /// A uevent file (`KEY=value` per line) as a dictionary; other lines are skipped.
    public static func parseUevent(_ text: String) -> [String: String] {
        var properties: [String: String] = [:]
        for line in text.split(whereSeparator: { $0 == "\n" }) {
            guard let equals = line.firstIndex(of: "="), equals != line.startIndex else { continue }
            properties[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return properties
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text else { return nil }
        let trimmed = text.trimmingWhitespace()
        return trimmed.isEmpty ? nil : trimmed
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and newlines (sysfs attributes end in "\n").
    func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }),
              let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
