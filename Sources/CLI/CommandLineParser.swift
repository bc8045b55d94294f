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

    public var name: String
    public var abstract: String
    public var positionals: [String]     // names, for the usage line
    public var minimumPositionals: Int
    public var maximumPositionals: Int
    public var options: [Option]

    public init(name: String, abstract: String, positionals: [String] = [], minimumPositionals: Int = 0,
                maximumPositionals: Int? = nil, options: [Option] = []) {
        self.name = name; self.abstract = abstract; self.positionals = positionals
        self.minimumPositionals = minimumPositionals
        self.maximumPositionals = maximumPositionals ?? positionals.count
        self.options = options
    }

    public var usage: String {
        var parts = ["Usage: latchkey \(name)"]
        if !options.isEmpty { parts.append("[options]") }
        for (index, positional) in positionals.enumerated() {
            parts.append(index < minimumPositionals ? "<\(positional)>" : "[<\(positional)>]")
        }
        return parts.joined(separator: " ")
    }

    public var help: String {
        var lines = [abstract, "", usage]
        if !options.isEmpty {
            lines.append("")
            lines.append("Options:")
            let rendered = options.map { option in
                ("--\(option.name)" + (option.valueName.map { " <\($0)>" } ?? ""), option.help)
            } + [("-h, --help", "Show this help.")]
            let width = rendered.map(\.0.count).max() ?? 0
            for (left, right) in rendered {
                lines.append("  " + left.padding(toLength: width + 2, withPad: " ", startingAt: 0) + right)
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
                throw UsageError("unknown option '--\(name)'")
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
