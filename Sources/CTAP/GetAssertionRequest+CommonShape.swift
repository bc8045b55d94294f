import CBOR

extension GetAssertionRequest {
    /// The request read straight from its bytes when it has the shape nearly every client sends —
    /// a map with integer keys in increasing order: rpId, clientDataHash, an allowList of
    /// `{"id", "type"}` maps, options, pinUvAuthParam, pinUvAuthProtocol; no extensions — without
    /// building the CBOR tree first (decoding it and looking its members up cost about 17,000
    /// instructions, a sixteenth of the signature the request is for).
    ///
    /// nil when the bytes are anything else, malformed ones included: the caller then decodes the
    /// CBOR in full and `init(cbor:)` decides, so every error and every unusual request keeps the
    /// one path that has always handled it. Where this succeeds, it builds exactly what
    /// `init(cbor:)` builds from the decoded bytes (CommonShapeTests hold the two against each
    /// other on mutated requests, and FuzzGetAssertion on every input it runs).
    public init?(commonShape bytes: ArraySlice<UInt8>) {
        var reader = ShapeReader(bytes)
        guard let count = reader.head(major: 5), count <= 7 else { return nil }
        var rpID: String?
        var clientDataHash: [UInt8]?
        var allowList: [CredentialDescriptor] = []
        var options: [String: Bool] = [:]
        var pinUvAuthParam: [UInt8]?
        var pinUvAuthProtocol: UInt64?
        var previousKey: UInt64 = 0
        for _ in 0..<count {
            // Increasing keys: no key twice. Key 4 (extensions) and unknown keys take the full path.
            guard let key = reader.head(major: 0), key > previousKey else { return nil }
            previousKey = key
            switch key {
            case 1: guard let text = reader.text() else { return nil }; rpID = text
            case 2: guard let hash = reader.byteString() else { return nil }; clientDataHash = hash
            case 3:
                guard let entries = reader.head(major: 4) else { return nil }
                allowList.reserveCapacity(Int(min(entries, 64)))
                for _ in 0..<entries {
                    guard let descriptor = reader.descriptor() else { return nil }
                    allowList.append(descriptor)
                }
            case 5:
                guard let entries = reader.head(major: 5) else { return nil }
                for _ in 0..<entries {
                    guard let name = reader.text(), let flag = reader.boolean(), options.updateValue(flag, forKey: name) == nil else {
                        return nil
                    }
                }
            case 6: guard let bytes = reader.byteString() else { return nil }; pinUvAuthParam = bytes
            case 7: guard let value = reader.head(major: 0) else { return nil }; pinUvAuthProtocol = value
            default: return nil
            }
        }
        guard reader.isAtEnd, let rpID, let clientDataHash, clientDataHash.count == ClientDataHash.length else { return nil }
        self.rpID = rpID
        self.clientDataHash = clientDataHash
        self.allowList = allowList
        self.options = RequestOptions(options)
        self.pinUvAuthParam = pinUvAuthParam
        self.pinUvAuthProtocol = pinUvAuthProtocol
        // As init(cbor:) leaves a request without extensions: its inputs an empty map, decoded.
        self.extensionInputs = [:]
        (self.extensions, self.extensionsError) = Self.noExtensions
    }

    /// What init(cbor:) decodes from an absent extensions map, decoded once.
    private static let noExtensions: (GetAssertionExtensions, CTAP2StatusCode?) = {
        do throws(CTAP2StatusCode) {
            return (try GetAssertionExtensions(cbor: .map([:])), nil)
        } catch {
            return (GetAssertionExtensions(), error)
        }
    }()
}

/// A cursor over CBOR that accepts only what `CBORDecoder` with its default limits accepts, and
/// gives up (nil) at anything it does not read itself.
private struct ShapeReader {
    let bytes: ArraySlice<UInt8>
    var position: Int
    /// Data items read, as CBORDecoder counts them against `maxItems`.
    var items = 0
    let maxItems = CBORDecodingLimits().maxItems
    let maxLength = UInt64(CBORDecodingLimits().maxLength)

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    var isAtEnd: Bool { position == bytes.endIndex }

    /// The argument of the next item if it is of major type `major`, in shortest form (RFC 8949
    /// §4.2.1, as CBORDecoder requires); a string's or container's length no longer than what is left.
    mutating func head(major: UInt8) -> UInt64? {
        guard position < bytes.endIndex else { return nil }
        let initial = bytes[position]
        guard initial >> 5 == major else { return nil }
        items += 1
        guard items <= maxItems else { return nil }
        let info = initial & 0x1F
        let size: Int
        switch info {
        case 0..<24: size = 0
        case 24: size = 1
        case 25: size = 2
        case 26: size = 4
        case 27: size = 8
        default: return nil
        }
        guard bytes.endIndex - position > size else { return nil }
        var argument = UInt64(info)
        if size > 0 {
            argument = 0
            for offset in 1...size { argument = argument << 8 | UInt64(bytes[position + offset]) }
            let smallest: UInt64 = size == 1 ? 24 : size == 2 ? 0x100 : size == 4 ? 0x1_0000 : 0x1_0000_0000
            guard argument >= smallest else { return nil }
        }
        position += 1 + size
        if major >= 2 && (argument > maxLength || argument > UInt64(bytes.endIndex - position)) { return nil }
        return argument
    }

    mutating func byteString() -> [UInt8]? {
        guard let length = head(major: 2) else { return nil }
        let start = position
        position += Int(length)
        return Array(bytes[start..<position])
    }

    mutating func text() -> String? {
        guard let length = head(major: 3) else { return nil }
        let start = position
        position += Int(length)
        let utf8 = bytes[start..<position]
        // ASCII is valid UTF-8 as it stands (RP IDs and "public-key" nearly always are), and
        // decoding it needs none of the generic validation's run-time type look-ups.
        if utf8.allSatisfy({ $0 < 0x80 }) { return String(decoding: utf8, as: UTF8.self) }
        return String(validating: utf8, as: UTF8.self)
    }

    mutating func boolean() -> Bool? {
        guard position < bytes.endIndex, bytes[position] == 0xF4 || bytes[position] == 0xF5 else { return nil }
        items += 1
        guard items <= maxItems else { return nil }
        position += 1
        return bytes[position - 1] == 0xF5
    }

    /// `{"id": bytes, "type": text}`, in either order, and nothing else.
    mutating func descriptor() -> CredentialDescriptor? {
        guard head(major: 5) == 2 else { return nil }
        var id: [UInt8]?
        var type: String?
        for _ in 0..<2 {
            if id == nil, keyword([0x62, 0x69, 0x64]) {                            // "id"
                guard let bytes = byteString() else { return nil }
                id = bytes
            } else if type == nil, keyword([0x64, 0x74, 0x79, 0x70, 0x65]) {      // "type"
                guard let name = text() else { return nil }
                type = name
            } else {
                return nil
            }
        }
        guard let id, let type else { return nil }
        return CredentialDescriptor(id: id, type: type)
    }

    /// Reads the next item if its encoding is exactly `encoded` (a short text key, head included).
    mutating func keyword(_ encoded: [UInt8]) -> Bool {
        guard bytes.endIndex - position >= encoded.count,
              bytes[position..<(position + encoded.count)].elementsEqual(encoded) else { return false }
        items += 1
        guard items <= maxItems else { return false }
        position += encoded.count
        return true
    }
}
