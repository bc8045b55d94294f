/// Resource bounds applied while decoding untrusted input.
public struct CBORDecodingLimits: Sendable {
    /// Maximum nesting of arrays/maps. A top-level array has depth 1.
    /// CTAP2 authenticators must support at least 4 levels and clients must not
    /// send more than 4 (CTAP 2.1 §8), so 8 leaves headroom. The decoder recurses
    /// once per level, so keep this small (it bounds stack use).
    public var maxDepth: Int
    /// Maximum number of data items in one document (every key, value,
    /// element and container counts as one item).
    public var maxItems: Int
    /// Maximum declared byte/text string length and array/map count.
    public var maxLength: Int
    /// When true, reject maps whose keys are not in CTAP2 canonical order
    /// (shorter encoded key first, then bytewise lexicographic).
    public var requireCanonicalMapOrder: Bool

    public init(maxDepth: Int = 8, maxItems: Int = 4096, maxLength: Int = 1_048_576,
                requireCanonicalMapOrder: Bool = false) {
        self.maxDepth = maxDepth
        self.maxItems = maxItems
        self.maxLength = maxLength
        self.requireCanonicalMapOrder = requireCanonicalMapOrder
    }
}
