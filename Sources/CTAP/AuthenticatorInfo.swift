import CBOR

/// authenticatorGetInfo response (CTAP 2.1 §6.4). Only what the key really does goes in here.
public struct AuthenticatorInfo: Sendable, Equatable {
    public var versions: [String]
    public var extensions: [String]
    public var aaguid: [UInt8]
    public var options: [String: Bool]
    public var maxMsgSize: Int
    public var pinUvAuthProtocols: [Int]
    public var maxCredentialCountInList: Int
    public var maxCredentialIdLength: Int
    public var transports: [String]
    public var algorithms: [CredentialParameters]
    public var maxSerializedLargeBlobArray: Int?
    public var forcePINChange: Bool?
    public var minPINLength: Int?
    public var firmwareVersion: Int?
    public var maxCredBlobLength: Int?
    public var maxRPIDsForSetMinPINLength: Int?
    public var remainingDiscoverableCredentials: Int?
    /// preferredPlatformUvAttempts (0x11) and uvModality (0x12): keys with built-in UV only.
    public var preferredPlatformUvAttempts: Int?
    public var uvModality: UInt32?
    /// CTAP 2.2 members (§6.4), each only where the key can say it truthfully:
    /// attestationFormats (0x16), transportsForReset (0x1A), pinComplexityPolicy (0x1B),
    /// maxPINLength (0x1D), authenticatorConfigCommands (0x1F); encIdentifier (0x19) while a
    /// persistentPinUvAuthToken exists.
    public var attestationFormats: [String]?
    public var encIdentifier: [UInt8]?
    /// encCredStoreState (0x1E, CTAP 2.3): the credential store's state, encrypted as
    /// encIdentifier is, while a persistentPinUvAuthToken exists.
    public var encCredStoreState: [UInt8]?
    public var transportsForReset: [String]?
    public var pinComplexityPolicy: Bool?
    public var maxPINLength: Int?
    public var authenticatorConfigCommands: [Int]?

    public init(versions: [String], extensions: [String], aaguid: [UInt8], options: [String: Bool],
                maxMsgSize: Int, pinUvAuthProtocols: [Int], maxCredentialCountInList: Int,
                maxCredentialIdLength: Int, transports: [String], algorithms: [CredentialParameters],
                maxSerializedLargeBlobArray: Int? = nil, forcePINChange: Bool? = nil, minPINLength: Int? = nil,
                firmwareVersion: Int? = nil, maxCredBlobLength: Int? = nil,
                maxRPIDsForSetMinPINLength: Int? = nil, remainingDiscoverableCredentials: Int? = nil,
                preferredPlatformUvAttempts: Int? = nil, uvModality: UInt32? = nil) {
        self.versions = versions; self.extensions = extensions; self.aaguid = aaguid; self.options = options
        self.maxMsgSize = maxMsgSize; self.pinUvAuthProtocols = pinUvAuthProtocols
        self.maxCredentialCountInList = maxCredentialCountInList; self.maxCredentialIdLength = maxCredentialIdLength
        self.transports = transports; self.algorithms = algorithms
        self.maxSerializedLargeBlobArray = maxSerializedLargeBlobArray; self.forcePINChange = forcePINChange
        self.minPINLength = minPINLength; self.firmwareVersion = firmwareVersion
        self.maxCredBlobLength = maxCredBlobLength; self.maxRPIDsForSetMinPINLength = maxRPIDsForSetMinPINLength
        self.remainingDiscoverableCredentials = remainingDiscoverableCredentials
        self.preferredPlatformUvAttempts = preferredPlatformUvAttempts; self.uvModality = uvModality
    }

    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [
            0x01: .array(versions.map { .textString($0) }),
            0x03: .byteString(aaguid),
            0x05: CBORValue(maxMsgSize),
            0x07: CBORValue(maxCredentialCountInList),
            0x08: CBORValue(maxCredentialIdLength),
        ]
        // CTAP 2.1 members: absent from a CTAP 2.0 key's getInfo (empty here).
        if !transports.isEmpty { map[0x09] = .array(transports.map { .textString($0) }) }
        if !algorithms.isEmpty { map[0x0A] = .array(algorithms.map(\.cborValue)) }
        if !extensions.isEmpty { map[0x02] = .array(extensions.map { .textString($0) }) }
        if !options.isEmpty {
            map[0x04] = .map(Dictionary(uniqueKeysWithValues: options.map { (CBORValue.textString($0.key), CBORValue.boolean($0.value)) }))
        }
        // Arrays keep their meaning-order: pinUvAuthProtocols lists preference.
        if !pinUvAuthProtocols.isEmpty { map[0x06] = .array(pinUvAuthProtocols.map { CBORValue($0) }) }
        if let maxSerializedLargeBlobArray { map[0x0B] = CBORValue(maxSerializedLargeBlobArray) }
        if let forcePINChange { map[0x0C] = .boolean(forcePINChange) }
        if let minPINLength { map[0x0D] = CBORValue(minPINLength) }
        if let firmwareVersion { map[0x0E] = CBORValue(firmwareVersion) }
        if let maxCredBlobLength { map[0x0F] = CBORValue(maxCredBlobLength) }
        if let maxRPIDsForSetMinPINLength { map[0x10] = CBORValue(maxRPIDsForSetMinPINLength) }
        if let preferredPlatformUvAttempts { map[0x11] = CBORValue(preferredPlatformUvAttempts) }
        if let uvModality { map[0x12] = CBORValue(UInt64(uvModality)) }
        if let remainingDiscoverableCredentials { map[0x14] = CBORValue(remainingDiscoverableCredentials) }
        if let attestationFormats { map[0x16] = .array(attestationFormats.map { .textString($0) }) }
        if let encIdentifier { map[0x19] = .byteString(encIdentifier) }
        if let encCredStoreState { map[0x1E] = .byteString(encCredStoreState) }
        if let transportsForReset { map[0x1A] = .array(transportsForReset.map { .textString($0) }) }
        if let pinComplexityPolicy { map[0x1B] = .boolean(pinComplexityPolicy) }
        if let maxPINLength { map[0x1D] = CBORValue(maxPINLength) }
        if let authenticatorConfigCommands { map[0x1F] = .array(authenticatorConfigCommands.map { CBORValue($0) }) }
        return .map(map)
    }
}
