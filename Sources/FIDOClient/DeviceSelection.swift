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
    public static func resolve(argument: String?, socket: String?,
                               fidoDevices: [HIDDeviceInfo]) -> Result<DeviceSelection, Problem> {
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
        if let device = fidoDevices.first(where: { $0.latchkeyName == argument }) {
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
