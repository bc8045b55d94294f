import Foundation
import LinuxHID
import XCTest

/// A fake /sys in a temp directory, laid out as the kernel does it: the class
/// link `class/hidraw/hidrawN` points at the hidraw device under `devices/`,
/// whose `device` link is the HID device (uevent with HID_*, report_descriptor);
/// real USB keys have a USB device (DEVTYPE=usb_device, string attributes) above.
struct FakeSysfs {
    let root: String

    /// A uhid device, as Latchkey creates it (no USB parent).
    func addUHIDDevice(node: Int, sequence: Int, name: String, uniq: String,
                       descriptor: [UInt8] = UHIDDevice.fidoReportDescriptor) throws {
        let hid = "devices/virtual/misc/uhid/0003:1209:4C4B.\(String(format: "%04X", sequence))"
        try addHID(at: hid, node: node, uevent: """
            DRIVER=hid-generic
            HID_ID=0003:00001209:00004C4B
            HID_NAME=\(name)
            HID_PHYS=latchkey/x
            HID_UNIQ=\(uniq)
            MODALIAS=hid:b0003g0001v00001209p00004C4B
            """, descriptor: descriptor)
    }

    /// A USB key: the HID device sits under a USB interface under a USB device.
    func addUSBDevice(node: Int, vendor: String, product: String, manufacturerString: String,
                      productString: String, serial: String?, descriptor: [UInt8]) throws {
        let usb = "devices/pci0000:00/0000:00:14.0/usb1/1-\(node + 2)"
        try write(usb + "/uevent", "MAJOR=189\nMINOR=3\nDEVNAME=bus/usb/001/004\nDEVTYPE=usb_device\n")
        try write(usb + "/manufacturer", manufacturerString + "\n")
        try write(usb + "/product", productString + "\n")
        if let serial { try write(usb + "/serial", serial + "\n") }
        let interface = usb + "/1-\(node + 2):1.0"
        try write(interface + "/uevent", "DEVTYPE=usb_interface\nDRIVER=usbhid\n")
        try addHID(at: interface + "/0003:\(vendor):\(product).00\(node)", node: node, uevent: """
            DRIVER=hid-generic
            HID_ID=0003:0000\(vendor):0000\(product)
            HID_NAME=\(manufacturerString) \(productString)
            HID_PHYS=usb-0000:00:14.0-\(node + 2)/input0
            HID_UNIQ=
            """, descriptor: descriptor)
    }

    func addHID(at hid: String, node: Int, uevent: String, descriptor: [UInt8]?) throws {
        try write(hid + "/uevent", uevent + "\n")
        if let descriptor {
            try FileManager.default.createDirectory(atPath: root + "/" + hid, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: root + "/" + hid + "/report_descriptor", contents: Data(descriptor))
        }
        let hidraw = hid + "/hidraw/hidraw\(node)"
        try write(hidraw + "/uevent", "MAJOR=243\nMINOR=\(node)\nDEVNAME=hidraw\(node)\n")
        try FileManager.default.createSymbolicLink(atPath: root + "/" + hidraw + "/device", withDestinationPath: "../..")
        try FileManager.default.createDirectory(atPath: root + "/class/hidraw", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root + "/class/hidraw/hidraw\(node)",
                                                   withDestinationPath: "../../" + hidraw)
    }

    func write(_ relative: String, _ text: String) throws {
        let path = root + "/" + relative
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }
}

final class HIDDeviceEnumeratorTests: XCTestCase {
    var directory: TemporaryDirectory!
    var sysfs: FakeSysfs!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        sysfs = FakeSysfs(root: directory.path)
    }

    override func tearDown() {
        directory.remove()
    }

    func enumerator(accessible: Set<String> = []) -> HIDDeviceEnumerator {
        HIDDeviceEnumerator(source: .sysfs(root: sysfs.root), isAccessible: { accessible.contains($0) })
    }

    func testAnEmptyMachineHasNoDevices() {
        XCTAssertEqual(enumerator().allDevices(), [])
        XCTAssertEqual(enumerator().fidoDevices(), [])
    }

    func testLatchkeyKeyOnUHID() throws {
        try sysfs.addUHIDDevice(node: 0, sequence: 1, name: "Latchkey main", uniq: "latchkey:main")
        let devices = enumerator(accessible: ["/dev/hidraw0"]).fidoDevices()
        XCTAssertEqual(devices.count, 1)
        let device = try XCTUnwrap(devices.first)
        XCTAssertEqual(device.devicePath, "/dev/hidraw0")
        XCTAssertTrue(device.sysfsPath.hasSuffix("/devices/virtual/misc/uhid/0003:1209:4C4B.0001/hidraw/hidraw0"),
                      device.sysfsPath)
        XCTAssertEqual(device.busType, 0x0003)
        XCTAssertEqual(device.vendorID, 0x1209)
        XCTAssertEqual(device.productID, 0x4C4B)
        XCTAssertEqual(device.name, "Latchkey main")
        XCTAssertEqual(device.uniq, "latchkey:main")
        XCTAssertNil(device.manufacturer, "a uhid device has no USB parent")
        XCTAssertNil(device.product)
        XCTAssertTrue(device.isFIDO)
        XCTAssertTrue(device.isAccessible)
    }

    func testUSBKeyKeyboardAndOrdering() throws {
        try sysfs.addUSBDevice(node: 10, vendor: "1050", product: "0407", manufacturerString: "Yubico",
                               productString: "YubiKey OTP+FIDO+CCID", serial: nil,
                               descriptor: UHIDDevice.fidoReportDescriptor)
        try sysfs.addUSBDevice(node: 2, vendor: "046D", product: "C31C", manufacturerString: "Logitech",
                               productString: "USB Keyboard", serial: "K123",
                               descriptor: HIDReportDescriptorParserTests.bootKeyboard)
        try sysfs.addUHIDDevice(node: 1, sequence: 7, name: "Latchkey work", uniq: "latchkey:work")

        let all = enumerator().allDevices()
        XCTAssertEqual(all.map(\.devicePath), ["/dev/hidraw1", "/dev/hidraw2", "/dev/hidraw10"], "by node number")
        XCTAssertEqual(all.map(\.isFIDO), [true, false, true])
        XCTAssertTrue(all.allSatisfy { !$0.isAccessible })

        let keyboard = all[1]
        XCTAssertEqual(keyboard.manufacturer, "Logitech", "USB strings without their newline")
        XCTAssertEqual(keyboard.product, "USB Keyboard")
        XCTAssertEqual(keyboard.serialNumber, "K123")
        XCTAssertEqual(keyboard.vendorID, 0x046D)

        let yubikey = all[2]
        XCTAssertEqual(yubikey.manufacturer, "Yubico")
        XCTAssertEqual(yubikey.product, "YubiKey OTP+FIDO+CCID")
        XCTAssertNil(yubikey.serialNumber)
        XCTAssertNil(yubikey.uniq, "an empty HID_UNIQ is no uniq")

        XCTAssertEqual(enumerator().fidoDevices().map(\.devicePath), ["/dev/hidraw1", "/dev/hidraw10"])
    }

    func testBrokenOrMissingDescriptorIsListedButNotFIDO() throws {
        try sysfs.addUHIDDevice(node: 0, sequence: 1, name: "Broken", uniq: "x", descriptor: [0x06, 0xD0])
        try sysfs.addHID(at: "devices/virtual/misc/uhid/0003:1209:4C4B.0002", node: 1,
                         uevent: "HID_ID=0003:00001209:00004C4B", descriptor: nil)
        let all = enumerator().allDevices()
        XCTAssertEqual(all.count, 2)
        XCTAssertFalse(all[0].isFIDO)
        XCTAssertEqual(all[0].descriptorProblem, "the report descriptor is truncated (item at byte 0)")
        XCTAssertEqual(all[1].descriptorProblem, "the report descriptor could not be read")
        XCTAssertEqual(enumerator().fidoDevices(), [])
    }

    func testHIDIDAndUeventParsing() {
        let parsed = HIDDeviceInfo.parseHIDID("0005:0000045E:000002FD")
        XCTAssertEqual(parsed?.bus, 0x0005)
        XCTAssertEqual(parsed?.vendor, 0x045E)
        XCTAssertEqual(parsed?.product, 0x02FD)
        XCTAssertNil(HIDDeviceInfo.parseHIDID("0003:1209"))
        XCTAssertNil(HIDDeviceInfo.parseHIDID("zz:1:2"))
        XCTAssertNil(HIDDeviceInfo.parseHIDID("0003:123456789:1"))
        XCTAssertEqual(HIDDeviceInfo.parseUevent("A=1\nB=x=y\n=skipped\nnoequals\nC=\n"),
                       ["A": "1", "B": "x=y", "C": ""])
    }

    /// The production path (libudev over the real /sys) runs everywhere: on a machine
    /// without hidraw devices it is simply empty, and it never throws.
    func testLibudevEnumerationRuns() {
        let devices = HIDDeviceEnumerator().allDevices()
        for device in devices {
            XCTAssertTrue(device.devicePath.hasPrefix("/dev/"), device.devicePath)
        }
    }
}
