import Encoding

/// The member checks both option types share; each failure names the member.
enum PasskeyJSON {
    static func object(_ value: JSONMessage?, _ name: String) throws(SignalFailure) -> [String: JSONMessage] {
        guard case .object(let members)? = value else { throw .type("\(name) must be an object") }
        return members
    }

    static func optionalObject(_ value: JSONMessage?, _ name: String) throws(SignalFailure) -> [String: JSONMessage]? {
        guard let value, value != .null else { return nil }
        return try object(value, name)
    }

    static func array(_ value: JSONMessage?, _ name: String) throws(SignalFailure) -> [JSONMessage] {
        guard case .array(let elements)? = value else { throw .type("\(name) must be an array") }
        return elements
    }

    static func string(_ value: JSONMessage?, _ name: String) throws(SignalFailure) -> String {
        guard case .string(let text)? = value else { throw .type("\(name) must be a string") }
        return text
    }

    static func optionalString(_ value: JSONMessage?, _ name: String) throws(SignalFailure) -> String? {
        guard let value, value != .null else { return nil }
        return try string(value, name)
    }

    static func optionalBool(_ value: JSONMessage?, _ name: String) throws(SignalFailure) -> Bool? {
        guard let value, value != .null else { return nil }
        guard case .bool(let flag) = value else { throw .type("\(name) must be a boolean") }
        return flag
    }

    static func optionalNumber(_ value: JSONMessage?, _ name: String) throws(SignalFailure) -> Double? {
        guard let value, value != .null else { return nil }
        guard case .number(let number) = value, number >= 0 else { throw .type("\(name) must be a number of milliseconds") }
        return number
    }

    static func bytes(_ value: JSONMessage?, _ name: String) throws(SignalFailure) -> [UInt8] {
        guard case .string(let text)? = value, let bytes = Base64URL.decode(text) else {
            throw .type("\(name) must be base64url")
        }
        return bytes
    }

    /// A list of `{"type": "public-key", "id": B64URL, "transports": [...]}`; other types are
    /// skipped (§5.10.3), IDs over 1,023 bytes refused as the signals refuse them.
    static func descriptors(_ value: JSONMessage?, _ name: String) throws(SignalFailure) -> [[UInt8]] {
        guard let value, value != .null else { return [] }
        var ids: [[UInt8]] = []
        for (index, entry) in try array(value, name).enumerated() {
            let descriptor = try object(entry, "\(name)[\(index)]")
            let type = try string(descriptor["type"], "\(name)[\(index)].type")
            let id = try bytes(descriptor["id"], "\(name)[\(index)].id")
            guard id.count <= 1023 else { throw .type("\(name)[\(index)].id is over 1,023 bytes") }
            if type == "public-key" { ids.append(id) }
        }
        return ids
    }
}
