/// Domain names in their ASCII form (IDNA's ToASCII, RFC 5891 §5.5, with RFC 3492 Punycode), so
/// that a Unicode RP ID or public-suffix rule compares with the ASCII hosts browsers send.
///
/// This is the part of UTS #46 that RP IDs need: ASCII letters are lowercased and each label
/// with a non-ASCII character becomes `xn--` + Punycode. The full UTS #46 mapping (case folding
/// of non-ASCII letters, NFC, width mapping) is not done: a name that needs it is compared as
/// given, so it can only fail to match, never match a different domain.
public enum DomainName {
    /// The ASCII form of `name`, or nil when a label cannot be encoded (empty name).
    public static func ascii(_ name: String) -> String? {
        guard !name.isEmpty else { return nil }
        var labels: [String] = []
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            if label.unicodeScalars.allSatisfy(\.isASCII) {
                labels.append(label.lowercased())
            } else {
                let scalars = label.unicodeScalars.map { $0.isASCII ? Unicode.Scalar(UInt8(ascii: $0).lowercasedASCII) : $0 }
                guard let encoded = Punycode.encode(scalars) else { return nil }
                labels.append("xn--" + encoded)
            }
        }
        return labels.joined(separator: ".")
    }
}

/// RFC 3492 Punycode encoding (the parameters of §5).
enum Punycode {
    private static let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700
    private static let initialBias = 72, initialN = 0x80

    static func encode(_ input: [Unicode.Scalar]) -> String? {
        let codePoints = input.map { Int($0.value) }
        var output = codePoints.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = initialN, delta = 0, bias = initialBias
        while handled < codePoints.count {
            guard let next = codePoints.filter({ $0 >= n }).min() else { return nil }
            let (product, overflow) = (next - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow else { return nil }
            delta += product
            n = next
            for codePoint in codePoints {
                if codePoint < n { delta += 1 }
                guard codePoint == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta: delta, count: handled + 1, first: handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(output)
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? 0x61 + value : 0x30 + value - 26)))
    }

    private static func adapt(delta: Int, count: Int, first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / count
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }
}

extension UInt8 {
    var lowercasedASCII: UInt8 { (0x41...0x5A).contains(self) ? self + 0x20 : self }
}
