import Authenticator
import CredentialStore
import FIDOClient
import KeyService
import Presence
import SystemIO
import Encoding

/// `latchkey pin status|set|change`.
///
/// set and change speak clientPIN (CTAP 2.1 §6.5.5) to a key — a device, or with `--offline` an
/// in-process authenticator on a store that no key is running on (its exclusive lock proves
/// it) — so the key's own PIN policy decides, and a running key is never changed behind its
/// back. status reads a store (while its key runs, too) or asks a device.
public enum PinCommand {
    static let targetOptions = CommandTarget.storeOptions + CommandTarget.deviceOptions
    static let offlineOption = CommandSpec.Option(
        "offline", help: "Change the PIN in the store itself, never through a key running on it (which then must not be).")

    public static let statusSpec = CommandSpec(
        name: "pin status", abstract: "Show whether a PIN is set, the attempts left, forcePINChange and the minimum length.",
        options: CommandTarget.storeOptions + [CommandTarget.deviceOptions[0], CommandTarget.deviceOptions[1],
                                               CredentialsCommand.jsonOption])
    public static let setSpec = CommandSpec(
        name: "pin set", abstract: "Set the PIN of a key that has none (read from --pin-file, $LATCHKEY_NEW_PIN or the terminal).",
        options: targetOptions.map { option in
            var option = option
            if option.name == "pin-file" { option.help = "Read the new PIN from FILE (else $LATCHKEY_NEW_PIN — $LATCHKEY_PIN is read too, as before — else the terminal, twice)." }
            return option
        } + [offlineOption, CredentialsCommand.jsonOption])
    public static let changeSpec = CommandSpec(
        name: "pin change", abstract: "Change the PIN (current PIN: --pin-file or $LATCHKEY_PIN; new: --new-pin-file or $LATCHKEY_NEW_PIN).",
        options: targetOptions + [
            .init("new-pin-file", value: "FILE", help: "Read the new PIN from FILE (else $LATCHKEY_NEW_PIN, else the terminal, twice)."),
            offlineOption,
            CredentialsCommand.jsonOption,
        ])

    public static func group(io: @escaping @Sendable () -> CommandIO = { .standard }) -> CommandGroup {
        CommandGroup(name: "pin", abstract: "Show, set or change the PIN of a key (store or device).",
                     members: [
                        .init(spec: statusSpec) { parsed throws(UsageError) in try status(parsed, io: io()) },
                        .init(spec: setSpec) { parsed throws(UsageError) in try set(parsed, io: io()) },
                        .init(spec: changeSpec) { parsed throws(UsageError) in try change(parsed, io: io()) },
                     ])
    }

    public static var spec: CommandSpec { group().spec }
    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 { try group().run(parsed) }

    // MARK: - status

    static func status(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            var result: [(String, JSONValue)] = []
            let remote: RemoteAuthenticator
            var store: SQLiteCredentialStore?
            defer { store?.close() }
            let isDevice: Bool
            switch try CommandTarget.resolve(parsed, environment: io.environment) {
            case let .store(directory, _):
                let opened = try LocalStore.openExisting(directory: directory)
                store = opened
                // The store's own authenticator answers getInfo and getPINRetries: the same policy
                // code as the running key, reading the same rows.
                remote = RemoteAuthenticator(link: try inProcessLink(opened, label: "the store \(directory)"))
                result.append(("store", .string(directory)))
                isDevice = false
            case .device(let selection):
                remote = try DeviceSession.connect(selection, io: io)
                result.append(("device", .string(remote.label)))
                isDevice = true
            }
            let info: DeviceInfo
            do throws(DeviceError) {
                info = try remote.info()
            } catch {
                throw error.cliError
            }
            let pinSet = info.options["clientPin"]
            let retries = pinSet == nil ? nil : try? remote.pinRetries()
            let minimum = info.minPINLength ?? PIN.defaultMinimumLength
            let forced = info.forcePINChange ?? false
            result += [("pinSet", pinSet.map(JSONValue.bool) ?? .null), ("retries", .optional(retries?.retries)),
                       ("forcePINChange", .bool(forced)), ("minPINLength", .int(minimum))]
            if isDevice { result.append(("powerCycleNeeded", retries.map { .bool($0.powerCycleNeeded) } ?? .null)) }
            if parsed.flag("json") {
                io.out(JSONValue.object(result).rendered)
                return 0
            }
            var state: String
            switch pinSet {
            case nil: state = "not supported (no clientPin option)"
            case false?: state = "not set"
            case true?: state = "set"
            }
            if let retries, pinSet == true {
                state += ", \(Wording.count(retries.retries, "attempt")) left"
                if retries.retries == 0 { state += " (blocked: only a reset helps)" }
                if isDevice && retries.powerCycleNeeded { state += " (a power cycle is needed before the next attempt)" }
            }
            io.out("PIN of \(remote.label): \(state)")
            io.out("Force PIN change: \(forced ? "yes (the next use must change it)" : "no")")
            io.out("Minimum length: \(minimum) characters")
            return 0
        }
    }

    // MARK: - set, change

    static func set(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            try withKey(parsed, io: io) { remote throws(CLIError) in
                let pin = try PINInput.new(file: parsed.value("pin-file"), fileOption: "pin-file",
                                           fallbackEnvironmentName: PINInput.environmentName, io: io, label: remote.label,
                                           minimumLength: minimumLength(remote))
                do throws(DeviceError) {
                    try remote.setPIN(pin)
                } catch {
                    throw error.cliError
                }
                io.out(parsed.flag("json") ? JSONValue.object([("key", .string(remote.label)), ("pinSet", .bool(true))]).rendered
                       : "PIN set on \(remote.label).")
            }
            return 0
        }
    }

    static func change(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            try withKey(parsed, io: io) { remote throws(CLIError) in
                let current = try PINInput.current(file: parsed.value("pin-file"), io: io, label: remote.label)
                let new = try PINInput.new(file: parsed.value("new-pin-file"), fileOption: "new-pin-file",
                                           io: io, label: remote.label, minimumLength: minimumLength(remote))
                do throws(DeviceError) {
                    try remote.changePIN(current: current, new: new)
                } catch {
                    throw error.cliError
                }
                io.out(parsed.flag("json") ? JSONValue.object([("key", .string(remote.label)), ("pinChanged", .bool(true))]).rendered
                       : "PIN changed on \(remote.label).")
            }
            return 0
        }
    }

    /// The shortest PIN the key takes (getInfo's minPINLength; 4 when it does not say, §6.5.1).
    static func minimumLength(_ remote: RemoteAuthenticator) -> Int {
        (try? remote.info())?.minPINLength ?? PIN.defaultMinimumLength
    }

    /// The key to speak clientPIN to: the device, or (--offline) the store's own authenticator
    /// with the store locked against a key starting meanwhile.
    static func withKey(_ parsed: ParsedArguments, io: CommandIO,
                        _ body: (RemoteAuthenticator) throws(CLIError) -> Void) throws(CLIError) {
        let offline = parsed.flag("offline")
        let deviceNamed = parsed.value("device") != nil || parsed.value("socket") != nil
        if offline && deviceNamed { throw .usage("--offline is for a store (--name/--store), not a device") }
        var target = parsed
        if !deviceNamed { target.values["pin-file"] = nil; target.values["new-pin-file"] = nil }
        switch try CommandTarget.resolve(target, environment: io.environment) {
        case let .store(directory, name):
            // A store a key is running on: through that key, as a client would (the key holds
            // the store; its PIN state is in its memory too). Else the store itself, locked.
            if !offline, let selection = try LocalStore.servingDevice(directory: directory, proofKey: { () throws(CLIError) in
                let store = try LocalStore.openExisting(directory: directory)
                defer { store.close() }
                return store.proofKey
            }) {
                let place = switch selection {
                case let .socket(path): "socket \(path)"
                case let .hidraw(path, _): path
                }
                io.err("the key running on \(directory) holds it: going through it (\(place))")
                try body(try DeviceSession.connect(selection, io: io))
                return
            }
            let store = try LocalStore.openExclusively(directory: directory, name: name)
            defer { store.close() }
            try body(RemoteAuthenticator(link: try inProcessLink(store, label: "the store \(directory)")))
        case .device(let selection):
            try body(try DeviceSession.connect(selection, io: io))
        }
    }

    /// An authenticator on `store` in this process (presence is never needed for clientPIN).
    static func inProcessLink(_ store: SQLiteCredentialStore, label: String) throws(CLIError) -> InProcessLink {
        do {
            let authenticator = try Authenticator(store: store, presence: DenyPresence(logger: Logger(level: .error)),
                                                  clock: SystemClock())
            return InProcessLink(label: label) { authenticator.handleCTAP2($0, context: RequestContext(channel: 1)) }
        } catch {
            throw LocalStore.failure(error, directory: store.directory)
        }
    }
}
