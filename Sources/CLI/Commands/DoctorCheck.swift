import SignalBridge
/// One verdict of `latchkey doctor`: what was checked, what was found, and
/// — unless it is OK — the command or step that fixes it.
public struct DoctorCheck: Sendable, Equatable {
    public enum Status: String, Sendable, Equatable {
        case ok = "OK"
        case warn = "WARN"
        case fail = "FAIL"
    }

    /// Stable identifier for scripts: `uhid`, `uhid-boot`, `uhid-access`, `udev-rules`,
    /// `hidraw-access`, `key-running`, `store`, `master-key`, `user-service`, `signal-bridge`, `sandboxed-browsers`,
    /// `browser-flatpak-<app ID>`, `browser-snap-<snap>`, `running-sandbox`.
    public var id: String
    public var title: String
    public var status: Status
    public var detail: String
    public var fix: String?

    public init(id: String, title: String, status: Status, detail: String, fix: String? = nil) {
        self.id = id; self.title = title; self.status = status; self.detail = detail; self.fix = fix
    }

    /// How to put the system files in place: the package's way for a package user, the
    /// checkout's scripts/install otherwise.
    static func installHint(_ facts: DoctorFacts) -> String {
        facts.installedByPackage
            ? "reinstall the package: sudo apt install --reinstall latchkey (it installs the udev rule, the latchkey group "
                + "and the user service)"
            : "run scripts/install from the Latchkey source tree (it installs udev/70-latchkey.rules, "
                + "the latchkey group and the user service)"
    }
    static func ruleCommands(_ facts: DoctorFacts) -> String {
        facts.installedByPackage
            ? "sudo udevadm control --reload && sudo udevadm trigger"
            : "sudo install -m 0644 udev/70-latchkey.rules /etc/udev/rules.d/ && sudo udevadm control --reload && sudo udevadm trigger"
    }

    /// Every check, judged from `facts` alone.
    public static func evaluate(_ facts: DoctorFacts) -> [DoctorCheck] {
        if facts.socketSetup { return socketSetup(facts) }
        var checks = [uhid(facts)]
        if let boot = uhidBoot(facts) { checks.append(boot) }
        if let access = uhidAccess(facts) { checks.append(access) }
        if let sharing = uhidSharing(facts) { checks.append(sharing) }
        checks.append(udevRules(facts))
        checks.append(hidrawAccess(facts))
        checks.append(keyRunning(facts))
        checks.append(store(facts.store))
        if let masterKey = masterKey(facts.store) { checks.append(masterKey) }
        checks.append(userService(facts))
        checks.append(signalBridge(facts))
        checks += sandboxedBrowsers(facts)
        if let sandbox = runningSandbox(facts) { checks.append(sandbox) }
        return checks
    }

    /// A CI or container setup (`--ci`, or found): keys on the socket transport. What a desktop
    /// needs is said as not needed, never as a failure or a warning.
    static func socketSetup(_ facts: DoctorFacts) -> [DoctorCheck] {
        let notNeeded = "not needed: keys here run on the socket transport (doctor --ci)"
        var checks = [DoctorCheck(id: "uhid", title: "uhid kernel module", status: .ok,
                                  detail: facts.uhidNodeExists ? "\(facts.uhidPath) is present (unused)" : notNeeded)]
        checks.append(keyRunning(facts))
        checks.append(store(facts.store))
        if let masterKey = masterKey(facts.store) { checks.append(masterKey) }
        for (id, title) in [("udev-rules", "udev rules"), ("user-service", "systemd user service"), ("signal-bridge", "websites' signals")] {
            checks.append(DoctorCheck(id: id, title: title, status: .ok, detail: notNeeded))
        }
        // A browser in a sandbox cannot reach a key on a socket either: still worth saying.
        checks += sandboxedBrowsers(facts)
        if let sandbox = runningSandbox(facts) { checks.append(sandbox) }
        return checks
    }

    static func uhid(_ facts: DoctorFacts) -> DoctorCheck {
        let title = "uhid kernel module"
        if facts.uhidNodeExists {
            let how = facts.uhidBuiltIn ? "built into the kernel" : "module loaded"
            return DoctorCheck(id: "uhid", title: title, status: .ok, detail: "\(facts.uhidPath) is present (\(how))")
        }
        if facts.uhidModuleLoaded || facts.uhidBuiltIn {
            return DoctorCheck(id: "uhid", title: title, status: .fail,
                               detail: "uhid is in the kernel but \(facts.uhidPath) is missing",
                               fix: "check that devtmpfs is mounted on /dev, or create the node: sudo mknod -m 0600 /dev/uhid c 10 239")
        }
        if facts.uhidModuleAvailable {
            return DoctorCheck(id: "uhid", title: title, status: .fail,
                               detail: "the uhid module is not loaded, so \(facts.uhidPath) does not exist",
                               fix: "sudo modprobe uhid" + (facts.installedByPackage ? " (the package makes it load at every boot)"
                                                                              : " (scripts/install also makes it load at every boot)"))
        }
        return DoctorCheck(id: "uhid", title: title, status: .fail,
                           detail: "this kernel (\(facts.kernelRelease)) has no uhid module",
                           fix: "use a kernel built with CONFIG_UHID (Debian's is), or run the key without uhid: "
                               + "latchkey serve --transport socket:PATH"
                               + (facts.installedByPackage ? "" : " (or, from the source tree, in the VM rig: scripts/vm-run)"))
    }

    /// Only where uhid exists as a module at all.
    static func uhidBoot(_ facts: DoctorFacts) -> DoctorCheck? {
        let title = "uhid loads at boot"
        if facts.uhidBuiltIn {
            return DoctorCheck(id: "uhid-boot", title: title, status: .ok, detail: "uhid is built into the kernel")
        }
        guard facts.uhidModuleAvailable || facts.uhidModuleLoaded else { return nil }
        if let file = facts.uhidBootConfiguration {
            return DoctorCheck(id: "uhid-boot", title: title, status: .ok, detail: "\(file) loads it")
        }
        return DoctorCheck(id: "uhid-boot", title: title, status: .warn,
                           detail: "nothing loads uhid at boot (no modules-load.d entry)",
                           fix: facts.installedByPackage
                               ? "echo uhid | sudo tee /etc/modules-load.d/latchkey.conf (the package's own entry is missing: "
                                   + "sudo apt install --reinstall latchkey puts it back)"
                               : "sudo install -m 0644 udev/modules-load.d/latchkey.conf /etc/modules-load.d/ (scripts/install does this)")
    }

    /// Only where /dev/uhid exists.
    static func uhidAccess(_ facts: DoctorFacts) -> DoctorCheck? {
        guard facts.uhidNodeExists else { return nil }
        let title = "access to \(facts.uhidPath)"
        if facts.uhidAccessible {
            return DoctorCheck(id: "uhid-access", title: title, status: .ok,
                               detail: "\(facts.userName) can open \(facts.uhidPath)" + (facts.isRoot ? " (as root)" : ""))
        }
        let fix: String
        if facts.udevRulePath == nil {
            fix = installHint(facts) + ", then log out and in again"
        } else if !facts.groupExists {
            fix = "sudo groupadd --system latchkey && sudo usermod -aG latchkey \(facts.userName) "
                + "&& sudo udevadm trigger --sysname-match=uhid, then log out and in again"
        } else if !facts.userInGroup {
            fix = "sudo usermod -aG latchkey \(facts.userName), then log out and in again"
        } else if !facts.sessionHasGroup {
            fix = "you joined group latchkey, but this session predates it: log out and in again (or run `newgrp latchkey`)"
        } else {
            fix = "the rule has not been applied yet: sudo udevadm control --reload && sudo udevadm trigger --sysname-match=uhid"
        }
        return DoctorCheck(id: "uhid-access", title: title, status: .fail,
                           detail: "\(facts.userName) cannot open \(facts.uhidPath) for reading and writing", fix: fix)
    }

    /// Whoever may open /dev/uhid can create a device that claims another user in its HID phys,
    /// and the udev rule gives its node to that user, whose browser then registers passkeys on
    /// the creator's key (issue 34, finding 5). Fine for one user; a warning for more.
    static func uhidSharing(_ facts: DoctorFacts) -> DoctorCheck? {
        guard facts.uhidNodeExists, facts.udevRulePath != nil else { return nil }
        let title = "who may create keys"
        let creators = facts.uhidCreators
        if creators.count <= 1 && creators != ["everyone"] {
            return DoctorCheck(id: "uhid-sharing", title: title, status: .ok,
                               detail: creators.isEmpty ? "only root may open \(facts.uhidPath)"
                                   : "only \(creators[0]) (and root) may open \(facts.uhidPath)")
        }
        let who = creators == ["everyone"] ? "every user" : "\(creators.count) users (\(creators.joined(separator: ", ")))"
        return DoctorCheck(id: "uhid-sharing", title: title, status: .warn,
                           detail: "\(who) may open \(facts.uhidPath): any of them can present a security key whose device "
                               + "node udev gives to another of them (the rule trusts the owner the device names), so that "
                               + "user's browser would register passkeys on a key the creator controls",
                           fix: "on a machine shared by several people, keep group latchkey to one user "
                               + "(sudo gpasswd -d USER latchkey) and run other users' keys on the socket transport")
    }

    static func udevRules(_ facts: DoctorFacts) -> DoctorCheck {
        let title = "udev rules"
        if let path = facts.udevRulePath {
            return DoctorCheck(id: "udev-rules", title: title, status: .ok, detail: "installed at \(path)")
        }
        // Without the rule only root (or a hand-made chmod) reaches /dev/uhid.
        let blocking = facts.uhidNodeExists && !facts.uhidAccessible
        return DoctorCheck(id: "udev-rules", title: title, status: blocking ? .fail : .warn,
                           detail: "70-latchkey.rules is not installed (it gives group latchkey /dev/uhid, and each "
                               + "Latchkey hidraw node to the user whose key it is)",
                           fix: installHint(facts) + "; or by hand: " + ruleCommands(facts))
    }

    static func hidrawAccess(_ facts: DoctorFacts) -> DoctorCheck {
        let title = "access to Latchkey's hidraw nodes"
        guard !facts.runningKeys.isEmpty else {
            return DoctorCheck(id: "hidraw-access", title: title, status: .ok,
                               detail: "no Latchkey device is up, nothing to check")
        }
        let blocked = facts.runningKeys.filter { !$0.isAccessible }
        guard !blocked.isEmpty else {
            return DoctorCheck(id: "hidraw-access", title: title, status: .ok,
                               detail: "\(facts.userName) can open " + facts.runningKeys.map(\.devicePath).joined(separator: ", "))
        }
        let fix = facts.udevRulePath == nil
            ? installHint(facts) + "; browsers and libfido2 run as you and need this access"
            : "a key's hidraw node belongs to the user who runs the key (udev/70-latchkey.rules): run it as "
                + "\(facts.userName) (`latchkey serve`, or the user service), then sudo udevadm trigger --subsystem-match=hidraw"
        return DoctorCheck(id: "hidraw-access", title: title, status: .fail,
                           detail: "\(facts.userName) cannot open " + blocked.map(\.devicePath).joined(separator: ", ")
                               + ", so browsers and libfido2 running as \(facts.userName) do not see the key", fix: fix)
    }

    static func keyRunning(_ facts: DoctorFacts) -> DoctorCheck {
        let title = "a key is running"
        var found = facts.runningKeys.map { "key '\($0.name)' on \($0.devicePath)" }
        found += facts.liveSockets.map { socket in
            if case .socket(socket)? = facts.storeServedBy?.transport { return "the key of \(facts.store.directory) on socket \(socket)" }
            return "a key listening on \(socket)"
        }
        if !found.isEmpty {
            return DoctorCheck(id: "key-running", title: title, status: .ok, detail: found.joined(separator: "; "))
        }
        let fix = facts.userUnitPath != nil
            ? "systemctl --user start latchkey (its log: journalctl --user -u latchkey)"
            : "start one: latchkey serve" + (facts.installedByPackage ? "" : " (or install the user service with scripts/install)")
        return DoctorCheck(id: "key-running", title: title, status: .warn,
                           detail: "no Latchkey device (uniq latchkey:*) and no live Latchkey socket found", fix: fix)
    }

    static func store(_ store: DoctorFacts.Store) -> DoctorCheck {
        let title = "store"
        let directory = store.directory
        guard store.exists, let mode = store.directoryMode else {
            return DoctorCheck(id: "store", title: title, status: .warn,
                               detail: "no store at \(directory) yet",
                               fix: "the first `latchkey serve` creates it (use --name or --store to check another key's store)")
        }
        if mode & 0o077 != 0 {
            return DoctorCheck(id: "store", title: title, status: .fail,
                               detail: "\(directory) is accessible by group or others (mode \(octal(mode)))",
                               fix: "chmod 700 '\(directory)'")
        }
        let exposed = store.fileModes.filter { $0.value & 0o077 != 0 }.sorted { $0.key < $1.key }
        if !exposed.isEmpty {
            return DoctorCheck(id: "store", title: title, status: .fail,
                               detail: exposed.map { "\($0.key) has mode \(octal($0.value))" }.joined(separator: ", ")
                                   + " (group or others can read it)",
                               fix: "chmod 600 " + exposed.map { "'\(directory)/\($0.key)'" }.joined(separator: " "))
        }
        guard store.databaseExists else {
            return DoctorCheck(id: "store", title: title, status: .warn,
                               detail: "\(directory) exists but holds no credentials.sqlite yet",
                               fix: "the first `latchkey serve` creates it")
        }
        switch store.integrity {
        case .healthy(let credentials):
            return DoctorCheck(id: "store", title: title, status: .ok,
                               detail: "\(directory): private (0700/0600), integrity check passed, "
                                   + "\(credentials) discoverable credential\(credentials == 1 ? "" : "s")")
        case .failed:
            return DoctorCheck(id: "store", title: title, status: .fail,
                               detail: "\(directory) fails its integrity check",
                               fix: "restore the store from a backup, or stop the key and move the directory aside "
                                   + "to start a fresh key (its credentials are then lost)")
        case .unreadable(let message):
            return DoctorCheck(id: "store", title: title, status: .fail, detail: message,
                               fix: "see the message; `latchkey serve --store \(directory)` reports the same")
        case .sealedNotChecked:
            return DoctorCheck(id: "store", title: title, status: .ok,
                               detail: "\(directory): private (0700/0600), sealed; its integrity is checked when doctor runs with "
                                   + "LATCHKEY_PASSPHRASE_FILE set (it does not ask for the passphrase)")
        case .notChecked:
            return DoctorCheck(id: "store", title: title, status: .warn, detail: "\(directory) was not checked")
        }
    }

    /// How the master key is kept (issue 14): sealed is OK; unsealed is a warning (rigs keep it so).
    static func masterKey(_ store: DoctorFacts.Store) -> DoctorCheck? {
        guard let state = store.masterKey, state != .missing else { return nil }
        let title = "master key"
        if let weakness = state.weakness {
            return DoctorCheck(id: "master-key", title: title, status: .warn, detail: StoreCommand.describe(state) + "; weaker than it "
                                   + "can be: " + weakness,
                               fix: "latchkey store seal --\(state.method ?? "tpm") --store '\(store.directory)'")
        }
        switch state {
        case .sealedWithPassphrase, .sealedWithTPM, .sealedWithKeyring, .missing:
            return DoctorCheck(id: "master-key", title: title, status: .ok, detail: StoreCommand.describe(state))
        case .unsealed:
            return DoctorCheck(id: "master-key", title: title, status: .warn,
                               detail: "unsealed: anyone who copies \(store.directory) (a backup, a stolen disk) has its credentials",
                               fix: "latchkey store seal --tpm --store '\(store.directory)' (or --keyring; or --passphrase, which the "
                                   + "key then needs at every start: docs/desktop.md, \"Protecting your keys\")")
        }
    }

    static func userService(_ facts: DoctorFacts) -> DoctorCheck {
        let title = "systemd user service"
        if let path = facts.userUnitPath {
            return DoctorCheck(id: "user-service", title: title, status: .ok, detail: "installed at \(path)")
        }
        return DoctorCheck(id: "user-service", title: title, status: .warn,
                           detail: "latchkey.service is not installed (optional: it starts the key at login)",
                           fix: installHint(facts))
    }

    /// Websites' signals reach the store only through a wired browser and Latchkey's extension
    /// (optional, so a warning at worst).
    static func signalBridge(_ facts: DoctorFacts) -> DoctorCheck {
        let title = "websites' signals"
        let wired = facts.bridge.filter(\.wired).map(\.browser.name)
        guard !wired.isEmpty else {
            return DoctorCheck(id: "signal-bridge", title: title, status: .warn,
                               detail: "no browser is wired to the key (optional: websites' WebAuthn signals keep its passkeys in sync)",
                               fix: "latchkey bridge install, then load Latchkey's extension (docs/signals.md)")
        }
        let contact = facts.bridgeContact.map { "the extension last reached this store \(CredentialSummary.timestamp($0.time)) from \($0.browser)" }
            ?? "the extension has not reached this store yet"
        return DoctorCheck(id: "signal-bridge", title: title, status: .ok,
                           detail: "wired: \(wired.joined(separator: ", ")); " + contact)
    }

    static func octal(_ mode: UInt16) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
