/// Reads HTTP/1.1 messages from a byte stream as it arrives (RFC 9112): bytes go in with
/// `append`, whole messages come out of `nextRequest`/`nextResponse`, and a connection may carry
/// any number of them. The head and the body are bounded; a body is framed by Content-Length or
/// chunked transfer coding (a response with neither runs to the end of the stream: `finish()`).
public struct HTTPMessageReader: Sendable {
    /// The longest head (start line and fields) read.
    public static let maximumHeadLength = 64 << 10
    /// The longest body: a screenshot or a page's source comes back as one JSON document.
    public static let maximumBodyLength = 256 << 20

    private var buffer: [UInt8] = []
    private var start = 0
    private var ended = false

    public init() {}

    public mutating func append(_ bytes: [UInt8]) {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 1 << 20 {
            buffer.removeSubrange(..<start)
            start = 0
        }
        buffer += bytes
    }

    /// The peer closed its sending side: a response framed by the end of the stream is whole.
    public mutating func finish() { ended = true }

    /// Whether bytes of a message that is not whole yet wait.
    public var hasPartialMessage: Bool { start < buffer.count }

    /// The next whole request, nil while it is not whole yet.
    public mutating func nextRequest() throws(HTTPError) -> HTTPRequest? {
        guard let (line, headers, bodyStart) = try head() else { return nil }
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].utf8.allSatisfy(HTTPHeaders.isTokenByte), parts[1].hasPrefix("/") else {
            throw HTTPError(400, "the request line is not METHOD /path HTTP/1.1")
        }
        guard parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0" else {
            throw HTTPError(505, "\(parts[2].prefix(16)) is not HTTP/1.1")
        }
        let framing = try Self.framing(headers, isResponse: false)
        guard let (body, end) = try self.body(framing, from: bodyStart) else { return nil }
        start = end
        return HTTPRequest(method: String(parts[0]), target: String(parts[1]), headers: headers, body: body)
    }

    /// The next whole response; `toHEAD`: the request was HEAD (no body follows).
    public mutating func nextResponse(toHEAD: Bool = false) throws(HTTPError) -> HTTPResponse? {
        guard let (line, headers, bodyStart) = try head() else { return nil }
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
            throw HTTPError(502, "the status line is not HTTP/1.1 NNN")
        }
        let framing: Framing = toHEAD || status / 100 == 1 || status == 204 || status == 304
            ? .length(0) : try Self.framing(headers, isResponse: true)
        guard let (body, end) = try self.body(framing, from: bodyStart) else { return nil }
        start = end
        return HTTPResponse(status: status, reason: parts.count == 3 ? String(parts[2]) : "", headers: headers, body: body)
    }

    // MARK: Parts

    enum Framing: Equatable {
        case length(Int)
        case chunked
        case untilClose
    }

    /// The start line, the fields and where the body starts, once the blank line has come.
    private func head() throws(HTTPError) -> (String, HTTPHeaders, Int)? {
        // Blank lines before a message are skipped (RFC 9112 §2.2).
        var from = start
        while from + 1 < buffer.count, buffer[from] == 0x0D, buffer[from + 1] == 0x0A { from += 2 }
        guard let end = Self.find([0x0D, 0x0A, 0x0D, 0x0A], in: buffer, from: from) else {
            if buffer.count - from > Self.maximumHeadLength {
                throw HTTPError(431, "the header is longer than \(Self.maximumHeadLength) bytes")
            }
            return nil
        }
        guard end - from <= Self.maximumHeadLength else {
            throw HTTPError(431, "the header is longer than \(Self.maximumHeadLength) bytes")
        }
        guard let text = String(validating: buffer[from..<end], as: UTF8.self) else {
            throw HTTPError(400, "the header is not UTF-8 text")
        }
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let startLine = String(lines.removeFirst())
        var headers = HTTPHeaders()
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                  line[..<colon].utf8.allSatisfy(HTTPHeaders.isTokenByte) else {
                throw HTTPError(400, "a header field is not NAME: VALUE")
            }
            let value = HTTPHeaders.trimmed(line[line.index(after: colon)...])
            guard value.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 || $0 >= 0x80 }) else {
                throw HTTPError(400, "the header field \(line[..<colon]) holds a control character")
            }
            headers.add(String(line[..<colon]), value)
        }
        return (startLine, headers, end + 4)
    }

    static func framing(_ headers: HTTPHeaders, isResponse: Bool) throws(HTTPError) -> Framing {
        let codings = headers.values("Transfer-Encoding").flatMap { $0.split(separator: ",") }.map { HTTPHeaders.trimmed($0).lowercased() }
        if !codings.isEmpty {
            // Chunked must be the last coding; no other is taken (RFC 9112 §6.3: and then no Content-Length).
            guard codings == ["chunked"] else { throw HTTPError(501, "transfer coding \(codings.joined(separator: ", ")) is not supported") }
            return .chunked
        }
        let lengths = headers.values("Content-Length")
        guard let first = lengths.first else { return isResponse ? .untilClose : .length(0) }
        guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.count <= 12,
              first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let length = Int(first) else {
            throw HTTPError(400, "Content-Length \(first.prefix(16)) is not one decimal length")
        }
        guard length <= maximumBodyLength else { throw HTTPError(413, "the body is longer than \(maximumBodyLength) bytes") }
        return .length(length)
    }

    /// The body and where the message ends, or nil while it is not all there.
    private func body(_ framing: Framing, from bodyStart: Int) throws(HTTPError) -> ([UInt8], Int)? {
        switch framing {
        case .length(let length):
            guard buffer.count - bodyStart >= length else { return nil }
            return (Array(buffer[bodyStart..<bodyStart + length]), bodyStart + length)
        case .untilClose:
            guard ended else {
                if buffer.count - bodyStart > Self.maximumBodyLength {
                    throw HTTPError(502, "the body is longer than \(Self.maximumBodyLength) bytes")
                }
                return nil
            }
            return (Array(buffer[bodyStart...]), buffer.count)
        case .chunked:
            return try chunkedBody(from: bodyStart)
        }
    }

    private func chunkedBody(from bodyStart: Int) throws(HTTPError) -> ([UInt8], Int)? {
        var body: [UInt8] = []
        var at = bodyStart
        while true {
            guard let lineEnd = Self.find([0x0D, 0x0A], in: buffer, from: at) else {
                if buffer.count - at > 1_024 { throw HTTPError(400, "a chunk's size line is too long") }
                return nil
            }
            // The size in hex, then optional extensions after ';' (ignored).
            let sizeText = buffer[at..<lineEnd].prefix { $0 != UInt8(ascii: ";") }
            let digits = String(decoding: sizeText, as: UTF8.self)
            let trimmedDigits = HTTPHeaders.trimmed(Substring(digits))
            guard !trimmedDigits.isEmpty, trimmedDigits.utf8.count <= 8, let size = Int(trimmedDigits, radix: 16) else {
                throw HTTPError(400, "a chunk's size is not hexadecimal")
            }
            at = lineEnd + 2
            if size == 0 {
                // Trailer fields, then a blank line.
                while true {
                    guard let end = Self.find([0x0D, 0x0A], in: buffer, from: at) else { return nil }
                    if end == at { return (body, end + 2) }
                    at = end + 2
                }
            }
            guard body.count + size <= Self.maximumBodyLength else {
                throw HTTPError(413, "the body is longer than \(Self.maximumBodyLength) bytes")
            }
            guard buffer.count - at >= size + 2 else { return nil }
            guard buffer[at + size] == 0x0D, buffer[at + size + 1] == 0x0A else { throw HTTPError(400, "a chunk does not end in CRLF") }
            body += buffer[at..<at + size]
            at += size + 2
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard haystack.count >= needle.count, from <= haystack.count - needle.count else { return nil }
        var index = from
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index..<index + needle.count].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
