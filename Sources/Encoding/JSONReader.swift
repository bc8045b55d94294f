/// Typed reading of a parsed JSON document (`JSONDocument`), each error naming the member by its
/// path (`accounts[0].items[1].credentials[0].rpId is not a string`) in the caller's own error
/// type (`failure` makes one from the message). One wording for every reader of JSON: "… is
/// missing", "… is not a string", "… is not base64url", …
public struct JSONReader<Failure: Error>: Sendable {
    public typealias Failing = @Sendable (String) -> Failure

    public let members: [String: JSONDocument]
    /// Where this object is (empty at the top).
    public let path: String
    let failure: Failing

    public init(_ members: [String: JSONDocument], path: String = "", failure: @escaping Failing) {
        self.members = members
        self.path = path
        self.failure = failure
    }

    public func name(_ member: String) -> String { path.isEmpty ? member : "\(path).\(member)" }

    /// The member's value; nil when it is absent or null.
    public func value(_ member: String) -> JSONDocument? {
        guard let value = members[member], value != .null else { return nil }
        return value
    }

    private func required<T>(_ member: String, _ read: (String) throws(Failure) -> T?) throws(Failure) -> T {
        guard let value = try read(member) else { throw failure("\(name(member)) is missing") }
        return value
    }

    public func string(_ member: String) throws(Failure) -> String { try required(member, optionalString) }

    public func optionalString(_ member: String) throws(Failure) -> String? {
        try Self.optionalString(value(member), name(member), failure: failure)
    }

    public func integer(_ member: String) throws(Failure) -> Int64 { try required(member, optionalInteger) }

    /// A number without a fraction, or (as Bitwarden writes counters) a string of digits.
    public func optionalInteger(_ member: String) throws(Failure) -> Int64? {
        switch value(member) {
        case nil: return nil
        case .string(let text)?:
            guard let number = Int64(text) else { throw failure("\(name(member)) is not an integer") }
            return number
        case .number(let number)?:
            guard let exact = Int64(exactly: number) else { throw failure("\(name(member)) is not an integer") }
            return exact
        default: throw failure("\(name(member)) is not an integer")
        }
    }

    public func optionalBool(_ member: String) throws(Failure) -> Bool? {
        try Self.optionalBool(value(member), name(member), failure: failure)
    }

    /// A boolean, or a string (true when it is "true"), as some exporters write flags.
    public func optionalFlag(_ member: String) throws(Failure) -> Bool? {
        if case .string(let text)? = value(member) { return text == "true" }
        return try optionalBool(member)
    }

    /// Base64url bytes, padded or not (CXF writes them unpadded; readers tolerate padding).
    public func bytes(_ member: String) throws(Failure) -> [UInt8] { try required(member, optionalBytes) }

    public func optionalBytes(_ member: String) throws(Failure) -> [UInt8]? {
        guard let value = value(member) else { return nil }
        return try Self.bytes(value, name(member), failure: failure)
    }

    public func object(_ member: String) throws(Failure) -> JSONReader { try required(member, optionalObject) }

    public func optionalObject(_ member: String) throws(Failure) -> JSONReader? {
        guard let value = value(member) else { return nil }
        return JSONReader(try Self.object(value, name(member), failure: failure), path: name(member), failure: failure)
    }

    public func optionalArray(_ member: String) throws(Failure) -> [JSONDocument]? {
        guard let value = value(member) else { return nil }
        return try Self.array(value, name(member), failure: failure)
    }

    public func objects(_ member: String) throws(Failure) -> [JSONReader] { try required(member, optionalObjects) }

    public func optionalObjects(_ member: String) throws(Failure) -> [JSONReader]? {
        guard let list = try optionalArray(member) else { return nil }
        var readers: [JSONReader] = []
        for (index, element) in list.enumerated() {
            guard case .object(let object) = element else { throw failure("\(name(member))[\(index)] is not an object") }
            readers.append(JSONReader(object, path: "\(name(member))[\(index)]", failure: failure))
        }
        return readers
    }

    public func optionalStrings(_ member: String) throws(Failure) -> [String]? {
        guard let list = try optionalArray(member) else { return nil }
        var strings: [String] = []
        for element in list {
            guard case .string(let text) = element else { throw failure("\(name(member)) is not an array of strings") }
            strings.append(text)
        }
        return strings
    }

    // MARK: One value, named `name` in the errors (for readers that walk values, not members)

    /// nil when `value` is absent or null.
    static func present(_ value: JSONDocument?) -> JSONDocument? {
        guard let value, value != .null else { return nil }
        return value
    }

    public static func object(_ value: JSONDocument?, _ name: String, failure: Failing) throws(Failure) -> [String: JSONDocument] {
        guard let value = present(value) else { throw failure("\(name) is missing") }
        guard case .object(let members) = value else { throw failure("\(name) is not an object (it is \(value.typeName))") }
        return members
    }

    public static func optionalObject(_ value: JSONDocument?, _ name: String, failure: Failing) throws(Failure) -> [String: JSONDocument]? {
        guard present(value) != nil else { return nil }
        return try object(value, name, failure: failure)
    }

    public static func array(_ value: JSONDocument?, _ name: String, failure: Failing) throws(Failure) -> [JSONDocument] {
        guard let value = present(value) else { throw failure("\(name) is missing") }
        guard case .array(let elements) = value else { throw failure("\(name) is not an array (it is \(value.typeName))") }
        return elements
    }

    public static func string(_ value: JSONDocument?, _ name: String, failure: Failing) throws(Failure) -> String {
        guard let text = try optionalString(value, name, failure: failure) else { throw failure("\(name) is missing") }
        return text
    }

    public static func optionalString(_ value: JSONDocument?, _ name: String, failure: Failing) throws(Failure) -> String? {
        guard let value = present(value) else { return nil }
        guard case .string(let text) = value else { throw failure("\(name) is not a string (it is \(value.typeName))") }
        return text
    }

    public static func optionalBool(_ value: JSONDocument?, _ name: String, failure: Failing) throws(Failure) -> Bool? {
        guard let value = present(value) else { return nil }
        guard case .bool(let flag) = value else { throw failure("\(name) is not a boolean (it is \(value.typeName))") }
        return flag
    }

    /// A non-negative number (a duration, a size).
    public static func optionalNumber(_ value: JSONDocument?, _ name: String, failure: Failing) throws(Failure) -> Double? {
        guard let value = present(value) else { return nil }
        guard case .number(let number) = value, number >= 0 else { throw failure("\(name) is not a non-negative number") }
        return number
    }

    /// Base64url bytes, padded or not.
    public static func bytes(_ value: JSONDocument?, _ name: String, failure: Failing) throws(Failure) -> [UInt8] {
        let text = try string(value, name, failure: failure)
        guard let bytes = Base64URL.decode(text) else { throw failure("\(name) is not base64url") }
        return bytes
    }
}
