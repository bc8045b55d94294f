import Foundation

extension DecodingError {
    /// What was wrong, in JSONReader's wording, the member named by its path under `root`
    /// ("params.hasUserVerification is not a boolean", "params.authenticatorId is missing"):
    /// the one way a JSON reading error reads, whether a JSONReader or a Decodable type read it.
    /// Never Foundation's own text, which names Swift types.
    public func memberPath(root: String) -> String {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            (codingPath + (last.map { [$0] } ?? [])).reduce(root) { path, key in
                if let index = key.intValue { return "\(path)[\(index)]" }
                return path.isEmpty ? key.stringValue : "\(path).\(key.stringValue)"
            }
        }
        switch self {
        case let .keyNotFound(key, context):
            return "\(path(context.codingPath, key)) is missing"
        case let .valueNotFound(type, context):
            return "\(path(context.codingPath)) is missing (\(Self.jsonName(type)) expected)"
        case let .typeMismatch(type, context):
            return "\(path(context.codingPath)) is not \(Self.jsonName(type))"
        case let .dataCorrupted(context):
            let at = path(context.codingPath)
            return context.codingPath.isEmpty ? "\(at.isEmpty ? "the JSON" : at) is not a JSON object" : "\(at) is not a valid value"
        @unknown default:
            return "\(root.isEmpty ? "the JSON" : root) is not valid"
        }
    }

    private static func jsonName(_ type: Any.Type) -> String {
        switch type {
        case is Bool.Type: "a boolean"
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt8.Type, is UInt32.Type, is UInt64.Type: "an integer"
        case is Double.Type: "a number"
        case is [String].Type: "an array of strings"
        case is [Any].Type: "an array"
        default: "an object"
        }
    }
}
