import Encoding
import Foundation
import LatchkeyTestSupport
import Rig
import Synchronization
import SystemIO
@testable import WebDriver
import XCTest

/// A stand-in for chromedriver: answers New Session with a session ID and every other command
/// with what it received, and records the requests that reached it.
final class FakeDriver: @unchecked Sendable {
    let port: UInt16
    private let listener: FileDescriptor
    let received = Mutex<[HTTPRequest]>([])
    private let stopped = Atomic<Bool>(false)

    init() throws {
        (listener, port) = try FileDescriptor.loopbackListener(port: 0)
        let thread = Thread { [self] in run() }
        thread.start()
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
    }

    private func run() {
        while !stopped.load(ordering: .acquiring) {
            guard let ready = try? Poller.wait(for: [listener.rawValue], timeoutMilliseconds: 100), !ready.isEmpty,
                  let client = try? listener.accept() else { continue }
            try? client.setNonBlocking(false)
            nonisolated(unsafe) let connection = client
            Thread { [self] in
                let stream = HTTPStream(connection)
                while case .message(let request) = stream.readRequest(idleMilliseconds: 10_000, shouldStop: { self.stopped.load(ordering: .acquiring) }) {
                    received.withLock { $0.append(request) }
                    var value = JSONValue.Object()
                    if request.method == "POST", request.target == "/session" {
                        value.add("sessionId", "abc")
                        var capabilities = JSONValue.Object()
                        capabilities.add("browserName", "chrome")
                        value.add("capabilities", capabilities)
                    } else {
                        value.add("method", request.method)
                        value.add("target", request.target)
                        value.add("body", String(decoding: request.body, as: UTF8.self))
                    }
                    var body = JSONValue.Object()
                    body.add("value", value)
                    guard stream.write(HTTPResponse.json(status: 200, body.rendered).serialized()) else { break }
                }
                connection.close()
            }.start()
        }
        listener.close()
    }
}

final class WebDriverIntermediaryTests: XCTestCase {
    func testCommandsPassThroughAndWebAuthnIsAnsweredByTheRig() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path + "/root", withIntermediateDirectories: true)
        let rig = Rig(root: scratch.path + "/root", uhidPath: "/nonexistent/uhid", logger: Logger(level: .error, sink: { _ in }))
        defer { rig.stop() }
        let driver = try FakeDriver()
        defer { driver.stop() }
        let authenticators = VirtualAuthenticators(transport: .socket(directory: scratch.path)) { rig.respond(to: $0) }
        let intermediary = try WebDriverIntermediary(port: 0, driverPort: driver.port, authenticators: authenticators,
                                                     logger: Logger(level: .error, sink: { _ in }))
        intermediary.start()
        defer { intermediary.stop() }

        // One client connection, kept alive across commands, as a WebDriver client's pool keeps it.
        let client = HTTPStream(try FileDescriptor.connectLoopback(port: intermediary.port, timeoutMilliseconds: 2_000))
        defer { client.descriptor.close() }
        func send(_ method: String, _ target: String, _ body: String = "") throws -> (Int, JSONDocument) {
            let request = HTTPRequest(method: method, target: target, headers: HTTPHeaders([("Content-Type", "application/json")]),
                                      body: Array(body.utf8))
            XCTAssertTrue(client.write(request.serialized(host: "127.0.0.1:\(intermediary.port)")))
            guard case .message(let response) = client.readResponse(toHEAD: false, timeoutMilliseconds: 10_000, shouldStop: { false }) else {
                throw XCTSkip("no answer to \(method) \(target)")
            }
            return (response.status, try XCTUnwrap(JSONDocument.parse(response.body)?["value"]))
        }

        XCTAssertEqual(try send("POST", "/session/abc/webauthn/authenticator", #"{"protocol":"ctap2","transport":"usb"}"#).0, 404,
                       "no session yet: invalid session id")
        let (status, session) = try send("POST", "/session", #"{"capabilities":{"alwaysMatch":{"browserName":"chrome"}}}"#)
        XCTAssertEqual(status, 200)
        XCTAssertEqual(session["sessionId"], .string("abc"))
        let forwarded = try send("POST", "/session/abc/url", #"{"url":"http://localhost:8765/"}"#)
        XCTAssertEqual(forwarded.1["target"], .string("/session/abc/url"))
        XCTAssertEqual(forwarded.1["body"], .string(#"{"url":"http://localhost:8765/"}"#), "the body reaches the driver unchanged")

        let added = try send("POST", "/session/abc/webauthn/authenticator", #"{"protocol":"ctap2","transport":"usb","hasResidentKey":true}"#)
        XCTAssertEqual(added.0, 200)
        let id = try XCTUnwrap(added.1.stringValue)
        XCTAssertEqual(try send("GET", "/session/abc/webauthn/authenticator/\(id)/credentials").1, .array([]))
        XCTAssertEqual(try send("GET", "/session/abc/webauthn/authenticator/\(id)/frob").1["error"], .string("unknown command"))
        XCTAssertEqual(try send("GET", "/session/abc/webauthn/authenticator").0, 405)

        XCTAssertEqual(try send("GET", "/wd/hub/session/abc/webauthn/authenticator/\(id)/credentials").1, .array([]),
                       "a Grid 3 URL (/wd/hub) reaches the same commands")
        XCTAssertEqual(try send("GET", "/wd/hub/session/abc/title").1["target"], .string("/session/abc/title"),
                       "and the driver sees the W3C path")
        XCTAssertEqual(try send("DELETE", "/session/abc").0, 200)
        XCTAssertEqual(authenticators.keys(of: "abc"), [])
        let line = rig.respond(to: Array(#"{"v":1,"method":"listAuthenticators"}"#.utf8))
        XCTAssertEqual(JSONDocument.parse(line)?["result"]?["authenticators"], .array([]), "Delete Session removed the session's key")

        let targets = driver.received.withLock { $0.map { "\($0.method) \($0.target)" } }
        XCTAssertEqual(targets, ["POST /session", "POST /session/abc/url", "GET /session/abc/title", "DELETE /session/abc"],
                       "the driver saw every command but the WebAuthn extension's")
        XCTAssertEqual(driver.received.withLock { $0.first?.headers["Host"] }, "127.0.0.1:\(driver.port)")
    }

    /// A web page can make the browser send requests to 127.0.0.1 (a form, fetch, a rebound DNS
    /// name), as this very user: such requests are refused before anything is routed.
    func testRequestsAWebPageCanSendAreRefused() {
        func refusal(_ fields: [(String, String)]) -> String? {
            WebDriverIntermediary.browserRefusal(HTTPRequest(method: "POST", target: "/session", headers: HTTPHeaders(fields)), port: 4444)
        }
        XCTAssertNil(refusal([("Host", "127.0.0.1:4444")]), "Selenium's request")
        XCTAssertNil(refusal([("Host", "localhost:4444")]))
        XCTAssertNil(refusal([("Host", "[::1]:4444")]))
        XCTAssertNil(refusal([]), "HTTP/1.0 without Host")
        XCTAssertNotNil(refusal([("Host", "attacker.example:4444")]), "DNS rebinding")
        XCTAssertNotNil(refusal([("Host", "127.0.0.1:9515")]), "another port")
        XCTAssertNotNil(refusal([("Host", "127.0.0.1:4444"), ("Origin", "http://localhost:8765")]), "a page's cross-origin POST")
        XCTAssertNotNil(refusal([("Host", "127.0.0.1:4444"), ("Sec-Fetch-Mode", "no-cors")]))
    }

    func testAnUnreachableDriverIsAWebDriverError() throws {
        let (probe, port) = try FileDescriptor.loopbackListener(port: 0)
        probe.close()   // nobody listens there now
        let authenticators = VirtualAuthenticators(transport: .usb) { _ in [] }
        let intermediary = try WebDriverIntermediary(port: 0, driverPort: port, authenticators: authenticators,
                                                     logger: Logger(level: .error, sink: { _ in }))
        var driver: HTTPStream?
        let response = intermediary.respond(to: HTTPRequest(method: "GET", target: "/status"), driver: &driver)
        XCTAssertEqual(response.status, 500)
        XCTAssertEqual(JSONDocument.parse(response.body)?["value"]?["error"], .string("unknown error"))
    }
}
