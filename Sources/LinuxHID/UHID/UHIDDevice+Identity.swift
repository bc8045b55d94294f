import Glibc

extension UHIDDevice {
    /// How the device presents itself in UHID_CREATE2: what `lsusb`-like
    /// tools, udev rules and browsers' device lists see.
    public struct Identity: Sendable, Equatable {
        /// Product name (at most 127 bytes of UTF-8 reach the kernel).
        public var name: String
        public var vendorID: UInt32
        public var productID: UInt32
        public var version: UInt32
        /// HID country code (0: not localised).
        public var country: UInt32
        /// Serial-like unique string; ASCII only: anything else is replaced
        /// by '?' when set (at most 63 bytes reach the kernel).
        public var uniq: String {
            didSet { uniq = UHIDEvent.asciiSanitized(uniq) }
        }
        /// Physical location string (at most 63 bytes reach the kernel).
        public var phys: String

        public init(name: String, vendorID: UInt32, productID: UInt32, version: UInt32 = 0,
                    country: UInt32 = 0, uniq: String = "", phys: String = "") {
            self.name = name
            self.vendorID = vendorID
            self.productID = productID
            self.version = version
            self.country = country
            self.uniq = UHIDEvent.asciiSanitized(uniq)
            self.phys = phys
        }
    }
}

extension UHIDDevice.Identity {
    /// A Latchkey key's identity: a stable vendor/product ID (pid.codes 0x1209:0x4C4B), an
    /// ASCII uniq `latchkey:<name>` by which `HIDDeviceInfo.latchkeyName` finds it again, and a
    /// phys `latchkey/uid=<uid>/<name>` naming the user who runs it: udev/70-latchkey.rules gives
    /// that user (and root) the hidraw node, and nobody else — not group latchkey, not the seat.
    /// The uid comes first: the kernel keeps 63 bytes of phys, so a long name is what gets cut.
    public static func latchkey(name: String, uid: UInt32 = getuid()) -> UHIDDevice.Identity {
        UHIDDevice.Identity(name: "Latchkey \(name)", vendorID: 0x1209, productID: 0x4C4B, version: 0x0100,
                            country: 0, uniq: HIDDeviceInfo.latchkeyUniqPrefix + name, phys: "latchkey/uid=\(uid)/\(name)")
    }
}
