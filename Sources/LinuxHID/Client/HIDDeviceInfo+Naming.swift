/// How a device is named to a person, and which Latchkey key it is.
extension HIDDeviceInfo {
    /// The HID uniq of a Latchkey key: `latchkey:<name>` (`UHIDDevice.Identity.latchkey`).
    public static let latchkeyUniqPrefix = "latchkey:"

    /// The Latchkey key behind this device, from its uniq; nil for any other device.
    public var latchkeyName: String? {
        guard let uniq, uniq.hasPrefix(Self.latchkeyUniqPrefix) else { return nil }
        return String(uniq.dropFirst(Self.latchkeyUniqPrefix.count))
    }

    /// "Latchkey main", the USB manufacturer and product strings, or the HID name.
    public var displayName: String {
        if let product {
            return [manufacturer, product].compactMap { $0 }.joined(separator: " ")
        }
        return name ?? "(unnamed)"
    }

    /// "0x1209:0x4c4b", or "unknown" without HID_ID.
    public var vendorProduct: String {
        guard let vendorID, let productID else { return "unknown" }
        return "0x" + Self.hex4(vendorID) + ":0x" + Self.hex4(productID)
    }

    private static func hex4<N: BinaryInteger>(_ value: N) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
