// Convenience initialisers and literal conformances.

extension CBORValue {
    /// Integer: non-negative values become major type 0, negative values major
    /// type 1 with argument `-1 - value` (RFC 8949 §3.1).
    public init(_ value: Int) {
        self.init(Int64(value))
    }

    public init(_ value: Int64) {
        if value >= 0 {
            self = .unsignedInt(UInt64(value))
        } else {
            // -1 - value == ~value, which is non-negative here (even for Int64.min).
            self = .negativeInt(UInt64(~value))
        }
    }

    public init(_ value: UInt64) {
        self = .unsignedInt(value)
    }

    /// A byte string.
    public init(_ bytes: [UInt8]) {
        self = .byteString(bytes)
    }

    /// A text string.
    public init(_ text: String) {
        self = .textString(text)
    }
}

extension CBORValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) {
        self.init(value)
    }
}

extension CBORValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) {
        self = .textString(value)
    }
}

extension CBORValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) {
        self = .boolean(value)
    }
}

extension CBORValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: CBORValue...) {
        self = .array(elements)
    }
}

extension CBORValue: ExpressibleByDictionaryLiteral {
    /// Duplicate keys in a literal do not trap: the last one wins.
    public init(dictionaryLiteral elements: (CBORValue, CBORValue)...) {
        self = .map(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension CBORValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) {
        self = .null
    }
}
