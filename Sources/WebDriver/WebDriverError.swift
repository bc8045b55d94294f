import Encoding

/// A WebDriver error (WebDriver §6.6, the table of error codes): its code, the HTTP status the
/// table gives it, and a message; answered as `{"value":{"error","message","stacktrace"}}`.
public struct WebDriverError: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String
    public var description: String { "\(code): \(message)" }

    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func invalidArgument(_ message: String) -> WebDriverError { WebDriverError("invalid argument", message) }
    public static func unsupportedOperation(_ message: String) -> WebDriverError { WebDriverError("unsupported operation", message) }
    public static func invalidSessionID(_ message: String) -> WebDriverError { WebDriverError("invalid session id", message) }
    public static func unknownCommand(_ message: String) -> WebDriverError { WebDriverError("unknown command", message) }
    public static func unknownMethod(_ message: String) -> WebDriverError { WebDriverError("unknown method", message) }
    public static func unknownError(_ message: String) -> WebDriverError { WebDriverError("unknown error", message) }
    public static func sessionNotCreated(_ message: String) -> WebDriverError { WebDriverError("session not created", message) }

    /// The HTTP status WebDriver's table pairs with the code.
    public var status: Int {
        switch code {
        case "invalid argument", "invalid element state", "invalid selector", "element not interactable",
             "element click intercepted", "insecure certificate", "invalid cookie domain": 400
        case "invalid session id", "unknown command", "no such element", "no such window", "no such frame",
             "no such alert", "no such cookie", "stale element reference", "detached shadow root", "no such shadow root": 404
        case "unknown method": 405
        case "timeout", "script timeout": 500
        default: 500
        }
    }

    public var response: HTTPResponse {
        var error = JSONValue.Object()
        error.add("error", code)
        error.add("message", message)
        error.add("stacktrace", "")
        var body = JSONValue.Object()
        body.add("value", error)
        return .json(status: status, body.rendered)
    }
}

extension HTTPResponse {
    /// A command's success: `{"value": value}` with status 200.
    static func success(_ value: JSONValue) -> HTTPResponse {
        var body = JSONValue.Object()
        body.add("value", value)
        return .json(status: 200, body.rendered)
    }
}
