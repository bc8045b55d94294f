@testable import CLI
import CredentialStore
import FIDOClient
import FIDOCrypto
import Foundation
import KeyService
import LatchkeyTestSupport
import SignalBridge
import XCTest
import KeySealing

/// `latchkey doctor`'s judgement as a pure function of the facts it gathered.
final class DoctorCheckTests: XCTestCase {
    /// A desktop where everything is in place.
    func healthy() -> DoctorFacts {
        var store = DoctorFacts.Store(directory: "/home/pat/.local/share/latchkey/default", exists: true,
                                      directoryMode: 0o700,
                                      fileModes: ["credentials.sqlite": 0o600, "master.key": 0o600, "lock": 0o600],
                                      databaseExists: true)
        store.integrity = .healthy(credentials: 3)
        var facts = DoctorFacts(userName: "pat", isRoot: false, kernelRelease: "6.1.0-28-amd64", store: store)
        facts.uhidNodeExists = true
        facts.uhidAccessible = true
        facts.uhidModuleLoaded = true
        facts.uhidModuleAvailable = true
        facts.uhidBootConfiguration = "/etc/modules-load.d/latchkey.conf"
        facts.udevRulePath = "/etc/udev/rules.d/70-latchkey.rules"
        facts.groupExists = true
        facts.userInGroup = true
        facts.sessionHasGroup = true
        facts.runningKeys = [.init(name: "default", devicePath: "/dev/hidraw2", isAccessible: true)]
        facts.userUnitPath = "/home/pat/.config/systemd/user/latchkey.service"
        let chromium = BridgeInstallation.Browser(name: "Chromium", family: .chromium,
                                                  directory: "/home/pat/.config/chromium/NativeMessagingHosts")
        facts.bridge = [.init(browser: chromium, wired: true, problem: nil)]
        facts.bridgeContact = BridgeContact(time: 1_800_000_000, caller: "chrome-extension://glcknlabcnogofidfcaeigbkbeieoaoj/")
        return facts
    }

    /// A package user has no scripts/ or udev/ folder: every fix names the package instead.
    func testAPackageUserIsNeverSentToTheSourceTree() throws {
        var facts = healthy()
        facts.udevRulePath = nil
        facts.uhidAccessible = false
        facts.uhidBootConfiguration = nil
        facts.userUnitPath = nil
        facts.runningKeys = []
        facts.uhidModuleLoaded = false
        facts.uhidNodeExists = false
        facts.installedByPackage = true
        let packaged = DoctorCheck.evaluate(facts).compactMap(\.fix).joined(separator: "\n")
        XCTAssertFalse(packaged.contains("scripts/"), packaged)
        XCTAssertFalse(packaged.contains("udev/"), packaged)
        XCTAssertTrue(packaged.contains("sudo apt install --reinstall latchkey"), packaged)
        facts.installedByPackage = false
        let fromSource = DoctorCheck.evaluate(facts).compactMap(\.fix).joined(separator: "\n")
        XCTAssertTrue(fromSource.contains("scripts/install"), fromSource)
    }

    /// A socket setup (CI, a container: `--ci` or found): no uhid is no failure, the desktop
    /// pieces are not needed, and the key on the socket and the store are still checked.
    func testASocketSetupNeedsNoUhidAndNoDesktopPieces() throws {
        var facts = DoctorFacts(userName: "ci", isRoot: false, kernelRelease: "6.1.0-28-amd64",
                                store: healthy().store)
        facts.liveSockets = ["/tmp/ci.sock"]
        XCTAssertEqual(try check("uhid", in: facts).status, .fail, "without the socket setup, no uhid fails")
        facts.socketSetup = true
        let checks = DoctorCheck.evaluate(facts)
        XCTAssertFalse(checks.contains { $0.status == .fail }, "\(checks)")
        for id in ["uhid", "udev-rules", "user-service", "signal-bridge", "key-running", "store"] {
            XCTAssertEqual(try check(id, in: facts).status, .ok, id)
        }
        XCTAssertTrue(try check("udev-rules", in: facts).detail.hasPrefix("not needed"))
        XCTAssertNotNil(checks.first { $0.id == "sandboxed-browsers" }, "browsers are still looked at")
    }

    func check(_ id: String, in facts: DoctorFacts) throws -> DoctorCheck {
        try XCTUnwrap(DoctorCheck.evaluate(facts).first { $0.id == id }, "no check \(id)")
    }

    /// Issue 34, finding 5: everyone who may open /dev/uhid can give another user a fake key.
    func testUHIDSharingCheck() throws {
        var facts = healthy()
        facts.uhidCreators = ["pat"]
        XCTAssertEqual(try check("uhid-sharing", in: facts).status, .ok)
        XCTAssertEqual(try check("uhid-sharing", in: facts).detail, "only pat (and root) may open /dev/uhid")
        facts.uhidCreators = ["pat", "sam"]
        let shared = try check("uhid-sharing", in: facts)
        XCTAssertEqual(shared.status, .warn)
        XCTAssertTrue(shared.detail.hasPrefix("2 users (pat, sam) may open /dev/uhid"), shared.detail)
        XCTAssertTrue(shared.fix?.contains("gpasswd -d USER latchkey") == true)
        facts.uhidCreators = ["everyone"]
        XCTAssertTrue(try check("uhid-sharing", in: facts).detail.hasPrefix("every user may open"))
        XCTAssertEqual(DoctorCommand.exitStatus(DoctorCheck.evaluate(facts)), 0, "a warning, not a failure")
    }

    /// Issue 14: how the master key is kept. Unsealed is a warning (rigs keep it so), never a failure.
    func testMasterKeyCheck() throws {
        var facts = healthy()
        XCTAssertNil(DoctorCheck.evaluate(facts).first { $0.id == "master-key" }, "not read: no check")
        facts.store.masterKey = .unsealed
        let unsealed = try check("master-key", in: facts)
        XCTAssertEqual(unsealed.status, .warn)
        XCTAssertTrue(unsealed.fix?.hasPrefix("latchkey store seal --tpm --store '/home/pat/.local/share/latchkey/default' (or --keyring") ?? false,
                      unsealed.fix ?? "")
        XCTAssertEqual(DoctorCommand.exitStatus(DoctorCheck.evaluate(facts)), 0)
        facts.store.masterKey = .sealedWithPassphrase(.default)
        XCTAssertEqual(try check("master-key", in: facts).status, .ok)
        XCTAssertTrue(try check("master-key", in: facts).detail.contains("128 MiB per guess"))
        for state in [MasterKeySeal.State.sealedWithTPM(pcrs: [7], pinned: true), .sealedWithKeyring(item: String(repeating: "a", count: 32))] {
            facts.store.masterKey = state
            XCTAssertEqual(try check("master-key", in: facts).status, .ok, "\(state)")
        }
        XCTAssertTrue(try check("master-key", in: facts).detail.contains("login keyring"))
        // Issue 34: a seal weaker than its method can make it is a warning with the command that fixes it.
        facts.store.masterKey = .sealedWithTPM(pcrs: [], pinned: false)
        let unpinned = try check("master-key", in: facts)
        XCTAssertEqual(unpinned.status, .warn)
        XCTAssertTrue(unpinned.detail.contains("does not name the TPM's storage key"), unpinned.detail)
        XCTAssertEqual(unpinned.fix, "latchkey store seal --tpm --store '/home/pat/.local/share/latchkey/default'")
        facts.store.masterKey = .sealedWithPassphrase(Scrypt.Parameters(logN: 12, r: 8, p: 1))
        XCTAssertEqual(try check("master-key", in: facts).status, .warn)
        XCTAssertEqual(try check("master-key", in: facts).fix, "latchkey store seal --passphrase --store '/home/pat/.local/share/latchkey/default'")
        facts.store.masterKey = .sealedWithKeyring(item: String(repeating: "a", count: 32))
        facts.store.integrity = .sealedNotChecked
        XCTAssertEqual(try check("store", in: facts).status, .ok, "a sealed store without its passphrase is not a failure")
    }

    func testAHealthySetupIsAllOK() {
        let checks = DoctorCheck.evaluate(healthy())
        XCTAssertEqual(checks.map(\.id), ["uhid", "uhid-boot", "uhid-access", "uhid-sharing", "udev-rules", "hidraw-access",
                                          "key-running", "store", "user-service", "signal-bridge", "sandboxed-browsers"])
        XCTAssertEqual(checks.filter { $0.status != .ok }, [])
        XCTAssertEqual(DoctorCommand.exitStatus(checks), 0)
        XCTAssertEqual(checks.first { $0.id == "store" }?.detail,
                       "/home/pat/.local/share/latchkey/default: private (0700/0600), integrity check passed, 3 discoverable credentials")
        XCTAssertEqual(checks.first { $0.id == "key-running" }?.detail, "key 'default' on /dev/hidraw2")
        XCTAssertEqual(checks.first { $0.id == "signal-bridge" }?.detail,
                       "wired: Chromium; the extension last reached this store 2027-01-15T08:00:00Z from Chromium/Chrome")
        var unwired = healthy()
        unwired.bridge = []
        XCTAssertEqual(DoctorCheck.evaluate(unwired).first { $0.id == "signal-bridge" }?.status, .warn,
                       "websites' signals are optional: a warning, never a failure")
    }

    func testAKernelWithoutUHIDPointsAtTheSocketTransport() throws {
        var facts = healthy()
        facts.uhidNodeExists = false
        facts.uhidAccessible = false
        facts.uhidModuleLoaded = false
        facts.uhidModuleAvailable = false
        facts.runningKeys = []
        let checks = DoctorCheck.evaluate(facts)
        XCTAssertFalse(checks.contains { $0.id == "uhid-access" || $0.id == "uhid-boot" }, "nothing to say about them")
        let uhid = try check("uhid", in: facts)
        XCTAssertEqual(uhid.status, .fail)
        XCTAssertEqual(uhid.detail, "this kernel (6.1.0-28-amd64) has no uhid module")
        XCTAssertTrue(uhid.fix?.contains("--transport socket:PATH") ?? false)
        XCTAssertEqual(DoctorCommand.exitStatus(checks), 1)
    }

    func testAnUnloadedModuleSaysModprobe() throws {
        var facts = healthy()
        facts.uhidNodeExists = false
        facts.uhidModuleLoaded = false
        facts.uhidBootConfiguration = nil
        XCTAssertEqual(try check("uhid", in: facts).fix, "sudo modprobe uhid (scripts/install also makes it load at every boot)")
        XCTAssertEqual(try check("uhid-boot", in: facts).status, .warn)
        XCTAssertTrue(try check("uhid-boot", in: facts).fix?.contains("modules-load.d/latchkey.conf") ?? false)
    }

    func testBuiltInUHIDNeedsNoBootEntry() throws {
        var facts = healthy()
        facts.uhidBuiltIn = true
        facts.uhidModuleAvailable = false
        facts.uhidBootConfiguration = nil
        XCTAssertEqual(try check("uhid-boot", in: facts).status, .ok)
        XCTAssertEqual(try check("uhid", in: facts).detail, "/dev/uhid is present (built into the kernel)")
    }

    /// Without the rule only root reaches /dev/uhid: a FAIL for a user, a WARN for root.
    func testMissingRuleForAUserAndForRoot() throws {
        var user = healthy()
        user.udevRulePath = nil
        user.uhidAccessible = false
        let rules = try check("udev-rules", in: user)
        XCTAssertEqual(rules.status, .fail)
        XCTAssertTrue(rules.fix?.contains("scripts/install") ?? false)
        XCTAssertTrue(rules.fix?.contains("udevadm control --reload") ?? false)
        let access = try check("uhid-access", in: user)
        XCTAssertEqual(access.status, .fail)
        XCTAssertTrue(access.fix?.hasPrefix("run scripts/install") ?? false)

        var root = healthy()
        root.userName = "root"
        root.isRoot = true
        root.udevRulePath = nil
        XCTAssertEqual(try check("udev-rules", in: root).status, .warn)
        XCTAssertEqual(try check("uhid-access", in: root).detail, "root can open /dev/uhid (as root)")
        XCTAssertEqual(DoctorCommand.exitStatus(DoctorCheck.evaluate(root)), 0)
    }

    func testGroupProblemsGetTheirOwnFix() throws {
        var facts = healthy()
        facts.uhidAccessible = false
        facts.groupExists = false
        XCTAssertTrue(try check("uhid-access", in: facts).fix?.hasPrefix("sudo groupadd --system latchkey") ?? false)
        facts.groupExists = true
        facts.userInGroup = false
        XCTAssertEqual(try check("uhid-access", in: facts).fix, "sudo usermod -aG latchkey pat, then log out and in again")
        facts.userInGroup = true
        facts.sessionHasGroup = false
        XCTAssertTrue(try check("uhid-access", in: facts).fix?.contains("newgrp latchkey") ?? false)
        facts.sessionHasGroup = true
        XCTAssertTrue(try check("uhid-access", in: facts).fix?.contains("udevadm trigger") ?? false)
    }

    func testHidrawNodesTheUserCannotOpen() throws {
        var facts = healthy()
        facts.runningKeys.append(.init(name: "work", devicePath: "/dev/hidraw5", isAccessible: false))
        let access = try check("hidraw-access", in: facts)
        XCTAssertEqual(access.status, .fail)
        XCTAssertTrue(access.detail.hasPrefix("pat cannot open /dev/hidraw5"), access.detail)
        facts.runningKeys = []
        XCTAssertEqual(try check("hidraw-access", in: facts).status, .ok)
    }

    func testNoKeyRunning() throws {
        var facts = healthy()
        facts.runningKeys = []
        XCTAssertEqual(try check("key-running", in: facts).status, .warn)
        XCTAssertEqual(try check("key-running", in: facts).fix, "systemctl --user start latchkey (its log: journalctl --user -u latchkey)")
        facts.userUnitPath = nil
        XCTAssertTrue(try check("key-running", in: facts).fix?.hasPrefix("start one: latchkey serve") ?? false)
        XCTAssertEqual(try check("user-service", in: facts).status, .warn)
        facts.liveSockets = ["/run/user/1000/latchkey.sock"]
        XCTAssertEqual(try check("key-running", in: facts).detail, "a key listening on /run/user/1000/latchkey.sock")
    }

    func testStoreVerdicts() throws {
        var facts = healthy()
        facts.store.fileModes["master.key"] = 0o644
        let exposed = try check("store", in: facts)
        XCTAssertEqual(exposed.status, .fail)
        XCTAssertEqual(exposed.detail, "master.key has mode 0644 (group or others can read it)")
        XCTAssertEqual(exposed.fix, "chmod 600 '/home/pat/.local/share/latchkey/default/master.key'")

        facts = healthy()
        facts.store.directoryMode = 0o755
        XCTAssertEqual(try check("store", in: facts).fix, "chmod 700 '/home/pat/.local/share/latchkey/default'")

        facts = healthy()
        facts.store.integrity = .failed
        XCTAssertEqual(try check("store", in: facts).status, .fail)

        facts.store.integrity = .unreadable("the store is locked")
        XCTAssertEqual(try check("store", in: facts).detail, "the store is locked")

        facts = healthy()
        facts.store = .init(directory: "/nowhere")
        XCTAssertEqual(try check("store", in: facts).status, .warn)
        XCTAssertEqual(try check("store", in: facts).detail, "no store at /nowhere yet")
    }

    /// The store facts of a real store on a temp directory: opened without the exclusive lock.
    func testStoreFactsOfARealStore() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let directory = scratch.path + "/store"
        XCTAssertFalse(DoctorFacts.storeFacts(directory: directory).exists)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory), "doctor never creates a store")

        let running = try SQLiteCredentialStore.open(directory: directory, lock: .exclusive)   // a key holds it
        let facts = DoctorFacts.storeFacts(directory: directory)
        XCTAssertEqual(facts.integrity, .healthy(credentials: 0))
        XCTAssertEqual(facts.directoryMode, 0o700)
        XCTAssertEqual(facts.fileModes["master.key"], 0o600)
        running.close()

        chmod(directory + "/master.key", 0o640)
        let exposed = DoctorFacts.storeFacts(directory: directory)
        XCTAssertEqual(exposed.integrity, .notChecked, "a store that is not private is not opened")
        var all = healthy()
        all.store = exposed
        XCTAssertEqual(DoctorCheck.evaluate(all).first { $0.id == "store" }?.status, .fail)
    }

    func testTextAndJSON() throws {
        var facts = healthy()
        facts.udevRulePath = nil
        facts.uhidAccessible = false
        let checks = DoctorCheck.evaluate(facts)
        let text = DoctorCommand.text(checks, facts: facts)
        XCTAssertTrue(text.hasPrefix("latchkey doctor: user pat, kernel 6.1.0-28-amd64\n"), text)
        XCTAssertTrue(text.contains("\nFAIL  udev rules "), text)
        XCTAssertTrue(text.contains("fix: run scripts/install"), text)
        XCTAssertTrue(text.hasSuffix("8 OK, 0 warnings, 2 failures"), text)

        let json = try parseJSON(DoctorCommand.json(checks, facts: facts).rendered)
        XCTAssertEqual(json["ok"] as? Bool, false)
        let list = try XCTUnwrap(json["checks"] as? [[String: Any]])
        let rules = try XCTUnwrap(list.first { $0["id"] as? String == "udev-rules" })
        XCTAssertEqual(rules["status"] as? String, "FAIL")
        XCTAssertNotNil(rules["fix"] as? String)
        XCTAssertTrue(list.first { $0["id"] as? String == "uhid" }?["fix"] is NSNull)
    }
}
