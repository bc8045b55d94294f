import CBOR
import Foundation
import Encoding

/// Typed reading of one JSON object from `JSONSerialization`, with the path of every member in
/// its errors (`accounts[0].items[1].credentials[0].rpId`).
struct JSONReader {
    let object: [String: Any]
    let path: String

    init(_ object: [String: Any], path: String) { self.object = object; self.path = path }

    func name(_ member: String) -> String { path.isEmpty ? member : "\(path).\(member)" }

    private func value(_ member: String) -> Any? {
        guard let value = object[member], !(value is NSNull) else { return nil }
        return value
    }

    func string(_ member: String) throws(ExchangeError) -> String {
        guard let text = try optionalString(member) else { throw .malformed("\(name(member)) is missing") }
        return text
    }

    func optionalString(_ member: String) throws(ExchangeError) -> String? {
        guard let value = value(member) else { return nil }
        guard let text = value as? String else { throw .malformed("\(name(member)) is not a string") }
        return text
    }

    func integer(_ member: String) throws(ExchangeError) -> Int64 {
        guard let number = try optionalInteger(member) else { throw .malformed("\(name(member)) is missing") }
        return number
    }

    /// A number without a fraction, or (as Bitwarden writes counters) a string of digits.
    func optionalInteger(_ member: String) throws(ExchangeError) -> Int64? {
        guard let value = value(member) else { return nil }
        if let text = value as? String, let number = Int64(text) { return number }
        guard !(value is String), let number = value as? NSNumber, let exact = Int64(exactly: number.doubleValue) else {
            throw .malformed("\(name(member)) is not an integer")
        }
        return exact
    }

    func optionalBool(_ member: String) throws(ExchangeError) -> Bool? {
        guard let value = value(member) else { return nil }
        if let text = value as? String { return text == "true" }
        guard let flag = value as? Bool else { throw .malformed("\(name(member)) is not a boolean") }
        return flag
    }

    /// Base64url bytes, padded or not (CXF writes them unpadded; readers tolerate padding).
    func bytes(_ member: String) throws(ExchangeError) -> [UInt8] {
        guard let bytes = try optionalBytes(member) else { throw .malformed("\(name(member)) is missing") }
        return bytes
    }

    func optionalBytes(_ member: String) throws(ExchangeError) -> [UInt8]? {
        guard let text = try optionalString(member) else { return nil }
        guard let bytes = Base64URL.decode(text) else { throw .malformed("\(name(member)) is not base64url") }
        return bytes
    }

    func object(_ member: String) throws(ExchangeError) -> JSONReader {
        guard let reader = try optionalObject(member) else { throw .malformed("\(name(member)) is missing") }
        return reader
    }

    func optionalObject(_ member: String) throws(ExchangeError) -> JSONReader? {
        guard let value = value(member) else { return nil }
        guard let object = value as? [String: Any] else { throw .malformed("\(name(member)) is not an object") }
        return JSONReader(object, path: name(member))
    }

    func objects(_ member: String) throws(ExchangeError) -> [JSONReader] {
        guard let list = try optionalObjects(member) else { throw .malformed("\(name(member)) is missing") }
        return list
    }

    func optionalObjects(_ member: String) throws(ExchangeError) -> [JSONReader]? {
        guard let value = value(member) else { return nil }
        guard let list = value as? [Any] else { throw .malformed("\(name(member)) is not an array") }
        var readers: [JSONReader] = []
        for (index, element) in list.enumerated() {
            guard let object = element as? [String: Any] else { throw .malformed("\(name(member))[\(index)] is not an object") }
            readers.append(JSONReader(object, path: "\(name(member))[\(index)]"))
        }
        return readers
    }

    func optionalStrings(_ member: String) throws(ExchangeError) -> [String]? {
        guard let value = value(member) else { return nil }
        guard let list = value as? [Any], let strings = list as? [String] else { throw .malformed("\(name(member)) is not an array of strings") }
        return strings
    }
}
