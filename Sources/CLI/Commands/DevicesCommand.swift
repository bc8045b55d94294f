import CredentialStore
import FIDOClient
import Foundation
import LinuxHID
import Encoding

/// `latchkey devices`: every FIDO HID device on this machine (hidraw nodes
/// whose report descriptor has usage page 0xF1D0), Latchkey's and others.
public enum DevicesCommand {
    public static let spec = CommandSpec(
        name: "devices",
        abstract: "List FIDO HID devices (hidraw nodes with usage page 0xF1D0), Latchkey keys marked.",
        options: [
            .init("json", help: "Print the list as JSON."),
            .init("all", help: "Also list hidraw devices that are not FIDO devices."),
        ])

    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 {
        let enumerator = HIDDeviceEnumerator()
        let devices = parsed.flag("all") ? enumerator.allDevices() : enumerator.fidoDevices()
        Console.out(render(devices, json: parsed.flag("json"), includesAll: parsed.flag("all")))
        return 0
    }

    /// The listing as text (one block per device) or JSON (`{"devices": [...]}`).
    public static func render(_ devices: [HIDDeviceInfo], json: Bool, includesAll: Bool = false,
                              environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if json {
            return JSONValue.object([("devices", .array(devices.map { self.json($0, environment: environment) }))]).rendered
        }
        guard !devices.isEmpty else {
            return includesAll
                ? "No hidraw devices found."
                : "No FIDO devices found (no hidraw node has a report descriptor with usage page 0xF1D0).\n"
                    + "A Latchkey key on uhid shows up here while `latchkey serve` runs; `latchkey doctor` checks the setup."
        }
        return devices.map { text($0, environment: environment) }.joined(separator: "\n\n")
    }

    static func text(_ device: HIDDeviceInfo, environment: [String: String]) -> String {
        var title = device.devicePath + "  " + device.displayName
        if !device.isFIDO { title += "  (not a FIDO device)" }
        var rows: [(String, String)] = []
        rows.append(("vendor:product", device.vendorProduct + (device.busType.map { "  (bus \(busName($0)))" } ?? "")))
        if let name = device.name { rows.append(("HID name", name)) }
        if device.manufacturer != nil || device.product != nil {
            rows.append(("USB strings", [device.manufacturer, device.product].compactMap { $0 }.joined(separator: " / ")))
        }
        if let serial = device.serialNumber { rows.append(("USB serial", serial)) }
        rows.append(("uniq", device.uniq ?? "(none)"))
        if let name = device.latchkeyName {
            let store = StoreLocation.directory(explicit: nil, name: name, environment: environment)
            rows.append(("Latchkey key", "\"\(name)\", store \(store) (unless it runs with --store)"))
        }
        if let descriptor = device.reportDescriptor {
            let pages = descriptor.usagePages.map { String(format: "0x%04X", $0) }.joined(separator: ", ")
            rows.append(("usage pages", pages.isEmpty ? "(none)" : pages))
        } else if let problem = device.descriptorProblem {
            rows.append(("descriptor", problem))
        }
        rows.append(("access", device.isAccessible
            ? "read/write for this user"
            : "no read/write permission for this user (see `latchkey doctor`)"))
        let width = (rows.map(\.0.count).max() ?? 0) + 2
        return ([title] + rows.map { "  " + $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + $0.1 })
            .joined(separator: "\n")
    }

    static func json(_ device: HIDDeviceInfo, environment: [String: String]) -> JSONValue {
        var latchkey = JSONValue.null
        if let name = device.latchkeyName {
            latchkey = .object([
                ("name", .string(name)),
                ("defaultStoreDirectory", .string(StoreLocation.directory(explicit: nil, name: name, environment: environment))),
            ])
        }
        return .object([
            ("path", .string(device.devicePath)),
            ("sysfsPath", .string(device.sysfsPath)),
            ("bus", .optional(device.busType.map { Int($0) })),
            ("vendorId", .optional(device.vendorID.map { Int($0) })),
            ("productId", .optional(device.productID.map { Int($0) })),
            ("hidName", .optional(device.name)),
            ("manufacturer", .optional(device.manufacturer)),
            ("product", .optional(device.product)),
            ("serialNumber", .optional(device.serialNumber)),
            ("uniq", .optional(device.uniq)),
            ("isFido", .bool(device.isFIDO)),
            ("usagePages", .array((device.reportDescriptor?.usagePages ?? []).map { .int(Int($0)) })),
            ("descriptorProblem", .optional(device.descriptorProblem)),
            ("isLatchkey", .bool(latchkey != .null)),
            ("latchkey", latchkey),
            ("accessible", .bool(device.isAccessible)),
        ])
    }

    static func busName(_ bus: UInt16) -> String {
        switch bus {
        case 0x03: "USB"
        case 0x05: "Bluetooth"
        case 0x06: "virtual"
        case 0x18: "I2C"
        default: String(format: "0x%04x", bus)
        }
    }
}
