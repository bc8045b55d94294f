/// Where each item of a CBOR document lies in its bytes: the trace recorder needs the byte
/// offsets of secret fields (to blank them) and the trace decoder needs them to print
/// `<redacted N bytes>` in their place. `CBORDecoder` gives values without offsets (and is
/// strict, for the authenticator); this is the module's walker for positions, over the same
/// definite-length subset.
///
/// Total and bounded like `CBORDecoder` (architecture rule 4): any input gives a layout or nil, never
/// a trap; depth and item count are limited. It is not a validator (no UTF-8 or canonical
/// checks beyond what is needed to walk): the authenticator's own decoder judges the message.
public struct CBORLayout: Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        case unsigned(UInt64)
        case negative(UInt64)
        case bytes
        case text(String)
        case array
        case map
        /// Simple values and floats (major type 7).
        case other
    }

    public var kind: Kind
    /// The whole item, header included.
    public var range: Range<Int>
    /// Byte and text strings: their content. Arrays and maps: everything after the header.
    public var content: Range<Int>
    /// Array elements; map entries flattened as key, value, key, value, …
    public var children: [CBORLayout]

    public static let maxDepth = 8
    public static let maxItems = 4096

    /// The layout of the one item starting at `offset`; nil if it is not well-formed or
    /// exceeds the limits. `range.upperBound` tells where it ends (trailing bytes are allowed).
    public static func parse(_ bytes: [UInt8], at offset: Int) -> CBORLayout? {
        var walker = Walker(bytes: bytes, position: offset)
        return walker.item(depth: 0)
    }

    /// The layout of an item that spans exactly `range` of `bytes`.
    public static func parse(_ bytes: [UInt8], exactly range: Range<Int>) -> CBORLayout? {
        guard range.lowerBound >= 0, range.upperBound <= bytes.count,
              let layout = parse(Array(bytes[..<range.upperBound]), at: range.lowerBound),
              layout.range.upperBound == range.upperBound else { return nil }
        return layout
    }

    /// Map entries as (key, value) pairs, in wire order.
    public var entries: [(key: CBORLayout, value: CBORLayout)] {
        guard kind == .map else { return [] }
        return stride(from: 0, to: children.count - 1, by: 2).map { (children[$0], children[$0 + 1]) }
    }

    /// The value under an integer key (CTAP2 parameter maps).
    public func value(forKey key: Int) -> CBORLayout? {
        entries.first { entry in
            switch entry.key.kind {
            case let .unsigned(n): return key >= 0 && n == UInt64(key)
            case let .negative(n): return key < 0 && n == UInt64(-1 - key)
            default: return false
            }
        }?.value
    }

    /// The value under a text key (extension identifiers).
    public func value(forKey key: String) -> CBORLayout? {
        entries.first { $0.key.kind == .text(key) }?.value
    }

    private struct Walker {
        let bytes: [UInt8]
        var position: Int
        var items = 0

        mutating func item(depth: Int) -> CBORLayout? {
            guard depth <= CBORLayout.maxDepth, items < CBORLayout.maxItems,
                  position >= 0, position < bytes.count else { return nil }
            items += 1
            let start = position
            let initial = bytes[position]
            position += 1
            let major = initial >> 5
            let additional = initial & 0x1F
            if major == 7 {
                // Simple values and floats: 0–23 inline, 24 one byte, 25/26/27 half/single/double.
                let extra: Int
                switch additional {
                case 0...23: extra = 0
                case 24: extra = 1
                case 25: extra = 2
                case 26: extra = 4
                case 27: extra = 8
                default: return nil   // 28–30 reserved, 31 break (indefinite lengths are not CTAP2)
                }
                guard bytes.count - position >= extra else { return nil }
                position += extra
                return CBORLayout(kind: .other, range: start..<position, content: position..<position, children: [])
            }
            guard let argument = readArgument(additional) else { return nil }
            switch major {
            case 0:
                return CBORLayout(kind: .unsigned(argument), range: start..<position, content: position..<position, children: [])
            case 1:
                return CBORLayout(kind: .negative(argument), range: start..<position, content: position..<position, children: [])
            case 2, 3:
                guard argument <= UInt64(bytes.count - position) else { return nil }
                let content = position..<(position + Int(argument))
                position = content.upperBound
                let kind: Kind = major == 2 ? .bytes : .text(String(decoding: bytes[content], as: UTF8.self))
                return CBORLayout(kind: kind, range: start..<position, content: content, children: [])
            case 4, 5:
                let count = major == 4 ? argument : argument.multipliedReportingOverflow(by: 2).partialValue
                // Every item takes at least one byte: a count beyond the remaining input is malformed.
                guard argument <= UInt64(bytes.count - position), count <= UInt64(bytes.count - position) else { return nil }
                let contentStart = position
                var children: [CBORLayout] = []
                children.reserveCapacity(Int(count))
                for _ in 0..<Int(count) {
                    guard let child = item(depth: depth + 1) else { return nil }
                    children.append(child)
                }
                return CBORLayout(kind: major == 4 ? .array : .map, range: start..<position,
                                  content: contentStart..<position, children: children)
            default:
                return nil   // major type 6: tags are not CTAP2
            }
        }

        /// The argument of a major type 0–5 header; nil for indefinite lengths or truncation.
        mutating func readArgument(_ additional: UInt8) -> UInt64? {
            let width: Int
            switch additional {
            case 0...23: return UInt64(additional)
            case 24: width = 1
            case 25: width = 2
            case 26: width = 4
            case 27: width = 8
            default: return nil
            }
            guard bytes.count - position >= width else { return nil }
            var value: UInt64 = 0
            for byte in bytes[position..<(position + width)] { value = value << 8 | UInt64(byte) }
            position += width
            return value
        }
    }
}
