// Typed accessors: each returns nil when the case does not match or the
// number does not fit the requested type.

extension CBORValue {
    /// The integer value of `.unsignedInt` / `.negativeInt` if it fits in `Int`.
    public var intValue: Int? {
        switch self {
        case .unsignedInt(let n):
            return n <= UInt64(Int.max) ? Int(n) : nil
        case .negativeInt(let n):
            // -1 - n >= Int.min  <=>  n <= Int.max
            return n <= UInt64(Int.max) ? -1 - Int(n) : nil
        default:
            return nil
        }
    }

    /// The value of `.unsignedInt`.
    public var uint64Value: UInt64? {
        if case .unsignedInt(let n) = self { return n }
        return nil
    }

    public var bytesValue: [UInt8]? {
        if case .byteString(let b) = self { return b }
        return nil
    }

    public var stringValue: String? {
        if case .textString(let s) = self { return s }
        return nil
    }

    public var arrayValue: [CBORValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var mapValue: [CBORValue: CBORValue]? {
        if case .map(let m) = self { return m }
        return nil
    }

    public var boolValue: Bool? {
        if case .boolean(let b) = self { return b }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// Map lookup; nil if `self` is not a map or the key is absent.
    public subscript(key: CBORValue) -> CBORValue? {
        guard case .map(let m) = self else { return nil }
        return m[key]
    }

    /// Map lookup by integer key (CTAP2 command parameters).
    public subscript(key: Int) -> CBORValue? {
        self[CBORValue(key)]
    }

    /// Map lookup by text key.
    public subscript(key: String) -> CBORValue? {
        self[CBORValue.textString(key)]
    }
}
