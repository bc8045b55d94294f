/// Strict, total CBOR decoder for CTAP2 messages.
///
/// Any input yields a value or a `CBORDecodingError`; nothing derived from the
/// input can trap. Declared lengths are checked against `maxLength` and
/// against the remaining input before anything is allocated. Recursion depth
/// is bounded by `limits.maxDepth`.
///
/// Accepted: definite-length items with shortest-form arguments (CTAP 2.1 §8),
/// no tags, unique map keys, valid UTF-8 text, floats of any width.
public enum CBORDecoder {
    /// Decodes exactly one item that must span all of `bytes`.
    public static func decode(_ bytes: [UInt8], limits: CBORDecodingLimits = .init())
        throws(CBORDecodingError) -> CBORValue
    {
        let (value, consumed) = try decodePrefix(bytes[...], limits: limits)
        guard consumed == bytes.count else { throw .trailingBytes }
        return value
    }

    /// Decodes one item from the start of `bytes` and reports how many bytes
    /// it occupied; anything after it is left alone.
    public static func decodePrefix(_ bytes: ArraySlice<UInt8>, limits: CBORDecodingLimits = .init())
        throws(CBORDecodingError) -> (value: CBORValue, consumed: Int)
    {
        var reader = Reader(bytes: bytes, limits: limits)
        let value = try reader.readItem(depth: 0)
        return (value, reader.position - bytes.startIndex)
    }
}

private struct Reader {
    let bytes: ArraySlice<UInt8>
    var position: Int
    var itemCount = 0
    let maxDepth: Int
    let maxItems: Int
    let maxLength: UInt64
    let requireCanonicalMapOrder: Bool

    /// A text string's bytes as a String; nil unless they are valid UTF-8. ASCII (nearly every
    /// string CTAP carries: map keys, "public-key", RP IDs) is read without the standard library's
    /// generic validation, which cost about 900 instructions a string (14 in a makeCredential).
    static func text(_ bytes: ArraySlice<UInt8>) -> String? {
        let ascii = bytes.withUnsafeBufferPointer { buffer -> String? in
            for byte in buffer where byte >= 0x80 { return nil }
            return String(decoding: buffer, as: UTF8.self)   // ASCII is UTF-8 as it stands
        }
        return ascii ?? String(validating: bytes, as: UTF8.self)
    }

    init(bytes: ArraySlice<UInt8>, limits: CBORDecodingLimits) {
        self.bytes = bytes
        self.position = bytes.startIndex
        self.maxDepth = limits.maxDepth
        self.maxItems = max(0, limits.maxItems)
        self.maxLength = UInt64(max(0, limits.maxLength))
        self.requireCanonicalMapOrder = limits.requireCanonicalMapOrder
    }

    var remaining: Int { bytes.endIndex - position }

    mutating func readByte() throws(CBORDecodingError) -> UInt8 {
        guard position < bytes.endIndex else { throw .truncated }
        let byte = bytes[position]
        position += 1
        return byte
    }

    mutating func readBigEndian(byteCount: Int) throws(CBORDecodingError) -> UInt64 {
        guard remaining >= byteCount else { throw .truncated }
        var value: UInt64 = 0
        for i in 0..<byteCount {
            value = value << 8 | UInt64(bytes[position + i])
        }
        position += byteCount
        return value
    }

    mutating func readItem(depth: Int) throws(CBORDecodingError) -> CBORValue {
        let initial = try readByte()
        itemCount += 1
        guard itemCount <= maxItems else { throw .tooManyItems }

        let major = initial >> 5
        let info = initial & 0x1f
        switch info {
        case 28...30: throw .reservedAdditionalInfo           // RFC 8949 §3: reserved
        case 31: throw .indefiniteLength                       // CTAP2: definite lengths only
        default: break
        }
        if major == 7 { return try readSimpleOrFloat(info: info) }
        if major == 6 { throw .unsupportedTag }                // CTAP2 canonical form: no tags

        let argument = try readArgument(info: info)
        switch major {
        case 0:
            return .unsignedInt(argument)
        case 1:
            return .negativeInt(argument)
        case 2:
            let range = try readPayload(length: argument)
            return .byteString(Array(bytes[range]))
        case 3:
            let range = try readPayload(length: argument)
            guard let text = Self.text(bytes[range]) else {
                throw .invalidUTF8                             // RFC 8949 §3.1 major type 3
            }
            return .textString(text)
        case 4:
            return try readArray(count: argument, depth: depth + 1)
        default:
            return try readMap(count: argument, depth: depth + 1)
        }
    }

    /// RFC 8949 §4.2.1 rule 1 (required by CTAP2): arguments in shortest form.
    mutating func readArgument(info: UInt8) throws(CBORDecodingError) -> UInt64 {
        switch info {
        case 0..<24:
            return UInt64(info)
        case 24:
            let v = try readBigEndian(byteCount: 1)
            guard v >= 24 else { throw .nonMinimalEncoding }
            return v
        case 25:
            let v = try readBigEndian(byteCount: 2)
            guard v > 0xff else { throw .nonMinimalEncoding }
            return v
        case 26:
            let v = try readBigEndian(byteCount: 4)
            guard v > 0xffff else { throw .nonMinimalEncoding }
            return v
        default:
            let v = try readBigEndian(byteCount: 8)
            guard v > 0xffff_ffff else { throw .nonMinimalEncoding }
            return v
        }
    }

    /// Range of a string payload; validated before any allocation.
    mutating func readPayload(length: UInt64) throws(CBORDecodingError) -> Range<Int> {
        guard length <= maxLength else { throw .lengthTooLarge }
        guard length <= UInt64(remaining) else { throw .truncated }
        let start = position
        position += Int(length)
        return start..<position
    }

    /// Checks a container's declared item count before reserving storage.
    /// `perEntry` is 1 for arrays and 2 for maps (key + value).
    func checkContainer(count: UInt64, perEntry: UInt64, depth: Int) throws(CBORDecodingError) {
        guard depth <= maxDepth else { throw .depthExceeded }
        guard count <= maxLength else { throw .lengthTooLarge }
        // Each nested item is at least one byte and one item; count <= maxLength <= Int.max,
        // so these divisions cannot overflow.
        guard count <= UInt64(maxItems - itemCount) / perEntry else { throw .tooManyItems }
        guard count <= UInt64(remaining) / perEntry else { throw .truncated }
    }

    mutating func readArray(count: UInt64, depth: Int) throws(CBORDecodingError) -> CBORValue {
        try checkContainer(count: count, perEntry: 1, depth: depth)
        var elements: [CBORValue] = []
        elements.reserveCapacity(Int(count))
        for _ in 0..<count {
            elements.append(try readItem(depth: depth))
        }
        return .array(elements)
    }

    mutating func readMap(count: UInt64, depth: Int) throws(CBORDecodingError) -> CBORValue {
        try checkContainer(count: count, perEntry: 2, depth: depth)
        var entries: [CBORValue: CBORValue] = Dictionary(minimumCapacity: Int(count))
        var previousKey: Range<Int>? = nil
        for _ in 0..<count {
            let keyStart = position
            let key = try readItem(depth: depth)
            let keyRange = keyStart..<position
            if requireCanonicalMapOrder, let previous = previousKey,
               !CBORValue.canonicalKeyPrecedes(bytes[previous], bytes[keyRange]) {
                // In canonical order a repeated key can only follow itself.
                throw bytes[previous].elementsEqual(bytes[keyRange]) ? .duplicateMapKey : .mapKeysOutOfOrder
            }
            previousKey = keyRange
            // RFC 8949 §5.6 / CTAP 2.1 §8: duplicate keys are an error. One hash per key: the
            // insertion itself reports a key that was already there.
            let value = try readItem(depth: depth)
            guard entries.updateValue(value, forKey: key) == nil else { throw .duplicateMapKey }
        }
        return .map(entries)
    }

    /// Major type 7 (RFC 8949 §3.3).
    mutating func readSimpleOrFloat(info: UInt8) throws(CBORDecodingError) -> CBORValue {
        switch info {
        case 20: return .boolean(false)
        case 21: return .boolean(true)
        case 22: return .null
        case 23: return .undefined
        case 24:
            // Two-byte form only for values 32...255 (RFC 8949 §3.3).
            let v = try readBigEndian(byteCount: 1)
            guard v >= 32 else { throw .invalidSimpleValue }
            return .simple(UInt8(v))
        case 25:
            let h = try readBigEndian(byteCount: 2)
            return .float(CBORValue.doubleFromHalf(UInt16(truncatingIfNeeded: h)))
        case 26:
            let s = try readBigEndian(byteCount: 4)
            return .float(Double(Float(bitPattern: UInt32(truncatingIfNeeded: s))))
        case 27:
            let d = try readBigEndian(byteCount: 8)
            return .float(Double(bitPattern: d))
        default:
            return .simple(info)                              // 0...19
        }
    }
}
