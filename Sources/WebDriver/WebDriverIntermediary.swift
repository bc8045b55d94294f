import Encoding
import Foundation
import Synchronization
import SystemIO

/// `latchkey rig webdriver`'s server: W3C WebDriver over HTTP on 127.0.0.1, in front of the
/// browser's own driver. Every command goes to the driver unchanged except the WebAuthn
/// extension's, which `VirtualAuthenticators` answers with rig keys; New Session and Delete
/// Session are watched on their way (a session's keys go with it). One thread per client
/// connection; only this user (or root) may connect (`LoopbackPeer`).
public final class WebDriverIntermediary: @unchecked Sendable {
    /// Client connections at once (a suite's pool, a few suites in parallel).
    static let maximumConnections = 64
    /// How long a command may take at the driver: a page load or an async script can take minutes.
    static let driverTimeoutMilliseconds: Int32 = 600_000
    /// How long an idle client connection is kept.
    static let idleMilliseconds: Int32 = 3_600_000

    public let port: UInt16
    let driverPort: UInt16
    let authenticators: VirtualAuthenticators
    let logger: Logger
    private let listener: FileDescriptor
    private let wakeup: WakeupEvent
    private let stopping = Atomic<Bool>(false)
    private let connections = Atomic<Int>(0)
    private let acceptDone = DispatchSemaphore(value: 0)
    private let connectionThreads = DispatchGroup()
    /// Refusals another user or a web page can provoke at will: logged, but not at their pace
    /// (one line a second of each kind, the next saying how many were left out).
    private let foreignConnections = Mutex(WarningThrottle(burst: 1, windowNanoseconds: 1_000_000_000))
    private let browserRequests = Mutex(WarningThrottle(burst: 1, windowNanoseconds: 1_000_000_000))

    public init(port: UInt16, driverPort: UInt16, authenticators: VirtualAuthenticators, logger: Logger) throws(Errno) {
        (listener, self.port) = try FileDescriptor.loopbackListener(port: port)
        wakeup = try WakeupEvent()
        self.driverPort = driverPort
        self.authenticators = authenticators
        self.logger = logger
    }

    public func start() {
        let thread = Thread { [self] in
            acceptLoop()
            acceptDone.signal()
        }
        thread.name = "latchkey.webdriver"
        thread.start()
    }

    /// Stops accepting; connections end within their next poll (250 ms), waited for (a command
    /// under way finishes, up to 5 s); then every session's keys go.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wakeup.signal()
        acceptDone.wait()
        listener.close()
        _ = connectionThreads.wait(timeout: .now() + .seconds(5))
        authenticators.endAll()
    }

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    private func warn(_ throttle: borrowing Mutex<WarningThrottle>, _ message: String) {
        if let line = throttle.withLock({ $0.line(message, now: MonotonicClock.nanoseconds()) }) { logger.warning(line) }
    }

    private func acceptLoop() {
        while !isStopping {
            guard let ready = try? Poller.wait(for: [listener.rawValue, wakeup.descriptor], timeoutMilliseconds: -1) else { return }
            guard ready.contains(listener.rawValue) else { continue }
            while !isStopping {
                // accept4: close-on-exec from the start; the connection's own reads and writes block.
                guard let client = listener.acceptBlocking(orWaitOn: wakeup) else { break }
                guard admit(client) else { continue }
                nonisolated(unsafe) let connection = client
                connectionThreads.enter()
                let thread = Thread { [self] in
                    serve(HTTPStream(connection))
                    connection.close()
                    connections.subtract(1, ordering: .acquiringAndReleasing)
                    connectionThreads.leave()
                }
                thread.name = "latchkey.webdriver.connection"
                thread.start()
            }
        }
    }

    /// Whether `client` may be served: a socket on 127.0.0.1 that belongs to this user or root,
    /// and there is room.
    private func admit(_ client: FileDescriptor) -> Bool {
        let stream = HTTPStream(client)
        let endpoints = try? client.loopbackEndpoints()
        let owner = endpoints.flatMap { LoopbackPeer.owner(peer: $0.peer, local: $0.local) }
        guard let owner, PeerCredentials.isTrusted(uid: owner) else {
            let who = owner.map { PeerCredentials.describe(uid: $0) } ?? "a socket whose user could not be found"
            warn(foreignConnections, "webdriver: refused a connection from \(who)")
            stream.write(WebDriverError("unknown error", "this intermediary belongs to \(PeerCredentials.describe(uid: getuid())); "
                                        + "\(who) may not use it").response.serialized(close: true))
            client.close()
            return false
        }
        if connections.add(1, ordering: .acquiringAndReleasing).newValue > Self.maximumConnections {
            connections.subtract(1, ordering: .acquiringAndReleasing)
            stream.write(WebDriverError("unknown error", "the intermediary already serves \(Self.maximumConnections) connections")
                .response.serialized(close: true))
            client.close()
            return false
        }
        return true
    }

    // MARK: One client connection

    private func serve(_ client: HTTPStream) {
        try? client.descriptor.setSendTimeout(milliseconds: 30_000)
        var driver: HTTPStream?
        defer { driver?.descriptor.close() }
        while !isStopping {
            let request: HTTPRequest
            switch client.readRequest(idleMilliseconds: Self.idleMilliseconds, shouldStop: { isStopping }) {
            case .message(let message): request = message
            case .closed, .timedOut: return
            case .failed(let error):
                client.write(HTTPResponse(status: error.status, body: Array("\(error.message)\n".utf8)).serialized(close: true))
                return
            }
            let response = respond(to: request, driver: &driver)
            let close = request.headers.asksToClose
            guard client.write(response.serialized(close: close)), !close else { return }
        }
    }

    func respond(to given: HTTPRequest, driver: inout HTTPStream?) -> HTTPResponse {
        let request = Self.withoutGridPrefix(given)
        if let refusal = Self.browserRefusal(request, port: port) {
            warn(browserRequests, "webdriver: refused \(request.method) \(TerminalText.line(request.target)): \(refusal)")
            return HTTPResponse(status: 403, headers: HTTPHeaders([("Content-Type", "text/plain; charset=utf-8")]),
                                body: Array("\(refusal)\n".utf8))
        }
        guard let segments = request.pathSegments else {
            return WebDriverError.invalidArgument("the request path is not valid percent-encoded UTF-8").response
        }
        switch WebDriverRoute(method: request.method, segments: segments) {
        case .virtualAuthenticator(let session, let command):
            let response = authenticators.answer(command, session: session, body: request.body)
            logger.debug("webdriver: \(request.method) \(TerminalText.line(request.target)) → \(response.status) (rig)")
            return response
        case .rigRequest(let session):
            let response = authenticators.rigRequest(session: session, body: request.body)
            logger.debug("webdriver: POST \(TerminalText.line(request.target)) → \(response.status) (rig)")
            return response
        case .unknownWebAuthn(let session, let methodAllowed):
            guard authenticators.isKnown(session: session) else {
                return VirtualAuthenticators.unknownSession(session).response
            }
            return methodAllowed
                ? WebDriverError.unknownMethod("\(request.method) is not a method of this WebAuthn command").response
                : WebDriverError.unknownCommand("no WebAuthn command at this path").response
        case .newSession:
            let response = forward(request, driver: &driver)
            if response.status == 200, let id = Self.sessionID(in: response.body) {
                authenticators.sessionStarted(id)
                logger.info("webdriver: session \(TerminalText.line(id)) started")
            }
            return response
        case .deleteSession(let id):
            let response = forward(request, driver: &driver)
            if authenticators.isKnown(session: id) {
                authenticators.sessionEnded(id)
                logger.info("webdriver: session \(TerminalText.line(id)) ended; its keys removed")
            }
            return response
        case .forward:
            return forward(request, driver: &driver)
        }
    }

    /// Suites written for Selenium Grid 3 (and many examples) name `http://host:4444/wd/hub`: the
    /// prefix is taken off, as Grid 4 and Selenium's own clients do, and the driver sees the W3C
    /// path (chromedriver serves none under `/wd/hub` unless started with `--url-base`).
    static func withoutGridPrefix(_ request: HTTPRequest) -> HTTPRequest {
        guard request.target == "/wd/hub" || request.target.hasPrefix("/wd/hub/") || request.target.hasPrefix("/wd/hub?") else {
            return request
        }
        var stripped = request
        stripped.target = String(request.target.dropFirst("/wd/hub".count))
        if stripped.target.isEmpty || stripped.target.hasPrefix("?") { stripped.target = "/" + stripped.target }
        return stripped
    }

    /// Why a request that may come from a web page is refused, or nil. A page the browser
    /// loads can make it send requests to 127.0.0.1 (a form, `fetch`, a DNS name rebound to
    /// 127.0.0.1), and the browser runs as this user, so the peer check lets it in: a request
    /// with an Origin or a Sec-Fetch-* field is a browser's (WebDriver clients send neither:
    /// geckodriver refuses any Origin too), and one whose Host is not this loopback address and
    /// port came by another name (DNS rebinding; chromedriver checks Host the same way, and the
    /// intermediary rewrites Host for it, so it must check first).
    static func browserRefusal(_ request: HTTPRequest, port: UInt16) -> String? {
        if request.headers["Origin"] != nil { return "a request with an Origin comes from a web page, not a WebDriver client" }
        if request.headers.fields.contains(where: { $0.name.lowercased().hasPrefix("sec-fetch-") }) {
            return "a request with Sec-Fetch fields comes from a browser, not a WebDriver client"
        }
        guard let host = request.headers["Host"] else { return nil }   // HTTP/1.0: no name to check
        let allowed = ["127.0.0.1", "localhost", "[::1]"]
        let name: Substring
        if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") {
            guard UInt16(host[host.index(after: colon)...]) == port else { return "Host \(TerminalText.line(host)) names another port" }
            name = host[..<colon]
        } else {
            name = Substring(host)
        }
        return allowed.contains(name.lowercased()) ? nil : "Host \(TerminalText.line(host)) is not this machine's loopback address"
    }

    /// New Session's answer: `value.sessionId` (W3C), or a top-level `sessionId` (old drivers).
    static func sessionID(in body: [UInt8]) -> String? {
        guard let document = JSONDocument.parse(body) else { return nil }
        return document["value"]?["sessionId"]?.stringValue ?? document["sessionId"]?.stringValue
    }

    /// The driver's answer to `request`, over this client's own connection to it.
    private func forward(_ request: HTTPRequest, driver: inout HTTPStream?) -> HTTPResponse {
        Self.exchange(request, driverPort: driverPort, connection: &driver, timeoutMilliseconds: Self.driverTimeoutMilliseconds,
                      shouldStop: { isStopping })
    }

    /// The driver's answer to `request` over `connection` (opened when nil, and once more if a
    /// kept one turns out closed before anything came back; left nil when the connection ends):
    /// a failure is a WebDriver error's response.
    static func exchange(_ request: HTTPRequest, driverPort: UInt16, connection: inout HTTPStream?, timeoutMilliseconds: Int32,
                         shouldStop: () -> Bool) -> HTTPResponse {
        let bytes = request.serialized(host: "127.0.0.1:\(driverPort)")
        for attempt in 0..<2 {
            if connection == nil {
                do {
                    connection = HTTPStream(try FileDescriptor.connectLoopback(port: driverPort, timeoutMilliseconds: 10_000))
                } catch {
                    return WebDriverError.unknownError("cannot reach the browser's driver on 127.0.0.1:\(driverPort): \(error)").response
                }
            }
            guard let stream = connection else { break }
            let reused = stream.messagesRead > 0
            if stream.write(bytes) {
                switch stream.readResponse(toHEAD: request.method == "HEAD", timeoutMilliseconds: timeoutMilliseconds,
                                           shouldStop: shouldStop) {
                case .message(let response):
                    if response.headers.asksToClose {
                        stream.descriptor.close()
                        connection = nil
                    }
                    return response
                case .timedOut:
                    stream.descriptor.close()
                    connection = nil
                    return WebDriverError("timeout", "the browser's driver did not answer within \(timeoutMilliseconds / 1_000) s").response
                case .failed(let error):
                    stream.descriptor.close()
                    connection = nil
                    return WebDriverError.unknownError("the browser's driver answered something that is not HTTP: \(error)").response
                case .closed:
                    break
                }
            }
            stream.descriptor.close()
            connection = nil
            guard reused, attempt == 0, !shouldStop() else { break }
        }
        return WebDriverError.unknownError("the browser's driver closed the connection without an answer").response
    }
}
