import Glibc
import LinuxHID

/// Which device `probe` and `wink` talk to: the DEVICE argument — a path
/// (`/dev/hidraw3`), a node name (`hidraw3`) or a Latchkey key name (`main`:
/// the device whose uniq is `latchkey:main`) —, `--socket PATH`, or, with
/// neither, the only FIDO device there is.
public enum DeviceSelection: Equatable, Sendable {
    case hidraw(path: String, info: HIDDeviceInfo?)
    case socket(path: String)

    /// Why no device was chosen: `isUsageError` when the user must name one.
    public struct Problem: Error, Equatable, Sendable {
        public var message: String
        public var isUsageError: Bool
    }

    public var path: String {
        switch self {
        case .hidraw(let path, _), .socket(let path): path
        }
    }

    /// "/dev/hidraw3 (Latchkey main, 0x1209:0x4c4b)" or "socket /run/user/1000/latchkey.sock".
    public var label: String {
        switch self {
        case let .hidraw(path, info):
            guard let info else { return path }
            return "\(path) (\(info.displayName), \(info.vendorProduct))"
        case .socket(let path):
            return "socket \(path)"
        }
    }

    /// Chooses from `fidoDevices` (what the enumerator found).
    ///
    /// A Latchkey key name must be proven, not only claimed: any HID device can carry the uniq
    /// `latchkey:NAME`, and a command is about to send it a PIN or a ceremony. So exactly one
    /// device may claim the name, and it must have Latchkey's vendor and product ID, the phys
    /// `latchkey/uid=<uid>/NAME` that `serve` sets for the user running it (`uid`: this user),
    /// and a node that user owns (`nodeOwner`, from stat(2); udev/70-latchkey.rules gives it so).
    /// A path or node name is taken as given: naming it is the user's own check.
    public static func resolve(argument: String?, socket: String?, fidoDevices: [HIDDeviceInfo],
                               uid: UInt32 = getuid(),
                               nodeOwner: (String) -> UInt32? = DeviceSelection.nodeOwner) -> Result<DeviceSelection, Problem> {
        if let socket {
            guard argument == nil else {
                return .failure(Problem(message: "give either DEVICE or --socket PATH, not both", isUsageError: true))
            }
            return .success(.socket(path: socket))
        }
        guard let argument else {
            switch fidoDevices.count {
            case 0:
                return .failure(Problem(
                    message: "no FIDO devices found; plug a key in or start one (`latchkey serve`), "
                        + "or name a device: latchkey probe /dev/hidrawN (`latchkey devices --all` lists every hidraw node)",
                    isUsageError: false))
            case 1:
                return .success(.hidraw(path: fidoDevices[0].devicePath, info: fidoDevices[0]))
            default:
                return .failure(Problem(
                    message: "\(fidoDevices.count) FIDO devices found; name one: "
                        + fidoDevices.map { "\($0.devicePath) (\($0.displayName))" }.joined(separator: ", "),
                    isUsageError: true))
            }
        }
        if argument.hasPrefix("/") {
            return .success(.hidraw(path: argument, info: fidoDevices.first { $0.devicePath == argument }))
        }
        if argument.hasPrefix("hidraw"), argument.dropFirst(6).allSatisfy(\.isNumber), argument.count > 6 {
            let path = "/dev/" + argument
            return .success(.hidraw(path: path, info: fidoDevices.first { $0.devicePath == path }))
        }
        let claiming = fidoDevices.filter { $0.latchkeyName == argument }
        if claiming.count > 1 {
            return .failure(Problem(
                message: "\(claiming.count) devices claim to be the Latchkey key '\(argument)' ("
                    + claiming.map(\.devicePath).joined(separator: ", ") + "); not choosing between them: "
                    + "`latchkey devices` shows them, and a path (/dev/hidrawN) names the one you trust",
                isUsageError: false))
        }
        if let device = claiming.first {
            if let doubt = doubt(about: device, name: argument, uid: uid, nodeOwner: nodeOwner) {
                return .failure(Problem(
                    message: "\(device.devicePath) claims to be the Latchkey key '\(argument)', but \(doubt); nothing was sent to it "
                        + "(a path, \(device.devicePath), names it anyway if you trust it)",
                    isUsageError: false))
            }
            return .success(.hidraw(path: device.devicePath, info: device))
        }
        let known = fidoDevices.map { device in
            device.latchkeyName.map { "\($0) (\(device.devicePath))" } ?? device.devicePath
        }
        return .failure(Problem(
            message: "no device '\(argument)': give a path (/dev/hidrawN), a node name (hidrawN) or a Latchkey key name"
                + (known.isEmpty ? "; no FIDO devices are present" : "; present: " + known.joined(separator: ", ")),
            isUsageError: true))
    }

    /// Why `device` is not the key `name` this user runs, or nil when it is.
    static func doubt(about device: HIDDeviceInfo, name: String, uid: UInt32, nodeOwner: (String) -> UInt32?) -> String? {
        guard device.vendorID == 0x1209, device.productID == 0x4C4B else {
            return "its vendor:product is \(device.vendorProduct), not Latchkey's 0x1209:0x4c4b"
        }
        // The kernel keeps 63 bytes of phys; serve puts the uid first so that only the name is cut.
        let expected = String(decoding: Array("latchkey/uid=\(uid)/\(name)".utf8.prefix(63)), as: UTF8.self)
        guard let phys = device.phys, phys == expected else {
            let shown = String(String.UnicodeScalarView((device.phys ?? "").unicodeScalars.prefix(80).map {
                (0x20...0x7E).contains($0.value) ? $0 : "?"
            }))
            return "it is not run by you (its HID phys is '\(shown)', a key of yours says '\(expected)')"
        }
        guard let owner = nodeOwner(device.devicePath) else { return "its node cannot be looked at" }
        guard owner == uid else { return "its node belongs to uid \(owner), not to you (uid \(uid))" }
        return nil
    }

    /// The owner of a device node, or nil when stat(2) fails.
    public static func nodeOwner(_ path: String) -> UInt32? {
        var status = stat()
        return stat(path, &status) == 0 ? status.st_uid : nil
    }

    /// "hidraw" or "socket", for reports.
    public var transportName: String {
        if case .socket = self { return "socket" }
        return "hidraw"
    }

    /// Opens the chosen device as a report link.
    public func open() throws(TransportError) -> ClientReportTransport {
        switch self {
        case .hidraw(let path, _): return try HIDRawDevice.open(path: path)
        case .socket(let path): return try SocketClient(path: path)
        }
    }
}
