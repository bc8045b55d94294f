import Foundation
import LatchkeyTestSupport
import SignalBridge
import XCTest

/// `latchkey bridge install|uninstall|status` on a scratch home: the manifests each browser
/// reads, the launcher, and what status calls wired.
final class BridgeInstallationTests: XCTestCase {
    func testInstallStatusUninstall() throws {
        let home = try ShortTempDirectory()
        let browsers = BridgeInstallation.browsers(home: home.path, configHome: nil,
                                                   extraChromiumUserDataDirectories: [home.path + "/profile"])
        XCTAssertEqual(browsers.map(\.directory), [home.path + "/.config/chromium/NativeMessagingHosts",
                                                   home.path + "/.config/google-chrome/NativeMessagingHosts",
                                                   home.path + "/.mozilla/native-messaging-hosts",
                                                   home.path + "/profile/NativeMessagingHosts"])
        let launcher = home.path + "/share/latchkey-bridge/native-host"
        XCTAssertEqual(BridgeInstallation.status(launcherPath: launcher, browsers: browsers).filter(\.wired), [])

        _ = try BridgeInstallation.install(binary: "/opt/it's here/latchkey", targetArguments: ["--store", "/data/store"],
                                           launcherPath: launcher, browsers: browsers)
        XCTAssertEqual(BridgeInstallation.status(launcherPath: launcher, browsers: browsers).filter(\.wired).count, 4)
        let script = try String(contentsOfFile: launcher, encoding: .utf8)
        XCTAssertTrue(script.contains(#"exec '/opt/it'\''s here/latchkey' 'native-host' '--store' '/data/store' "$@""#), script)
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: launcher))
        XCTAssertFalse(script.contains("LATCHKEY_PASSPHRASE_FILE"))
        // A passphrase-sealed store: the launcher names the passphrase file (the browser gives no terminal).
        let sealed = BridgeInstallation.launcher(binary: "/bin/latchkey", targetArguments: ["--store", "/s"],
                                                 passphraseFile: "/home/a/it's/pass")
        XCTAssertTrue(sealed.contains("LATCHKEY_PASSPHRASE_FILE='/home/a/it'\\''s/pass'\nexport LATCHKEY_PASSPHRASE_FILE\nexec "), sealed)
        let firefox = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: browsers[2].manifestPath))) as? [String: Any]
        XCTAssertEqual(firefox?["allowed_extensions"] as? [String], ["signal-bridge@latchkey"])
        XCTAssertEqual(firefox?["name"] as? String, "org.latchkey.bridge")
        XCTAssertEqual(firefox?["path"] as? String, launcher)

        // A manifest that allows another extension too is not Latchkey's wiring.
        let chromium = browsers[0].manifestPath
        let widened = try String(contentsOfFile: chromium, encoding: .utf8)
            .replacingOccurrences(of: "glcknlabcnogofidfcaeigbkbeieoaoj/\"]", with: "glcknlabcnogofidfcaeigbkbeieoaoj/\", \"chrome-extension://evil/\"]")
        try widened.write(toFile: chromium, atomically: true, encoding: .utf8)
        let status = BridgeInstallation.status(launcherPath: launcher, browsers: browsers)
        XCTAssertFalse(status[0].wired)
        XCTAssertTrue(status[0].problem?.contains("alone") ?? false, "\(status[0])")

        XCTAssertEqual(BridgeInstallation.uninstall(launcherPath: launcher, browsers: browsers).count, 5)
        XCTAssertFalse(FileManager.default.fileExists(atPath: launcher))
        XCTAssertEqual(BridgeInstallation.uninstall(launcherPath: launcher, browsers: browsers), [])
    }

    func testTheContactRecord() throws {
        let store = try ShortTempDirectory()
        XCTAssertNil(BridgeContact.read(storeDirectory: store.path))
        BridgeContact(time: 1_800_000_000, caller: "signal-bridge@latchkey").write(storeDirectory: store.path)
        XCTAssertEqual(BridgeContact.read(storeDirectory: store.path), BridgeContact(time: 1_800_000_000, caller: "signal-bridge@latchkey"))
        XCTAssertEqual(BridgeContact.read(storeDirectory: store.path)?.browser, "Firefox")
        try #"{"time": 1e300, "caller": "x"}"#.write(toFile: store.path + "/bridge-contact", atomically: true, encoding: .utf8)
        XCTAssertNil(BridgeContact.read(storeDirectory: store.path), "a time no Int64 holds is no contact, not a crash")
    }
}
