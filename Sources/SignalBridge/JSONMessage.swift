import CBOR
import Foundation
import Encoding

/// A JSON value as the native-messaging host reads it: strictly typed (a boolean is never a
/// number), so that every field of a message is checked for what it is.
enum JSONMessage: Decodable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONMessage])
    case object([String: JSONMessage])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONMessage].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONMessage].self))
        }
    }

    /// Parses one message; nil when `bytes` is not JSON (or not UTF-8).
    static func parse(_ bytes: [UInt8]) -> JSONMessage? {
        try? JSONDecoder().decode(JSONMessage.self, from: Data(bytes))
    }

    subscript(key: String) -> JSONMessage? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The JSON type's name, for error messages.
    var typeName: String {
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
