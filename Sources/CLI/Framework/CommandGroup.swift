/// A subcommand with subcommands of its own (`latchkey credentials list`, `latchkey pin set`).
///
/// `latchkey`'s table parses a subcommand's arguments with one `CommandSpec` before it runs it,
/// so a group's `spec` accepts every option of every member (with the member named in each
/// option's help) and its first positional is the member. `run` then holds the arguments to the
/// member's own spec — an option or argument the member does not take is a usage error, as if
/// the member had been parsed on its own — and runs it.
public struct CommandGroup: Sendable {
    public struct Member: Sendable {
        /// Full name for the usage line: "credentials list".
        public var spec: CommandSpec
        public var run: @Sendable (ParsedArguments) throws(UsageError) -> Int32
        public init(spec: CommandSpec, run: @escaping @Sendable (ParsedArguments) throws(UsageError) -> Int32) {
            self.spec = spec
            self.run = run
        }
        /// The member's own word: "list".
        public var word: String { String(spec.name.split(separator: " ").last ?? "") }
    }

    public var name: String
    public var abstract: String
    public var members: [Member]

    public init(name: String, abstract: String, members: [Member]) {
        self.name = name
        self.abstract = abstract
        self.members = members
    }

    /// The spec for the `latchkey` table: the union of the members' options (each listed once,
    /// its help saying which members take it), `<member>` then the members' arguments.
    public var spec: CommandSpec {
        var options: [CommandSpec.Option] = []
        var takers: [String: [String]] = [:]
        for member in members {
            for option in member.spec.options {
                if takers[option.name] == nil { options.append(option) }
                takers[option.name, default: []].append(member.word)
            }
        }
        let everyone = members.count
        options = options.map { option in
            var option = option
            let users = takers[option.name] ?? []
            if users.count < everyone { option.help = "(\(users.joined(separator: ", "))) " + option.help }
            return option
        }
        let maximum = members.map(\.spec.maximumPositionals).max() ?? 0
        let argumentNames = members.max { $0.spec.positionals.count < $1.spec.positionals.count }?.spec.positionals ?? []
        return CommandSpec(name: name, abstract: abstract,
                           positionals: [members.map(\.word).joined(separator: "|")] + argumentNames,
                           minimumPositionals: 1, maximumPositionals: maximum == Int.max ? Int.max : maximum + 1,
                           options: options)
    }

    /// The member `word` names, if any.
    public func member(_ word: String?) -> Member? {
        guard let word else { return nil }
        return members.first { $0.word == word }
    }

    /// Help for `latchkey <group> [<member>] --help` (and `latchkey <group> help [<member>]`):
    /// the member's when one is named, else the group's list of members.
    public func help(for parsed: ParsedArguments, width: Int = 80) -> String {
        var words = parsed.positionals[...]
        if words.first == "help" { words = words.dropFirst() }
        if let member = member(words.first) { return member.spec.help(width: width) }
        return groupHelp(width: width)
    }

    /// The usage line for a usage error: the member's when one is named, else the group's.
    public func usage(for parsed: ParsedArguments) -> String {
        member(parsed.positionals.first)?.spec.usage ?? spec.usage
    }

    /// The group's help laid out for 80 columns.
    public var groupHelp: String { groupHelp(width: 80) }

    /// "Manage …", the usage line, one line per member and the members' examples.
    public func groupHelp(width: Int) -> String {
        let text = HelpText(width: width)
        var lines = text.wrap(abstract) + ["", "Usage: latchkey \(name) <subcommand> [options]", "", "Subcommands:"]
        lines += text.columns(members.map { ($0.word, $0.spec.abstract) }, maximumLeft: 14)
        let examples = members.flatMap(\.spec.examples)
        if !examples.isEmpty {
            lines += ["", "Examples:"]
            for example in examples {
                lines += text.wrap(example.command, indent: 6, firstIndent: 2) + text.wrap(example.explanation, indent: 6)
            }
        }
        lines += [""] + text.wrap("Run `latchkey \(name) <subcommand> --help` (or `latchkey help \(name) <subcommand>`) "
                                   + "for a subcommand's options.")
        return lines.joined(separator: "\n")
    }

    /// Picks the member named by the first positional and runs it on its share of `parsed`.
    public func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 {
        let (member, arguments) = try resolve(parsed)
        return try member.run(arguments)
    }

    /// The member and the arguments as its own spec would have parsed them.
    public func resolve(_ parsed: ParsedArguments) throws(UsageError) -> (Member, ParsedArguments) {
        guard let word = parsed.positionals.first else {
            throw UsageError("missing subcommand: " + members.map(\.word).joined(separator: ", "))
        }
        guard let member = members.first(where: { $0.word == word }) else {
            let words = members.map(\.word)
            throw UsageError(Suggestion.message("unknown subcommand '\(name) \(word)': use " + words.joined(separator: ", "),
                                                word: word, among: words))
        }
        return (member, try Self.narrow(parsed, to: member.spec))
    }

    /// `parsed` without its first positional, checked against `spec`: the checks
    /// `CommandLineParser.parse` makes, in the same words.
    static func narrow(_ parsed: ParsedArguments, to spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        var narrowed = parsed
        narrowed.positionals.removeFirst()
        let known = Set(spec.options.map(\.name))
        for name in (Array(parsed.values.keys) + Array(parsed.flags)).sorted() where !known.contains(name) {
            throw UsageError(Suggestion.message("unknown option '--\(name)' for '\(spec.name)'", word: name,
                                                among: spec.options.map(\.name), prefix: "--"))
        }
        if narrowed.wantsHelp { return narrowed }
        if narrowed.positionals.count < spec.minimumPositionals {
            throw UsageError("missing <\(spec.positionals[narrowed.positionals.count])>")
        }
        if narrowed.positionals.count > spec.maximumPositionals {
            throw UsageError("unexpected argument '\(narrowed.positionals[spec.maximumPositionals])'")
        }
        return narrowed
    }
}
