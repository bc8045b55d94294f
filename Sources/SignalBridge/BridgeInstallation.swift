import Foundation
import Encoding

/// The native-messaging wiring `latchkey bridge install|uninstall|status` manages: a host
/// manifest per browser, naming the host `org.latchkey.bridge`, pointing at a launcher script
/// (manifests cannot pass arguments) that runs `latchkey native-host` for one key, and allowing
/// only Latchkey's extension (its fixed Chromium ID, its Firefox add-on ID).
public enum BridgeInstallation {
    public static let hostName = "org.latchkey.bridge"
    /// Fixed by the `key` in extension/manifest.json.
    public static let chromiumExtensionID = "glcknlabcnogofidfcaeigbkbeieoaoj"
    /// extension/manifest.json, browser_specific_settings.gecko.id.
    public static let firefoxExtensionID = "signal-bridge@latchkey"

    /// What a browser passes the host as its last argument when Latchkey's extension starts it:
    /// Chromium the caller's origin, Firefox the add-on's ID.
    public static var callers: [String] { ["chrome-extension://\(chromiumExtensionID)/", firefoxExtensionID] }

    /// Whether `caller` (the host's last argument) is Latchkey's own extension.
    public static func isLatchkeyExtension(caller: String) -> Bool {
        callers.contains(caller)
    }

    public enum Family: String, Sendable {
        case chromium
        case firefox
    }

    /// A browser (or one Chromium profile folder) whose host manifests live in `directory`.
    public struct Browser: Equatable, Sendable {
        public var name: String
        public var family: Family
        public var directory: String

        public init(name: String, family: Family, directory: String) {
            self.name = name
            self.family = family
            self.directory = directory
        }

        public var manifestPath: String { directory + "/" + BridgeInstallation.hostName + ".json" }
    }

    /// Where each browser looks for a user's hosts: Chromium and Google Chrome in their user data
    /// folder (`$XDG_CONFIG_HOME`, default `~/.config`) — so a browser run with `--user-data-dir
    /// DIR` looks in `DIR/NativeMessagingHosts`, which `extraChromiumUserDataDirectories` adds —,
    /// Firefox in `~/.mozilla/native-messaging-hosts` whatever the profile.
    public static func browsers(home: String, configHome: String?,
                                extraChromiumUserDataDirectories: [String] = []) -> [Browser] {
        let config = configHome.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
        return [
            Browser(name: "Chromium", family: .chromium, directory: config + "/chromium/NativeMessagingHosts"),
            Browser(name: "Google Chrome", family: .chromium, directory: config + "/google-chrome/NativeMessagingHosts"),
            Browser(name: "Firefox", family: .firefox, directory: home + "/.mozilla/native-messaging-hosts"),
        ] + extraChromiumUserDataDirectories.map {
            Browser(name: "Chromium (\($0))", family: .chromium, directory: $0 + "/NativeMessagingHosts")
        }
    }

    /// The host manifest for `family`, pointing at `launcher`.
    public static func manifest(family: Family, launcher: String) -> String {
        var allowed = ""
        switch family {
        case .chromium: allowed = "\"allowed_origins\": [\(JSONValue.quoted("chrome-extension://\(chromiumExtensionID)/"))]"
        case .firefox: allowed = "\"allowed_extensions\": [\(JSONValue.quoted(firefoxExtensionID))]"
        }
        return """
            {
              "name": \(JSONValue.quoted(hostName)),
              "description": "Latchkey: websites' WebAuthn signals to the key's store",
              "path": \(JSONValue.quoted(launcher)),
              "type": "stdio",
              \(allowed)
            }

            """
    }

    /// The launcher: runs the binary's native host for the key named by `targetArguments`
    /// (`--name NAME` or `--store DIR`), passing on what the browser gives it. A store sealed with
    /// a passphrase gets `passphraseFile` as LATCHKEY_PASSPHRASE_FILE: the browser starts the host
    /// with no terminal to ask on (a TPM or keyring seal needs nothing).
    public static func launcher(binary: String, targetArguments: [String], passphraseFile: String? = nil) -> String {
        let arguments = ([binary, "native-host"] + targetArguments).map(shellQuoted).joined(separator: " ")
        let passphrase = passphraseFile.map { "LATCHKEY_PASSPHRASE_FILE=\(shellQuoted($0))\nexport LATCHKEY_PASSPHRASE_FILE\n" } ?? ""
        return """
            #!/bin/sh
            # Written by `latchkey bridge install`: browsers start this for the host \(hostName).
            \(passphrase)exec \(arguments) "$@"

            """
    }

    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// What `status` finds for one browser.
    public struct Status: Equatable, Sendable {
        public var browser: Browser
        /// The manifest is there and names the launcher and Latchkey's extension.
        public var wired: Bool
        /// Why not, or what is off (a launcher that is missing, another host path).
        public var problem: String?

        public init(browser: Browser, wired: Bool, problem: String?) {
            self.browser = browser
            self.wired = wired
            self.problem = problem
        }
    }

    /// Writes the launcher (0755) and each browser's manifest (0644; the folders are made).
    /// Returns a line per file written.
    public static func install(binary: String, targetArguments: [String], launcherPath: String,
                               browsers: [Browser], passphraseFile: String? = nil) throws(SignalFailure) -> [String] {
        var done: [String] = []
        try write(launcher(binary: binary, targetArguments: targetArguments, passphraseFile: passphraseFile), to: launcherPath,
                  mode: 0o755)
        done.append("launcher: \(launcherPath) (runs \(binary) native-host \(targetArguments.joined(separator: " ")))")
        for browser in browsers {
            try write(manifest(family: browser.family, launcher: launcherPath), to: browser.manifestPath, mode: 0o644)
            done.append("\(browser.name): \(browser.manifestPath)")
        }
        return done
    }

    /// Removes the manifests that are Latchkey's (and the launcher); returns a line per file removed.
    public static func uninstall(launcherPath: String, browsers: [Browser]) -> [String] {
        var done: [String] = []
        for browser in browsers where FileManager.default.fileExists(atPath: browser.manifestPath) {
            if (try? FileManager.default.removeItem(atPath: browser.manifestPath)) != nil {
                done.append("\(browser.name): removed \(browser.manifestPath)")
            }
        }
        if (try? FileManager.default.removeItem(atPath: launcherPath)) != nil {
            done.append("launcher: removed \(launcherPath)")
        }
        return done
    }

    public static func status(launcherPath: String, browsers: [Browser]) -> [Status] {
        browsers.map { browser in
            guard let data = FileManager.default.contents(atPath: browser.manifestPath) else {
                return Status(browser: browser, wired: false, problem: "no host manifest (\(browser.manifestPath))")
            }
            guard let json = JSONDocument.parse(Array(data)), case .string(let path)? = json["path"] else {
                return Status(browser: browser, wired: false, problem: "\(browser.manifestPath) is not a host manifest")
            }
            guard path == launcherPath else {
                return Status(browser: browser, wired: false, problem: "its manifest runs \(path), not \(launcherPath)")
            }
            let allowed: JSONDocument = browser.family == .chromium
                ? .array([.string("chrome-extension://\(chromiumExtensionID)/")]) : .array([.string(firefoxExtensionID)])
            guard json[browser.family == .chromium ? "allowed_origins" : "allowed_extensions"] == allowed else {
                return Status(browser: browser, wired: false, problem: "its manifest does not allow Latchkey's extension alone")
            }
            guard FileManager.default.isExecutableFile(atPath: launcherPath) else {
                return Status(browser: browser, wired: false, problem: "the launcher \(launcherPath) is missing")
            }
            return Status(browser: browser, wired: true, problem: nil)
        }
    }

    private static func write(_ text: String, to path: String, mode: Int) throws(SignalFailure) {
        let url = URL(fileURLWithPath: path)
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        } catch {
            throw .internal("cannot write \(path): \(error.localizedDescription)")
        }
    }
}
