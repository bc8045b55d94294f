@testable import CLI
import FIDOClient
import Foundation
import KeyService
import LatchkeyTestSupport
import LinuxHID
import XCTest

/// `latchkey devices` and DEVICE selection over a fake /sys in a temp directory.
final class DevicesListingTests: XCTestCase {
    var directory: ScratchDirectory!
    var tree: FakeSysfsTree!
    let environment = ["HOME": "/home/pat"]

    override func setUpWithError() throws {
        directory = try ScratchDirectory()
        tree = FakeSysfsTree(root: directory.path)
    }

    override func tearDown() {
        directory.remove()
    }

    func devices(all: Bool = false) -> [HIDDeviceInfo] {
        let enumerator = HIDDeviceEnumerator(source: .sysfs(root: tree.root), isAccessible: { $0 == "/dev/hidraw0" })
        return all ? enumerator.allDevices() : enumerator.fidoDevices()
    }

    func testNoDevicesIsAClearLine() {
        XCTAssertEqual(DevicesCommand.render(devices(), json: false, environment: environment), """
            No FIDO devices found (no hidraw node has a report descriptor with usage page 0xF1D0).
            A Latchkey key on uhid shows up here while `latchkey serve` runs; `latchkey doctor` checks the setup.
            """)
        XCTAssertEqual(DevicesCommand.render(devices(), json: true, environment: environment), #"{"devices":[]}"#)
    }

    func testLatchkeyKeysAreMarkedWithTheirStore() throws {
        try tree.addLatchkey(node: 0, name: "main")
        try tree.addHID(node: 3, hidDirectory: "devices/usb/0003:1050:0407.0009",
                        uevent: "HID_ID=0003:00001050:00000407\nHID_NAME=Yubico YubiKey OTP+FIDO+CCID\nHID_UNIQ=",
                        descriptor: UHIDDevice.fidoReportDescriptor)
        try tree.addHID(node: 1, hidDirectory: "devices/usb/0003:046D:C31C.0002",
                        uevent: "HID_ID=0003:0000046D:0000C31C\nHID_NAME=Keyboard",
                        descriptor: [0x05, 0x01, 0x09, 0x06, 0xA1, 0x01, 0xC0])

        let text = DevicesCommand.render(devices(), json: false, environment: environment)
        XCTAssertEqual(text, """
            /dev/hidraw0  Latchkey main
              vendor:product  0x1209:0x4c4b  (bus USB)
              HID name        Latchkey main
              uniq            latchkey:main
              Latchkey key    "main", store /home/pat/.local/share/latchkey/main (unless it runs with --store)
              usage pages     0xF1D0
              access          read/write for this user

            /dev/hidraw3  Yubico YubiKey OTP+FIDO+CCID
              vendor:product  0x1050:0x0407  (bus USB)
              HID name        Yubico YubiKey OTP+FIDO+CCID
              uniq            (none)
              usage pages     0xF1D0
              access          no read/write permission for this user (see `latchkey doctor`)
            """)
        XCTAssertTrue(DevicesCommand.render(devices(all: true), json: false, environment: environment)
            .contains("/dev/hidraw1  Keyboard  (not a FIDO device)"))

        let json = try parseJSON(DevicesCommand.render(devices(), json: true, environment: environment))
        let list = try XCTUnwrap(json["devices"] as? [[String: Any]])
        XCTAssertEqual(list.count, 2)
        XCTAssertEqual(list[0]["path"] as? String, "/dev/hidraw0")
        XCTAssertEqual(list[0]["vendorId"] as? Int, 0x1209)
        XCTAssertEqual(list[0]["productId"] as? Int, 0x4C4B)
        XCTAssertEqual(list[0]["isLatchkey"] as? Bool, true)
        XCTAssertEqual(list[0]["accessible"] as? Bool, true)
        XCTAssertEqual(list[0]["usagePages"] as? [Int], [0xF1D0])
        let latchkey = try XCTUnwrap(list[0]["latchkey"] as? [String: String])
        XCTAssertEqual(latchkey, ["name": "main", "defaultStoreDirectory": "/home/pat/.local/share/latchkey/main"])
        XCTAssertEqual(list[1]["isLatchkey"] as? Bool, false)
        XCTAssertTrue(list[1]["latchkey"] is NSNull)
        XCTAssertTrue(list[1]["uniq"] is NSNull)
    }

    func testXDGDataHomeDecidesTheStore() throws {
        try tree.addLatchkey(node: 0, name: "ci")
        let text = DevicesCommand.render(devices(), json: false, environment: ["HOME": "/h", "XDG_DATA_HOME": "/data"])
        XCTAssertTrue(text.contains("store /data/latchkey/ci"), text)
    }

    // MARK: DEVICE selection

    func testSelection() throws {
        try tree.addLatchkey(node: 0, name: "main")
        try tree.addLatchkey(node: 1, name: "work")
        let present = devices()

        XCTAssertEqual(resolve(nil, among: [present[0]]), .success(.hidraw(path: "/dev/hidraw0", info: present[0])))
        XCTAssertEqual(resolve("work", among: present), .success(.hidraw(path: "/dev/hidraw1", info: present[1])))
        XCTAssertEqual(resolve("hidraw1", among: present), .success(.hidraw(path: "/dev/hidraw1", info: present[1])))
        XCTAssertEqual(resolve("/dev/hidraw7", among: present), .success(.hidraw(path: "/dev/hidraw7", info: nil)))
        XCTAssertEqual(DeviceSelection.resolve(argument: nil, socket: "/run/k.sock", fidoDevices: present),
                       .success(.socket(path: "/run/k.sock")))

        guard case .failure(let several) = resolve(nil, among: present) else { return XCTFail() }
        XCTAssertTrue(several.isUsageError)
        XCTAssertEqual(several.message, "2 FIDO devices found; name one: /dev/hidraw0 (Latchkey main), /dev/hidraw1 (Latchkey work)")

        guard case .failure(let none) = resolve(nil, among: []) else { return XCTFail() }
        XCTAssertFalse(none.isUsageError, "nothing to choose from is a runtime failure, not a usage error")
        XCTAssertTrue(none.message.hasPrefix("no FIDO devices found"))

        guard case .failure(let unknown) = resolve("home", among: present) else { return XCTFail() }
        XCTAssertTrue(unknown.message.hasSuffix("present: main (/dev/hidraw0), work (/dev/hidraw1)"), unknown.message)

        guard case .failure(let both) = DeviceSelection.resolve(argument: "main", socket: "/s", fidoDevices: present) else {
            return XCTFail()
        }
        XCTAssertTrue(both.isUsageError)

        XCTAssertEqual(DeviceSelection.hidraw(path: "/dev/hidraw0", info: present[0]).label,
                       "/dev/hidraw0 (Latchkey main, 0x1209:0x4c4b)")
        XCTAssertEqual(DeviceSelection.socket(path: "/s").label, "socket /s")
    }

    /// Nodes owned by this user, as udev/70-latchkey.rules makes them (the test's /dev paths do not exist).
    private func resolve(_ argument: String?, among devices: [HIDDeviceInfo],
                         owner: UInt32 = getuid()) -> Result<DeviceSelection, DeviceSelection.Problem> {
        DeviceSelection.resolve(argument: argument, socket: nil, fidoDevices: devices, nodeOwner: { _ in owner })
    }

    /// A name is proven, not only claimed: one device, Latchkey's IDs, this user's phys, this user's node.
    func testAKeyNameMustBeProven() throws {
        try tree.addLatchkey(node: 0, name: "main")
        let mine = devices()
        XCTAssertEqual(resolve("main", among: mine), .success(.hidraw(path: "/dev/hidraw0", info: mine[0])))

        guard case .failure(let notMyNode) = resolve("main", among: mine, owner: getuid() + 1) else { return XCTFail() }
        XCTAssertTrue(notMyNode.message.contains("its node belongs to uid \(getuid() + 1), not to you"), notMyNode.message)
        XCTAssertTrue(notMyNode.message.contains("nothing was sent to it"), notMyNode.message)

        // A second device claiming the same name (a real USB device enumerates first): no choice made.
        try tree.addLatchkey(node: 1, name: "main", uid: getuid() + 7)
        guard case .failure(let two) = resolve("main", among: devices()) else { return XCTFail() }
        XCTAssertEqual(two.message, "2 devices claim to be the Latchkey key 'main' (/dev/hidraw0, /dev/hidraw1); not choosing "
                       + "between them: `latchkey devices` shows them, and a path (/dev/hidrawN) names the one you trust")
        XCTAssertFalse(two.isUsageError)
    }

    func testAnotherUsersKeyOrAnotherVendorIsRefusedByName() throws {
        try tree.addLatchkey(node: 0, name: "theirs", uid: getuid() + 1)
        try tree.addLatchkey(node: 1, name: "fake", vendorProduct: "00001050:00000407")
        let present = devices()
        guard case .failure(let theirs) = resolve("theirs", among: present) else { return XCTFail() }
        XCTAssertTrue(theirs.message.contains("it is not run by you (its HID phys is 'latchkey/uid=\(getuid() + 1)/theirs'"),
                      theirs.message)
        guard case .failure(let fake) = resolve("fake", among: present) else { return XCTFail() }
        XCTAssertTrue(fake.message.contains("its vendor:product is 0x1050:0x0407, not Latchkey's 0x1209:0x4c4b"), fake.message)
        // A path names a device as given.
        XCTAssertEqual(resolve("/dev/hidraw1", among: present), .success(.hidraw(path: "/dev/hidraw1", info: present[1])))
    }
}
