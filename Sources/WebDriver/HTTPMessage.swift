import Foundation

/// HTTP/1.1 as the WebDriver intermediary needs it (RFC 9112), sans IO: a request or a response
/// read from bytes as they arrive (`HTTPMessageReader`), and written back as bytes. Bodies are
/// whole in memory — WebDriver messages are JSON documents — and bounded.
public struct HTTPHeaders: Equatable, Sendable {
    /// In the order received; names as sent (compared without case).
    public private(set) var fields: [(name: String, value: String)] = []

    public init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// The first field named `name`, or nil.
    public subscript(name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every value of `name`, for fields that may repeat (Connection, Transfer-Encoding).
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Whether the message ends its connection (`Connection: close`).
    public var asksToClose: Bool { values("Connection").contains { $0.lowercased().contains("close") } }

    public mutating func remove(_ name: String) { fields.removeAll { $0.name.lowercased() == name.lowercased() } }

    /// The fields a message passed on keeps: hop-by-hop ones (RFC 9110 §7.6.1: Connection, those
    /// it names, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade) and the framing
    /// (Content-Length, recomputed for the body sent) are dropped.
    /// RFC 9110's tchar: what a method or a field name is made of.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }


    /// Without the spaces and tabs around it (a field's optional whitespace).
    static func trimmed(_ text: Substring) -> String {
        var view = text[...]
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }

    public var endToEnd: HTTPHeaders {
        let named = Set(values("Connection").flatMap { $0.split(separator: ",") }.map {
            Self.trimmed($0).lowercased()
        })
        let hopByHop: Set<String> = ["connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
                                     "te", "trailer", "transfer-encoding", "upgrade", "content-length",
                                     // The whole body is read before it is passed on: nothing waits for a 100.
                                     "expect"]
        return HTTPHeaders(fields.filter { !hopByHop.contains($0.name.lowercased()) && !named.contains($0.name.lowercased()) })
    }
}

public struct HTTPRequest: Equatable, Sendable {
    public var method: String
    /// The request target as sent: an origin-form path with its query.
    public var target: String
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(method: String, target: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }

    /// The path without the query, split at `/` and percent-decoded: `/session/abc/url` is
    /// `["session", "abc", "url"]`; nil when an escape is not valid UTF-8 or hex.
    public var pathSegments: [String]? {
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        var segments: [String] = []
        for raw in path.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            // `%XX` escapes decoded; nil for one that is not two hex digits, or a result that is not UTF-8.
            guard let decoded = String(raw).removingPercentEncoding else { return nil }
            segments.append(decoded)
        }
        if segments.last == "" { segments.removeLast() }   // a trailing slash
        return segments
    }


    /// The request as bytes for `host`, its body framed by Content-Length, the connection kept.
    public func serialized(host: String) -> [UInt8] {
        var headers = self.headers.endToEnd
        headers.remove("Host")
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\n"
        for field in headers.fields { head += "\(field.name): \(field.value)\r\n" }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        return Array((head + "\r\n").utf8) + body
    }
}

public struct HTTPResponse: Equatable, Sendable {
    public var status: Int
    public var reason: String
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, reason: String? = nil, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.reason = reason ?? Self.reasons[status] ?? "Status \(status)"
        self.headers = headers
        self.body = body
    }

    /// A JSON body as WebDriver answers (`application/json; charset=utf-8`, never cached).
    public static func json(status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", "application/json; charset=utf-8"),
                                                           ("Cache-Control", "no-cache")]),
                     body: Array(text.utf8))
    }

    /// The response as bytes, its body framed by Content-Length; `close`: the last on its connection.
    public func serialized(close: Bool = false) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reason)\r\n"
        for field in headers.endToEnd.fields { head += "\(field.name): \(field.value)\r\n" }
        head += "Content-Length: \(body.count)\r\n"
        if close { head += "Connection: close\r\n" }
        return Array((head + "\r\n").utf8) + body
    }

    static let reasons: [Int: String] = [
        200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
        408: "Request Timeout", 411: "Length Required", 413: "Content Too Large", 431: "Request Header Fields Too Large",
        500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
        505: "HTTP Version Not Supported",
    ]
}
