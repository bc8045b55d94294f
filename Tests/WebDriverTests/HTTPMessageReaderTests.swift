import SystemIO
@testable import WebDriver
import XCTest

/// HTTP/1.1 as the intermediary reads and writes it: framing by length, chunks and end of
/// stream, byte by byte as a socket may deliver it, and the errors a bad message gets.
final class HTTPMessageReaderTests: XCTestCase {
    func testRequestsArriveWholeWhateverTheSplitAndPipeline() throws {
        let wire = Array("POST /session/s1/url HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"url\":\"a:b\"}"
                         .utf8) + Array("GET /status HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        for split in [1, 7, wire.count] {
            var reader = HTTPMessageReader()
            var requests: [HTTPRequest] = []
            var offset = 0
            while offset < wire.count {
                reader.append(Array(wire[offset..<min(offset + split, wire.count)]))
                offset += split
                while let request = try reader.nextRequest() { requests.append(request) }
            }
            XCTAssertEqual(requests.map(\.method), ["POST", "GET"], "split \(split)")
            XCTAssertEqual(requests.first?.body, Array("{\"url\":\"a:b\"}".utf8))
            XCTAssertEqual(requests.first?.headers["content-type"], "application/json")
            XCTAssertEqual(requests.last?.body, [])
            XCTAssertFalse(reader.hasPartialMessage)
        }
    }

    func testChunkedAndEndOfStreamResponses() throws {
        var reader = HTTPMessageReader()
        reader.append(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{\"va\r\n9\r\nlue\":null\r\n1\r\n}\r\n0\r\nX-Trailer: y\r\n\r\n".utf8))
        let chunked = try XCTUnwrap(reader.nextResponse())
        XCTAssertEqual(String(decoding: chunked.body, as: UTF8.self), "{\"value\":null}")
        reader.append(Array("HTTP/1.0 500 Oops\r\nContent-Type: text/plain\r\n\r\nto the end".utf8))
        XCTAssertNil(try reader.nextResponse(), "a response framed by the end of the stream waits for it")
        reader.finish()
        let untilClose = try XCTUnwrap(reader.nextResponse())
        XCTAssertEqual(untilClose.status, 500)
        XCTAssertEqual(untilClose.reason, "Oops")
        XCTAssertEqual(untilClose.body, Array("to the end".utf8))

        var interim = HTTPMessageReader()
        interim.append(Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}".utf8))
        XCTAssertEqual(try interim.nextResponse()?.status, 200, "an interim 100 is not the answer")
        var signed = HTTPMessageReader()
        signed.append(Array("HTTP/1.1 +20 OK\r\nContent-Length: 0\r\n\r\n".utf8))
        XCTAssertThrowsError(try signed.nextResponse(), "a status code is three digits")

        var head = HTTPMessageReader()
        head.append(Array("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n".utf8))
        XCTAssertEqual(try head.nextResponse(toHEAD: true)?.body, [], "a HEAD answer has no body whatever its length says")
        XCTAssertEqual(try head.nextResponse()?.status, 204)
    }

    func testBadMessagesAreRefusedWithTheirStatus() {
        func status(_ text: String) -> Int? {
            var reader = HTTPMessageReader()
            reader.append(Array(text.utf8))
            do {
                _ = try reader.nextRequest()
                return nil
            } catch {
                return error.status
            }
        }
        XCTAssertEqual(status("GET /x HTTP/2.0\r\n\r\n"), 505)
        XCTAssertEqual(status("GET x HTTP/1.1\r\n\r\n"), 400, "a target that is not a path")
        XCTAssertEqual(status("G(T /x HTTP/1.1\r\n\r\n"), 400, "a method that is not a token")
        XCTAssertEqual(status("POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400)
        XCTAssertEqual(status("POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400, "two lengths")
        XCTAssertEqual(status("POST /x HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n"), 413)
        XCTAssertEqual(status("POST /x HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501)
        XCTAssertEqual(status("GET /x HTTP/1.1\r\nNo colon here\r\n\r\n"), 400)
        XCTAssertEqual(status("GET /x HTTP/1.1\r\nX: a\u{1B}[2J\r\n\r\n"), 400, "a control character in a value")
        XCTAssertEqual(status("GET /x HTTP/1.1\r\nX: " + String(repeating: "a", count: 70_000)), 431)
        XCTAssertEqual(status("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), 400)
        XCTAssertNil(status("POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nab"), "an incomplete body waits")
        XCTAssertEqual(status("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-2\r\nab\r\n0\r\n\r\n"), 400,
                       "a signed chunk size (once a crash: it read before the chunk)")
        XCTAssertEqual(status("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\nab\r\n0\r\n\r\n"), 400)
        XCTAssertEqual(status("GET /a\u{7F}b HTTP/1.1\r\n\r\n"), 400, "a control character in the target")
        XCTAssertEqual(status("POST /x HTTP/1.1\r\nContent-Length: 67108865\r\n\r\n"), 413, "a request body over 64 MiB")
    }

    func testPassedOnMessagesDropHopByHopFieldsAndReframe() throws {
        let request = HTTPRequest(method: "POST", target: "/session", headers: HTTPHeaders([
            ("Host", "127.0.0.1:4444"), ("Connection", "keep-alive, X-Private"), ("X-Private", "1"), ("Keep-Alive", "timeout=5"),
            ("Transfer-Encoding", "chunked"), ("Content-Length", "999"), ("User-Agent", "selenium/4"),
        ]), body: Array("{}".utf8))
        let text = String(decoding: request.serialized(host: "127.0.0.1:9515"), as: UTF8.self)
        XCTAssertEqual(text, "POST /session HTTP/1.1\r\nHost: 127.0.0.1:9515\r\nUser-Agent: selenium/4\r\nContent-Length: 2\r\n\r\n{}")
        var reader = HTTPMessageReader()
        reader.append(HTTPResponse.json(status: 404, "{}").serialized(close: true))
        let response = try XCTUnwrap(reader.nextResponse())
        XCTAssertEqual(response.status, 404)
        XCTAssertEqual(response.reason, "Not Found")
        XCTAssertEqual(response.headers["Connection"], "close")
        XCTAssertEqual(response.headers["Content-Type"], "application/json; charset=utf-8")
    }

    func testPathSegmentsArePercentDecoded() {
        XCTAssertEqual(HTTPRequest(method: "GET", target: "/session/a%2Fb/webauthn/?q=1").pathSegments, ["session", "a/b", "webauthn"])
        XCTAssertEqual(HTTPRequest(method: "GET", target: "/").pathSegments, [])
        XCTAssertNil(HTTPRequest(method: "GET", target: "/a%zz").pathSegments)
        XCTAssertNil(HTTPRequest(method: "GET", target: "/a%ff").pathSegments, "not UTF-8")
    }

    func testLoopbackPeerIsFoundInTheSocketTable() throws {
        let table = """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 0100007F:115C 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 11 1 0000000000000000 100 0 0 10 0
           1: 0100007F:C350 0100007F:115C 01 00000000:00000000 00:00000000 00000000  1001        0 12 1 0000000000000000 20 4 30 10 -1
           2: 0100007F:115C 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 13 1 0000000000000000 20 4 30 10 -1
           3: 0100007F:C351 0100007F:115C 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0000000000000000
           4: 0100007F:C352 0100007F:115C 04 00000000:00000000 00:00000000 00000000     0        0 0 3 0000000000000000
           5: 0200007F:C353 0100007F:115C 01 00000000:00000000 00:00000000 00000000  1001        0 14 1 0000000000000000 20 4 30 10 -1
        """
        let ours = IPv4Endpoint(address: IPv4Endpoint.loopback, port: 0x115C)
        func peer(_ port: UInt16, _ address: UInt32 = IPv4Endpoint.loopback) -> IPv4Endpoint { IPv4Endpoint(address: address, port: port) }
        XCTAssertEqual(LoopbackPeer.owner(peer: peer(0xC350), local: ours, in: table), 1001, "the connecting socket's row")
        XCTAssertNil(LoopbackPeer.owner(peer: peer(0xC351), local: ours, in: table), "TIME_WAIT reads uid 0: not root, nobody")
        XCTAssertNil(LoopbackPeer.owner(peer: peer(0xC352), local: ours, in: table), "a closed socket (FIN_WAIT, inode 0): nobody")
        XCTAssertNil(LoopbackPeer.owner(peer: peer(0xC350, 0x7F00_0002), local: ours, in: table),
                     "127.0.0.2:P is not 127.0.0.1:P, whose row another user could read")
        XCTAssertEqual(LoopbackPeer.listenerOwner(port: 0x115C, in: table), 1000)
        XCTAssertNil(LoopbackPeer.listenerOwner(port: 0xC350, in: table))

        let (listener, port) = try FileDescriptor.loopbackListener(port: 0)
        defer { listener.close() }
        XCTAssertEqual(LoopbackPeer.listenerOwner(port: port), getuid())
        let client = try FileDescriptor.connectLoopback(port: port, timeoutMilliseconds: 2_000)
        defer { client.close() }
        _ = try Poller.wait(for: [listener.rawValue], timeoutMilliseconds: 2_000)
        let accepted = try listener.accept()
        defer { accepted.close() }
        let endpoints = try accepted.loopbackEndpoints()
        XCTAssertEqual(endpoints.local.port, port)
        XCTAssertEqual(endpoints.peer, try client.loopbackEndpoints().local)
        XCTAssertEqual(LoopbackPeer.owner(peer: endpoints.peer, local: endpoints.local), getuid(), "this process's own connection")
    }
}
