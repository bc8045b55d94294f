/// One row of `latchkey`'s command table (`LatchkeyCLI.commands`): a command with its spec, or a
/// group of subcommands, the part of the top-level help it is listed in, and how it runs.
struct CommandEntry {
    /// The headings of the top-level help, in order.
    enum Section: CaseIterable {
        case run, presence, passkeys, browsers, devices, setup

        var title: String {
            switch self {
            case .run: "Run a key"
            case .presence: "Answer a key's presence checks"
            case .passkeys: "Your passkeys and the store"
            case .browsers: "Browsers and websites"
            case .devices: "Debug any FIDO device"
            case .setup: "Set up"
            }
        }
    }

    var section: Section
    var spec: CommandSpec
    var group: CommandGroup?
    var run: (ParsedArguments) throws(UsageError) -> Int32

    init(_ section: Section, _ spec: CommandSpec, run: @escaping (ParsedArguments) throws(UsageError) -> Int32) {
        self.section = section; self.spec = spec; self.group = nil; self.run = run
    }

    init(_ section: Section, group: CommandGroup) {
        self.section = section; self.spec = group.spec; self.group = group
        self.run = { parsed throws(UsageError) in try group.run(parsed) }
    }

    /// The help `--help` and `latchkey help` show for the words in `parsed`.
    func help(for parsed: ParsedArguments, width: Int) -> String {
        group?.help(for: parsed, width: width) ?? spec.help(width: width)
    }

    /// Every spec a man page or completion describes: the command's, or each subcommand's.
    var leafSpecs: [CommandSpec] { group?.members.map(\.spec) ?? [spec] }
}
