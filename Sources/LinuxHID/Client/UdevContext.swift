import CUdev
import Glibc
import SystemIO

/// libudev's library context (`struct udev`). Owns one reference, dropped in
/// `deinit`; enumerations and devices made from it keep it alive.
final class UdevContext {
    let pointer: OpaquePointer

    init() throws(TransportError) {
        guard let pointer = udev_new() else {
            throw .system(call: "udev_new", errno: errno,
                          message: "libudev could not start (udev_new failed: \(Errno.current))")
        }
        self.pointer = pointer
    }

    deinit {
        udev_unref(pointer)
    }

    /// The one check of libudev's return codes: 0 or more is success, a
    /// negative value is −errno.
    static func check(_ result: Int32, call: String) throws(TransportError) {
        guard result < 0 else { return }
        let error = Errno(rawValue: -result)
        throw .system(call: call, errno: error.rawValue, message: "\(call) failed: \(error)")
    }
}
