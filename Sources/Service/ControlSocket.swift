import Foundation
import LinuxHID
import Synchronization

/// The control socket of a key run with `--presence control`: a UNIX SOCK_STREAM socket,
/// mode 0600 in a private directory, at `$XDG_RUNTIME_DIR/latchkey/<name>.control` (or
/// `/tmp/latchkey-<uid>/<name>.control`, or `--control PATH`). Protocol: `ControlRequest`.
///
/// Served by its own accept thread plus one short-lived thread per connection, so nothing
/// here ever blocks the key's poll loop. Connections are few (a person or a rig answering a
/// prompt), and bounded by `maximumConnections`.
public final class ControlSocket: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    static let maximumConnections = 32
    /// How long a client has to send its request line.
    static let requestTimeoutMilliseconds: Int32 = 5_000
    /// The longest wait an answer may ask for.
    static let maximumAnswerTimeoutMilliseconds: UInt64 = 3_600_000

    public let path: String
    private let listener: Int32
    private let socketFile: (device: UInt64, inode: UInt64)
    private let presence: ControlPresence
    private let logger: Logger
    private let wakeup: WakeupEvent
    private let connections = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    private let acceptLoopDone = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    /// Where a key's control socket lives unless `--control PATH` says otherwise.
    public static func defaultPath(name: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                                   uid: uid_t = getuid()) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return runtime + "/latchkey/" + name + ".control"
        }
        return "/tmp/latchkey-\(uid)/\(name).control"
    }

    /// Creates the default path's directory (mode 0700) if needed and checks that it is
    /// private: a directory (not a symlink), owned by this user, no group or other access.
    public static func preparePrivateDirectory(_ directory: String) throws(Failure) {
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw Failure("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        var status = stat()
        guard lstat(directory, &status) == 0 else {
            throw Failure("cannot inspect \(directory): \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFDIR, status.st_uid == getuid(), status.st_mode & 0o077 == 0 else {
            throw Failure("\(directory) must be a directory owned by you with mode 0700 (it holds the control socket); "
                          + "fix or remove it, or pass --control PATH")
        }
    }

    /// Binds and listens at `path` (mode 0600). A stale socket file there is replaced; a live
    /// one (another key with the same name) is an error.
    public init(path: String, presence: ControlPresence, logger: Logger) throws(Failure) {
        self.path = path
        self.presence = presence
        self.logger = logger
        do {
            wakeup = try WakeupEvent()
        } catch {
            throw Failure("cannot create the control socket's wakeup event: \(error)")
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure("socket failed: \(String(cString: strerror(errno)))") }
        do throws(Failure) {
            try Self.bind(descriptor, path: path)
            // Mode 0600 between bind and listen: until listen(2) every connect is refused.
            var status = stat()
            guard chmod(path, 0o600) == 0, lstat(path, &status) == 0, status.st_mode & 0o777 == 0o600 else {
                unlink(path)
                throw Failure("cannot make the control socket \(path) private (mode 0600)")
            }
            socketFile = (UInt64(status.st_dev), UInt64(status.st_ino))
            let flags = fcntl(descriptor, F_GETFL)
            guard listen(descriptor, 16) == 0, flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
                unlink(path)
                throw Failure("listen failed for \(path): \(String(cString: strerror(errno)))")
            }
        } catch {
            Glibc.close(descriptor)
            throw error
        }
        listener = descriptor
    }

    deinit { stop() }

    /// Starts the accept thread.
    public func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "latchkey.control"
        thread.start()
    }

    /// Stops accepting, tells waiting answers the key is stopping, closes and unlinks the
    /// socket (only if it is still the file this key created). Idempotent.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        presence.stop()
        wakeup.signal()
        if started.load(ordering: .acquiring) { acceptLoopDone.wait() }
        Glibc.close(listener)
        var status = stat()
        if lstat(path, &status) == 0, UInt64(status.st_dev) == socketFile.device, UInt64(status.st_ino) == socketFile.inode {
            unlink(path)
        }
    }

    // MARK: Serving

    private func acceptLoop() {
        defer { acceptLoopDone.signal() }
        while !stopped.load(ordering: .acquiring) {
            let ready: [Int32]
            do {
                ready = try Poller.wait(for: [listener, wakeup.descriptor], timeoutMilliseconds: -1)
            } catch {
                logger.error("control socket: \(error); no more answers are accepted")
                return
            }
            if ready.contains(wakeup.descriptor) { wakeup.drain() }
            guard ready.contains(listener) else { continue }
            while !stopped.load(ordering: .acquiring) {
                let client = accept(listener, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    break   // EAGAIN: nobody else waiting; EMFILE & co.: try again next turn
                }
                // accept(2) without accept4: close-on-exec right after (nothing in `serve`
                // forks between the two; `--presence notify`, which spawns, has no control socket).
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                if connections.add(1, ordering: .acquiringAndReleasing).newValue > Self.maximumConnections {
                    connections.subtract(1, ordering: .acquiringAndReleasing)
                    ControlIO.write(ControlLine.encode(ControlResponse.error("too many control connections")), to: client)
                    Glibc.close(client)
                    continue
                }
                let thread = Thread { [self] in
                    serve(client)
                    Glibc.close(client)
                    connections.subtract(1, ordering: .acquiringAndReleasing)
                }
                thread.name = "latchkey.control.connection"
                thread.start()
            }
        }
    }

    private func serve(_ client: Int32) {
        guard let line = ControlIO.readLine(from: client, timeoutMilliseconds: Self.requestTimeoutMilliseconds) else {
            ControlIO.write(ControlLine.encode(ControlResponse.error("no request line (a JSON object and a newline) within 5 s")),
                            to: client)
            return
        }
        ControlIO.write(ControlLine.encode(response(to: line, client: client)), to: client)
    }

    func response(to line: [UInt8], client: Int32) -> ControlResponse {
        guard let request = ControlLine.decode(ControlRequest.self, from: line) else {
            return .error("the request is not a JSON object with \"v\" and \"action\"")
        }
        guard request.version == ControlRequest.currentVersion else {
            return .error("control protocol version \(request.version) is not supported (this key speaks \(ControlRequest.currentVersion))")
        }
        switch request.action {
        case "status":
            let status = presence.status()
            return ControlResponse(result: "status", pending: status.pending.map {
                ControlResponse.PendingRequest(operation: $0.operation.rawValue, rpID: $0.rpID, user: $0.userName,
                                               waitingMilliseconds: status.pendingForMilliseconds)
            }, waitingAnswers: status.waitingAnswers)
        case "approve", "deny":
            let decision: ControlPresence.Decision = request.action == "approve" ? .approve : .deny
            let timeout = min(request.timeoutMilliseconds ?? 30_000, Self.maximumAnswerTimeoutMilliseconds)
            switch presence.answer(decision, timeoutMilliseconds: timeout, isAbandoned: { ControlIO.peerClosed(client) }) {
            case let .applied(decision, request):
                return ControlResponse(result: decision == .approve ? "approved" : "denied",
                                       operation: request.operation.rawValue, rpID: request.rpID, user: request.userName)
            case .unused:
                let seconds = Double(timeout) / 1_000
                return ControlResponse(result: "none",
                                       message: "no presence request came within \(String(format: "%g", seconds)) s")
            case .stopped:
                return .error("the key is shutting down")
            }
        default:
            return .error("unknown action '\(request.action)': use approve, deny or status")
        }
    }

    // MARK: Binding

    private static func bind(_ descriptor: Int32, path: String) throws(Failure) {
        if ControlIO.withAddress(path, { Glibc.bind(descriptor, $0, $1) }) == 0 { return }
        guard errno == EADDRINUSE else { throw Failure(ControlIO.addressError(path, call: "bind")) }
        // Something is there: a live key (connect works), a stale socket (refused), or another file.
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else {
            throw Failure("\(path) exists and is not a socket; remove it or choose another --control PATH")
        }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { if probe >= 0 { Glibc.close(probe) } }
        if probe >= 0, ControlIO.withAddress(path, { Glibc.connect(probe, $0, $1) }) == 0 {
            throw Failure("another key is already using the control socket \(path); give this one another --name or --control PATH")
        }
        guard unlink(path) == 0 || errno == ENOENT,
              ControlIO.withAddress(path, { Glibc.bind(descriptor, $0, $1) }) == 0 else {
            throw Failure(ControlIO.addressError(path, call: "bind"))
        }
    }
}

/// Small blocking helpers for the control socket's line protocol (both ends).
enum ControlIO {
    /// Calls `body` with a `sockaddr_un` for `path`; −1 with errno ENAMETOOLONG if it does not fit.
    static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else {
            errno = ENAMETOOLONG
            return -1
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    static func addressError(_ path: String, call: String) -> String {
        if errno == ENAMETOOLONG {
            return "the control socket path \(path) is too long for a UNIX socket (at most 107 bytes); pass a shorter --control PATH"
        }
        return "\(call) failed for \(path): \(String(cString: strerror(errno)))"
    }

    /// Reads until a newline (returned without it), end of stream, the size limit or the timeout.
    static func readLine(from descriptor: Int32, timeoutMilliseconds: Int32) -> [UInt8]? {
        var line: [UInt8] = []
        let deadline = SystemClock().monotonicMilliseconds() + UInt64(max(timeoutMilliseconds, 0))
        var buffer = [UInt8](repeating: 0, count: 512)
        while line.count <= ControlLine.maximumLength {
            let now = SystemClock().monotonicMilliseconds()
            guard now < deadline else { return nil }
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Int32(clamping: deadline - now))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            let count = buffer.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            // Read no further than the first newline's packet; a request is one line.
            if let newline = buffer[0..<count].firstIndex(of: UInt8(ascii: "\n")) {
                return line + buffer[0..<newline]
            }
            line += buffer[0..<count]
        }
        return nil
    }

    /// Writes all of `bytes` (MSG_NOSIGNAL: a vanished peer is an error, not SIGPIPE).
    @discardableResult
    static func write(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL))
            }
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            written += count
        }
        return true
    }

    /// Whether the peer has closed its end (EOF or an error on the socket), without consuming input.
    static func peerClosed(_ descriptor: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) > 0 else { return false }
        if entry.revents & Int16(POLLERR | POLLNVAL) != 0 { return true }
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR)
    }
}
