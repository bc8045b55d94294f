import Authenticator
import CredentialStore
import FIDOClient
import FIDOCrypto
import Foundation
import Glibc
import KeySealing
import SignalBridge
import SystemIO
import Encoding

/// `latchkey init`: the first run of a desktop key, in one command. It creates the key's store
/// sealed from its first byte — to this machine's TPM when one answers for the user, else with
/// the login keyring, else with a passphrase; a raw master.key is never written on the way —,
/// enables the user unit that serves it, wires the browsers, and ends with what it did and what
/// is left, each left thing with its exact fix. Run again, it changes nothing that is set up
/// (an unsealed store it finds is sealed).
public enum InitCommand {
    public static let spec = CommandSpec(
        name: "init",
        abstract: "Set up your key once: its store sealed from the first byte (the TPM, else the login keyring, else a "
            + "passphrase), the user unit enabled, the browsers wired; then what is left.",
        options: CommandTarget.storeOptions + [
            .init("tpm", help: "Seal to this machine's TPM 2.0 (TSS2_TCTI if set, else /dev/tpmrm0)."),
            .init("pcr", value: "N[,N]", help: "With --tpm: also bind to these PCRs' present values (SHA-256 bank)."),
            .init("keyring", help: "Seal with a key kept in the login keyring (Secret Service)."),
            .init("passphrase", help: "Seal with a passphrase (scrypt, 128 MiB per guess)."),
            StoreCommand.passphraseFileOption,
            ExchangeFiles.scryptOption,
            .init("no-unit", help: "Leave the user unit (latchkey.service) as it is."),
            .init("no-bridge", help: "Leave the browsers' wiring as it is."),
            CredentialsCommand.jsonOption,
        ],
        examples: [
            .init("latchkey init", "Your key, sealed the best way this machine allows, running at every login."),
            .init("latchkey init --passphrase --passphrase-file ~/.config/latchkey/passphrase", "Sealed with a passphrase kept in a private file."),
        ])

    /// What `init` asks of the machine; tests give their own.
    struct System: Sendable {
        /// nil when a TPM answers for this user, else why not.
        var tpmProblem: @Sendable () -> String? = { TPMSeal.probe(tcti: nil) }
        /// nil when a Secret Service answers, else why not.
        var keyringProblem: @Sendable () -> String? = { KeyringSeal.probe() }
        /// The TPM device this user may not open (a TPM that needs group tss), or nil.
        var lockedTPMDevice: @Sendable () -> String? = {
            let device = "/dev/tpmrm0"
            return FileManager.default.fileExists(atPath: device) && access(device, R_OK | W_OK) != 0 ? device : nil
        }
        /// `systemctl --user ARGS…`: its status and what it said, or nil when it cannot be run.
        var systemctl: @Sendable ([String]) -> (status: Int32, text: String)? = InitCommand.systemctl
        /// Whether a user unit latchkey.service is installed (the package's, or `scripts/install`'s).
        var unitInstalled: @Sendable ([String: String]) -> Bool = { environment in
            let configHome = environment["XDG_CONFIG_HOME"] ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.config")
            return ["/usr/lib/systemd/user", "/usr/local/lib/systemd/user", "/etc/systemd/user", configHome + "/systemd/user"]
                .contains { FileManager.default.fileExists(atPath: $0 + "/latchkey.service") }
        }
        /// Whether the package's host manifests wire every user's browsers to their default key.
        var packagedHost: @Sendable () -> Bool = {
            FileManager.default.fileExists(atPath: "/usr/lib/mozilla/native-messaging-hosts/org.latchkey.bridge.json")
                && FileManager.default.fileExists(atPath: "/etc/chromium/native-messaging-hosts/org.latchkey.bridge.json")
        }
    }

    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 { try run(parsed, io: .standard, system: System()) }

    /// What was done and what is left, in the order they happened.
    struct Report {
        var done: [String] = []
        var left: [String] = []
    }

    static func run(_ parsed: ParsedArguments, io: CommandIO, system: System) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let chosen = ["tpm", "keyring", "passphrase"].filter { parsed.flag($0) }
            guard chosen.count <= 1 else { throw .usage("choose one of --tpm, --keyring, --passphrase (or none: init chooses)") }
            if parsed.value("pcr") != nil, chosen != ["tpm"] { throw .usage("--pcr binds a TPM seal: use it with --tpm") }
            guard case let .store(directory, name) = try CommandTarget.resolve(parsed, environment: io.environment) else {
                throw .usage("init sets up a key's store (--name or --store)")
            }
            let isDefaultKey = parsed.value("store") == nil && (parsed.value("name") ?? "default") == "default"
            var report = Report()
            try setUpStore(directory, chosen: chosen.first, parsed: parsed, io: io, system: system, report: &report)
            // The unit and the browsers' host start with no terminal: a passphrase must come from a file.
            let passphraseSealed = if case .sealedWithPassphrase = try StoreCommand.storeState(directory) { true } else { false }
            if !parsed.flag("no-unit") {
                enableUnit(directory: directory, isDefaultKey: isDefaultKey, name: name, passphraseSealed: passphraseSealed,
                           io: io, system: system, report: &report)
            }
            if !parsed.flag("no-bridge") {
                try wireBrowsers(directory: directory, isDefaultKey: isDefaultKey, passphraseSealed: passphraseSealed,
                                 parsed: parsed, io: io, system: system, report: &report)
            }
            if parsed.flag("json") {
                io.out(JSONValue.object([("store", .string(directory)), ("done", .array(report.done.map(JSONValue.string))),
                                         ("left", .array(report.left.map(JSONValue.string)))]).rendered)
            } else {
                io.out("Done:")
                for line in report.done { io.out("  - " + line) }
                io.out(report.left.isEmpty ? "Nothing is left to do." : "Left for you:")
                for line in report.left { io.out("  - " + line) }
            }
            return 0
        }
    }

    // MARK: - The store

    /// The store, created sealed (or an unsealed one sealed, or a sealed one kept).
    static func setUpStore(_ directory: String, chosen: String?, parsed: ParsedArguments, io: CommandIO, system: System,
                           report: inout Report) throws(CLIError) {
        let state = try StoreCommand.storeState(directory)
        if state.method != nil {
            report.done.append("kept the store \(directory): \(StoreCommand.describe(state))")
            if let chosen, chosen != state.method {
                report.left.append("to seal it with \(chosen) instead: latchkey store seal --\(chosen)")
            }
            if let weakness = state.weakness { report.left.append(weakness) }
            return
        }
        let (method, words) = try sealMethod(chosen, parsed: parsed, io: io, system: system, report: &report)
        if state == .unsealed {
            do throws(StoreError) {
                try MasterKeySeal.seal(directory: directory, with: method)
            } catch {
                throw .failure(error.message(directory: directory))
            }
            report.done.append("sealed the master key of the existing store \(directory) \(words)")
            return
        }
        let existed = FileManager.default.fileExists(atPath: directory)
        // A database without its master key is not this run's to touch (open refuses it).
        let hadDatabase = FileManager.default.fileExists(atPath: directory + "/credentials.sqlite")
        var options = StoreOptions()
        options.sealNewStore = method
        do throws(StoreError) {
            try SQLiteCredentialStore.open(directory: directory, lock: .none, options: options).close()
        } catch {
            // Nothing half-made is left: its files, its keyring item, a directory this run made.
            if !hadDatabase { SQLiteCredentialStore.discardNewStore(directory: directory, removingDirectory: !existed) }
            throw .failure(error.message(directory: directory))
        }
        report.done.append("created the store \(directory), its master key sealed \(words) from the first byte")
    }

    /// The method to seal with: the one chosen, else the TPM when it answers, else the login
    /// keyring when it answers, else a passphrase (its file, or typed twice). What was passed
    /// over, and how to have it, goes to `report.left`.
    static func sealMethod(_ chosen: String?, parsed: ParsedArguments, io: CommandIO, system: System,
                           report: inout Report) throws(CLIError) -> (MasterKeySeal.Method, String) {
        let tpmWords = "to this machine's TPM 2.0"
        let keyringWords = "with the login keyring"
        func passphrase() throws(CLIError) -> (MasterKeySeal.Method, String) {
            let parameters = try ExchangeFiles.scryptParameters(parsed)
            let secret = try PassphraseInput.new(file: parsed.value("passphrase-file"), terminal: io.terminal, warn: io.err)
            return (.passphrase(secret, parameters), "with a passphrase (\(StoreCommand.describe(parameters)))")
        }
        switch chosen {
        case "tpm":
            if let problem = system.tpmProblem() {
                throw .failure("cannot seal to the TPM: \(tpmFix(DisplayText.safe(problem), system: system, io: io))")
            }
            return (.tpm(pcrs: try StoreCommand.pcrList(parsed.value("pcr"))), tpmWords)
        case "keyring":
            if let problem = system.keyringProblem() {
                throw .failure("cannot seal with the login keyring: \(DisplayText.safe(problem)); is your desktop session's keyring unlocked?")
            }
            return (.keyring, keyringWords)
        case "passphrase":
            return try passphrase()
        default:
            break
        }
        let tpmProblem = system.tpmProblem()
        if tpmProblem == nil { return (.tpm(pcrs: []), tpmWords) }
        let keyringProblem = system.keyringProblem()
        // A TPM this user could have is worth saying even when another method is taken.
        if let device = system.lockedTPMDevice() {
            let user = io.environment["USER"] ?? "$USER"
            report.left.append("this machine's TPM (\(device)) is there but only group tss may use it: "
                + "sudo adduser \(DisplayText.safe(user, limit: 32)) tss, log in again, then latchkey store seal --tpm")
        }
        if keyringProblem == nil { return (.keyring, keyringWords) }
        guard parsed.value("passphrase-file") != nil || io.terminal != nil else {
            throw .failure("no TPM answers (\(DisplayText.safe(tpmProblem ?? ""))), no login keyring answers (\(DisplayText.safe(keyringProblem ?? ""))), "
                + "and there is no terminal to type a passphrase on: give --passphrase-file FILE (one line, a file only you can read)")
        }
        return try passphrase()
    }

    static func tpmFix(_ problem: String, system: System, io: CommandIO) -> String {
        if let device = system.lockedTPMDevice() {
            return "\(device) is only for group tss: sudo adduser \(DisplayText.safe(io.environment["USER"] ?? "$USER", limit: 32)) tss, "
                + "log in again, and run this again"
        }
        return problem
    }

    // MARK: - The user unit

    static func enableUnit(directory: String, isDefaultKey: Bool, name: String, passphraseSealed: Bool, io: CommandIO,
                           system: System, report: inout Report) {
        guard isDefaultKey else {
            report.left.append("the user unit serves the default key; run this one with: latchkey serve --name \(name)")
            return
        }
        guard system.unitInstalled(io.environment) else {
            report.left.append("no user unit latchkey.service is installed (the package or scripts/install adds it); "
                + "run the key with: latchkey serve")
            return
        }
        if passphraseSealed {
            let file = (io.environment["XDG_CONFIG_HOME"] ?? "~/.config") + "/latchkey/passphrase"
            report.left.append("the user unit starts with no terminal to ask the passphrase on: put it in \(file) "
                + "(chmod 600), run systemctl --user edit latchkey and add under [Service] "
                + "LoadCredential=latchkey-passphrase:%h/.config/latchkey/passphrase, then systemctl --user enable --now latchkey")
            return
        }
        guard let result = system.systemctl(["enable", "--now", "latchkey.service"]) else {
            report.left.append("start your key at every login: systemctl --user enable --now latchkey (systemctl could not be run)")
            return
        }
        if result.status == 0 {
            // Said only once the key serves the store: systemctl's 0 is the unit started, not the key up.
            let deadline = MonotonicClock.nanoseconds() + 10_000_000_000
            while ServingKey.read(directory: directory) == nil && MonotonicClock.nanoseconds() < deadline { usleep(100_000) }
            if ServingKey.read(directory: directory) != nil {
                report.done.append("enabled and started the user unit latchkey.service: your key runs at every login")
            } else {
                report.left.append("the user unit latchkey.service is enabled, but no key serves \(directory) yet: "
                    + "journalctl --user -u latchkey says why (a store kept elsewhere: systemctl --user edit latchkey)")
            }
        } else {
            let said = DisplayText.safe(result.text.split(separator: "\n").first.map(String.init) ?? "", limit: 160)
            report.left.append("start your key at every login: systemctl --user enable --now latchkey "
                + "(it failed here: \(said.isEmpty ? "status \(result.status)" : said))")
        }
    }

    /// `systemctl --user ARGS…` through ChildProcess, waited for at most 30 s.
    @Sendable static func systemctl(_ arguments: [String]) -> (status: Int32, text: String)? {
        guard let executable = ChildProcessRunner.locate("systemctl"),
              let running = try? ChildProcessRunner().start(executable: executable, arguments: ["--user"] + arguments) else {
            return nil
        }
        let deadline = MonotonicClock.nanoseconds() + 30_000_000_000
        while running.exit == nil {
            guard MonotonicClock.nanoseconds() < deadline else {
                running.close()   // SIGINT now, SIGKILL a second later: wait for it, so none is left running
                let killed = MonotonicClock.nanoseconds() + 3_000_000_000
                while running.exit == nil && MonotonicClock.nanoseconds() < killed { usleep(20_000) }
                return (124, "systemctl did not answer within 30 s")
            }
            usleep(20_000)
        }
        guard let exit = running.exit else { return nil }
        return (exit.status, exit.errorOutput.isEmpty ? exit.output : exit.errorOutput)
    }

    // MARK: - The browsers

    static func wireBrowsers(directory: String, isDefaultKey: Bool, passphraseSealed: Bool, parsed: ParsedArguments,
                             io: CommandIO, system: System, report: inout Report) throws(CLIError) {
        let passphraseFile = parsed.value("passphrase-file").map(BridgeCommand.absolute)
        if isDefaultKey, system.packagedHost(), !passphraseSealed || passphraseFile == nil {
            report.done.append("the browsers reach this key through the package's native-messaging host (nothing per user)")
            if passphraseSealed {
                report.left.append("the browsers' host starts with no terminal: for websites' signals and the passkey provider, "
                    + "latchkey bridge install --passphrase-file FILE")
            }
            return
        }
        if passphraseSealed, passphraseFile == nil {
            report.left.append("wire the browsers once the passphrase is in a private file: "
                + "latchkey bridge install --passphrase-file FILE" + (isDefaultKey ? "" : " --store \(directory)"))
            return
        }
        let done: [String]
        do throws(SignalFailure) {
            done = try BridgeInstallation.install(binary: BridgeCommand.runningBinary(),
                                                  targetArguments: ["--store", BridgeCommand.absolute(directory)],
                                                  launcherPath: BridgeCommand.launcherPath(environment: io.environment),
                                                  browsers: BridgeCommand.browsers(userDataDirectory: nil, environment: io.environment),
                                                  passphraseFile: passphraseFile)
        } catch {
            report.left.append("wire the browsers: latchkey bridge install (it failed here: \(error.message))")
            return
        }
        report.done.append("wired the browsers to this key (" + done.count.description + " host files); "
            + "load Latchkey's extension once: docs/signals.md")
    }
}
