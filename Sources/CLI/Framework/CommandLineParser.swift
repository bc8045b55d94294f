/// A small, tested command-line parser in swift-argument-parser's conventions:
/// `latchkey <subcommand> [--kebab-option value | --kebab-option=value] [--flag] [--] [args]`.
public struct CommandSpec: Sendable {
    public struct Option: Sendable {
        public var name: String          // without the leading dashes
        public var valueName: String?    // nil: a flag
        public var help: String
        public init(_ name: String, value valueName: String? = nil, help: String) {
            self.name = name; self.valueName = valueName; self.help = help
        }
    }

    /// A command line to show under "Examples", and what it does.
    public struct Example: Sendable {
        public var command: String
        public var explanation: String
        public init(_ command: String, _ explanation: String) { self.command = command; self.explanation = explanation }
    }

    public var name: String
    public var abstract: String
    public var positionals: [String]     // names, for the usage line
    public var minimumPositionals: Int
    public var maximumPositionals: Int
    public var options: [Option]
    public var examples: [Example]

    public init(name: String, abstract: String, positionals: [String] = [], minimumPositionals: Int = 0,
                maximumPositionals: Int? = nil, options: [Option] = [], examples: [Example] = []) {
        self.name = name; self.abstract = abstract; self.positionals = positionals
        self.minimumPositionals = minimumPositionals
        self.maximumPositionals = maximumPositionals ?? positionals.count
        self.options = options
        self.examples = examples
    }

    public var usage: String {
        var parts = ["Usage: latchkey \(name)"]
        if !options.isEmpty { parts.append("[options]") }
        for (index, positional) in positionals.enumerated() {
            parts.append(index < minimumPositionals ? "<\(positional)>" : "[<\(positional)>]")
        }
        return parts.joined(separator: " ")
    }

    /// The option as its help shows it: `--store <DIR>`.
    public static func synopsis(_ option: Option) -> String {
        "--\(option.name)" + (option.valueName.map { " <\($0)>" } ?? "")
    }

    /// Help laid out for 80 columns (`help(width:)` for a terminal's).
    public var help: String { help(width: 80) }

    /// The abstract, the usage line, the options (and -h) and the examples, wrapped to `width`.
    public func help(width: Int) -> String {
        let text = HelpText(width: width)
        var lines = text.wrap(abstract) + [""] + text.wrap(usage, indent: 7, firstIndent: 0)
        lines += ["", "Options:"]
        lines += text.columns(options.map { (Self.synopsis($0), $0.help) } + [("-h, --help", "Show this help.")])
        if !examples.isEmpty {
            lines += ["", "Examples:"]
            for example in examples {
                lines += text.wrap(example.command, indent: 6, firstIndent: 2)
                lines += text.wrap(example.explanation, indent: 6)
            }
        }
        return lines.joined(separator: "\n")
    }
}

public struct ParsedArguments: Sendable, Equatable {
    public var values: [String: String] = [:]
    public var flags: Set<String> = []
    public var positionals: [String] = []
    public var wantsHelp = false

    public func value(_ name: String) -> String? { values[name] }
    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// `--NAME N` as a whole number in `range` (`value` when the option is absent).
    public func integer(_ name: String, default value: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = values[name] else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("invalid --\(name) '\(text)': use a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}

/// A usage error: printed as `Error: …` plus the usage line, exit status 64 (EX_USAGE).
public struct UsageError: Error, Equatable, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

public enum CommandLineParser {
    public static func parse(_ arguments: [String], spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            if argument == "-h" || argument == "--help" { parsed.wantsHelp = true; continue }
            guard argument.hasPrefix("--") else { throw UsageError("unknown option '\(argument)'") }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = spec.options.first(where: { $0.name == name }) else {
                throw UsageError(Suggestion.message("unknown option '--\(name)'", word: name,
                                                    among: spec.options.map(\.name) + ["help"], prefix: "--"))
            }
            if let valueName = option.valueName {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError("option '--\(name)' needs a value <\(valueName)>") }
                    value = arguments[index]
                    index += 1
                }
                guard parsed.values[name] == nil else { throw UsageError("option '--\(name)' given twice") }
                parsed.values[name] = value
            } else {
                guard inlineValue == nil else { throw UsageError("option '--\(name)' takes no value") }
                parsed.flags.insert(name)
            }
        }
        if parsed.wantsHelp { return parsed }
        if parsed.positionals.count < spec.minimumPositionals {
            throw UsageError("missing <\(spec.positionals[parsed.positionals.count])>")
        }
        if parsed.positionals.count > spec.maximumPositionals {
            throw UsageError("unexpected argument '\(parsed.positionals[spec.maximumPositionals])'")
        }
        return parsed
    }
}
