import Authenticator
import CredentialStore
import CTAP
import Foundation
import KeyService
import Presence
import SystemIO

/// `latchkey serve`: run a key until SIGINT/SIGTERM; SIGHUP is a power cycle.
public enum ServeCommand {
    public static let spec = CommandSpec(
        name: "serve",
        abstract: "Run a FIDO2 security key (uhid by default, or a socket for rigs without /dev/uhid).",
        options: [
            .init("transport", value: "uhid|socket:PATH", help: "Where the key appears (default: uhid)."),
            .init("store", value: "DIR", help: "Store directory (default: $XDG_DATA_HOME/latchkey/<name>)."),
            .init("name", value: "NAME", help: "Key name: store subdirectory and device name (default: default)."),
            // Every key option serve takes, as KeyOption declares it.
        ] + KeyOption.all.compactMap { option in
            option.flag.map { CommandSpec.Option($0, value: option.valueName, help: option.help) }
        } + [
            .init("control", value: "PATH", help: "The control socket of --presence control, and of notify when the "
                  + "notification server shows no buttons (default: "
                  + "$XDG_RUNTIME_DIR/latchkey/<name>.control, or ~/.cache/latchkey/run-<host>/<name>.control)."),
            .init("trace", value: "FILE", help: "Record every CTAPHID report in and out to FILE (mode 0600, secrets blanked); "
                  + "decode it with `latchkey trace FILE`."),
            .init("passphrase-file", value: "FILE", help: "The passphrase of a store sealed with one (`latchkey store seal`): "
                  + "one line in a file only you can read (default: LATCHKEY_PASSPHRASE_FILE, the systemd credential "
                  + "latchkey-passphrase, or the terminal)."),
            .logLevel,
        ])

    /// What `latchkey serve` runs (the key's configuration, KeyService).
    public typealias Options = KeyConfiguration
    public typealias Transport = KeyConfiguration.Transport

    public static func options(from parsed: ParsedArguments,
                               environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) -> Options {
        let name = parsed.value("name") ?? "default"
        guard StoreLocation.isValidName(name) else {
            throw UsageError("invalid --name '\(name)': use letters, digits, '-', '_' or '.'")
        }
        var options = Options(storeDirectory: StoreLocation.directory(explicit: parsed.value("store"), name: name,
                                                                      environment: environment))
        options.name = name
        if let transport = parsed.value("transport") {
            if transport == "uhid" {
                options.transport = .uhid(path: environment["LATCHKEY_UHID_PATH"] ?? "/dev/uhid")
            } else if transport.hasPrefix("socket:"), transport.count > 7 {
                options.transport = .socket(path: String(transport.dropFirst(7)))
            } else {
                throw UsageError("invalid --transport '\(transport)': use uhid or socket:PATH")
            }
        }
        // The key's own options, each checked as KeyOption declares it and then together.
        let keyValues = KeyOption.all.compactMap { option in
            option.flag.flatMap { parsed.value($0) }.map { (option: option, value: KeyOptionValue.text($0)) }
        }
        do {
            options.key = try KeySpecification.make(keyValues, dialect: .commandLine)
        } catch {
            throw UsageError(error.message)
        }
        if let control = parsed.value("control") {
            // With notify: where to answer when the notification server shows no buttons (KeyHost).
            guard options.key.presence == .control || options.key.presence == .notify else {
                throw UsageError("--control is for --presence control (or notify, for a server without buttons)")
            }
            guard !control.isEmpty else { throw UsageError("invalid --control '': give a socket path") }
            options.controlPath = control
        } else if options.key.presence == .control {
            options.controlPath = ControlSocket.defaultPath(name: name, environment: environment)
            options.controlPathIsDefault = true
        }
        if let file = parsed.value("passphrase-file") {
            guard !file.isEmpty else { throw UsageError("invalid --passphrase-file '': give a file path") }
            PassphraseInput.explicitFile.withLock { $0 = file }
        }
        if let trace = parsed.value("trace") {
            guard !trace.isEmpty else { throw UsageError("invalid --trace '': give a file path") }
            options.tracePath = trace
        }
        if let level = try parsed.logLevel() { options.logLevel = level }
        return options
    }

    /// Run the key; returns the process exit status.
    /// Runs the key; a store this start creates is sealed from its first byte when
    /// LATCHKEY_SEAL says how (NewStoreSeal).
    public static func run(_ options: Options) throws(UsageError) -> Int32 {
        try CLIError.run(.standard) { () throws(CLIError) -> Int32 in
            let seal = try NewStoreSeal.method(for: options.storeDirectory, environment: ProcessInfo.processInfo.environment,
                                               terminal: ControllingTerminal.open(), warn: { Console.error($0) })
            return KeyHost.run(options, sealNewStore: seal)
        }
    }
}
