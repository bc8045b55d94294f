/// Base64url (RFC 4648 §5) as WebAuthn writes credential IDs and user handles: the URL-safe
/// alphabet (`-`, `_`) without padding. Decoding also takes padded input (`=`), and surrounding
/// whitespace; anything else outside the alphabet, or a length no encoding has, is refused.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// 6-bit value of each ASCII byte, 0xFF when not in the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Whether every character of `text` is in the alphabet (padding and length not considered):
    /// what a prefix of an encoding can hold.
    public static func isAlphabet(_ text: some StringProtocol) -> Bool {
        text.utf8.allSatisfy { values[Int($0)] != 0xFF }
    }

    /// The unpadded encoding.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [alphabet[Int(chunk >> 18 & 63)], alphabet[Int(chunk >> 12 & 63)],
                    alphabet[Int(chunk >> 6 & 63)], alphabet[Int(chunk & 63)]]
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let chunk = UInt32(bytes[index]) << 16
            out += [alphabet[Int(chunk >> 18 & 63)], alphabet[Int(chunk >> 12 & 63)]]
        case 2:
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out += [alphabet[Int(chunk >> 18 & 63)], alphabet[Int(chunk >> 12 & 63)], alphabet[Int(chunk >> 6 & 63)]]
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of `text`, or nil when it is not base64url. Padding is optional but, when
    /// present, must be complete (`YQ==`, not `YQ=`); a final character with bits that the
    /// encoding leaves zero set (`YR`) is refused, so every byte string has one spelling.
    public static func decode(_ text: String) -> [UInt8]? {
        var characters = Array(text.utf8)
        while let last = characters.last, last == 0x20 || last == 0x0A || last == 0x0D || last == 0x09 {
            characters.removeLast()
        }
        while let first = characters.first, first == 0x20 || first == 0x0A || first == 0x0D || first == 0x09 {
            characters.removeFirst()
        }
        if let firstPad = characters.firstIndex(of: UInt8(ascii: "=")) {
            let padding = characters.count - firstPad
            guard characters[firstPad...].allSatisfy({ $0 == UInt8(ascii: "=") }), padding <= 2,
                  characters.count % 4 == 0 else { return nil }
            characters.removeLast(padding)
        }
        guard characters.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in characters {
            let value = values[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // RFC 4648 §3.5: the left-over bits must be zero (canonical encoding).
        guard accumulator == 0 else { return nil }
        return out
    }
}
