import Encoding

/// The member checks both option types share; each failure names the member.
enum PasskeyJSON {
    /// The shared reader's checks and wording (Encoding's JSONReader), failing as a TypeError.
    typealias Reader = JSONReader<SignalFailure>
    static let typeError: Reader.Failing = { .type($0) }

    static func object(_ value: JSONDocument?, _ name: String) throws(SignalFailure) -> [String: JSONDocument] {
        try Reader.object(value, name, failure: typeError)
    }

    static func optionalObject(_ value: JSONDocument?, _ name: String) throws(SignalFailure) -> [String: JSONDocument]? {
        try Reader.optionalObject(value, name, failure: typeError)
    }

    static func array(_ value: JSONDocument?, _ name: String) throws(SignalFailure) -> [JSONDocument] {
        try Reader.array(value, name, failure: typeError)
    }

    static func string(_ value: JSONDocument?, _ name: String) throws(SignalFailure) -> String {
        try Reader.string(value, name, failure: typeError)
    }

    static func optionalString(_ value: JSONDocument?, _ name: String) throws(SignalFailure) -> String? {
        try Reader.optionalString(value, name, failure: typeError)
    }

    static func optionalBool(_ value: JSONDocument?, _ name: String) throws(SignalFailure) -> Bool? {
        try Reader.optionalBool(value, name, failure: typeError)
    }

    /// Milliseconds: a non-negative number.
    static func optionalNumber(_ value: JSONDocument?, _ name: String) throws(SignalFailure) -> Double? {
        try Reader.optionalNumber(value, name, failure: typeError)
    }

    static func bytes(_ value: JSONDocument?, _ name: String) throws(SignalFailure) -> [UInt8] {
        try Reader.bytes(value, name, failure: typeError)
    }

    /// A list of `{"type": "public-key", "id": B64URL, "transports": [...]}`; other types are
    /// skipped (§5.10.3), IDs over 1,023 bytes refused as the signals refuse them.
    static func descriptors(_ value: JSONDocument?, _ name: String) throws(SignalFailure) -> [[UInt8]] {
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
