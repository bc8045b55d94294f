import CredentialStore
import FIDOClient
import Foundation
import SignalBridge
import KeySealing
import Encoding

/// `latchkey bridge install|uninstall|status`: wires browsers to `latchkey native-host` for
/// Latchkey's extension (docs/signals.md). Per user: host
/// manifests for Chromium, Google Chrome and Firefox, and one launcher that runs the host for
/// the key named (`--name`, `--store`; the default key otherwise).
public enum BridgeCommand {
    static let userDataOption = CommandSpec.Option(
        "user-data-dir", value: "DIR",
        help: "Also a Chromium run with --user-data-dir DIR (it looks for hosts in DIR/NativeMessagingHosts).")

    public static let installSpec = CommandSpec(
        name: "bridge install", abstract: "Let Chromium, Chrome and Firefox reach this key's store through Latchkey's extension.",
        options: CommandTarget.storeOptions + [
            .init("binary", value: "PATH", help: "The latchkey the browsers run (default: this one)."),
            .init("passphrase-file", value: "FILE",
                  help: "For a store sealed with a passphrase: the file (only you can read it) the host reads it from."),
            userDataOption,
            CredentialsCommand.jsonOption,
        ])
    public static let uninstallSpec = CommandSpec(
        name: "bridge uninstall", abstract: "Remove the browsers' host manifests and the launcher.",
        options: [userDataOption, CredentialsCommand.jsonOption])
    public static let statusSpec = CommandSpec(
        name: "bridge status", abstract: "Which browsers are wired, and when the extension's last message came.",
        options: CommandTarget.storeOptions + [userDataOption, CredentialsCommand.jsonOption])

    public static func group(io: @escaping @Sendable () -> CommandIO = { .standard }) -> CommandGroup {
        CommandGroup(name: "bridge", abstract: "Wire browsers to the key for websites' WebAuthn signals (install, uninstall, status).",
                     members: [
                        .init(spec: installSpec) { parsed throws(UsageError) in try install(parsed, io: io()) },
                        .init(spec: uninstallSpec) { parsed throws(UsageError) in try uninstall(parsed, io: io()) },
                        .init(spec: statusSpec) { parsed throws(UsageError) in try status(parsed, io: io()) },
                     ])
    }

    public static var spec: CommandSpec { group().spec }
    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 { try group().run(parsed) }

    /// `$XDG_DATA_HOME/latchkey-bridge/native-host` (beside the stores' folder, not in it: a key
    /// may be named anything).
    static func launcherPath(environment: [String: String]) -> String {
        StoreLocation.dataHome(environment: environment) + "/latchkey-bridge/native-host"
    }

    static func browsers(_ parsed: ParsedArguments, environment: [String: String]) -> [BridgeInstallation.Browser] {
        browsers(userDataDirectory: parsed.value("user-data-dir").map(absolute), environment: environment)
    }

    /// The browsers of this user's environment (HOME, XDG_CONFIG_HOME), and one Chromium
    /// `--user-data-dir` folder when given (doctor looks at the usual ones only).
    static func browsers(userDataDirectory: String?, environment: [String: String]) -> [BridgeInstallation.Browser] {
        BridgeInstallation.browsers(home: environment["HOME"] ?? NSHomeDirectory(), configHome: environment["XDG_CONFIG_HOME"],
                                    extraChromiumUserDataDirectories: userDataDirectory.map { [$0] } ?? [])
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// The passphrase file the launcher names: given (it must be private and open the store), or
    /// nil — with a warning when the store is sealed with a passphrase, whose host would then fail.
    static func bridgePassphraseFile(_ parsed: ParsedArguments, directory: String, io: CommandIO) throws(CLIError) -> String? {
        let state = try? MasterKeySeal.state(directory: directory)
        guard let file = parsed.value("passphrase-file") else {
            if case .sealedWithPassphrase = state {
                io.err("warning: the store is sealed with a passphrase, and a browser starts the host with no terminal to ask "
                    + "on: give it with --passphrase-file FILE, or seal the store with --keyring or --tpm instead")
            }
            return nil
        }
        let path = absolute(file)
        _ = try PassphraseInput.read(path)   // refused unless private and readable
        return path
    }

    static func install(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            guard case let .store(directory, _) = try CommandTarget.resolve(parsed, environment: io.environment) else {
                throw .usage("the bridge serves a store (--name or --store)")
            }
            let binary = absolute(parsed.value("binary") ?? Self.runningBinary())
            guard FileManager.default.isExecutableFile(atPath: binary) else { throw .failure("no executable at \(binary)") }
            // The store's absolute path, not --name: the browser's environment (XDG_DATA_HOME) may
            // differ from this shell's, and the launcher must open the store named here.
            let target = ["--store", absolute(directory)]
            let launcher = launcherPath(environment: io.environment)
            let passphraseFile = try bridgePassphraseFile(parsed, directory: directory, io: io)
            let done: [String]
            do throws(SignalFailure) {
                done = try BridgeInstallation.install(binary: binary, targetArguments: target, launcherPath: launcher,
                                                      browsers: browsers(parsed, environment: io.environment),
                                                      passphraseFile: passphraseFile)
            } catch {
                throw .failure(error.message)
            }
            if parsed.flag("json") {
                io.out(JSONValue.object([("store", .string(directory)), ("done", .array(done.map(JSONValue.string)))]).rendered)
                return 0
            }
            io.out("Wired the browsers to the key's store \(directory):")
            for line in done { io.out("  " + line) }
            // The package puts the extension here; a source tree has it in extension/.
            let packaged = "/usr/share/latchkey/extension"
            let folder = FileManager.default.fileExists(atPath: packaged + "/manifest.json") ? packaged : "the extension/ folder of the source tree"
            io.out("Now load Latchkey's extension (\(folder)) in the browser: see docs/signals.md "
                + "(/usr/share/doc/latchkey/docs/signals.md when installed). Websites' signals then reach this key.")
            return 0
        }
    }

    static func uninstall(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let done = BridgeInstallation.uninstall(launcherPath: launcherPath(environment: io.environment),
                                                    browsers: browsers(parsed, environment: io.environment))
            if parsed.flag("json") {
                io.out(JSONValue.object([("removed", .array(done.map(JSONValue.string)))]).rendered)
                return 0
            }
            io.out(done.isEmpty ? "Nothing to remove: no browser was wired." : "Removed:\n" + done.map { "  " + $0 }.joined(separator: "\n"))
            return 0
        }
    }

    static func status(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            guard case let .store(directory, _) = try CommandTarget.resolve(parsed, environment: io.environment) else {
                throw .usage("the bridge serves a store (--name or --store)")
            }
            let launcher = launcherPath(environment: io.environment)
            let statuses = BridgeInstallation.status(launcherPath: launcher, browsers: browsers(parsed, environment: io.environment))
            let contact = BridgeContact.read(storeDirectory: directory)
            let runs = launcherCommand(launcher)
            if parsed.flag("json") {
                let browsers: [JSONValue] = statuses.map { status in
                    .object([("browser", .string(status.browser.name)), ("manifest", .string(status.browser.manifestPath)),
                             ("wired", .bool(status.wired)), ("problem", .optional(status.problem))])
                }
                var lastContact = JSONValue.null
                if let contact {
                    lastContact = .object([("time", .int(Int(contact.time))), ("caller", .string(contact.caller))])
                }
                io.out(JSONValue.object([("launcher", .string(launcher)), ("runs", .optional(runs)), ("browsers", .array(browsers)),
                                         ("store", .string(directory)), ("lastContact", lastContact)]).rendered)
                return 0
            }
            for status in statuses {
                io.out("\(status.browser.name): " + (status.wired ? "wired (\(status.browser.manifestPath))" : "not wired: \(status.problem ?? "")"))
            }
            if let runs { io.out("The launcher \(launcher) runs: \(runs)") }
            io.out(contactSentence(contact, directory: directory))
            return 0
        }
    }

    static func contactSentence(_ contact: BridgeContact?, directory: String) -> String {
        guard let contact else {
            return "The extension has not reached the key's store \(directory) yet (load it in the browser; see docs/signals.md)."
        }
        let (difference, overflow) = Int64(time(nil)).subtractingReportingOverflow(contact.time)
        let ago = overflow ? 0 : max(0, difference)
        let when = ago < 120 ? "\(ago) s ago" : ago < 7200 ? "\(ago / 60) min ago" : ago < 172_800 ? "\(ago / 3600) h ago" : "\(ago / 86_400) days ago"
        return "The extension's last message to the key's store \(directory) came \(when) "
            + "(\(CredentialSummary.timestamp(contact.time)), from \(contact.browser): \(contact.caller); "
            + "recorded at most once a minute)."
    }

    /// The `exec` line of the launcher, without `exec` and the passed-on arguments.
    static func launcherCommand(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n")
            .first { $0.hasPrefix("exec ") }
            .map { String($0.dropFirst(5)).replacingOccurrences(of: " \"$@\"", with: "") }
    }

    /// This process's executable.
    static func runningBinary() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
