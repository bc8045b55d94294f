/// ISO 7816-4 status words used by FIDO U2F raw messages (FIDO U2F Raw Message Formats §3.3).
public enum U2FStatusWord: UInt16, Error, Sendable {
    case noError = 0x9000
    case conditionsNotSatisfied = 0x6985
    case wrongData = 0x6A80
    case wrongLength = 0x6700
    case claNotSupported = 0x6E00
    case insNotSupported = 0x6D00

    public var bytes: [UInt8] { [UInt8(rawValue >> 8), UInt8(rawValue & 0xFF)] }
}

/// A U2F request APDU (FIDO U2F Raw Message Formats §3; ISO 7816-4 short and extended
/// length encodings, both of which clients send over CTAPHID_MSG).
public struct U2FAPDU: Sendable, Equatable {
    /// U2F instructions.
    public enum Instruction: UInt8, Sendable {
        case register = 0x01
        case authenticate = 0x02
        case version = 0x03
    }

    public var cla: UInt8
    public var ins: UInt8
    public var p1: UInt8
    public var p2: UInt8
    public var data: [UInt8]

    public init(cla: UInt8 = 0, ins: UInt8, p1: UInt8 = 0, p2: UInt8 = 0, data: [UInt8] = []) {
        self.cla = cla; self.ins = ins; self.p1 = p1; self.p2 = p2; self.data = data
    }

    /// Parse an APDU. Header-only, short (Lc 1 byte) and extended (0x00 Lc 2 bytes) forms,
    /// each with an optional Le; anything inconsistent is SW_WRONG_LENGTH.
    public init(parsing bytes: [UInt8]) throws(U2FStatusWord) {
        guard bytes.count >= 4 else { throw .wrongLength }
        cla = bytes[0]; ins = bytes[1]; p1 = bytes[2]; p2 = bytes[3]
        let body = bytes[4...]
        switch body.count {
        case 0:
            data = []                                   // case 1: header only
        case 1:
            data = []                                   // case 2 short: Le only
        case 3 where body.first == 0:
            data = []                                   // case 2 extended: 00 Le1 Le2
        default:
            let start = body.startIndex
            if body[start] == 0 {
                // Extended: 00 Lc1 Lc2 data [Le1 Le2]
                guard body.count >= 3 else { throw .wrongLength }
                let lc = Int(body[start + 1]) << 8 | Int(body[start + 2])
                let remaining = body.count - 3 - lc
                // python-fido2 sends an explicit Lc of 0000 for data-less commands, then Le.
                guard remaining == 0 || remaining == 2 else { throw .wrongLength }
                data = Array(body[(start + 3)..<(start + 3 + lc)])
            } else {
                // Short: Lc data [Le]
                let lc = Int(body[start])
                let remaining = body.count - 1 - lc
                guard remaining == 0 || remaining == 1 else { throw .wrongLength }
                data = Array(body[(start + 1)..<(start + 1 + lc)])
            }
        }
    }

    /// The extended-length encoding (what libfido2 and python-fido2 send).
    public func encoded() -> [UInt8] {
        var out: [UInt8] = [cla, ins, p1, p2]
        if !data.isEmpty {
            out += [0, UInt8(data.count >> 8), UInt8(data.count & 0xFF)]
            out += data
        }
        out += [0, 0]
        if data.isEmpty { out.insert(0, at: 4) }
        return out
    }
}
