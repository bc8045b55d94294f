import CBOR

/// authenticatorMakeCredential (0x01) parameters (CTAP 2.1 §6.1).
public struct MakeCredentialRequest: Sendable, Equatable {
    public var clientDataHash: [UInt8]
    public var rp: RelyingPartyEntity
    public var user: UserEntity
    public var pubKeyCredParams: [CredentialParameters]
    public var excludeList: [CredentialDescriptor]
    public var extensions: MakeCredentialExtensions
    /// Why the extensions map (0x06) did not decode, if it did not; `extensions` is then empty.
    public var extensionsError: CTAP2StatusCode?
    /// The extensions map as sent (empty when absent), for a key that takes only some of them
    /// and must ignore the rest, malformed or not (`Authenticator`'s `ExtensionSet`).
    public var extensionInputs: [CBORValue: CBORValue]
    public var options: RequestOptions
    public var pinUvAuthParam: [UInt8]?
    public var pinUvAuthProtocol: UInt64?
    public var enterpriseAttestation: UInt64?
    public var attestationFormatsPreference: [String]?

    public init(clientDataHash: [UInt8], rp: RelyingPartyEntity, user: UserEntity,
                pubKeyCredParams: [CredentialParameters], excludeList: [CredentialDescriptor] = [],
                extensions: MakeCredentialExtensions = .init(), options: RequestOptions = .init(),
                pinUvAuthParam: [UInt8]? = nil, pinUvAuthProtocol: UInt64? = nil,
                enterpriseAttestation: UInt64? = nil, attestationFormatsPreference: [String]? = nil) {
        self.clientDataHash = clientDataHash; self.rp = rp; self.user = user
        self.pubKeyCredParams = pubKeyCredParams; self.excludeList = excludeList
        self.extensions = extensions; self.options = options
        self.extensionInputs = extensions.cborValue.mapValue ?? [:]
        self.pinUvAuthParam = pinUvAuthParam; self.pinUvAuthProtocol = pinUvAuthProtocol
        self.enterpriseAttestation = enterpriseAttestation
        self.attestationFormatsPreference = attestationFormatsPreference
    }

    /// Parse the request map. Unknown keys are ignored; missing required ones are
    /// CTAP2_ERR_MISSING_PARAMETER; wrong types CTAP2_ERR_CBOR_UNEXPECTED_TYPE. The extension
    /// inputs are decoded last (`MakeCredentialExtensions`), after every other member.
    public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        // The members in one pass over the map rather than a hashed lookup each (eleven, most of
        // them absent: about 4,000 instructions of a resident makeCredential); the checks below
        // then run in the order they always did.
        var hashMember, rpMember, userMember, paramsMember, excludeMember, extensionsMember: CBORValue?
        var optionsMember, pinUvAuthParamMember, protocolMember, enterpriseMember, formatsMember: CBORValue?
        for (key, member) in map {
            guard case let .unsignedInt(number) = key else { continue }
            switch number {
            case 1: hashMember = member
            case 2: rpMember = member
            case 3: userMember = member
            case 4: paramsMember = member
            case 5: excludeMember = member
            case 6: extensionsMember = member
            case 7: optionsMember = member
            case 8: pinUvAuthParamMember = member
            case 9: protocolMember = member
            case 10: enterpriseMember = member
            case 11: formatsMember = member
            default: continue
            }
        }
        guard let hashValue = hashMember, let rpValue = rpMember, let userValue = userMember,
              let paramsValue = paramsMember else { throw .missingParameter }
        guard let clientDataHash = hashValue.bytesValue else { throw .cborUnexpectedType }
        self.clientDataHash = try ClientDataHash.checked(clientDataHash)
        self.rp = try RelyingPartyEntity(parsing: rpValue)
        self.user = try UserEntity(parsing: userValue)
        guard let params = paramsValue.arrayValue else { throw .cborUnexpectedType }
        var parsedParams: [CredentialParameters] = []
        for entry in params { parsedParams.append(try CredentialParameters(parsing: entry)) }
        self.pubKeyCredParams = parsedParams
        var excludes: [CredentialDescriptor] = []
        for entry in try excludeMember.optionalArray() ?? [] { excludes.append(try CredentialDescriptor(parsing: entry)) }
        self.excludeList = excludes
        let extensionInputs = try extensionsMember.optionalMap() ?? [:]
        self.extensionInputs = extensionInputs
        self.options = try RequestOptions(parsing: optionsMember)
        self.pinUvAuthParam = try pinUvAuthParamMember.optionalBytes()
        self.pinUvAuthProtocol = try protocolMember.optionalUnsigned()
        self.enterpriseAttestation = try enterpriseMember.optionalUnsigned()
        if let formats = try formatsMember.optionalArray() {
            var names: [String] = []
            for format in formats {
                guard let name = format.stringValue else { throw .cborUnexpectedType }
                names.append(name)
            }
            self.attestationFormatsPreference = names
        } else {
            self.attestationFormatsPreference = nil
        }
        // Decoded here, once; a malformed input is kept as its status and reported by the
        // handler at the step where the extensions are processed, so a request with an earlier
        // fault still gets that fault's status (the specification's order of checks).
        do {
            self.extensions = try MakeCredentialExtensions(cbor: .map(extensionInputs))
            self.extensionsError = nil
        } catch {
            self.extensions = MakeCredentialExtensions()
            self.extensionsError = error
        }
    }

    /// The request map (clients, tests and the benchmark's native client use this).
    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [
            1: .byteString(clientDataHash), 2: rp.cborValue,
            3: user.cborValue(includeIdentifyingInfo: true),
            4: .array(pubKeyCredParams.map(\.cborValue)),
        ]
        if !excludeList.isEmpty { map[5] = .array(excludeList.map(\.cborValue)) }
        if !extensions.isEmpty { map[6] = extensions.cborValue }
        if !options.values.isEmpty {
            map[7] = .map(Dictionary(uniqueKeysWithValues: options.values.map { (CBORValue.textString($0.key), CBORValue.boolean($0.value)) }))
        }
        if let pinUvAuthParam { map[8] = .byteString(pinUvAuthParam) }
        if let pinUvAuthProtocol { map[9] = .unsignedInt(pinUvAuthProtocol) }
        if let enterpriseAttestation { map[10] = .unsignedInt(enterpriseAttestation) }
        if let attestationFormatsPreference { map[11] = .array(attestationFormatsPreference.map { .textString($0) }) }
        return .map(map)
    }
}
