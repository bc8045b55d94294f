import Authenticator
import CTAP
import Encoding

/// One option of a key, declared once: its `latchkey serve` flag, its rig `addAuthenticator`
/// parameter (WebDriver's name where WebDriver has one), its values, default, help and how a
/// value is checked and applied. `serve`'s parsing, help, man page and completions, the rig's
/// parameters and docs/rig-protocol.md's table all come from `KeyOption.all`; adding a key
/// option is one declaration here plus its field in `KeySpecification` and its use.
public struct KeyOption: Sendable {
    /// How a value is given: one of a few words, a list (comma-separated on a command line, a
    /// JSON array to the rig), free text, or a boolean (JSON true/false).
    public enum Shape: Sendable, Equatable {
        case choice([String])
        case list
        case text
        case boolean
    }

    /// camelCase, as the cross-option rules and tests name it.
    public let id: String
    /// `latchkey serve --<flag>`; nil: the rig's alone.
    public let flag: String?
    /// The member of the rig's `addAuthenticator` params; nil: `serve`'s alone.
    public let parameter: String?
    public let shape: Shape
    /// What help and man pages show for the value: "auto|deny|…", "ALG,ALG,…".
    public let valueName: String
    /// The default as help and docs say it.
    public let defaultValue: String
    public let help: String
    let apply: @Sendable (inout KeySpecification, KeyOptionValue) throws(KeyOptionRefusal) -> Void

    init(_ id: String, flag: String? = nil, parameter: String? = nil, shape: Shape, valueName: String? = nil,
         default defaultValue: String, help: String,
         apply: @escaping @Sendable (inout KeySpecification, KeyOptionValue) throws(KeyOptionRefusal) -> Void) {
        self.id = id
        self.flag = flag
        self.parameter = parameter
        self.shape = shape
        self.valueName = valueName ?? {
            switch shape {
            case let .choice(words): words.joined(separator: "|")
            case .list: "A,B,…"
            case .text: "TEXT"
            case .boolean: "true|false"
            }
        }()
        self.defaultValue = defaultValue
        self.help = help
        self.apply = apply
    }

    /// A choice among an enumeration's raw values, in its order.
    static func choice<Value: RawRepresentable & CaseIterable & Sendable>(
        _ id: String, flag: String? = nil, parameter: String? = nil, _ type: Value.Type, default defaultValue: String,
        help: String, set: @escaping @Sendable (inout KeySpecification, Value) -> Void
    ) -> KeyOption where Value.RawValue == String {
        let words = Value.allCases.map(\.rawValue)
        return KeyOption(id, flag: flag, parameter: parameter, shape: .choice(words), default: defaultValue, help: help) {
            specification, value throws(KeyOptionRefusal) in
            let text = try value.text()
            guard let chosen = Value(rawValue: text) else { throw KeyOptionRefusal("use " + KeyOptionWording.alternatives(words)) }
            set(&specification, chosen)
        }
    }

    /// A rig parameter that is true or false.
    static func boolean(_ id: String, parameter: String, default defaultValue: Bool, help: String,
                        set: @escaping @Sendable (inout KeySpecification, Bool) -> Void) -> KeyOption {
        KeyOption(id, parameter: parameter, shape: .boolean, default: String(defaultValue), help: help) {
            specification, value throws(KeyOptionRefusal) in
            set(&specification, try value.boolean())
        }
    }
}

/// A value as it was given: a command-line argument's text (a list split at its commas), or a
/// rig parameter's JSON value.
public enum KeyOptionValue: Equatable, Sendable {
    case text(String)
    case list([String])
    case boolean(Bool)

    func text() throws(KeyOptionRefusal) -> String {
        guard case let .text(text) = self else { throw KeyOptionRefusal("give one word") }
        return text
    }

    func list() throws(KeyOptionRefusal) -> [String] {
        switch self {
        case let .list(items): return items
        case let .text(text): return text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        case .boolean: throw KeyOptionRefusal("give a list")
        }
    }

    func boolean() throws(KeyOptionRefusal) -> Bool {
        switch self {
        case let .boolean(value): return value
        case .text("true"): return true
        case .text("false"): return false
        default: throw KeyOptionRefusal("use true or false")
        }
    }
}

/// Why a value was refused, worded once for every way of giving it (the caller names the
/// option and the value in its own dialect).
struct KeyOptionRefusal: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// A key option or a combination of them refused: the message names the options as the one who
/// gave them spelled them (`--algorithms`, `params.algorithms`).
public struct KeyOptionError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// How the options were given: the dialect messages name them in.
public enum KeyOptionDialect: Sendable, Equatable {
    /// `latchkey serve --flag VALUE`.
    case commandLine
    /// The rig's `addAuthenticator` `params`.
    case rig

    /// `--algorithms`, `params.algorithms` (an option the dialect lacks by its other name).
    public func name(_ option: KeyOption) -> String {
        switch self {
        case .commandLine: option.flag.map { "--" + $0 } ?? "params." + (option.parameter ?? option.id)
        case .rig: option.parameter.map { "params." + $0 } ?? "--" + (option.flag ?? option.id)
        }
    }

    /// The value as it was given, at most `shownLength` characters of it: 'ES256,RS1' on a command
    /// line, JSON to the rig.
    func render(_ value: KeyOptionValue) -> String {
        let text: String = switch (self, value) {
        case let (.commandLine, .text(text)): "'\(text)'"
        case let (.commandLine, .list(items)): "'\(items.joined(separator: ","))'"
        case let (_, .boolean(flag)): String(flag)
        case let (.rig, .text(text)): JSONValue.quoted(text)
        case let (.rig, .list(items)): "[" + items.map(JSONValue.quoted).joined(separator: ",") + "]"
        }
        return Self.bounded(text, to: Self.shownLength)
    }

    /// A refusal as it leaves: bounded (a value of a megabyte is not said back whole), and to the
    /// rig terminal-safe as well (its clients print it; the CLI prints through Console, which is).
    func message(_ text: String) -> String {
        let bounded = Self.bounded(text, to: Self.messageLength)
        return self == .rig ? TerminalText.line(bounded) : bounded
    }

    /// How much of a refused value a message repeats, and how long a message may be.
    static let shownLength = 64
    static let messageLength = 1024

    private static func bounded(_ text: String, to length: Int) -> String {
        text.count <= length ? text : String(text.prefix(length)) + "…"
    }
}

/// Small wording helpers the declarations share.
enum KeyOptionWording {
    /// "a, b or c".
    static func alternatives(_ words: [String]) -> String {
        guard words.count > 1 else { return words.first ?? "" }
        return words.dropLast().joined(separator: ", ") + " or " + words[words.count - 1]
    }
}

extension KeyOption {
    /// docs/rig-protocol.md's table of addAuthenticator's key options, made from the
    /// declarations (a unit test keeps the page equal to it).
    public static var rigParameterTable: String {
        var lines = ["| parameter | values | default | `serve` flag | what it is |", "|---|---|---|---|---|"]
        for option in all {
            guard let parameter = option.parameter else { continue }
            let values: String = switch option.shape {
            case let .choice(words): words.map { "`\($0)`" }.joined(separator: ", ")
            case .list: "array of strings"
            case .text: "string"
            case .boolean: "boolean"
            }
            let flag = option.flag.map { "`--\($0)`" } ?? "—"
            let help = option.help.replacing("|", with: "\\|")
            lines.append("| `\(parameter)` | \(values) | `\(option.defaultValue)` | \(flag) | \(help) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
