import CUdev

/// A libudev device enumeration (`struct udev_enumerate`): a filtered scan of
/// sysfs. Owns one reference, dropped in `deinit`.
final class UdevEnumerate {
    let context: UdevContext
    private let pointer: OpaquePointer

    init(context: UdevContext) throws(TransportError) {
        guard let pointer = udev_enumerate_new(context.pointer) else {
            throw .system(call: "udev_enumerate_new", errno: 12,
                          message: "libudev could not start an enumeration (out of memory)")
        }
        self.context = context
        self.pointer = pointer
    }

    deinit {
        udev_enumerate_unref(pointer)
    }

    func matchSubsystem(_ subsystem: String) throws(TransportError) {
        try UdevContext.check(udev_enumerate_add_match_subsystem(pointer, subsystem),
                              call: "udev_enumerate_add_match_subsystem")
    }

    func scanDevices() throws(TransportError) {
        try UdevContext.check(udev_enumerate_scan_devices(pointer), call: "udev_enumerate_scan_devices")
    }

    /// The sysfs paths the scan found, in libudev's order (sorted by path).
    var syspaths: [String] {
        var paths: [String] = []
        var entry = udev_enumerate_get_list_entry(pointer)
        while let current = entry {
            if let name = udev_list_entry_get_name(current) {
                paths.append(String(cString: name))
            }
            entry = udev_list_entry_get_next(current)
        }
        return paths
    }
}
