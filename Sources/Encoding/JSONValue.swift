/// A JSON value as Latchkey writes one: object members kept in the order they were added (the
/// CLI's `--json` reads like its text form; the native host's replies keep the contract's order
/// and WebAuthn's toJSON() order), rendered compact (`rendered`). The one JSON writer.
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// `.string(text)`, or `.null` for nil.
    public static func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
    /// `.int(number)`, or `.null` for nil.
    public static func optional(_ number: Int?) -> JSONValue { number.map(JSONValue.int) ?? .null }

    /// The value as compact JSON text, one line (no trailing newline): what every command's
    /// `--json` prints, so a line is a document (`jq`, line-oriented readers).
    public var rendered: String {
        var out = ""
        write(into: &out)
        return out
    }

    private func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value): out += value.isFinite ? String(value) : "null"
        case .string(let value): JSONStringLiteral.append(value, to: &out)
        case .array(let elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                element.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                JSONStringLiteral.append(member.0, to: &out)
                out += ":"
                member.1.write(into: &out)
            }
            out += "}"
        }
    }
}

extension JSONValue {
    /// An object built a member at a time, in order.
    public struct Object: Sendable {
        public private(set) var members: [(String, JSONValue)] = []

        public init() {}

        public mutating func add(_ key: String, _ value: JSONValue) { members.append((key, value)) }
        public mutating func add(_ key: String, _ text: String) { add(key, .string(text)) }
        public mutating func add(_ key: String, _ flag: Bool) { add(key, .bool(flag)) }
        /// A number, or null for nil.
        public mutating func add(_ key: String, _ number: Int64?) { add(key, number.map { .int(Int($0)) } ?? .null) }
        public mutating func add(_ key: String, strings: [String]) { add(key, .array(strings.map(JSONValue.string))) }
        public mutating func add(_ key: String, _ object: Object) { add(key, object.value) }

        public var value: JSONValue { .object(members) }
        /// The object as compact JSON text.
        public var rendered: String { value.rendered }
    }

    /// `text` as a JSON string literal, quotes included.
    public static func quoted(_ text: String) -> String { JSONValue.string(text).rendered }
}

extension JSONValue {
    /// A document read back as a value to write, its objects' members sorted by name (a parsed
    /// object keeps no order of its own); a number without a fraction is written as an integer.
    public init(_ document: JSONDocument) {
        switch document {
        case .null: self = .null
        case .bool(let flag): self = .bool(flag)
        case .number(let number):
            if number.rounded(.towardZero) == number, let integer = Int(exactly: number) { self = .int(integer) } else { self = .double(number) }
        case .string(let text): self = .string(text)
        case .array(let elements): self = .array(elements.map(JSONValue.init))
        case .object(let members): self = .object(members.sorted { $0.key < $1.key }.map { ($0.key, JSONValue($0.value)) })
        }
    }
}

extension JSONValue {
    /// An object whose members are written sorted by name (files whose readers expect no order:
    /// a CXF document, an encrypted export's header), so that the same content is the same bytes.
    /// The order is the one Foundation's JSONSerialization gave these files (`.sortedKeys`):
    /// ignoring case, then by code point (`credWithoutUV` before `credWithUV`).
    public static func sorted(_ members: [String: JSONValue]) -> JSONValue {
        .object(members.sorted { Self.precedes($0.key, $1.key) }.map { ($0.key, $0.value) })
    }

    static func precedes(_ a: String, _ b: String) -> Bool {
        let folded = (a.lowercased(), b.lowercased())
        return folded.0 != folded.1 ? folded.0 < folded.1 : a < b
    }
}
