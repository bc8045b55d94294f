import CBOR

/// Parses hex, ignoring spaces and an optional "0x" prefix.
func hex(_ text: String) -> [UInt8] {
    var digits = Array(text.filter { !$0.isWhitespace }.utf8)
    if digits.count >= 2, digits[0] == UInt8(ascii: "0"), digits[1] == UInt8(ascii: "x") {
        digits.removeFirst(2)
    }
    precondition(digits.count % 2 == 0, "odd hex length: \(text)")
    func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: preconditionFailure("bad hex digit in \(text)")
        }
    }
    var out: [UInt8] = []
    var i = 0
    while i < digits.count {
        out.append(nibble(digits[i]) << 4 | nibble(digits[i + 1]))
        i += 2
    }
    return out
}

func hexString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xf)]] })
}

/// Deterministic PRNG (SplitMix64) so fuzz runs are reproducible.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

/// Deterministic filler bytes (stand-ins for hashes, ids, keys, signatures).
func filler(_ count: Int, seed: UInt8) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ Int(seed) &* 11 &+ 5) }
}

/// Realistic CTAP2 messages used by the drip-feed and corruption tests.
enum CTAPSamples {
    static let makeCredentialRequest: CBORValue = [
        1: .byteString(filler(32, seed: 1)),                       // clientDataHash
        2: ["id": "example.com", "name": "Example Corp"],         // rp
        3: [                                                       // user
            "id": .byteString(filler(16, seed: 2)),
            "name": "alice@example.com",
            "displayName": "Alice Liddell",
        ],
        4: [                                                       // pubKeyCredParams
            ["alg": -7, "type": "public-key"],
            ["alg": -8, "type": "public-key"],
            ["alg": -257, "type": "public-key"],
        ],
        5: [                                                       // excludeList
            ["id": .byteString(filler(64, seed: 3)), "type": "public-key"],
        ],
        6: ["credProtect": 2, "hmac-secret": true],                // extensions
        7: ["rk": true, "uv": false],                              // options
        8: .byteString(filler(32, seed: 4)),                       // pinUvAuthParam
        9: 2,                                                      // pinUvAuthProtocol
    ]

    static let getAssertionRequest: CBORValue = [
        1: "login.example.org",
        2: .byteString(filler(32, seed: 5)),
        3: [
            ["id": .byteString(filler(48, seed: 6)), "type": "public-key", "transports": ["usb", "nfc"]],
            ["id": .byteString(filler(300, seed: 7)), "type": "public-key"],
        ],
        4: ["hmac-secret": [
            1: [1: 2, 3: -25, -1: 1, -2: .byteString(filler(32, seed: 8)), -3: .byteString(filler(32, seed: 9))],
            2: .byteString(filler(64, seed: 10)),
            3: .byteString(filler(16, seed: 11)),
            4: 2,
        ]],
        5: ["up": true, "uv": true],
    ]

    static let attestationResponse: CBORValue = [
        1: "packed",
        2: .byteString(filler(164, seed: 12)),                     // authData
        3: [
            "alg": -7,
            "sig": .byteString(filler(71, seed: 13)),
            "x5c": [.byteString(filler(600, seed: 14))],
        ],
        4: true,                                                   // epAtt
        5: .byteString(filler(32, seed: 15)),                      // largeBlobKey
    ]

    static let getInfoResponse: CBORValue = [
        1: ["U2F_V2", "FIDO_2_0", "FIDO_2_1"],
        2: ["credProtect", "hmac-secret", "largeBlobKey"],
        3: .byteString(filler(16, seed: 16)),
        4: ["rk": true, "up": true, "plat": false, "clientPin": true, "credMgmt": true],
        5: 1200,
        6: [2, 1],
        7: 8,
        8: 128,
        9: ["usb"],
        10: [["alg": -7, "type": "public-key"], ["alg": -8, "type": "public-key"]],
        0x0b: 1024,
        0x0e: 65_536,
        0x14: .unsignedInt(4_294_967_296),
    ]

    static let keyAgreementResponse: CBORValue = [
        1: [1: 2, 3: -25, -1: 1, -2: .byteString(filler(32, seed: 17)), -3: .byteString(filler(32, seed: 18))],
    ]

    static let all: [CBORValue] = [
        makeCredentialRequest, getAssertionRequest, attestationResponse, getInfoResponse, keyAgreementResponse,
    ]
}

/// True if any float occurs in the tree (float widths/NaN payloads are not
/// normalised by decoding, so such inputs need not re-encode byte-identically).
func containsFloat(_ value: CBORValue) -> Bool {
    switch value {
    case .float: return true
    case .array(let a): return a.contains(where: containsFloat)
    case .map(let m): return m.contains { containsFloat($0.key) || containsFloat($0.value) }
    default: return false
    }
}

/// Random CBORValue trees of bounded depth and width.
struct TreeGenerator {
    var rng: SplitMix64

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }

    mutating func scalar() -> CBORValue {
        switch int(0...11) {
        case 0: return .unsignedInt(interestingUInt())
        case 1: return .negativeInt(interestingUInt())
        case 2: return .byteString((0..<int(0...40)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 3: return .textString(text())
        case 4: return .boolean(int(0...1) == 1)
        case 5: return .null
        case 6: return .undefined
        case 7: return .simple(int(0...1) == 0 ? UInt8(int(0...19)) : UInt8(int(32...255)))
        case 8: return .float(Double(bitPattern: rng.next()))
        case 9: return .float(Double(Float(bitPattern: UInt32(truncatingIfNeeded: rng.next()))))
        case 10:
            let specials: [Double] = [0, -0.0, 1, -1, 1.5, 65504, 65505, 5.960464477539063e-8,
                                      .infinity, -.infinity, .nan, 1e300, 0.1, 100000,
                                      Double(Float.greatestFiniteMagnitude), .leastNonzeroMagnitude]
            return .float(specials[int(0...specials.count - 1)])
        default: return .unsignedInt(UInt64(int(0...30)))
        }
    }

    mutating func interestingUInt() -> UInt64 {
        let boundaries: [UInt64] = [0, 1, 23, 24, 255, 256, 65535, 65536,
                                    4_294_967_295, 4_294_967_296, .max, .max - 1]
        switch int(0...2) {
        case 0: return boundaries[int(0...boundaries.count - 1)]
        case 1: return UInt64(int(0...1000))
        default: return rng.next() >> UInt64(int(0...63))
        }
    }

    mutating func text() -> String {
        let pool: [Unicode.Scalar] = ["a", "b", "z", "0", "\"", "\\", "\n", "\u{0}", "\u{7f}", "\u{e9}",
                                      "e", "\u{301}", "\u{6c34}", "\u{10151}", "\u{1F511}", "\u{FFFD}"]
        var s = String.UnicodeScalarView()
        for _ in 0..<int(0...12) { s.append(pool[int(0...pool.count - 1)]) }
        return String(s)
    }

    mutating func value(depth: Int) -> CBORValue {
        guard depth > 0, int(0...2) != 0 else { return scalar() }
        if int(0...1) == 0 {
            return .array((0..<int(0...4)).map { _ in value(depth: depth - 1) })
        }
        var m: [CBORValue: CBORValue] = [:]
        for _ in 0..<int(0...4) {
            // Keys: mostly scalars, sometimes containers (CBOR allows any key).
            let key = int(0...5) == 0 ? value(depth: depth - 1) : scalar()
            m[key] = value(depth: depth - 1)
        }
        return .map(m)
    }
}
