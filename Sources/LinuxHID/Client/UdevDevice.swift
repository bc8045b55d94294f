import CUdev

/// One libudev device (`struct udev_device`). Owns one reference, dropped in
/// `deinit` — also for a parent, which libudev hands out borrowed from its
/// child: `parent(subsystem:devtype:)` takes its own reference, so a parent
/// outlives the child it came from.
final class UdevDevice {
    let context: UdevContext
    private let pointer: OpaquePointer

    /// The device at `syspath`, or nil if sysfs has no such device (gone since the scan).
    init?(context: UdevContext, syspath: String) {
        guard let pointer = udev_device_new_from_syspath(context.pointer, syspath) else { return nil }
        self.context = context
        self.pointer = pointer
    }

    /// Takes a new reference on a device libudev lent us.
    private init(context: UdevContext, retaining borrowed: OpaquePointer) {
        self.context = context
        self.pointer = udev_device_ref(borrowed)
    }

    deinit {
        udev_device_unref(pointer)
    }

    var syspath: String? { string(udev_device_get_syspath(pointer)) }
    var sysname: String? { string(udev_device_get_sysname(pointer)) }
    /// The /dev node (from DEVNAME in the uevent file; no udevd needed).
    var devnode: String? { string(udev_device_get_devnode(pointer)) }

    /// A property (uevent or udev database), e.g. `HID_ID` on a HID device.
    func property(_ key: String) -> String? {
        string(udev_device_get_property_value(pointer, key))
    }

    /// A sysfs attribute, e.g. `manufacturer` on a USB device.
    func attribute(_ name: String) -> String? {
        string(udev_device_get_sysattr_value(pointer, name))
    }

    /// The closest ancestor in `subsystem` (and `devtype`, if given).
    func parent(subsystem: String, devtype: String? = nil) -> UdevDevice? {
        let borrowed: OpaquePointer?
        if let devtype {
            borrowed = udev_device_get_parent_with_subsystem_devtype(pointer, subsystem, devtype)
        } else {
            borrowed = udev_device_get_parent_with_subsystem_devtype(pointer, subsystem, nil)
        }
        guard let borrowed else { return nil }
        return UdevDevice(context: context, retaining: borrowed)
    }

    private func string(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }
}
