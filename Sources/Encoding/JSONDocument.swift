import Foundation

/// A JSON document as Latchkey reads one, whatever it comes from (a native-messaging frame, an
/// export file, a backup's header, a site's passkey-endpoints document, a rig answer): strictly
/// typed — a boolean is never a number, a number never a string — so that every member is checked
/// for what it is. Parsed by Foundation's JSONDecoder (nesting bounded); read with `JSONReader`,
/// which names every member by its path in its errors. The one JSON reader; JSONValue is the
/// one writer.
public enum JSONDocument: Decodable, Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONDocument])
    case object([String: JSONDocument])

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONDocument].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONDocument].self))
        }
    }

    /// Parses one document; nil when `bytes` are not JSON (or not UTF-8).
    public static func parse(_ bytes: [UInt8]) -> JSONDocument? {
        try? JSONDecoder().decode(JSONDocument.self, from: Data(bytes))
    }

    /// A member of an object (nil for anything else, or a member that is not there).
    public subscript(key: String) -> JSONDocument? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    public var objectValue: [String: JSONDocument]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The JSON type's name, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
