import CredentialStore
import Foundation
import SignalBridge
import SystemIO
import LinuxHID
import Presence
import KeySealing

/// Everything `latchkey doctor` looks at, gathered once (`gather`) and judged
/// by the pure `DoctorCheck.evaluate(_:)`, so the judging is tested over
/// hand-made facts.
public struct DoctorFacts: Sendable, Equatable {
    public struct RunningKey: Sendable, Equatable {
        public var name: String
        public var devicePath: String
        public var isAccessible: Bool
        public init(name: String, devicePath: String, isAccessible: Bool) {
            self.name = name; self.devicePath = devicePath; self.isAccessible = isAccessible
        }
    }

    public enum StoreIntegrity: Sendable, Equatable {
        /// Not opened (missing, or its permissions are already wrong).
        case notChecked
        case healthy(credentials: Int)
        case failed
        /// Opening or checking failed; the message says why.
        case unreadable(String)
        /// Sealed, and doctor was given no passphrase to open it with (it does not ask).
        case sealedNotChecked
    }

    public struct Store: Sendable, Equatable {
        public var directory: String
        public var exists: Bool
        /// Permission bits of the directory (nil: missing).
        public var directoryMode: UInt16?
        /// Store files that exist, with their permission bits.
        public var fileModes: [String: UInt16]
        public var databaseExists: Bool
        public var integrity: StoreIntegrity
        /// How the master key is kept (nil: not read).
        public var masterKey: MasterKeySeal.State?

        public init(directory: String, exists: Bool = false, directoryMode: UInt16? = nil,
                    fileModes: [String: UInt16] = [:], databaseExists: Bool = false,
                    integrity: StoreIntegrity = .notChecked) {
            self.directory = directory; self.exists = exists; self.directoryMode = directoryMode
            self.fileModes = fileModes; self.databaseExists = databaseExists; self.integrity = integrity
        }
    }

    public var userName: String
    public var isRoot: Bool
    public var kernelRelease: String

    public var uhidPath = "/dev/uhid"
    public var uhidNodeExists = false
    public var uhidAccessible = false
    /// The users besides root who may open /dev/uhid (its owner, its group's members and the
    /// users whose primary group it is, users named in its ACL), by name; "everyone" when its
    /// mode lets others in. Each of them can create a device the udev rule gives to another.
    public var uhidCreators: [String] = []
    public var uhidModuleLoaded = false
    public var uhidBuiltIn = false
    public var uhidModuleAvailable = false
    /// Where a modules-load.d file (or /etc/modules) asks for uhid at boot.
    public var uhidBootConfiguration: String?

    /// Where 70-latchkey.rules is installed.
    public var udevRulePath: String?
    public var groupExists = false
    /// Listed as a member of group latchkey (or it is the user's primary group).
    public var userInGroup = false
    /// This process already has the group (false until the user logs in again after joining).
    public var sessionHasGroup = false

    public var runningKeys: [RunningKey] = []
    public var liveSockets: [String] = []
    /// The key running on the store, from its `serving` record (ServingKey), if any.
    public var storeServedBy: ServingKey?
    /// A setup whose keys run on the socket transport (CI, containers): `--ci`, or found —
    /// `CI` set, or no uhid here while a key answers on a socket. uhid, udev, the user
    /// service and the browser bridge are then not needed.
    public var socketSetup = false
    public var userUnitPath: String?
    /// Latchkey came from its Debian package (its copyright file is there: only the package
    /// installs it, and dpkg's database is not for other programs to read), so fixes name the
    /// package, not the checkout's scripts/ and udev/ folders, which a package user lacks.
    public var installedByPackage = false
    /// `latchkey bridge status`: each browser's wiring, and the extension's last contact.
    public var bridge: [BridgeInstallation.Status] = []
    public var bridgeContact: BridgeContact?
    /// Flatpak and Snap browsers, and whether their sandbox lets them open FIDO devices.
    public var sandboxedBrowsers: [SandboxedBrowser] = []
    /// The sandbox or container `latchkey doctor` itself runs in, if any.
    public var runningSandbox: RunningSandbox?
    /// FIDO hidraw devices this process can see (any key, Latchkey's or not).
    public var fidoDeviceCount = 0

    public var store: Store

    public init(userName: String, isRoot: Bool, kernelRelease: String, store: Store) {
        self.userName = userName
        self.isRoot = isRoot
        self.kernelRelease = kernelRelease
        self.store = store
    }

    // MARK: - Gathering

    /// Where `gather` looks; tests of the gathering itself may point these elsewhere.
    public struct Paths: Sendable {
        public var uhid = "/dev/uhid"
        public var sysModule = "/sys/module/uhid"
        public var modulesRoot = "/lib/modules"
        public var modulesLoadDirectories = ["/etc/modules-load.d", "/run/modules-load.d", "/usr/local/lib/modules-load.d",
                                             "/usr/lib/modules-load.d", "/lib/modules-load.d"]
        public var etcModules = "/etc/modules"
        public var ruleDirectories = ["/etc/udev/rules.d", "/run/udev/rules.d", "/usr/local/lib/udev/rules.d",
                                      "/usr/lib/udev/rules.d", "/lib/udev/rules.d"]
        public var ruleName = "70-latchkey.rules"
        public var packageMarker = "/usr/share/doc/latchkey/copyright"
        public init() {}
    }

    /// Looks at this machine. Opens the store only read-mostly and without the
    /// key's exclusive lock (`StoreLock.none`), and only if it already exists.
    public static func gather(storeDirectory: String, extraSockets: [String] = [],
                              environment: [String: String] = ProcessInfo.processInfo.environment,
                              paths: Paths = Paths(), browserPaths: SandboxedBrowser.Paths? = nil) -> DoctorFacts {
        let uid = getuid()
        let user = userName(uid: uid, environment: environment)
        var facts = DoctorFacts(userName: user, isRoot: geteuid() == 0, kernelRelease: kernelRelease(),
                                store: storeFacts(directory: storeDirectory, environment: environment))
        let manager = FileManager.default
        facts.bridge = BridgeInstallation.status(launcherPath: BridgeCommand.launcherPath(environment: environment),
                                                 browsers: BridgeCommand.browsers(userDataDirectory: nil, environment: environment))
        facts.bridgeContact = BridgeContact.read(storeDirectory: storeDirectory)

        facts.uhidPath = paths.uhid
        facts.uhidNodeExists = manager.fileExists(atPath: paths.uhid)
        facts.uhidAccessible = access(paths.uhid, R_OK | W_OK) == 0
        facts.uhidCreators = UHIDCreators.find(path: paths.uhid)
        facts.uhidModuleLoaded = manager.fileExists(atPath: paths.sysModule)
        let moduleDirectory = paths.modulesRoot + "/" + facts.kernelRelease
        facts.uhidBuiltIn = lines(of: moduleDirectory + "/modules.builtin").contains { $0.hasSuffix("/uhid.ko") }
        facts.uhidModuleAvailable = lines(of: moduleDirectory + "/modules.dep").contains { line in
            let module = line.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
            return module.hasSuffix("/uhid.ko") || module.contains("/uhid.ko.")
        }
        for directory in paths.modulesLoadDirectories {
            let files = ((try? manager.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".conf") }.sorted()
            if let file = files.first(where: { lines(of: directory + "/" + $0).contains("uhid") }) {
                facts.uhidBootConfiguration = directory + "/" + file
                break
            }
        }
        if facts.uhidBootConfiguration == nil, lines(of: paths.etcModules).contains("uhid") {
            facts.uhidBootConfiguration = paths.etcModules
        }

        facts.udevRulePath = paths.ruleDirectories.map { $0 + "/" + paths.ruleName }
            .first { manager.fileExists(atPath: $0) }
        if let group = getgrnam("latchkey") {
            facts.groupExists = true
            let gid = group.pointee.gr_gid
            var members: [String] = []
            var member = group.pointee.gr_mem
            while let name = member?.pointee {
                members.append(String(cString: name))
                member = member?.advanced(by: 1)
            }
            let primary = getpwuid(uid).map { $0.pointee.pw_gid == gid } ?? false
            facts.userInGroup = members.contains(user) || primary
            facts.sessionHasGroup = processGroups().contains(gid)
        }

        facts.sandboxedBrowsers = SandboxedBrowser.find(paths: browserPaths ?? SandboxedBrowser.Paths(environment: environment))
        facts.runningSandbox = RunningSandbox.detect(environment: environment)
        let devices = HIDDeviceEnumerator().fidoDevices()
        facts.fidoDeviceCount = devices.count
        for device in devices {
            guard let name = device.latchkeyName else { continue }
            facts.runningKeys.append(RunningKey(name: name, devicePath: device.devicePath, isAccessible: device.isAccessible))
        }
        var sockets = extraSockets
        facts.storeServedBy = ServingKey.read(directory: storeDirectory)
        if case let .socket(path)? = facts.storeServedBy?.transport { sockets.insert(path, at: 0) }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            sockets.append(runtime + "/latchkey.sock")
            let directory = runtime + "/latchkey"
            for name in ((try? manager.contentsOfDirectory(atPath: directory)) ?? []).sorted() where name.hasSuffix(".sock") {
                sockets.append(directory + "/" + name)
            }
        }
        sockets.append(ControlSocket.defaultDirectory(environment: environment, uid: uid) + "/latchkey.sock")
        var seen = Set<String>()
        for socket in sockets where seen.insert(socket).inserted && manager.fileExists(atPath: socket) {
            if let client = try? SocketClient(path: socket) {
                client.close()
                facts.liveSockets.append(socket)
            }
        }

        let home = environment["HOME"] ?? NSHomeDirectory()
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
        facts.userUnitPath = [configHome + "/systemd/user/latchkey.service", "/etc/systemd/user/latchkey.service",
                              "/usr/local/lib/systemd/user/latchkey.service", "/usr/lib/systemd/user/latchkey.service"]
            .first { manager.fileExists(atPath: $0) }
        facts.installedByPackage = manager.fileExists(atPath: paths.packageMarker)
        return facts
    }

    /// The store directory's modes, and — if it exists and is private — its integrity.
    static func storeFacts(directory: String,
                           environment: [String: String] = ProcessInfo.processInfo.environment) -> Store {
        var store = Store(directory: directory)
        guard let mode = permissionBits(directory) else { return store }
        store.exists = true
        store.directoryMode = mode
        for name in ["credentials.sqlite", "credentials.sqlite-wal", "credentials.sqlite-shm", "master.key", "lock"] {
            if let fileMode = permissionBits(directory + "/" + name) { store.fileModes[name] = fileMode }
        }
        store.databaseExists = store.fileModes["credentials.sqlite"] != nil
        let isPrivate = mode & 0o077 == 0 && store.fileModes.values.allSatisfy { $0 & 0o077 == 0 }
        guard store.databaseExists, isPrivate else { return store }
        store.masterKey = try? MasterKeySeal.state(directory: directory)
        // A sealed store is opened only when its passphrase comes without asking (doctor does not prompt).
        if case .sealedWithPassphrase = store.masterKey, environment[PassphraseInput.environmentName] == nil,
           environment["CREDENTIALS_DIRECTORY"] == nil {
            store.integrity = .sealedNotChecked
            return store
        }
        do {
            // Never `.exclusive`: a running key holds that lock, and must keep it.
            let opened = try SQLiteCredentialStore.open(directory: directory, lock: .none)
            defer { opened.close() }
            store.integrity = try opened.integrityCheck()
                ? .healthy(credentials: try opened.residentCredentialCount()) : .failed
        } catch {
            store.integrity = .unreadable(error.message(directory: directory))
        }
        return store
    }

    private static func permissionBits(_ path: String) -> UInt16? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return UInt16(info.st_mode & 0o7777)
    }

    private static func lines(of path: String) -> [String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.hasPrefix("#") }
    }

    private static func userName(uid: uid_t, environment: [String: String]) -> String {
        if let entry = getpwuid(uid), let name = entry.pointee.pw_name { return String(cString: name) }
        return environment["USER"] ?? "uid \(uid)"
    }

    private static func kernelRelease() -> String {
        var names = utsname()
        uname(&names)
        return withUnsafeBytes(of: names.release) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }

    private static func processGroups() -> Set<gid_t> {
        var groups = Set([getegid(), getgid()])
        let count = getgroups(0, nil)
        if count > 0 {
            var list = [gid_t](repeating: 0, count: Int(count))
            let filled = getgroups(count, &list)
            if filled > 0 { groups.formUnion(list.prefix(Int(filled))) }
        }
        return groups
    }
}

/// Who besides root may open /dev/uhid for reading and writing (`DoctorFacts.uhidCreators`).
enum UHIDCreators {
    static func find(path: String) -> [String] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        let mode = info.st_mode
        if mode & 0o006 == 0o006 { return ["everyone"] }
        var names = Set<String>()
        if info.st_uid != 0, mode & 0o600 == 0o600, let name = userName(info.st_uid) { names.insert(name) }
        if mode & 0o060 == 0o060 { names.formUnion(groupMembers(info.st_gid)) }
        names.formUnion(aclUsers(path))
        names.remove("root")
        return names.sorted()
    }

    static func userName(_ uid: uid_t) -> String? {
        getpwuid(uid).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
    }

    /// Members listed in the group database, and users whose primary group it is.
    static func groupMembers(_ gid: gid_t) -> Set<String> {
        var names = Set<String>()
        if let group = getgrgid(gid) {
            var member = group.pointee.gr_mem
            while let name = member?.pointee {
                names.insert(String(cString: name))
                member = member?.advanced(by: 1)
            }
        }
        setpwent()
        while let entry = getpwent() {
            if entry.pointee.pw_gid == gid, let name = entry.pointee.pw_name { names.insert(String(cString: name)) }
        }
        endpwent()
        return names
    }

    /// The named users of the POSIX ACL (`system.posix_acl_access`: a 4-byte version, then
    /// entries of tag (2 bytes), permissions (2) and id (4); tag 2 is a named user) with read
    /// and write — what systemd-logind's `uaccess` grants the user at the seat.
    static func aclUsers(_ path: String) -> Set<String> {
        guard let buffer = FileSystem.extendedAttribute(path, "system.posix_acl_access"), buffer.count >= 4 else { return [] }
        let size = buffer.count
        var names = Set<String>()
        var offset = 4
        while offset + 8 <= size {
            let tag = UInt16(buffer[offset]) | UInt16(buffer[offset + 1]) << 8
            let permissions = UInt16(buffer[offset + 2]) | UInt16(buffer[offset + 3]) << 8
            let id = UInt32(buffer[offset + 4]) | UInt32(buffer[offset + 5]) << 8 | UInt32(buffer[offset + 6]) << 16
                | UInt32(buffer[offset + 7]) << 24
            if tag == 0x02, permissions & 0o6 == 0o6 { names.insert(userName(uid_t(id)) ?? "uid \(id)") }
            if tag == 0x08, permissions & 0o6 == 0o6 { names.formUnion(groupMembers(gid_t(id))) }
            offset += 8
        }
        return names
    }
}
