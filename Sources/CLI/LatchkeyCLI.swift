import FIDOCrypto
import Foundation
import SystemIO

/// `latchkey <subcommand> …`: the subcommand table, top-level help and the dispatch that
/// `Sources/latchkey/main.swift` calls. Usage errors exit 64, runtime failures 1, help 0.
public enum LatchkeyCLI {
    /// The one place the version is kept: `latchkey --version`, the man pages and the Debian
    /// package (`scripts/package` asks the binary) all take it from here.
    public static let version = "0.1.0"
    /// The date the man pages carry: when `version` was set (a build on another day makes the same pages).
    public static let versionDate = "2026-12-05"

    /// Every command `latchkey` has, in the order the top-level help lists them. Help, usage
    /// errors, man pages and shell completions are all made from this table.
    static var commands: [CommandEntry] { [
        .init(.run, ServeCommand.spec) { parsed throws(UsageError) in try ServeCommand.run(try ServeCommand.options(from: parsed)) },
        .init(.run, RigCommand.spec) { parsed throws(UsageError) in try RigCommand.run(parsed) },
        .init(.presence, ApproveCommand.approveSpec) { parsed throws(UsageError) in
            ApproveCommand.run(.approve, try ApproveCommand.options(from: parsed)) },
        .init(.presence, ApproveCommand.denySpec) { parsed throws(UsageError) in
            ApproveCommand.run(.deny, try ApproveCommand.options(from: parsed)) },
        .init(.presence, ApproveCommand.presenceSpec) { parsed throws(UsageError) in try ApproveCommand.runStatus(parsed) },
        .init(.passkeys, group: CredentialsCommand.group()),
        .init(.passkeys, group: PinCommand.group()),
        .init(.passkeys, BackupCommand.backupSpec) { parsed throws(UsageError) in try BackupCommand.backup(parsed) },
        .init(.passkeys, BackupCommand.restoreSpec) { parsed throws(UsageError) in try BackupCommand.restore(parsed) },
        .init(.passkeys, ExportCommand.spec) { parsed throws(UsageError) in try ExportCommand.run(parsed) },
        .init(.passkeys, ImportCommand.spec) { parsed throws(UsageError) in try ImportCommand.run(parsed) },
        .init(.passkeys, group: StoreCommand.group()),
        .init(.browsers, group: SignalCommand.group()),
        .init(.browsers, group: BridgeCommand.group()),
        .init(.browsers, NativeHostCommand.spec) { parsed throws(UsageError) in try NativeHostCommand.run(parsed) },
        .init(.devices, DevicesCommand.spec) { parsed throws(UsageError) in try DevicesCommand.run(parsed) },
        .init(.devices, ProbeCommand.spec) { parsed throws(UsageError) in try ProbeCommand.run(parsed) },
        .init(.devices, WinkCommand.spec) { parsed throws(UsageError) in try WinkCommand.run(parsed) },
        .init(.devices, ProxyCommand.spec) { parsed throws(UsageError) in try ProxyCommand.run(parsed) },
        .init(.devices, TraceCommand.spec) { parsed throws(UsageError) in TraceCommand.run(parsed) },
        .init(.devices, ReplayCommand.spec) { parsed throws(UsageError) in try ReplayCommand.run(parsed) },
        .init(.setup, InitCommand.spec) { parsed throws(UsageError) in try InitCommand.run(parsed) },
        .init(.setup, DoctorCommand.spec) { parsed throws(UsageError) in try DoctorCommand.run(parsed) },
        .init(.setup, BrokerCommand.spec) { parsed throws(UsageError) in try BrokerCommand.run(parsed) },
        .init(.setup, GenerateCommand.spec) { parsed throws(UsageError) in
            try GenerateCommand.run(parsed, commands: LatchkeyCLI.commands, about: manPageAbout) },
    ] }

    /// The version, its date and the examples, for the man pages.
    static var manPageAbout: ManPage.About { .init(version: version, date: versionDate, examples: topLevelExamples) }

    static let topLevelExamples: [CommandSpec.Example] = [
        .init("latchkey serve", "Run your key; each touch is asked on this terminal."),
        .init("latchkey credentials list", "The passkeys on your key."),
        .init("latchkey serve --presence auto --uv auto --name ci", "A key for headless browser tests: no touch, no PIN."),
        .init("latchkey serve --transport socket:/tmp/ci.sock --presence auto", "The same where there is no /dev/uhid."),
        .init("latchkey proxy", "Trace what a client says to your hardware key."),
    ]

    /// `latchkey --help`: the commands by what they are for, the options, examples.
    static func topLevelHelp(width: Int = 80) -> String {
        let text = HelpText(width: width)
        var lines = text.wrap("latchkey \(version): a software FIDO2 security key for Linux.")
        lines += ["", "Usage: latchkey <command> [options]", "       latchkey help <command>"]
        let nameWidth = commands.map(\.spec.name.count).max() ?? 0
        for section in CommandEntry.Section.allCases {
            lines += ["", section.title + ":"]
            lines += text.columns(commands.filter { $0.section == section }.map {
                ($0.spec.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0), $0.spec.abstract)
            }, maximumLeft: nameWidth)
        }
        lines += ["", "Options:"]
        lines += text.columns([("-h, --help", "Show help (also after a command)."), ("--version", "Show the version.")], maximumLeft: 12)
        lines += ["", "Examples:"]
        for example in topLevelExamples {
            lines += text.wrap(example.command, indent: 6, firstIndent: 2) + text.wrap(example.explanation, indent: 6)
        }
        lines += [""] + text.wrap("Run `latchkey help <command>` for a command's options, `man latchkey` for the manual.")
        return lines.joined(separator: "\n")
    }

    /// What bare `latchkey` prints on standard error (with exit status 64, as a usage error).
    static let shortHelp = """
        Usage: latchkey <command> [options]
        Common commands: serve, credentials, pin, backup, doctor
        Run `latchkey --help` for every command, `latchkey help <command>` for one.
        """

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
            Console.err("latchkey: warning: cannot disable core dumps (\(error))")
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

    public static func main(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) -> Int32 {
        var arguments = arguments
        // Errors become JSON on stdout too when the command asked for JSON (up to `--`).
        Console.jsonErrors.withLock { $0 = arguments.prefix { $0 != "--" }.contains("--json") }
        let width = HelpText.preferredWidth(environment: environment)
        guard let first = arguments.first else {
            Console.err(shortHelp)
            return 64
        }
        if first == "-h" || first == "--help" {
            Console.out(topLevelHelp(width: width))
            return 0
        }
        if first == "help" {
            return help(Array(arguments.dropFirst()), width: width)
        }
        if first == "--version" || first == "version" {
            Console.out("latchkey \(version)")
            return 0
        }
        let names = commands.map(\.spec.name)
        guard let entry = commands.first(where: { $0.spec.name == first }) else {
            let message = first.hasPrefix("-")
                ? Suggestion.message("unknown option '\(first)'", word: String(first.drop { $0 == "-" }),
                                     among: ["help", "version"], prefix: "--")
                : Suggestion.message("unknown command '\(first)'", word: first, among: names)
            return fail(message, usage: "Usage: latchkey <command> [options] (see latchkey --help)")
        }
        arguments.removeFirst()
        // `latchkey credentials help [list]`, as `latchkey help credentials [list]`.
        if entry.group != nil, arguments.first == "help" {
            return help([first] + arguments.dropFirst(), width: width)
        }
        let parsed: ParsedArguments
        do {
            parsed = try CommandLineParser.parse(arguments, spec: entry.spec)
        } catch {
            return fail(error.message, usage: entry.group?.usage(for: ParsedArguments(positionals: arguments.filter { !$0.hasPrefix("-") }))
                        ?? entry.spec.usage)
        }
        if parsed.wantsHelp {
            Console.out(entry.help(for: parsed, width: width))
            return 0
        }
        do {
            return try entry.run(parsed)
        } catch {
            return fail(error.message, usage: entry.group?.usage(for: parsed) ?? entry.spec.usage)
        }
    }

    /// `latchkey help [COMMAND [SUBCOMMAND]]`: the same text as `COMMAND [SUBCOMMAND] --help`.
    static func help(_ words: [String], width: Int) -> Int32 {
        guard let name = words.first else {
            Console.out(topLevelHelp(width: width))
            return 0
        }
        guard let entry = commands.first(where: { $0.spec.name == name }) else {
            return fail(Suggestion.message("no command '\(name)'", word: name, among: commands.map(\.spec.name)),
                        usage: "Usage: latchkey help <command> [<subcommand>]")
        }
        if let group = entry.group, words.count > 1, group.member(words[1]) == nil {
            let memberWords = group.members.map(\.word)
            return fail(Suggestion.message("no subcommand '\(name) \(words[1])': use " + memberWords.joined(separator: ", "),
                                           word: words[1], among: memberWords),
                        usage: "Usage: latchkey help \(name) [<subcommand>]")
        }
        Console.out(entry.help(for: ParsedArguments(positionals: Array(words.dropFirst())), width: width))
        return 0
    }

    /// `Error: message` and the usage line on standard error; the usage-error status, 64.
    static func fail(_ message: String, usage: String) -> Int32 {
        Console.error(message, usage: usage)
        return 64
    }
}
