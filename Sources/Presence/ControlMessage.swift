import Foundation
import SystemIO

/// The control socket's protocol, version 1 (`ControlSocket`): a UNIX SOCK_STREAM connection
/// carries one request line and gets one response line, each a JSON object ending in "\n".
///
///     → {"v":1,"action":"approve","rp_id":"example.com","timeout_ms":30000}
///     ← {"result":"approved","operation":"register","rp_id":"example.com","user":"alice","request":3}
///
///     → {"v":1,"action":"status"}
///     ← {"result":"status","pending":{"request":4,"operation":"U2F register","waiting_ms":1200},"waiting_answers":0}
///
///     → {"v":1,"action":"deny","request":4}
///     ← {"result":"denied","operation":"U2F register","request":4}
///
///     → {"v":1,"action":"approve"}
///     ← {"result":"none","message":"no presence request is pending (…)"}
///
/// `action`: "approve" | "deny" | "status". An answer names what it answers
/// (`ControlPresence.Target`): `rp_id` — the pending or the next request of that RP, waiting
/// up to `timeout_ms` (default 30000, at most 3600000); `request` — the pending request with
/// that id (from "status"); neither — the request pending now. The key holds the connection
/// until a request takes the answer ("approved" / "denied", with the request's operation, RP
/// ID, user name and id), or none does ("none", with why); closing the connection withdraws
/// the answer. Errors: {"result":"error","message":"…"}. Unknown keys are ignored.
public struct ControlRequest: Codable, Equatable, Sendable {
    public static let currentVersion = 1

    public var version: Int
    public var action: String
    public var timeoutMilliseconds: UInt64?
    /// approve/deny: the RP whose (pending or next) request this answers.
    public var rpID: String?
    /// approve/deny: the id of the pending request this answers.
    public var requestID: UInt64?

    enum CodingKeys: String, CodingKey {
        case version = "v", action, timeoutMilliseconds = "timeout_ms", rpID = "rp_id", requestID = "request"
        // The camelCase names every other Latchkey JSON uses, read as well (protocol 1.1).
        case timeoutMillisecondsCamel = "timeoutMs", rpIDCamel = "rpId"
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        action = try container.decode(String.self, forKey: .action)
        timeoutMilliseconds = try container.decodeIfPresent(UInt64.self, forKey: .timeoutMilliseconds)
            ?? container.decodeIfPresent(UInt64.self, forKey: .timeoutMillisecondsCamel)
        rpID = try container.decodeIfPresent(String.self, forKey: .rpID) ?? container.decodeIfPresent(String.self, forKey: .rpIDCamel)
        requestID = try container.decodeIfPresent(UInt64.self, forKey: .requestID)
    }

    /// Sent with the original names, which every key of protocol 1 reads.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(action, forKey: .action)
        try container.encodeIfPresent(timeoutMilliseconds, forKey: .timeoutMilliseconds)
        try container.encodeIfPresent(rpID, forKey: .rpID)
        try container.encodeIfPresent(requestID, forKey: .requestID)
    }

    public init(action: String, timeoutMilliseconds: UInt64? = nil, rpID: String? = nil, requestID: UInt64? = nil) {
        self.version = Self.currentVersion; self.action = action; self.timeoutMilliseconds = timeoutMilliseconds
        self.rpID = rpID; self.requestID = requestID
    }
}

/// A control request line, checked: what the key is asked to do, or why it cannot be.
public enum ControlCommand: Equatable, Sendable {
    case status
    case answer(ControlPresence.Decision, ControlPresence.Target, timeoutMilliseconds: UInt64)
    case invalid(String)

    /// The longest an answer waits for an RP's next request.
    public static let maximumAnswerTimeoutMilliseconds: UInt64 = 3_600_000

    public init(line: [UInt8]) {
        guard let request = ControlLine.decode(ControlRequest.self, from: line) else {
            self = .invalid("the request is not a JSON object with \"v\" and \"action\"")
            return
        }
        guard request.version == ControlRequest.currentVersion else {
            self = .invalid("control protocol version \(request.version) is not supported (this key speaks \(ControlRequest.currentVersion))")
            return
        }
        switch request.action {
        case "status":
            self = .status
        case "approve", "deny":
            let decision: ControlPresence.Decision = request.action == "approve" ? .approve : .deny
            let timeout = min(request.timeoutMilliseconds ?? 30_000, Self.maximumAnswerTimeoutMilliseconds)
            switch (request.rpID, request.requestID) {
            case (.some, .some):
                self = .invalid("give rp_id or request, not both")
            case let (.some(rpID), nil):
                guard !rpID.isEmpty, rpID.utf8.count <= 253 else {
                    self = .invalid("rp_id must be an RP ID (1 to 253 bytes)")
                    return
                }
                self = .answer(decision, .relyingParty(rpID), timeoutMilliseconds: timeout)
            case let (nil, .some(id)):
                self = .answer(decision, .request(id), timeoutMilliseconds: timeout)
            case (nil, nil):
                self = .answer(decision, .pending, timeoutMilliseconds: timeout)
            }
        default:
            self = .invalid("unknown action '\(request.action)': use approve, deny or status")
        }
    }
}

public struct ControlResponse: Codable, Equatable, Sendable {
    public struct PendingRequest: Codable, Equatable, Sendable {
        public var id: UInt64?
        public var operation: String
        public var rpID: String?
        public var user: String?
        public var waitingMilliseconds: UInt64?

        enum CodingKeys: String, CodingKey {
            case id = "request", operation, rpID = "rp_id", user, waitingMilliseconds = "waiting_ms"
            case rpIDCamel = "rpId", waitingMillisecondsCamel = "waitingMs"
        }

        public init(id: UInt64?, operation: String, rpID: String?, user: String?, waitingMilliseconds: UInt64?) {
            self.id = id; self.operation = operation; self.rpID = rpID; self.user = user; self.waitingMilliseconds = waitingMilliseconds
        }

        public init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decodeIfPresent(UInt64.self, forKey: .id)
            operation = try container.decode(String.self, forKey: .operation)
            rpID = try container.decodeIfPresent(String.self, forKey: .rpID) ?? container.decodeIfPresent(String.self, forKey: .rpIDCamel)
            user = try container.decodeIfPresent(String.self, forKey: .user)
            waitingMilliseconds = try container.decodeIfPresent(UInt64.self, forKey: .waitingMilliseconds)
                ?? container.decodeIfPresent(UInt64.self, forKey: .waitingMillisecondsCamel)
        }

        /// Both names: the original ones and the camelCase ones (protocol 1.1).
        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(id, forKey: .id)
            try container.encode(operation, forKey: .operation)
            try container.encodeIfPresent(rpID, forKey: .rpID)
            try container.encodeIfPresent(rpID, forKey: .rpIDCamel)
            try container.encodeIfPresent(user, forKey: .user)
            try container.encodeIfPresent(waitingMilliseconds, forKey: .waitingMilliseconds)
            try container.encodeIfPresent(waitingMilliseconds, forKey: .waitingMillisecondsCamel)
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
    /// approved/denied: the id of the request answered.
    public var requestID: UInt64?

    enum CodingKeys: String, CodingKey {
        case result, operation, rpID = "rp_id", user, message, pending, waitingAnswers = "waiting_answers", requestID = "request"
        case rpIDCamel = "rpId", waitingAnswersCamel = "waitingAnswers"
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        result = try container.decode(String.self, forKey: .result)
        operation = try container.decodeIfPresent(String.self, forKey: .operation)
        rpID = try container.decodeIfPresent(String.self, forKey: .rpID) ?? container.decodeIfPresent(String.self, forKey: .rpIDCamel)
        user = try container.decodeIfPresent(String.self, forKey: .user)
        message = try container.decodeIfPresent(String.self, forKey: .message)
        pending = try container.decodeIfPresent(PendingRequest.self, forKey: .pending)
        waitingAnswers = try container.decodeIfPresent(Int.self, forKey: .waitingAnswers)
            ?? container.decodeIfPresent(Int.self, forKey: .waitingAnswersCamel)
        requestID = try container.decodeIfPresent(UInt64.self, forKey: .requestID)
    }

    /// Both names: the original ones and the camelCase ones (protocol 1.1).
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(result, forKey: .result)
        try container.encodeIfPresent(operation, forKey: .operation)
        try container.encodeIfPresent(rpID, forKey: .rpID)
        try container.encodeIfPresent(rpID, forKey: .rpIDCamel)
        try container.encodeIfPresent(user, forKey: .user)
        try container.encodeIfPresent(message, forKey: .message)
        try container.encodeIfPresent(pending, forKey: .pending)
        try container.encodeIfPresent(waitingAnswers, forKey: .waitingAnswers)
        try container.encodeIfPresent(waitingAnswers, forKey: .waitingAnswersCamel)
        try container.encodeIfPresent(requestID, forKey: .requestID)
    }

    public init(result: String, operation: String? = nil, rpID: String? = nil, user: String? = nil,
                message: String? = nil, pending: PendingRequest? = nil, waitingAnswers: Int? = nil,
                requestID: UInt64? = nil) {
        self.result = result; self.operation = operation; self.rpID = rpID; self.user = user
        self.message = message; self.pending = pending; self.waitingAnswers = waitingAnswers
        self.requestID = requestID
    }

    static func error(_ message: String) -> ControlResponse { ControlResponse(result: "error", message: message) }
}

public enum ControlLine {
    /// The longest request line the key reads.
    public static let maximumLength = 4096

    /// `value` as one line (sorted keys, a newline at the end); `fallback` if it cannot be encoded.
    public static func encode<T: Encodable>(_ value: T, orElse fallback: String = #"{"result":"error"}"#) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(value)) ?? Data(fallback.utf8)) + [UInt8(ascii: "\n")]
    }

    public static func decode<T: Decodable>(_ type: T.Type, from line: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(line))
    }
}
