import Glibc
import LinuxHID
import XCTest

/// What udev/70-latchkey.rules reads off a Latchkey device: the phys names the user who runs
/// the key (`uid=<uid>` first, so a long name is what the kernel's 63 bytes cut), so that user
/// alone gets the hidraw node.
final class LatchkeyIdentityTests: XCTestCase {
    func testPhysNamesTheUserWhoRunsTheKey() {
        let identity = UHIDDevice.Identity.latchkey(name: "work", uid: 4242)
        XCTAssertEqual(identity.phys, "latchkey/uid=4242/work")
        XCTAssertEqual(identity.uniq, "latchkey:work")
        XCTAssertEqual(identity.vendorID, 0x1209)
        XCTAssertEqual(identity.productID, 0x4C4B)
        XCTAssertEqual(UHIDDevice.Identity.latchkey(name: "work").phys, "latchkey/uid=\(getuid())/work", "its own uid by default")
        let long = UHIDDevice.Identity.latchkey(name: String(repeating: "n", count: 64), uid: .max).phys
        XCTAssertTrue(String(long.utf8.prefix(63))!.hasPrefix("latchkey/uid=4294967295/"), "the uid survives the kernel's cut")
    }

    /// The rule: `ENV{HID_PHYS}=="latchkey/uid=[0-9]*"`, then the shell splits at '/' and takes the
    /// second field without `uid=`.
    func testTheRuleMatchesAndExtractsTheUID() throws {
        let rules = try String(contentsOfFile: #filePath.replacingOccurrences(of: "Tests/LinuxHIDTests/LatchkeyIdentityTests.swift",
                                                                               with: "udev/70-latchkey.rules"), encoding: .utf8)
        XCTAssertTrue(rules.contains(#"ENV{HID_PHYS}=="latchkey/uid=[0-9]*""#))
        XCTAssertTrue(rules.contains(#"IFS=/; set -- $${HID_PHYS}; echo $${2#uid=}"#))
        XCTAssertTrue(rules.contains(#"TAG-="uaccess""#), "no seat ACL on a key's node")
        XCTAssertFalse(rules.contains(#"SUBSYSTEM=="hidraw", SUBSYSTEMS=="hid", KERNELS=="0003:1209:4C4B.*", GROUP="latchkey""#),
                       "group latchkey no longer opens every key")
        let phys = UHIDDevice.Identity.latchkey(name: "a.b-c_d", uid: 1000).phys
        XCTAssertEqual(fnmatch("latchkey/uid=[0-9]*", phys, 0), 0)
        XCTAssertEqual(phys.split(separator: "/")[1], "uid=1000")
    }
}
