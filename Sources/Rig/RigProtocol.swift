import CBOR
import Foundation
import KeyService
import Presence
import SystemIO
import Encoding

/// The rig control protocol, version 1 (docs/rig-protocol.md): JSON objects, one
/// per line, both ways. A request is `{"v":1,"id":N,"method":"…","params":{…}}`; its response
/// `{"id":N,"result":{…}}` or `{"id":N,"error":{"code":"…","message":"…"}}`. The vocabulary is
/// that of WebDriver's virtual authenticators and DevTools' WebAuthn domain.
public enum RigProtocol {
    public static let version = 1
    /// The longest line read (a request with a PKCS#8 key and a large blob is a few kB).
    public static let maximumLineLength = 1 << 20

    /// The request's envelope: what every request has, decoded before the method's params.
    struct Envelope: Decodable {
        var v: Int?
        var id: Int64?
        var method: String?
    }

    /// The params of a method, decoded from the same line.
    struct Params<P: Decodable>: Decodable {
        var params: P?
    }

    /// Decodes `line`'s params as `P` (an absent `params` is `{}`), naming the member at fault.
    static func params<P: Decodable>(_ type: P.Type, from line: Data) throws(RigFailure) -> P {
        do {
            let decoder = JSONDecoder()
            if let params = try decoder.decode(Params<P>.self, from: line).params { return params }
            return try decoder.decode(P.self, from: Data("{}".utf8))
        } catch let error as DecodingError {
            throw .invalidParams(describe(error))
        } catch {
            throw .invalidParams("params: \(error)")
        }
    }

    /// "params.hasUserVerification is not a boolean", "params.authenticatorId is missing": the
    /// wording of every JSON reader (DecodingError.memberPath).
    static func describe(_ error: DecodingError) -> String {
        error.memberPath(root: "")
    }

    /// One response line.
    static func response(id: Int64?, result: some Encodable) -> [UInt8] {
        line(Response(id: id, result: AnyEncodable(result), error: nil))
    }

    static func response(id: Int64?, failure: RigFailure) -> [UInt8] {
        line(Response(id: id, result: nil, error: ErrorBody(code: failure.code.rawValue, message: failure.message)))
    }

    static func line(_ value: some Encodable) -> [UInt8] {
        ControlLine.encode(value, orElse: #"{"error":{"code":"failed","message":"the response could not be encoded"}}"#)
    }

    private struct Response: Encodable {
        var id: Int64?
        var result: AnyEncodable?
        var error: ErrorBody?
    }

    private struct ErrorBody: Encodable {
        var code: String
        var message: String
    }
}

/// An `Encodable` of any type (a method's result).
struct AnyEncodable: Encodable {
    let value: any Encodable
    init(_ value: any Encodable) { self.value = value }
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

/// `{}`: the result of methods that return nothing.
struct EmptyResult: Encodable {}

/// Why a rig request failed: the protocol's error code and a message that names what is wrong.
public struct RigFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case parseError, unknownMethod, invalidParams, noSuchAuthenticator, noSuchCredential, unsupported, failed, tooMany, forbidden
    }

    public var code: Code
    public var message: String
    public var description: String { "\(code.rawValue): \(message)" }

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    static func invalidParams(_ message: String) -> RigFailure { RigFailure(.invalidParams, message) }
    static func unsupported(_ message: String) -> RigFailure { RigFailure(.unsupported, message) }
    static func failed(_ message: String) -> RigFailure { RigFailure(.failed, message) }
}

extension Base64URL {
    /// A binary member of a request (`credentialId`, `userHandle`, `privateKey`), or the error
    /// that names it.
    static func decode(_ text: String, member: String) throws(RigFailure) -> [UInt8] {
        guard let bytes = decode(text) else { throw .invalidParams("\(member) must be base64url") }
        return bytes
    }
}
