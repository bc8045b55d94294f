import Foundation
import CBOR
import CTAP
import Encoding

/// authenticatorGetInfo (CTAP 2.1 §6.4) from any authenticator, made readable:
/// each member of the response map becomes a named field with a text form and
/// a JSON form. Members of an unexpected type, and keys this table does not
/// know, are shown raw in CBOR diagnostic notation — never dropped.
public enum GetInfoFormatter {
    public struct Field: Sendable, Equatable {
        /// The map key (nil for a key that is not an integer).
        public var key: Int?
        /// The spec name (`maxMsgSize`), or `0x99` for an unknown key.
        public var name: String
        public var text: String
        public var json: JSONValue
        /// A key this table does not know, or a known key with a value of the wrong type.
        public var isRaw: Bool
    }

    /// Why a getInfo response could not be shown.
    public enum ResponseError: Error, Sendable, Equatable, CustomStringConvertible {
        case empty
        case status(UInt8)
        case invalidCBOR(CBORDecodingError)
        case notAMap

        public var description: String {
            switch self {
            case .empty: return "the getInfo response is empty (no status byte)"
            case .status(let code): return "getInfo failed: the device answered \(GetInfoFormatter.statusName(code))"
            case .invalidCBOR(let error): return "the getInfo response is not valid CBOR (\(error))"
            case .notAMap: return "the getInfo response is not a CBOR map"
            }
        }
    }

    /// The response of CTAPHID_CBOR with request [0x04]: status byte, then a CBOR map.
    public static func decode(response: [UInt8]) throws(ResponseError) -> CBORValue {
        guard let status = response.first else { throw .empty }
        guard status == CTAP2StatusCode.success.rawValue else { throw .status(status) }
        let value: CBORValue
        do {
            value = try CBORDecoder.decode(Array(response.dropFirst()))
        } catch {
            throw .invalidCBOR(error)
        }
        guard value.mapValue != nil else { throw .notAMap }
        return value
    }

    /// "CTAP2_ERR_PIN_BLOCKED (0x32)".
    public static func statusName(_ code: UInt8) -> String {
        let name = CTAP2StatusCode(rawValue: code)?.specName ?? "unknown status"
        return "\(name) (0x\(hexByte(code)))"
    }

    // MARK: - Fields

    /// CTAP 2.1 §6.4 member names by key.
    static let names: [Int: String] = [
        0x01: "versions", 0x02: "extensions", 0x03: "aaguid", 0x04: "options", 0x05: "maxMsgSize",
        0x06: "pinUvAuthProtocols", 0x07: "maxCredentialCountInList", 0x08: "maxCredentialIdLength",
        0x09: "transports", 0x0A: "algorithms", 0x0B: "maxSerializedLargeBlobArray",
        0x0C: "forcePINChange", 0x0D: "minPINLength", 0x0E: "firmwareVersion", 0x0F: "maxCredBlobLength",
        0x10: "maxRPIDsForSetMinPINLength", 0x11: "preferredPlatformUvAttempts", 0x12: "uvModality",
        0x13: "certifications", 0x14: "remainingDiscoverableCredentials",
        0x15: "vendorPrototypeConfigCommands", 0x16: "attestationFormats", 0x17: "uvCountSinceLastPinEntry",
        0x18: "longTouchForReset", 0x19: "encIdentifier", 0x1A: "transportsForReset", 0x1B: "pinComplexityPolicy",
        0x1C: "pinComplexityPolicyURL", 0x1D: "maxPINLength", 0x1E: "encCredStoreState", 0x1F: "authenticatorConfigCommands",
    ]

    /// The fields of a getInfo map: integer keys in order, then any other keys.
    public static func fields(_ info: CBORValue) -> [Field] {
        guard let map = info.mapValue else { return [] }
        let entries = map.sorted { canonicalOrder($0.key, $1.key) }
        return entries.map { key, value in
            guard let number = key.intValue else {
                return Field(key: nil, name: key.description, text: value.description,
                             json: .string(value.description), isRaw: true)
            }
            guard let name = names[number] else {
                return Field(key: number, name: "0x" + hexByte(UInt8(truncatingIfNeeded: number)),
                             text: value.description, json: .string(value.description), isRaw: true)
            }
            if let (text, json) = decoded(key: number, value: value) {
                return Field(key: number, name: name, text: text, json: json, isRaw: false)
            }
            return Field(key: number, name: name, text: value.description + "  (unexpected type)",
                         json: .string(value.description), isRaw: true)
        }
    }

    /// One line per field: "  maxMsgSize                        7609".
    public static func text(_ info: CBORValue, indent: String = "  ") -> String {
        let labelled = fields(info).map { field in
            (names[field.key ?? -1] == nil ? field.name + " (unknown)" : field.name, field.text)
        }
        let width = (labelled.map(\.0.count).max() ?? 0) + 2
        return labelled.map { label, text in
            indent + label.padding(toLength: width, withPad: " ", startingAt: 0) + text
        }.joined(separator: "\n")
    }

    /// An object of the known fields by name; unknown keys under "unknownKeys" as diagnostic text.
    public static func json(_ info: CBORValue) -> JSONValue {
        var known: [(String, JSONValue)] = []
        var unknown: [(String, JSONValue)] = []
        for field in fields(info) {
            if names[field.key ?? -1] != nil {
                known.append((field.name, field.json))
            } else {
                unknown.append((field.name, field.json))
            }
        }
        if !unknown.isEmpty { known.append(("unknownKeys", .object(unknown))) }
        return .object(known)
    }

    // MARK: - Member decoders

    private static func decoded(key: Int, value: CBORValue) -> (String, JSONValue)? {
        switch key {
        case 0x01, 0x02, 0x09, 0x16, 0x1A:
            guard let strings = stringArray(value) else { return nil }
            return (strings.isEmpty ? "(none)" : strings.joined(separator: ", "), .array(strings.map(JSONValue.string)))
        case 0x03:
            guard let bytes = value.bytesValue else { return nil }
            let text = bytes.count == 16 ? uuid(bytes) : bytes.map(hexByte).joined()
            return (text, .string(text))
        case 0x04:
            guard let map = value.mapValue else { return nil }
            var pairs: [(String, Bool)] = []
            for (key, value) in map.sorted(by: { canonicalOrder($0.key, $1.key) }) {
                guard let name = key.stringValue, let flag = value.boolValue else { return nil }
                pairs.append((name, flag))
            }
            let text = pairs.isEmpty ? "(none)" : pairs.map { "\($0.0)=\($0.1)" }.joined(separator: ", ")
            return (text, .object(pairs.map { ($0.0, JSONValue.bool($0.1)) }))
        case 0x06, 0x15, 0x1F:
            guard let numbers = value.arrayValue?.map(\.intValue), !numbers.contains(nil) else { return nil }
            let values = numbers.compactMap { $0 }
            return (values.isEmpty ? "(none)" : values.map(String.init).joined(separator: ", "),
                    .array(values.map(JSONValue.int)))
        case 0x0A:
            guard let entries = value.arrayValue else { return nil }
            var texts: [String] = []
            var jsons: [JSONValue] = []
            for entry in entries {
                guard let algorithm = entry["alg"]?.intValue else { return nil }
                let type = entry["type"]?.stringValue ?? "?"
                let name = algorithmName(algorithm)
                texts.append((name.map { "\($0) (\(algorithm))" } ?? "\(algorithm)") + (type == "public-key" ? "" : " [\(type)]"))
                jsons.append(.object([("type", .string(type)), ("alg", .int(algorithm)), ("name", .optional(name))]))
            }
            return (texts.isEmpty ? "(none)" : texts.joined(separator: ", "), .array(jsons))
        case 0x13:
            guard let map = value.mapValue else { return nil }
            var pairs: [(String, Int)] = []
            for (key, value) in map.sorted(by: { canonicalOrder($0.key, $1.key) }) {
                guard let name = key.stringValue, let level = value.intValue else { return nil }
                pairs.append((name, level))
            }
            let text = pairs.isEmpty ? "(none)" : pairs.map { "\($0.0)=\($0.1)" }.joined(separator: ", ")
            return (text, .object(pairs.map { ($0.0, JSONValue.int($0.1)) }))
        case 0x0C, 0x18, 0x1B:
            guard let flag = value.boolValue else { return nil }
            return (String(flag), .bool(flag))
        case 0x05, 0x07, 0x08, 0x0B, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x14, 0x12, 0x17, 0x1D:
            guard let number = value.intValue else { return nil }
            if key == 0x0E {
                return ("\(number) (0x\(String(number, radix: 16)))", .int(number))
            }
            return (String(number), .int(number))
        default:
            return nil
        }
    }

    private static func stringArray(_ value: CBORValue) -> [String]? {
        guard let elements = value.arrayValue else { return nil }
        let strings = elements.compactMap(\.stringValue)
        return strings.count == elements.count ? strings : nil
    }

    /// COSE algorithm identifiers (IANA COSE Algorithms registry) seen on FIDO keys.
    static func algorithmName(_ identifier: Int) -> String? {
        switch identifier {
        case -7: "ES256"
        case -8: "EdDSA"
        case -9: "ESP256"
        case -19: "Ed25519"
        case -35: "ES384"
        case -36: "ES512"
        case -37: "PS256"
        case -47: "ES256K"
        case -257: "RS256"
        default: nil
        }
    }

    /// 8-4-4-4-12 lower-case hex.
    static func uuid(_ bytes: [UInt8]) -> String {
        let hex = bytes.map(hexByte)
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]]
            .map { $0.joined() }.joined(separator: "-")
    }

    /// CTAP2 canonical order of map keys: shorter encoding first, then bytewise.
    static func canonicalOrder(_ a: CBORValue, _ b: CBORValue) -> Bool {
        let left = a.encoded(), right = b.encoded()
        if left.count != right.count { return left.count < right.count }
        return left.lexicographicallyPrecedes(right)
    }
}
