import Glibc
import SystemIO

/// Finds hidraw devices and what they are (`latchkey devices`, `probe`'s
/// default device, `doctor`).
///
/// In production the facts come from libudev (`.udev`): the hidraw devices'
/// HID parents' `HID_*` properties and USB parents' strings; libudev reads
/// them from sysfs, so this works without a running udevd (the VM rig). Tests
/// point `.sysfs(root:)` at a fake tree laid out like `/sys` — libudev cannot
/// be pointed elsewhere —, and the production code falls back to walking
/// `/sys` itself if libudev cannot start. Both paths build their records with
/// the same `HIDDeviceInfo.init(devicePath:sysfsPath:hidProperties:…)`.
public struct HIDDeviceEnumerator: Sendable {
    public enum Source: Sendable, Equatable {
        /// libudev over the real /sys.
        case udev
        /// A directory laid out like /sys: `ROOT/class/hidraw/hidrawN/device/{uevent,report_descriptor}`,
        /// `ROOT/class/hidraw/hidrawN/uevent` (DEVNAME), USB parents above the HID device's real path.
        case sysfs(root: String)
    }

    public var source: Source
    /// Where device nodes live when sysfs names them (DEVNAME relative to /dev).
    public var deviceDirectory: String
    /// Whether the current user may open a node read-write.
    public var isAccessible: @Sendable (String) -> Bool

    public init(source: Source = .udev, deviceDirectory: String = "/dev",
                isAccessible: @escaping @Sendable (String) -> Bool = { access($0, R_OK | W_OK) == 0 }) {
        self.source = source
        self.deviceDirectory = deviceDirectory
        self.isAccessible = isAccessible
    }

    /// Every hidraw device, ordered by node number (hidraw0, hidraw1, …, hidraw10).
    /// A machine without hidraw devices (or without /sys/class/hidraw) gives [].
    public func allDevices() -> [HIDDeviceInfo] {
        let devices: [HIDDeviceInfo]
        switch source {
        case .udev:
            do {
                devices = try udevDevices()
            } catch {
                devices = sysfsDevices(root: "/sys")
            }
        case .sysfs(let root):
            devices = sysfsDevices(root: root)
        }
        return devices.sorted { Self.nodeOrder($0.devicePath, $1.devicePath) }
    }

    /// The FIDO devices among `allDevices()` (usage page 0xF1D0, usage 0x01).
    public func fidoDevices() -> [HIDDeviceInfo] {
        allDevices().filter(\.isFIDO)
    }

    // MARK: libudev

    private func udevDevices() throws(TransportError) -> [HIDDeviceInfo] {
        let context = try UdevContext()
        let enumeration = try UdevEnumerate(context: context)
        try enumeration.matchSubsystem("hidraw")
        try enumeration.scanDevices()
        var devices: [HIDDeviceInfo] = []
        for syspath in enumeration.syspaths {
            guard let hidraw = UdevDevice(context: context, syspath: syspath) else { continue }
            let node = hidraw.devnode ?? deviceDirectory + "/" + (hidraw.sysname ?? Self.lastComponent(syspath))
            var properties: [String: String] = [:]
            var descriptor: [UInt8]?
            if let hid = hidraw.parent(subsystem: "hid") {
                for key in ["HID_ID", "HID_NAME", "HID_UNIQ", "HID_PHYS"] {
                    properties[key] = hid.property(key)
                }
                if let hidPath = hid.syspath {
                    descriptor = SysfsFile.bytes(at: hidPath + "/report_descriptor",
                                                 limit: HIDReportDescriptor.maximumSize + 1)
                }
            }
            var usbStrings: [String: String] = [:]
            if let usb = hidraw.parent(subsystem: "usb", devtype: "usb_device") {
                for attribute in ["manufacturer", "product", "serial"] {
                    usbStrings[attribute] = usb.attribute(attribute)
                }
            }
            devices.append(HIDDeviceInfo(devicePath: node, sysfsPath: syspath, hidProperties: properties,
                                         descriptorBytes: descriptor, usbStrings: usbStrings,
                                         isAccessible: isAccessible(node)))
        }
        return devices
    }

    // MARK: sysfs

    private func sysfsDevices(root: String) -> [HIDDeviceInfo] {
        let classDirectory = root + "/class/hidraw"
        var devices: [HIDDeviceInfo] = []
        for name in SysfsFile.directoryEntries(classDirectory) where name.hasPrefix("hidraw") {
            let classPath = classDirectory + "/" + name
            let devname = SysfsFile.text(at: classPath + "/uevent")
                .flatMap { HIDDeviceInfo.parseUevent($0)["DEVNAME"] } ?? name
            let node = devname.hasPrefix("/") ? devname : deviceDirectory + "/" + devname
            let hidPath = SysfsFile.resolved(classPath + "/device") ?? classPath + "/device"
            let properties = SysfsFile.text(at: hidPath + "/uevent").map(HIDDeviceInfo.parseUevent) ?? [:]
            let descriptor = SysfsFile.bytes(at: hidPath + "/report_descriptor",
                                             limit: HIDReportDescriptor.maximumSize + 1)
            var usbStrings: [String: String] = [:]
            if let usbPath = Self.usbDeviceAncestor(of: hidPath, root: root) {
                for attribute in ["manufacturer", "product", "serial"] {
                    usbStrings[attribute] = SysfsFile.text(at: usbPath + "/" + attribute)
                }
            }
            devices.append(HIDDeviceInfo(devicePath: node, sysfsPath: SysfsFile.resolved(classPath) ?? classPath,
                                         hidProperties: properties, descriptorBytes: descriptor,
                                         usbStrings: usbStrings, isAccessible: isAccessible(node)))
        }
        return devices
    }

    /// The nearest directory above `path` (inside `root`) that is a USB device:
    /// its uevent says DEVTYPE=usb_device.
    static func usbDeviceAncestor(of path: String, root: String) -> String? {
        var current = path
        let resolvedRoot = SysfsFile.resolved(root) ?? root
        while let slash = current.lastIndex(of: "/"), slash != current.startIndex {
            current = String(current[..<slash])
            guard current.hasPrefix(resolvedRoot) || current.hasPrefix(root) else { return nil }
            if let uevent = SysfsFile.text(at: current + "/uevent"),
               HIDDeviceInfo.parseUevent(uevent)["DEVTYPE"] == "usb_device" {
                return current
            }
        }
        return nil
    }

    /// hidraw2 before hidraw10: by the number at the end of the path, then by path.
    static func nodeOrder(_ a: String, _ b: String) -> Bool {
        let numberA = trailingNumber(a), numberB = trailingNumber(b)
        if numberA != numberB { return (numberA ?? Int.max) < (numberB ?? Int.max) }
        return a < b
    }

    private static func trailingNumber(_ path: String) -> Int? {
        let digits = path.reversed().prefix(while: { $0.isASCII && $0.isNumber })
        return digits.isEmpty ? nil : Int(String(digits.reversed()))
    }

    private static func lastComponent(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}

/// Small, bounded reads of sysfs (and fake sysfs) files and directories.
enum SysfsFile {
    /// At most `limit` bytes of the file, or nil if it cannot be read.
    static func bytes(at path: String, limit: Int = 65_536) -> [UInt8]? {
        guard let file = try? FileDescriptor.open(path, flags: O_RDONLY | O_CLOEXEC) else { return nil }
        var contents: [UInt8] = []
        while contents.count < limit {
            guard let chunk = try? file.read(upToCount: min(4096, limit - contents.count)) else { return nil }
            if chunk.isEmpty { break }
            contents += chunk
        }
        return contents
    }

    /// The file as UTF-8 text (invalid bytes repaired), or nil if it cannot be read.
    static func text(at path: String, limit: Int = 65_536) -> String? {
        bytes(at: path, limit: limit).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Names in a directory (without "." and ".."), sorted; [] if it cannot be read.
    static func directoryEntries(_ path: String) -> [String] {
        ((try? FileSystem.entries(path)) ?? []).sorted()
    }

    /// realpath(3): symbolic links resolved, or nil if the path does not exist.
    static func resolved(_ path: String) -> String? {
        guard let result = realpath(path, nil) else { return nil }
        defer { free(result) }
        return String(cString: result)
    }
}
