import CBOR

/// authenticatorLargeBlobs (0x0C) parameters (CTAP 2.1 §6.10.2).
public struct LargeBlobsRequest: Sendable, Equatable {
    /// get (0x01): how many bytes to read
    public var get: UInt64?
    /// set (0x02): a fragment to write
    public var set: [UInt8]?
    /// offset (0x03): where the read or the fragment starts
    public var offset: UInt64?
    /// length (0x04): the whole serialized array's length, with the first fragment
    public var length: UInt64?
    /// pinUvAuthParam (0x05)
    public var pinUvAuthParam: [UInt8]?
    /// pinUvAuthProtocol (0x06)
    public var pinUvAuthProtocol: UInt64?

    public init(get: UInt64? = nil, set: [UInt8]? = nil, offset: UInt64? = nil, length: UInt64? = nil,
                pinUvAuthParam: [UInt8]? = nil, pinUvAuthProtocol: UInt64? = nil) {
        self.get = get; self.set = set; self.offset = offset; self.length = length
        self.pinUvAuthParam = pinUvAuthParam; self.pinUvAuthProtocol = pinUvAuthProtocol
    }

    /// Parse the request map. Unknown keys are ignored; wrong types are
    /// CTAP2_ERR_CBOR_UNEXPECTED_TYPE. Which combinations are valid is the authenticator's call.
    public init(cbor value: CBORValue) throws(CTAP2StatusCode) {
        guard let map = value.mapValue else { throw .cborUnexpectedType }
        get = try map[1].optionalUnsigned()
        set = try map[2].optionalBytes()
        offset = try map[3].optionalUnsigned()
        length = try map[4].optionalUnsigned()
        pinUvAuthParam = try map[5].optionalBytes()
        pinUvAuthProtocol = try map[6].optionalUnsigned()
    }

    public var cborValue: CBORValue {
        var map: [CBORValue: CBORValue] = [:]
        if let get { map[1] = .unsignedInt(get) }
        if let set { map[2] = .byteString(set) }
        if let offset { map[3] = .unsignedInt(offset) }
        if let length { map[4] = .unsignedInt(length) }
        if let pinUvAuthParam { map[5] = .byteString(pinUvAuthParam) }
        if let pinUvAuthProtocol { map[6] = .unsignedInt(pinUvAuthProtocol) }
        return .map(map)
    }

    /// What a set's pinUvAuthParam authenticates (CTAP 2.1 §6.10.2):
    /// 32×0xff ‖ h'0c00' ‖ uint32LittleEndian(offset) ‖ SHA-256(set). `setHash` is SHA-256(set).
    public static func authenticatedMessage(offset: UInt32, setHash: [UInt8]) -> [UInt8] {
        [UInt8](repeating: 0xFF, count: 32) + [CTAPCommand.largeBlobs.rawValue, 0x00]
            + [UInt8(truncatingIfNeeded: offset), UInt8(truncatingIfNeeded: offset >> 8),
               UInt8(truncatingIfNeeded: offset >> 16), UInt8(truncatingIfNeeded: offset >> 24)]
            + setHash
    }
}

/// authenticatorLargeBlobs response map: config (0x01), the bytes read. A set answers with the
/// status byte alone.
public struct LargeBlobsResponse: Sendable, Equatable {
    public var config: [UInt8]
    public init(config: [UInt8]) { self.config = config }
    public var cborValue: CBORValue { .map([1: .byteString(config)]) }
}
