import CBOR

/// PublicKeyCredentialRpEntity (WebAuthn §5.4.2) as CTAP carries it.
public struct RelyingPartyEntity: Sendable, Equatable {
    public var id: String
    public var name: String?
    public init(id: String, name: String? = nil) { self.id = id; self.name = name }

    init(parsing value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        let (idMember, nameMember, _) = textKeyedMembers(of: map, "id", "name")
        guard let idValue = idMember else { throw .missingParameter }
        guard let id = idValue.stringValue else { throw .cborUnexpectedType }
        self.id = id
        self.name = try nameMember.optionalText()
    }

    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = ["id": .textString(id)]
        if let name { map["name"] = .textString(name) }
        return .map(map)
    }
}

/// PublicKeyCredentialUserEntity (WebAuthn §5.4.3) as CTAP carries it.
public struct UserEntity: Sendable, Equatable {
    public var id: [UInt8]
    public var name: String?
    public var displayName: String?
    public init(id: [UInt8], name: String? = nil, displayName: String? = nil) {
        self.id = id; self.name = name; self.displayName = displayName
    }

    init(parsing value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        let (idMember, nameMember, displayNameMember) = textKeyedMembers(of: map, "id", "name", "displayName")
        guard let idValue = idMember else { throw .missingParameter }
        guard let id = idValue.bytesValue else { throw .cborUnexpectedType }
        // WebAuthn §5.4.3: user handle is at most 64 bytes.
        guard id.count <= 64 else { throw .invalidLength }
        self.id = id
        self.name = try nameMember.optionalText()
        self.displayName = try displayNameMember.optionalText()
    }

    /// The map sent back in assertions; `includeIdentifyingInfo` only after user verification
    /// (CTAP 2.1 §6.2.2: name/displayName MUST NOT be returned without UV).
    /// `cborValue(includeIdentifyingInfo:).encoded()` written without the map: "id", "name",
    /// "displayName" is their canonical order (shorter keys first).
    func encode(includeIdentifyingInfo: Bool, into output: inout [UInt8]) {
        let name = includeIdentifyingInfo ? self.name.flatMap { $0.isEmpty ? nil : $0 } : nil
        let displayName = includeIdentifyingInfo ? self.displayName.flatMap { $0.isEmpty ? nil : $0 } : nil
        CBORValue.appendHead(major: 5, argument: 1 + (name == nil ? 0 : 1) + (displayName == nil ? 0 : 1), into: &output)
        output.append(0x62); output.append(0x69); output.append(0x64)   // "id"
        CBORValue.appendHead(major: 2, argument: UInt64(id.count), into: &output)
        output += id
        if let name {
            output.append(0x64); output += "name".utf8
            CBORValue.appendHead(major: 3, argument: UInt64(name.utf8.count), into: &output)
            output += name.utf8
        }
        if let displayName {
            output.append(0x6B); output += "displayName".utf8
            CBORValue.appendHead(major: 3, argument: UInt64(displayName.utf8.count), into: &output)
            output += displayName.utf8
        }
    }

    public func cborValue(includeIdentifyingInfo: Bool) -> CBORValue {
        var map: [CBORValue: CBORValue] = ["id": .byteString(id)]
        if includeIdentifyingInfo {
            if let name, !name.isEmpty { map["name"] = .textString(name) }
            if let displayName, !displayName.isEmpty { map["displayName"] = .textString(displayName) }
        }
        return .map(map)
    }
}

/// PublicKeyCredentialDescriptor (WebAuthn §5.8.3).
public struct CredentialDescriptor: Sendable, Equatable {
    public var type: String
    public var id: [UInt8]
    public init(id: [UInt8], type: String = "public-key") { self.id = id; self.type = type }

    init(parsing value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        guard let typeValue = map["type"], let idValue = map["id"] else { throw .missingParameter }
        guard let type = typeValue.stringValue, let id = idValue.bytesValue else { throw .cborUnexpectedType }
        self.type = type; self.id = id
    }

    public var cborValue: CBORValue { .map(["id": .byteString(id), "type": .textString(type)]) }
}

/// One entry of pubKeyCredParams (WebAuthn §5.3).
public struct CredentialParameters: Sendable, Equatable {
    public var type: String
    public var algorithm: Int
    public init(algorithm: Int, type: String = "public-key") { self.algorithm = algorithm; self.type = type }

    init(parsing value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        let (typeMember, algMember, _) = textKeyedMembers(of: map, "type", "alg")
        guard let typeValue = typeMember, let algValue = algMember else { throw .missingParameter }
        guard let type = typeValue.stringValue else { throw .cborUnexpectedType }
        guard let algorithm = algValue.intValue else { throw .cborUnexpectedType }
        self.type = type; self.algorithm = algorithm
    }

    public var cborValue: CBORValue { .map(["alg": CBORValue(algorithm), "type": .textString(type)]) }
}

/// The members of `map` under the text keys `first`, `second` and `third`, in one pass over it
/// rather than a hashed lookup each (a request's entities are parsed on every makeCredential).
func textKeyedMembers(of map: [CBORValue: CBORValue], _ first: String, _ second: String,
                      _ third: String? = nil) -> (CBORValue?, CBORValue?, CBORValue?) {
    var members: (CBORValue?, CBORValue?, CBORValue?) = (nil, nil, nil)
    for (key, member) in map {
        guard case let .textString(name) = key else { continue }
        if name == first { members.0 = member } else if name == second { members.1 = member } else if name == third { members.2 = member }
    }
    return members
}

extension Optional where Wrapped == CBORValue {
    /// A text field that may be absent, but must be text when present.
    func optionalText() throws(CTAP2StatusCode) -> String? {
        guard let value = self else { return nil }
        guard let text = value.stringValue else { throw .cborUnexpectedType }
        return text
    }
    func optionalBytes() throws(CTAP2StatusCode) -> [UInt8]? {
        guard let value = self else { return nil }
        guard let bytes = value.bytesValue else { throw .cborUnexpectedType }
        return bytes
    }
    func optionalBool() throws(CTAP2StatusCode) -> Bool? {
        guard let value = self else { return nil }
        guard let flag = value.boolValue else { throw .cborUnexpectedType }
        return flag
    }
    func optionalUnsigned() throws(CTAP2StatusCode) -> UInt64? {
        guard let value = self else { return nil }
        guard case let .unsignedInt(n) = value else { throw .cborUnexpectedType }
        return n
    }
    func optionalMap() throws(CTAP2StatusCode) -> [CBORValue: CBORValue]? {
        guard let value = self else { return nil }
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        return map
    }
    func optionalArray() throws(CTAP2StatusCode) -> [CBORValue]? {
        guard let value = self else { return nil }
        guard let array = value.arrayValue else { throw .cborUnexpectedType }
        return array
    }
}

/// The options map of makeCredential/getAssertion: text keys with boolean values.
public struct RequestOptions: Sendable, Equatable {
    public var values: [String: Bool]
    public init(_ values: [String: Bool] = [:]) { self.values = values }
    public subscript(_ key: String) -> Bool? { values[key] }

    init(parsing value: CBORValue?) throws(CTAP2StatusCode) {
        guard let value else { self.values = [:]; return }
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        var values: [String: Bool] = [:]
        for (key, entry) in map {
            // Unknown options are ignored, but every option value must be a boolean.
            guard let name = key.stringValue else { throw .cborUnexpectedType }
            guard let flag = entry.boolValue else { throw .cborUnexpectedType }
            values[name] = flag
        }
        self.values = values
    }
}
