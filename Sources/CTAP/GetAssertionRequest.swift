import CBOR

/// authenticatorGetAssertion (0x02) parameters (CTAP 2.1 §6.2).
public struct GetAssertionRequest: Sendable, Equatable {
    public var rpID: String
    public var clientDataHash: [UInt8]
    public var allowList: [CredentialDescriptor]
    public var extensions: GetAssertionExtensions
    /// Why the extensions map (0x04) did not decode, if it did not; `extensions` is then empty.
    public var extensionsError: CTAP2StatusCode?
    /// The extensions map as sent (empty when absent), for a key that takes only some of them
    /// and must ignore the rest, malformed or not (`Authenticator`'s `ExtensionSet`).
    public var extensionInputs: [CBORValue: CBORValue]
    public var options: RequestOptions
    public var pinUvAuthParam: [UInt8]?
    public var pinUvAuthProtocol: UInt64?

    public init(rpID: String, clientDataHash: [UInt8], allowList: [CredentialDescriptor] = [],
                extensions: GetAssertionExtensions = .init(), options: RequestOptions = .init(),
                pinUvAuthParam: [UInt8]? = nil, pinUvAuthProtocol: UInt64? = nil) {
        self.rpID = rpID; self.clientDataHash = clientDataHash; self.allowList = allowList
        self.extensions = extensions; self.options = options
        self.extensionInputs = extensions.cborValue.mapValue ?? [:]
        self.pinUvAuthParam = pinUvAuthParam; self.pinUvAuthProtocol = pinUvAuthProtocol
    }

    /// Parse the request map, as `MakeCredentialRequest(cbor:)` does; the extension inputs
    /// (`GetAssertionExtensions`) are decoded last.
    public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        guard let rpValue = map[1], let hashValue = map[2] else { throw .missingParameter }
        guard let rpID = rpValue.stringValue, let clientDataHash = hashValue.bytesValue else {
            throw .cborUnexpectedType
        }
        self.rpID = rpID
        self.clientDataHash = try ClientDataHash.checked(clientDataHash)
        var allow: [CredentialDescriptor] = []
        for entry in try map[3].optionalArray() ?? [] { allow.append(try CredentialDescriptor(parsing: entry)) }
        self.allowList = allow
        let extensionInputs = try map[4].optionalMap() ?? [:]
        self.extensionInputs = extensionInputs
        self.options = try RequestOptions(parsing: map[5])
        self.pinUvAuthParam = try map[6].optionalBytes()
        self.pinUvAuthProtocol = try map[7].optionalUnsigned()
        // Decoded here, once; a malformed input is kept as its status and reported by the
        // handler at the step where the extensions are processed, so a request with an earlier
        // fault still gets that fault's status (the specification's order of checks).
        do {
            self.extensions = try GetAssertionExtensions(cbor: .map(extensionInputs))
            self.extensionsError = nil
        } catch {
            self.extensions = GetAssertionExtensions()
            self.extensionsError = error
        }
    }

    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [1: .textString(rpID), 2: .byteString(clientDataHash)]
        if !allowList.isEmpty { map[3] = .array(allowList.map(\.cborValue)) }
        if !extensions.isEmpty { map[4] = extensions.cborValue }
        if !options.values.isEmpty {
            map[5] = .map(Dictionary(uniqueKeysWithValues: options.values.map { (CBORValue.textString($0.key), CBORValue.boolean($0.value)) }))
        }
        if let pinUvAuthParam { map[6] = .byteString(pinUvAuthParam) }
        if let pinUvAuthProtocol { map[7] = .unsignedInt(pinUvAuthProtocol) }
        return .map(map)
    }
}
