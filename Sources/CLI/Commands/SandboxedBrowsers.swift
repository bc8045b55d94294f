import Foundation

/// Browsers installed as Flatpak or Snap packages, and whether their sandbox lets them open
/// hidraw FIDO devices — the Linux problem users report most (flatpak#2764, xdg-desktop-portal#989
/// and many more): a sandboxed browser sees no security key at all, and says nothing about why.
/// Read from the packages' own files, so `latchkey doctor` needs neither flatpak nor snapd
/// running, and tests lay the files out in a temporary directory.
///
/// - Flatpak: a browser reaches /dev/hidraw* only with the `all` device permission
///   (`--device=all`; `dri`, `input` and `usb` do not include hidraw). The app's metadata
///   (`[Context] devices=`) is overridden by the system-wide then the user's override files,
///   `global` before the app's own, each entry adding a device or (`!all`) taking it away.
/// - Snap: the `u2f-devices` interface gives a snap the hidraw nodes that snapd's udev rules tag,
///   and snapd tags them by USB vendor and product ID from its list of known keys
///   (`/etc/udev/rules.d/70-snap.<snap>.rules`, one `# u2f-devices` entry per key model). A
///   Latchkey key has no USB parent (it is a uhid device), so no snap can reach it whatever is
///   connected; hardware keys on snapd's list work once the interface is connected.
public struct SandboxedBrowser: Sendable, Equatable {
    public enum Packaging: String, Sendable, Equatable {
        case flatpak, snap
    }

    public enum Access: Sendable, Equatable {
        /// Flatpak with `devices=all` after every override.
        case allDevices
        /// Flatpak without it: `devices` as it ends up, and where the last word came from.
        case noDevices(effective: [String], decidedBy: String)
        /// Snap with u2f-devices connected: known hardware keys yes, a uhid key no.
        case u2fDevicesConnected
        /// Snap without u2f-devices.
        case u2fDevicesNotConnected
    }

    public var name: String
    /// The Flatpak application ID or the snap's name.
    public var identifier: String
    public var packaging: Packaging
    /// Flatpak: "user" or "system" installation.
    public var installation: String?
    public var access: Access

    public init(name: String, identifier: String, packaging: Packaging, installation: String? = nil, access: Access) {
        self.name = name; self.identifier = identifier; self.packaging = packaging
        self.installation = installation; self.access = access
    }

    /// The browsers looked for: Flatpak application IDs and snap names.
    public static let flatpakBrowsers: [(id: String, name: String)] = [
        ("org.chromium.Chromium", "Chromium"), ("com.google.Chrome", "Google Chrome"), ("org.mozilla.firefox", "Firefox"),
        ("com.brave.Browser", "Brave"), ("com.microsoft.Edge", "Microsoft Edge"),
        ("io.github.ungoogled_software.ungoogled_chromium", "ungoogled-chromium"), ("com.vivaldi.Vivaldi", "Vivaldi"),
        ("com.opera.Opera", "Opera"), ("org.mozilla.Thunderbird", "Thunderbird"),
    ]
    public static let snapBrowsers: [(name: String, title: String)] = [
        ("chromium", "Chromium"), ("firefox", "Firefox"), ("brave", "Brave"), ("opera", "Opera"), ("vivaldi", "Vivaldi"),
        ("thunderbird", "Thunderbird"),
    ]

    /// Where the packages keep their files; tests point these into a temporary directory.
    public struct Paths: Sendable {
        /// The user's Flatpak installation (`$XDG_DATA_HOME/flatpak`, by default ~/.local/share/flatpak).
        public var userFlatpak: String
        public var systemFlatpak = "/var/lib/flatpak"
        public var snapRoot = "/snap"
        public var udevRules = "/etc/udev/rules.d"

        public init(userFlatpak: String) { self.userFlatpak = userFlatpak }

        public init(environment: [String: String]) {
            let home = environment["HOME"] ?? NSHomeDirectory()
            let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.local/share"
            self.init(userFlatpak: dataHome + "/flatpak")
        }
    }

    /// Every Flatpak and Snap browser installed, with its access.
    public static func find(paths: Paths) -> [SandboxedBrowser] {
        var found: [SandboxedBrowser] = []
        for (id, name) in flatpakBrowsers {
            for (installation, root) in [("user", paths.userFlatpak), ("system", paths.systemFlatpak)] {
                guard let metadata = read(root + "/app/\(id)/current/active/metadata") else { continue }
                // Overrides apply to the app whichever installation holds it: system-wide first,
                // then the user's, `global` before the app's own (flatpak-override(1)).
                let overrides = [paths.systemFlatpak, paths.userFlatpak].flatMap { base in
                    ["global", id].compactMap { file in read(base + "/overrides/" + file).map { (base + "/overrides/" + file, $0) } }
                }
                found.append(SandboxedBrowser(name: name, identifier: id, packaging: .flatpak, installation: installation,
                                              access: flatpakAccess(metadata: metadata, overrides: overrides)))
            }
        }
        for (snap, title) in snapBrowsers {
            guard FileManager.default.fileExists(atPath: paths.snapRoot + "/\(snap)/current/meta/snap.yaml") else { continue }
            let rules = read(paths.udevRules + "/70-snap.\(snap).rules") ?? ""
            found.append(SandboxedBrowser(name: title, identifier: snap, packaging: .snap,
                                          access: snapAccess(udevRules: rules)))
        }
        return found
    }

    /// The device permissions of a Flatpak app: its metadata's `[Context] devices`, then each
    /// override file's, in order.
    static func flatpakAccess(metadata: String, overrides: [(path: String, text: String)]) -> Access {
        var devices = Set<String>()
        var decidedBy = "the app's own permissions"
        apply(devicesEntry(metadata), to: &devices)
        for (path, text) in overrides {
            guard let entry = devicesEntry(text) else { continue }
            apply(entry, to: &devices)
            // The last file that names `all` either way has the last word on it.
            if entry.contains("all") || entry.contains("!all") { decidedBy = path }
        }
        return devices.contains("all") ? .allDevices : .noDevices(effective: devices.sorted(), decidedBy: decidedBy)
    }

    private static func apply(_ entry: [String]?, to devices: inout Set<String>) {
        for item in entry ?? [] {
            if item.hasPrefix("!") { devices.remove(String(item.dropFirst())) } else { devices.insert(item) }
        }
    }

    /// `devices=` of a keyfile's `[Context]` group, split on ';' (nil: the key is not there).
    static func devicesEntry(_ keyfile: String) -> [String]? {
        var inContext = false
        for rawLine in keyfile.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") { inContext = line == "[Context]"; continue }
            guard inContext, line.hasPrefix("devices") else { continue }
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == "devices" else { continue }
            return parts[1].split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        return nil
    }

    /// Whether snapd's udev rules for the snap carry the u2f-devices interface.
    static func snapAccess(udevRules: String) -> Access {
        udevRules.split(whereSeparator: \.isNewline).contains { $0.trimmingCharacters(in: .whitespaces) == "# u2f-devices" }
            ? .u2fDevicesConnected : .u2fDevicesNotConnected
    }

    private static func read(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }
}

/// Whether `latchkey doctor` itself runs inside a sandbox or container, where the host's keys
/// are visible only if it was started with them.
public enum RunningSandbox: Sendable, Equatable {
    case flatpak(appID: String)
    case snap(name: String)
    case container(kind: String)

    /// Where this process runs. `root` prefixes the marker files (tests).
    public static func detect(environment: [String: String], root: String = "") -> RunningSandbox? {
        let manager = FileManager.default
        if let info = try? String(contentsOfFile: root + "/.flatpak-info", encoding: .utf8) {
            let name = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("name=") }.map { String($0.dropFirst(5)) }
            return .flatpak(appID: name ?? "unknown")
        }
        if let snap = environment["SNAP_NAME"] { return .snap(name: snap) }
        if manager.fileExists(atPath: root + "/.dockerenv") { return .container(kind: "docker") }
        if manager.fileExists(atPath: root + "/run/.containerenv") { return .container(kind: "podman") }
        if let kind = environment["container"], !kind.isEmpty { return .container(kind: kind) }
        return nil
    }
}
