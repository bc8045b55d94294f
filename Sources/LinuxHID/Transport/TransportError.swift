import Glibc
import SystemIO
import SystemIO

/// Errors of the LinuxHID layer. `description` is a sentence for the user
/// that says what to do about it.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// ENOENT/ENODEV/ENXIO opening the uhid node: the module is not loaded.
    case uhidUnavailable(path: String)
    /// EACCES/EPERM opening or creating `path`.
    case permissionDenied(path: String)
    /// A live key (or another program) already listens on this socket path.
    case socketInUse(path: String)
    /// Any other failure of `call`; `message` is a human sentence.
    case system(call: String, errno: Int32, message: String)

    public var description: String {
        switch self {
        case .uhidUnavailable(let path):
            return "Cannot open \(path): the uhid kernel module is not loaded (or this kernel has no uhid). "
                + "Load it with `sudo modprobe uhid` (to load it at every boot: `echo uhid | sudo tee /etc/modules-load.d/uhid.conf`), "
                + "make sure Latchkey's udev rule is installed (the package installs it; from a checkout, scripts/install) "
                + "so that your user may open it, "
                + "or run the key without uhid: `latchkey serve --transport socket:PATH`."
        case .permissionDenied(let path):
            if path.hasSuffix("uhid") {
                return "Permission denied opening \(path), and no uhid broker listens on \(UHIDDevice.brokerPath). "
                    + "With the package, start the broker: `sudo systemctl enable --now latchkey-uhid-broker.socket` "
                    + "(docs/uhid-broker.md); from a checkout, scripts/install lets group latchkey open it "
                    + "(then log out and in). `latchkey doctor` says what is missing. Or run the key without uhid: "
                    + "`latchkey serve --transport socket:PATH`."
            }
            return "Permission denied for \(path). Choose a path in a directory you can write "
                + "(for example under $XDG_RUNTIME_DIR), or fix the permissions of the existing file."
        case .socketInUse(let path):
            return "Another key is already listening on \(path). Stop it first, or choose another path with `--transport socket:PATH`."
        case .system(let call, let errno, let message):
            return "\(message) (\(call), errno \(errno))"
        }
    }
}

extension TransportError {
    /// The one mapping from a failed system call to this layer's error:
    /// EACCES/EPERM on a path become `.permissionDenied`, everything else
    /// `.system` with the call, the path and `hint` (what to do) spelled out.
    public init(_ error: Errno, call: String, path: String? = nil, hint: String? = nil) {
        if let path, error == .permissionDenied || error == .notPermitted {
            self = .permissionDenied(path: path)
            return
        }
        var message = "\(call) failed"
        if let path { message += " for \(path)" }
        message += ": \(error)"
        if let hint { message += "; \(hint)" }
        self = .system(call: call, errno: error.rawValue, message: message)
    }
}

extension TransportError {
    /// A socket path that `UnixSocketAddress` refused, in words that say what to do.
    static func socketPath(_ path: String, _ error: Errno) -> TransportError {
        if error == .nameTooLong {
            return .system(
                call: "bind", errno: ENAMETOOLONG,
                message: "the socket path \"\(path)\" is \(path.utf8.count) bytes long, but UNIX socket paths are limited to \(UnixSocketAddress.maximumPathLength) bytes (sun_path); choose a shorter path, e.g. under $XDG_RUNTIME_DIR or /tmp")
        }
        return .system(
            call: "bind", errno: EINVAL,
            message: "the socket path \"\(path)\" is empty or contains a NUL byte; give a filesystem path such as $XDG_RUNTIME_DIR/latchkey.sock")
    }

    /// Waiting on descriptors failed (poll(2)).
    static func poll(_ error: Errno) -> TransportError { TransportError(error, call: "poll") }
}
