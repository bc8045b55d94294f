import FIDOCrypto
import Foundation
import SystemIO

/// `latchkey <subcommand> …`: the subcommand table, top-level help and the dispatch that
/// `Sources/latchkey/main.swift` calls. Usage errors exit 64, runtime failures 1, help 0.
public enum LatchkeyCLI {
    public static let version = "0.1.0"

    typealias Entry = (spec: CommandSpec, run: (ParsedArguments) throws(UsageError) -> Int32)

    static var subcommands: [Entry] { [
        (ServeCommand.spec, { parsed throws(UsageError) in ServeCommand.run(try ServeCommand.options(from: parsed)) }),
        (RigCommand.spec, { parsed throws(UsageError) in try RigCommand.run(parsed) }),
        (TraceCommand.spec, { parsed throws(UsageError) in TraceCommand.run(parsed) }),
        (ApproveCommand.approveSpec, { parsed throws(UsageError) in ApproveCommand.run(.approve, try ApproveCommand.options(from: parsed)) }),
        (ApproveCommand.denySpec, { parsed throws(UsageError) in ApproveCommand.run(.deny, try ApproveCommand.options(from: parsed)) }),
        (ApproveCommand.presenceSpec, { parsed throws(UsageError) in try ApproveCommand.runStatus(parsed) }),
        (DevicesCommand.spec, { parsed throws(UsageError) in try DevicesCommand.run(parsed) }),
        (ProbeCommand.spec, { parsed throws(UsageError) in try ProbeCommand.run(parsed) }),
        (WinkCommand.spec, { parsed throws(UsageError) in try WinkCommand.run(parsed) }),
        (ProxyCommand.spec, { parsed throws(UsageError) in try ProxyCommand.run(parsed) }),
        (ReplayCommand.spec, { parsed throws(UsageError) in try ReplayCommand.run(parsed) }),
        (StoreCommand.spec, { parsed throws(UsageError) in try StoreCommand.run(parsed) }),
        (DoctorCommand.spec, { parsed throws(UsageError) in try DoctorCommand.run(parsed) }),
        (CredentialsCommand.spec, { parsed throws(UsageError) in try CredentialsCommand.run(parsed) }),
        (SignalCommand.spec, { parsed throws(UsageError) in try SignalCommand.run(parsed) }),
        (PinCommand.spec, { parsed throws(UsageError) in try PinCommand.run(parsed) }),
        (ExportCommand.spec, { parsed throws(UsageError) in try ExportCommand.run(parsed) }),
        (ImportCommand.spec, { parsed throws(UsageError) in try ImportCommand.run(parsed) }),
        (BackupCommand.backupSpec, { parsed throws(UsageError) in try BackupCommand.backup(parsed) }),
        (BackupCommand.restoreSpec, { parsed throws(UsageError) in try BackupCommand.restore(parsed) }),
        (BridgeCommand.spec, { parsed throws(UsageError) in try BridgeCommand.run(parsed) }),
        (NativeHostCommand.spec, { parsed throws(UsageError) in try NativeHostCommand.run(parsed) }),
    ] }

    static func topLevelHelp() -> String {
        var lines = [
            "latchkey \(version): a software FIDO2 security key for Linux.",
            "",
            "Usage: latchkey <subcommand> [options]",
            "",
            "Subcommands:",
        ]
        for entry in subcommands {
            lines.append("  " + entry.spec.name.padding(toLength: 12, withPad: " ", startingAt: 0) + entry.spec.abstract)
        }
        lines += ["", "Options:", "  -h, --help  Show help (also after a subcommand).", "  --version   Show the version."]
        return lines.joined(separator: "\n")
    }

    /// Runs the command line `arguments` (without the program name); returns the exit status.
    /// The `latchkey` process: hardened first (no core dumps, not dumpable: every command may
    /// hold a PIN, a PIN token or the store's keys), then `main`. A failure to harden is said and
    /// not fatal (a seccomp'd container may refuse prctl); nothing secret has been read yet.
    public static func runProcess(_ arguments: [String]) -> Int32 {
        // First, before anything makes a secret: the heap the secrets live in; then, before
        // anything reads the environment, the PINs out of it (into that heap).
        SecureHeap.start()
        PINEnvironment.take()
        do {
            try ProcessHardening.disableCoreDumps()
        } catch {
            FileHandle.standardError.write(Data("latchkey: warning: cannot disable core dumps (\(error))\n".utf8))
        }
        ProcessHardening.dropCrashHandlers()
        // tpm2-tss logs every failed TPM call on stderr (ERROR:tcti:…) — a probe that finds no TPM
        // included; a TPM-sealed store's errors say what failed in the user's terms instead.
        // Still on when the user sets TSS2_LOG.
        setenv("TSS2_LOG", "all+none", 0)
        // A sealed store's passphrase, wherever a command opens one (PassphraseInput).
        PassphraseInput.install()
        return main(arguments)
    }

    public static func main(_ arguments: [String]) -> Int32 {
        var arguments = arguments
        guard let first = arguments.first else {
            return fail("missing subcommand", usage: "Usage: latchkey <subcommand> [options] (see latchkey --help)")
        }
        if first == "-h" || first == "--help" || first == "help" {
            print(topLevelHelp())
            return 0
        }
        if first == "--version" || first == "version" {
            print("latchkey \(version)")
            return 0
        }
        guard let entry = subcommands.first(where: { $0.spec.name == first }) else {
            return fail("unknown subcommand '\(first)'", usage: "Usage: latchkey <subcommand> [options] (see latchkey --help)")
        }
        arguments.removeFirst()
        // Commands with their own subcommands (`latchkey credentials list …`) give help and usage
        // for the subcommand named on the line, not only for the group.
        let groups: [String: CommandGroup] = [
            "credentials": CredentialsCommand.group(), "signal": SignalCommand.group(), "pin": PinCommand.group(),
            "bridge": BridgeCommand.group(),
        ]
        let parsed: ParsedArguments
        do {
            parsed = try CommandLineParser.parse(arguments, spec: entry.spec)
        } catch {
            return fail(error.message, usage: entry.spec.usage)
        }
        if parsed.wantsHelp {
            print(groups[entry.spec.name]?.help(for: parsed) ?? entry.spec.help)
            return 0
        }
        do {
            return try entry.run(parsed)
        } catch {
            return fail(error.message, usage: groups[entry.spec.name]?.usage(for: parsed) ?? entry.spec.usage)
        }
    }

    /// `Error: message` and the usage line on standard error; the usage-error status, 64.
    static func fail(_ message: String, usage: String) -> Int32 {
        FileHandle.standardError.write(Data("Error: \(message)\n\(usage)\n".utf8))
        return 64
    }
}
