import Foundation
import LinuxHID
import Synchronization
import XCTest
import DeviceTools
import SystemIO

/// What `latchkey proxy` presents for a real key, and what it says when it cannot start. (The
/// forwarding itself runs on the kernel's uhid and hidraw: the VM suite's proxy step.)
final class HIDProxyTests: XCTestCase {
    func testTheProxyLooksLikeTheRealKeyButSaysItIsAProxy() {
        var yubikey = HIDDeviceInfo(devicePath: "/dev/hidraw3", sysfsPath: "/sys/class/hidraw/hidraw3", busType: 3,
                                    vendorID: 0x1050, productID: 0x0407, name: "Yubico YubiKey OTP+FIDO+CCID",
                                    uniq: "", isAccessible: true)
        yubikey.product = "YubiKey OTP+FIDO+CCID"
        let identity = HIDProxy.identity(for: yubikey, name: nil)
        XCTAssertEqual(identity.vendorID, 0x1050)
        XCTAssertEqual(identity.productID, 0x0407)
        XCTAssertEqual(identity.name, "YubiKey OTP+FIDO+CCID (Latchkey proxy of hidraw3)")
        XCTAssertEqual(identity.uniq, "latchkey-proxy:hidraw3", "a key without a uniq: the node it stands for")
        XCTAssertFalse(identity.uniq.hasPrefix(HIDDeviceInfo.latchkeyUniqPrefix), "not taken for a Latchkey key")
        var latchkey = yubikey
        latchkey.uniq = "latchkey:main"
        XCTAssertEqual(HIDProxy.identity(for: latchkey, name: "debug").uniq, "latchkey-proxy:latchkey:main")
        XCTAssertEqual(HIDProxy.identity(for: latchkey, name: "debug").name, "debug (Latchkey proxy)")
    }

    func testANodeThatIsNotAFIDODeviceIsRefusedWithAReason() throws {
        let messages = Mutex<[String]>([])
        let logger = Logger(level: .info) { line in messages.withLock { $0.append(line) } }
        let proxy = try HIDProxy(options: .init(devicePath: "/dev/null"), logger: logger)
        XCTAssertEqual(proxy.run(), 1)
        let logged = messages.withLock { $0 }
        XCTAssertTrue(logged.contains { $0.contains("/dev/null is not a HID device") }, "\(logged)")
    }
}
