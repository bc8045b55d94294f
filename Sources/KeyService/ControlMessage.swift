import Foundation

/// The control socket's protocol, version 1 (`ControlSocket`): a UNIX SOCK_STREAM connection
/// carries one request line and gets one response line, each a JSON object ending in "\n".
///
///     → {"v":1,"action":"approve","timeout_ms":30000}
///     ← {"result":"approved","operation":"register","rp_id":"example.com","user":"alice"}
///
///     → {"v":1,"action":"deny","timeout_ms":0}
///     ← {"result":"none","message":"no presence request came within 0 s"}
///
///     → {"v":1,"action":"status"}
///     ← {"result":"status","pending":{"operation":"U2F register","waiting_ms":1200},"waiting_answers":0}
///
/// `action`: "approve" | "deny" | "status". For approve/deny the key holds the connection
/// until a request takes the answer ("approved" / "denied", with the request's operation,
/// RP ID and user name), or none does within `timeout_ms` ("none"); closing the connection
/// withdraws the answer (ControlPresence documents which request an answer applies to).
/// Errors: {"result":"error","message":"…"}. Unknown keys are ignored.
public struct ControlRequest: Codable, Equatable, Sendable {
    public static let currentVersion = 1

    public var version: Int
    public var action: String
    public var timeoutMilliseconds: UInt64?

    enum CodingKeys: String, CodingKey {
        case version = "v", action, timeoutMilliseconds = "timeout_ms"
    }

    public init(action: String, timeoutMilliseconds: UInt64? = nil) {
        self.version = Self.currentVersion; self.action = action; self.timeoutMilliseconds = timeoutMilliseconds
    }
}

public struct ControlResponse: Codable, Equatable, Sendable {
    public struct PendingRequest: Codable, Equatable, Sendable {
        public var operation: String
        public var rpID: String?
        public var user: String?
        public var waitingMilliseconds: UInt64?

        enum CodingKeys: String, CodingKey {
            case operation, rpID = "rp_id", user, waitingMilliseconds = "waiting_ms"
        }
    }

    /// "approved", "denied", "none", "status" or "error".
    public var result: String
    public var operation: String?
    public var rpID: String?
    public var user: String?
    public var message: String?
    public var pending: PendingRequest?
    public var waitingAnswers: Int?

    enum CodingKeys: String, CodingKey {
        case result, operation, rpID = "rp_id", user, message, pending, waitingAnswers = "waiting_answers"
    }

    public init(result: String, operation: String? = nil, rpID: String? = nil, user: String? = nil,
                message: String? = nil, pending: PendingRequest? = nil, waitingAnswers: Int? = nil) {
        self.result = result; self.operation = operation; self.rpID = rpID; self.user = user
        self.message = message; self.pending = pending; self.waitingAnswers = waitingAnswers
    }

    static func error(_ message: String) -> ControlResponse { ControlResponse(result: "error", message: message) }
}

enum ControlLine {
    /// The longest request line the key reads.
    static let maximumLength = 4096

    static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(value)) ?? Data("{\"result\":\"error\"}".utf8)) + [UInt8(ascii: "\n")]
    }

    static func decode<T: Decodable>(_ type: T.Type, from line: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(line))
    }
}
