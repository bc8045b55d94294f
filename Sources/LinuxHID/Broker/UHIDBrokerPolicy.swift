/// What the uhid broker lets a key do with /dev/uhid on its behalf (docs/uhid-broker.md), with
/// no I/O: the broker (`UHIDBroker`) asks these rules about every event a client sends.
///
/// The kernel records nobody as a uhid device's creator, so whoever opens /dev/uhid may create a
/// device that claims any user in its HID phys — and udev/70-latchkey.rules gives its hidraw
/// node to that user. The broker runs as root and stamps the phys itself, from the connecting
/// process's SO_PEERCRED uid: a client chooses only its key's name. Everything else of the
/// device is Latchkey's and fixed (the FIDO report descriptor, USB, 1209:4C4B), so the broker
/// cannot be used to make a keyboard. After the create, a client may send only what a key
/// sends: input reports and replies to the kernel's get/set-report requests — never a second
/// create or a destroy (it hangs up instead, and the device goes with its connection).
public enum UHIDBrokerPolicy {
    /// Why a client's event was refused; the broker closes that client's connection.
    public struct Refusal: Error, Equatable, Sendable {
        public var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// A key name the broker accepts: what `serve --name` accepts, and short enough that the
    /// stamped phys (`latchkey/uid=4294967295/NAME`, 63 bytes kept) holds it whole.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...32).contains(bytes.count), bytes.first != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
    }

    /// Whether a connecting uid may have keys: any but the subordinate uids of /etc/subuid (a
    /// rootless container's users, 100000 and up on Debian): one person owns thousands of them,
    /// and each would get its own share of the broker's bounds. Directory users (sssd, LDAP,
    /// systemd-homed) have uids of their own, outside those ranges, and are served.
    public static func admits(uid: UInt32, subordinate ranges: [ClosedRange<UInt32>]) -> Bool {
        !ranges.contains { $0.contains(uid) }
    }

    /// The ranges of /etc/subuid's text (`user:start:count` a line); malformed lines are skipped.
    public static func subordinateRanges(subuid: String) -> [ClosedRange<UInt32>] {
        subuid.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 3, let start = UInt32(fields[1]), let count = UInt32(fields[2]), count > 0,
                  start <= UInt32.max - (count - 1) else { return nil }
            return start...(start + (count - 1))
        }
    }

    /// The UHID_CREATE2 the broker writes for a client running as `uid`, from the client's first
    /// event, and the key's name. The client's event must be a CREATE2 of Latchkey's device
    /// (`UHIDDevice.Identity.latchkey`: its descriptor, bus, IDs and a uniq `latchkey:NAME`);
    /// the name, HID name and phys written are the broker's, made from NAME and `uid`.
    public static func create(from bytes: [UInt8], uid: UInt32) throws(Refusal) -> (event: [UInt8], name: String) {
        let event: UHIDEvent
        do {
            event = try UHIDEvent(decoding: bytes)
        } catch {
            throw Refusal("the first event is malformed (\(bytes.count) bytes)")
        }
        guard case let .create2(_, _, uniq, bus, vendor, product, _, _, descriptor) = event else {
            throw Refusal("the first event must be UHID_CREATE2, not \(describe(event))")
        }
        guard bus == UHIDEventLayout.busUSB, vendor == 0x1209, product == 0x4C4B else {
            throw Refusal("only Latchkey's device (USB 1209:4C4B) is created, not bus \(bus) \(hex(vendor)):\(hex(product))")
        }
        guard descriptor == UHIDDevice.fidoReportDescriptor else {
            throw Refusal("only the FIDO report descriptor is accepted (\(descriptor.count) other bytes given)")
        }
        guard uniq.hasPrefix(HIDDeviceInfo.latchkeyUniqPrefix) else {
            throw Refusal("the uniq must be latchkey:NAME")
        }
        let name = String(uniq.dropFirst(HIDDeviceInfo.latchkeyUniqPrefix.count))
        guard isValidName(name) else {
            throw Refusal("the key name must be 1 to 32 letters, digits, '-', '_' or '.' (not starting with '.')")
        }
        // Every field but the name is Latchkey's own, the device version and country too.
        let identity = UHIDDevice.Identity.latchkey(name: name, uid: uid)
        let stamped = UHIDEvent.create2(name: identity.name, phys: identity.phys, uniq: identity.uniq,
                                        bus: UHIDEventLayout.busUSB, vendor: identity.vendorID, product: identity.productID,
                                        version: identity.version, country: identity.country,
                                        descriptor: UHIDDevice.fidoReportDescriptor)
        return (stamped.encoded(), name)
    }

    /// A later event of the client, as the broker writes it to the kernel: re-encoded from what
    /// was decoded (so nothing rides along in bytes the decoder did not read). Only UHID_INPUT2
    /// and the two report replies pass.
    public static func relay(_ bytes: [UInt8]) throws(Refusal) -> [UInt8] {
        let event: UHIDEvent
        do {
            event = try UHIDEvent(decoding: bytes)
        } catch {
            throw Refusal("a malformed event (\(bytes.count) bytes)")
        }
        switch event {
        case .input2, .getReportReply, .setReportReply:
            return event.encoded()
        default:
            throw Refusal("\(describe(event)) is not for a client to send (input reports and report replies only)")
        }
    }

    static func describe(_ event: UHIDEvent) -> String {
        switch event {
        case .create2: "UHID_CREATE2"
        case .destroy: "UHID_DESTROY"
        case .start: "UHID_START"
        case .stop: "UHID_STOP"
        case .open: "UHID_OPEN"
        case .close: "UHID_CLOSE"
        case .output: "UHID_OUTPUT"
        case .input2: "UHID_INPUT2"
        case .getReport: "UHID_GET_REPORT"
        case .getReportReply: "UHID_GET_REPORT_REPLY"
        case .setReport: "UHID_SET_REPORT"
        case .setReportReply: "UHID_SET_REPORT_REPLY"
        case .unknown(let type): "event type \(type)"
        }
    }

    static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
