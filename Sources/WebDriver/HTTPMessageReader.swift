/// Reads HTTP/1.1 messages from a byte stream as it arrives (RFC 9112): bytes go in with
/// `append`, whole messages come out of `nextRequest`/`nextResponse`, and a connection may carry
/// any number of them. The head and the body are bounded; a body is framed by Content-Length or
/// chunked transfer coding (a response with neither runs to the end of the stream: `finish()`).
public struct HTTPMessageReader: Sendable {
    /// The longest head (start line and fields) read.
    public static let maximumHeadLength = 64 << 10
    /// The longest response body: a screenshot or a page's source comes back as one JSON document.
    public static let maximumBodyLength = 256 << 20
    /// The longest request body (a file sent to an upload field is the largest WebDriver sends).
    public static let maximumRequestBodyLength = 64 << 20

    private var buffer: [UInt8] = []
    private var start = 0
    private var ended = false
    /// Where the search for the end of the head goes on (bytes before it were searched already).
    private var headScanned = 0
    /// A chunked body read so far, and where its next chunk starts: chunks arrive over many reads.
    private var chunked: (body: [UInt8], at: Int)?

    public init() {}

    public mutating func append(_ bytes: [UInt8]) {
        if start > 0, start == buffer.count || start > 1 << 20 {
            // Offsets into the part kept move with it.
            buffer.removeSubrange(..<start)
            headScanned = max(0, headScanned - start)
            if let partial = chunked { chunked = (partial.body, partial.at - start) }
            start = 0
        }
        buffer += bytes
    }

    /// The message that began at `start` is whole and ends at `end`.
    private mutating func consumed(upTo end: Int) {
        start = end
        headScanned = end
        chunked = nil
    }

    /// The peer closed its sending side: a response framed by the end of the stream is whole.
    public mutating func finish() { ended = true }

    /// Whether bytes of a message that is not whole yet wait.
    public var hasPartialMessage: Bool { start < buffer.count }

    /// The next whole request, nil while it is not whole yet.
    public mutating func nextRequest() throws(HTTPError) -> HTTPRequest? {
        guard let (line, headers, bodyStart) = try head() else { return nil }
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        // The target is visible ASCII: a path and a query, nothing a line could be split at.
        guard parts.count == 3, !parts[0].isEmpty, parts[0].utf8.allSatisfy(HTTPHeaders.isTokenByte), parts[1].hasPrefix("/"),
              parts[1].utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPError(400, "the request line is not METHOD /path HTTP/1.1")
        }
        guard parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0" else {
            throw HTTPError(505, "\(parts[2].prefix(16)) is not HTTP/1.1")
        }
        let framing = try Self.framing(headers, isResponse: false, maximum: Self.maximumRequestBodyLength)
        guard let (body, end) = try self.body(framing, from: bodyStart, maximum: Self.maximumRequestBodyLength) else { return nil }
        consumed(upTo: end)
        return HTTPRequest(method: String(parts[0]), target: String(parts[1]), headers: headers, body: body)
    }

    /// The next whole response; `toHEAD`: the request was HEAD (no body follows). Interim (1xx)
    /// responses are read past: the final one answers the request.
    public mutating func nextResponse(toHEAD: Bool = false) throws(HTTPError) -> HTTPResponse? {
        while true {
            guard let (line, headers, bodyStart) = try head() else { return nil }
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].utf8.count == 3,
                  parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let status = Int(parts[1]), status >= 100 else {
                throw HTTPError(502, "the status line is not HTTP/1.1 NNN")
            }
            let reason = parts.count == 3 ? String(parts[2]) : ""
            guard reason.utf8.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                throw HTTPError(502, "the status line's reason holds a control character")
            }
            if status / 100 == 1, status != 101 {
                consumed(upTo: bodyStart)
                continue
            }
            let framing: Framing = toHEAD || status / 100 == 1 || status == 204 || status == 304
                ? .length(0) : try Self.framing(headers, isResponse: true, maximum: Self.maximumBodyLength)
            guard let (body, end) = try self.body(framing, from: bodyStart, maximum: Self.maximumBodyLength) else { return nil }
            consumed(upTo: end)
            return HTTPResponse(status: status, reason: reason, headers: headers, body: body)
        }
    }

    // MARK: Parts

    enum Framing: Equatable {
        case length(Int)
        case chunked
        case untilClose
    }

    /// The start line, the fields and where the body starts, once the blank line has come.
    private mutating func head() throws(HTTPError) -> (String, HTTPHeaders, Int)? {
        // Blank lines before a message are skipped (RFC 9112 §2.2).
        var from = start
        while from + 1 < buffer.count, buffer[from] == 0x0D, buffer[from + 1] == 0x0A { from += 2 }
        guard let end = Self.find([0x0D, 0x0A, 0x0D, 0x0A], in: buffer, from: max(from, headScanned - 3)) else {
            headScanned = buffer.count
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

    static func framing(_ headers: HTTPHeaders, isResponse: Bool, maximum: Int) throws(HTTPError) -> Framing {
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
        guard length <= maximum else { throw HTTPError(413, "the body is longer than \(maximum) bytes") }
        return .length(length)
    }

    /// The body and where the message ends, or nil while it is not all there.
    private mutating func body(_ framing: Framing, from bodyStart: Int, maximum: Int) throws(HTTPError) -> ([UInt8], Int)? {
        switch framing {
        case .length(let length):
            guard buffer.count - bodyStart >= length else { return nil }
            return (Array(buffer[bodyStart..<bodyStart + length]), bodyStart + length)
        case .untilClose:
            guard ended else {
                if buffer.count - bodyStart > maximum { throw HTTPError(502, "the body is longer than \(maximum) bytes") }
                return nil
            }
            return (Array(buffer[bodyStart...]), buffer.count)
        case .chunked:
            return try chunkedBody(from: bodyStart, maximum: maximum)
        }
    }

    /// A chunked body, read on from where the last call stopped (`chunked`).
    private mutating func chunkedBody(from bodyStart: Int, maximum: Int) throws(HTTPError) -> ([UInt8], Int)? {
        var (body, at) = chunked ?? ([], bodyStart)
        defer { chunked = (body, at) }
        while true {
            guard let lineEnd = Self.find([0x0D, 0x0A], in: buffer, from: at) else {
                if buffer.count - at > 1_024 { throw HTTPError(400, "a chunk's size line is too long") }
                return nil
            }
            // The size in hex (digits only: no sign), then optional extensions after ';' (ignored).
            let digits = buffer[at..<lineEnd].prefix { $0 != UInt8(ascii: ";") }.drop { $0 == 0x20 || $0 == 0x09 }
            let size = digits.prefix { Self.hexValue($0) != nil }
            guard !size.isEmpty, size.count <= 8, digits.dropFirst(size.count).allSatisfy({ $0 == 0x20 || $0 == 0x09 }) else {
                throw HTTPError(400, "a chunk's size is not hexadecimal")
            }
            let length = size.reduce(0) { $0 << 4 | Int(Self.hexValue($1)!) }
            if length == 0 {
                // Trailer fields, then a blank line; the fields are read past, bounded as a head is.
                var trailer = lineEnd + 2
                while true {
                    guard let end = Self.find([0x0D, 0x0A], in: buffer, from: trailer) else {
                        if buffer.count - lineEnd > Self.maximumHeadLength { throw HTTPError(431, "the trailer is too long") }
                        return nil
                    }
                    if end == trailer { return (body, end + 2) }
                    trailer = end + 2
                    if trailer - lineEnd > Self.maximumHeadLength { throw HTTPError(431, "the trailer is too long") }
                }
            }
            guard body.count + length <= maximum else { throw HTTPError(413, "the body is longer than \(maximum) bytes") }
            let data = lineEnd + 2
            guard buffer.count - data >= length + 2 else { return nil }
            guard buffer[data + length] == 0x0D, buffer[data + length + 1] == 0x0A else { throw HTTPError(400, "a chunk does not end in CRLF") }
            body += buffer[data..<data + length]
            at = data + length + 2
        }
    }

    /// A hex digit's value (a chunk's size).
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
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
