import CBOR

/// authenticatorMakeCredential response map (CTAP 2.1 §6.1.2).
public struct MakeCredentialResponse: Sendable, Equatable {
    public var format: String
    public var authenticatorData: [UInt8]
    public var attestationStatement: CBORValue
    public var largeBlobKey: [UInt8]?
    /// epAtt (0x04): true when the attestation is an enterprise attestation (CTAP 2.1 §7.1).
    public var enterpriseAttestation: Bool?
    /// unsignedExtensionOutputs (0x06, CTAP 2.2 §6.1.2): outputs outside the signed authData.
    public var unsignedExtensionOutputs: [CBORValue: CBORValue]?

    public init(format: String, authenticatorData: [UInt8], attestationStatement: CBORValue, largeBlobKey: [UInt8]? = nil,
                enterpriseAttestation: Bool? = nil, unsignedExtensionOutputs: [CBORValue: CBORValue]? = nil) {
        self.format = format; self.authenticatorData = authenticatorData
        self.attestationStatement = attestationStatement; self.largeBlobKey = largeBlobKey
        self.enterpriseAttestation = enterpriseAttestation; self.unsignedExtensionOutputs = unsignedExtensionOutputs
    }

    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [1: .textString(format), 2: .byteString(authenticatorData), 3: attestationStatement]
        if let enterpriseAttestation { map[4] = .boolean(enterpriseAttestation) }
        if let largeBlobKey { map[5] = .byteString(largeBlobKey) }
        if let unsignedExtensionOutputs { map[6] = .map(unsignedExtensionOutputs) }
        return .map(map)
    }

    /// `cborValue.encoded()`, written member by member without building the map: the keys 1–6
    /// are single bytes in ascending order, CTAP2 canonical order.
    public func encoded() -> [UInt8] { encoded(status: nil) }

    /// The encoding after `status` (the reply's first byte), in the one buffer.
    func encoded(status: UInt8?) -> [UInt8] {
        var count: UInt64 = 3
        if enterpriseAttestation != nil { count += 1 }
        if largeBlobKey != nil { count += 1 }
        if unsignedExtensionOutputs != nil { count += 1 }
        var output: [UInt8] = []
        output.reserveCapacity(48 + format.utf8.count + authenticatorData.count + (largeBlobKey?.count ?? 0))
        if let status { output.append(status) }
        CBORValue.appendHead(major: 5, argument: count, into: &output)
        output.append(0x01)
        let format = self.format.utf8
        CBORValue.appendHead(major: 3, argument: UInt64(format.count), into: &output)
        output += format
        output.append(0x02)
        CBORValue.appendHead(major: 2, argument: UInt64(authenticatorData.count), into: &output)
        output += authenticatorData
        output.append(0x03)
        attestationStatement.encode(into: &output)
        if let enterpriseAttestation { output.append(0x04); output.append(enterpriseAttestation ? 0xF5 : 0xF4) }
        if let largeBlobKey {
            output.append(0x05)
            CBORValue.appendHead(major: 2, argument: UInt64(largeBlobKey.count), into: &output)
            output += largeBlobKey
        }
        if let unsignedExtensionOutputs {
            output.append(0x06)
            CBORValue.map(unsignedExtensionOutputs).encode(into: &output)
        }
        return output
    }
}

/// authenticatorGetAssertion / GetNextAssertion response map (CTAP 2.1 §6.2.2).
public struct GetAssertionResponse: Sendable, Equatable {
    public var credential: CredentialDescriptor
    public var authenticatorData: [UInt8]
    public var signature: [UInt8]
    /// The user map (4). A key answering from its store gives the entity itself
    /// (`init(…, userEntity:identifying:…)`) and the map is written straight into the reply; it
    /// is built only when somebody reads it here (the map cost 2,000 instructions an assertion).
    public var user: CBORValue? {
        get {
            switch userMember {
            case .none: nil
            case let .value(value): value
            case let .entity(entity, identifying): entity.cborValue(includeIdentifyingInfo: identifying)
            }
        }
        set { userMember = newValue.map { .value($0) } ?? .none }
    }
    public var numberOfCredentials: Int?
    public var userSelected: Bool?
    public var largeBlobKey: [UInt8]?

    private enum UserMember: Sendable {
        case none
        case value(CBORValue)
        case entity(UserEntity, identifying: Bool)
    }
    private var userMember: UserMember

    public init(credential: CredentialDescriptor, authenticatorData: [UInt8], signature: [UInt8],
                user: CBORValue? = nil, numberOfCredentials: Int? = nil, userSelected: Bool? = nil,
                largeBlobKey: [UInt8]? = nil) {
        self.credential = credential; self.authenticatorData = authenticatorData
        self.signature = signature; self.userMember = user.map { .value($0) } ?? .none
        self.numberOfCredentials = numberOfCredentials
        self.userSelected = userSelected; self.largeBlobKey = largeBlobKey
    }

    /// The same response with its user given as the entity: `user` reads
    /// `userEntity.cborValue(includeIdentifyingInfo: identifying)`.
    public init(credential: CredentialDescriptor, authenticatorData: [UInt8], signature: [UInt8],
                userEntity: UserEntity?, identifying: Bool, numberOfCredentials: Int? = nil, userSelected: Bool? = nil,
                largeBlobKey: [UInt8]? = nil) {
        self.credential = credential; self.authenticatorData = authenticatorData; self.signature = signature
        self.userMember = userEntity.map { .entity($0, identifying: identifying) } ?? .none
        self.numberOfCredentials = numberOfCredentials
        self.userSelected = userSelected; self.largeBlobKey = largeBlobKey
    }

    public static func == (a: GetAssertionResponse, b: GetAssertionResponse) -> Bool {
        a.credential == b.credential && a.authenticatorData == b.authenticatorData && a.signature == b.signature
            && a.user == b.user && a.numberOfCredentials == b.numberOfCredentials && a.userSelected == b.userSelected
            && a.largeBlobKey == b.largeBlobKey
    }

    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [1: credential.cborValue, 2: .byteString(authenticatorData), 3: .byteString(signature)]
        if let user { map[4] = user }
        if let numberOfCredentials { map[5] = CBORValue(numberOfCredentials) }
        if let userSelected { map[6] = .boolean(userSelected) }
        if let largeBlobKey { map[7] = .byteString(largeBlobKey) }
        return .map(map)
    }

    /// `cborValue.encoded()`, written member by member without building the map: the keys 1–7
    /// are single bytes in ascending order, which is CTAP2 canonical order, and the credential
    /// descriptor's keys "id" and "type" are too. The assertion path's response is encoded on
    /// every getAssertion.
    public func encoded() -> [UInt8] { encoded(status: nil) }

    /// The encoding after `status` (the reply's first byte), in the one buffer.
    func encoded(status: UInt8?) -> [UInt8] {
        var count: UInt64 = 3
        if case .none = userMember {} else { count += 1 }
        if numberOfCredentials != nil { count += 1 }
        if userSelected != nil { count += 1 }
        if largeBlobKey != nil { count += 1 }
        var output: [UInt8] = []
        output.reserveCapacity(49 + credential.id.count + authenticatorData.count + signature.count + (largeBlobKey?.count ?? 0))
        if let status { output.append(status) }
        CBORValue.appendHead(major: 5, argument: count, into: &output)
        output.append(0x01)
        // {"id": …, "type": …}, byte by byte: an array literal here is an allocation per request.
        output.append(0xA2); output.append(0x62); output.append(0x69); output.append(0x64)
        CBORValue.appendHead(major: 2, argument: UInt64(credential.id.count), into: &output)
        output += credential.id
        output.append(0x64); output.append(0x74); output.append(0x79); output.append(0x70); output.append(0x65)
        let type = credential.type.utf8
        CBORValue.appendHead(major: 3, argument: UInt64(type.count), into: &output)
        output += type
        output.append(0x02)
        CBORValue.appendHead(major: 2, argument: UInt64(authenticatorData.count), into: &output)
        output += authenticatorData
        output.append(0x03)
        CBORValue.appendHead(major: 2, argument: UInt64(signature.count), into: &output)
        output += signature
        switch userMember {
        case .none:
            break
        case let .value(user):
            output.append(0x04)
            user.encode(into: &output)
        case let .entity(entity, identifying):
            output.append(0x04)
            entity.encode(includeIdentifyingInfo: identifying, into: &output)
        }
        if let numberOfCredentials {
            output.append(0x05)
            CBORValue(numberOfCredentials).encode(into: &output)
        }
        if let userSelected { output.append(0x06); output.append(userSelected ? 0xF5 : 0xF4) }
        if let largeBlobKey {
            output.append(0x07)
            CBORValue.appendHead(major: 2, argument: UInt64(largeBlobKey.count), into: &output)
            output += largeBlobKey
        }
        return output
    }
}
