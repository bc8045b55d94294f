/// Why `CBORDecoder` rejected an input. The decoder is strict: it accepts only
/// well-formed CBOR that also satisfies the CTAP2 constraints (CTAP 2.1 §8
/// "Message Encoding": definite lengths, shortest-form arguments, no tags,
/// no duplicate keys).
public enum CBORDecodingError: Error, Equatable, Sendable {
    /// The input ended inside an item, including a declared string length or
    /// array/map count larger than the bytes that remain (within `maxLength`).
    case truncated
    /// Bytes were left after one complete item (`decode` only).
    case trailingBytes
    /// An integer, length or count argument not in its shortest form (e.g. `18 05`).
    case nonMinimalEncoding
    /// Additional information 31 anywhere (indefinite length or a stray "break").
    case indefiniteLength
    /// Additional information 28...30.
    case reservedAdditionalInfo
    /// Two equal keys in one map.
    case duplicateMapKey
    /// Map keys not in CTAP2 canonical order (only with `requireCanonicalMapOrder`).
    case mapKeysOutOfOrder
    /// Arrays/maps nested deeper than `maxDepth`.
    case depthExceeded
    /// More than `maxItems` data items in the document.
    case tooManyItems
    /// A declared string length or array/map count above `maxLength`.
    case lengthTooLarge
    /// A text string that is not valid UTF-8.
    case invalidUTF8
    /// Major type 6: CTAP2 forbids tags.
    case unsupportedTag
    /// `f8 xx` with `xx < 32` (simple values 24...31 are reserved, and
    /// values below 24 must use the one-byte form).
    case invalidSimpleValue
}
