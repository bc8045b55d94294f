import Foundation
import LinuxHID
import Synchronization
import SystemIO

/// A private control socket: a UNIX SOCK_STREAM socket, mode 0600 in a private directory.
/// `--presence control` keys serve `ControlRequest` on it (one line each way) at
/// `$XDG_RUNTIME_DIR/latchkey/<name>.control` (or `/tmp/latchkey-<uid>/<name>.control`, or
/// `--control PATH`); `latchkey rig` serves its control API (`RigControlServer`).
///
/// Served by its own accept thread plus one thread per connection running `serve`, so nothing
/// here ever blocks a key's poll loop. Connections are bounded by `maximumConnections`.
public final class ControlSocket: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    static let maximumConnections = 32
    /// How long a client has to send its request line.
    static let requestTimeoutMilliseconds: Int32 = 5_000

    public let path: String
    private let listener: FileDescriptor
    private let socketFile: (device: UInt64, inode: UInt64)
    private let logger: Logger
    private let wakeup: WakeupEvent
    private let connections = Atomic<Int>(0)
    private let connectionLimit: Int
    private let stopped = Atomic<Bool>(false)
    private let acceptLoopDone = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)
    /// Serves one connection on its own thread (the descriptor is closed after it returns).
    private let serve: @Sendable (FileDescriptor) -> Void
    /// Runs first in `stop()`: releases connections that wait (answers, event streams).
    private let onStop: @Sendable () -> Void
    /// The line a connection past `maximumConnections` gets before it is closed.
    private let refusal: [UInt8]

    /// Whether `stop()` has begun: connection loops that run long end when it turns true.
    public var isStopped: Bool { stopped.load(ordering: .acquiring) }

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
        do {
            try FileSystem.createDirectory(directory, mode: 0o700)
        } catch {
            throw Failure("cannot create \(directory): \(error)")
        }
        let status: stat
        do {
            status = try FileSystem.linkStatus(directory)
        } catch {
            throw Failure("cannot inspect \(directory): \(error)")
        }
        guard FileSystem.isPrivateDirectory(status) else {
            throw Failure("\(directory) must be a directory owned by you with mode 0700 (it holds the control socket); "
                          + "fix or remove it, or pass --control PATH")
        }
    }

    /// The control socket of `--presence control`: one `ControlRequest` line in, one response out.
    public convenience init(path: String, presence: ControlPresence, logger: Logger) throws(Failure) {
        try self.init(path: path, logger: logger, maximumConnections: Self.maximumConnections,
                      refusal: ControlLine.encode(ControlResponse.error("too many control connections")),
                      onStop: { presence.stop() }, serve: { Self.servePresence($0, presence: presence) })
    }

    /// Binds and listens at `path` (mode 0600). A stale socket file there is replaced; a live
    /// one (another key with the same name) is an error.
    public init(path: String, logger: Logger, maximumConnections: Int, refusal: [UInt8],
                onStop: @escaping @Sendable () -> Void, serve: @escaping @Sendable (FileDescriptor) -> Void) throws(Failure) {
        self.path = path
        self.logger = logger
        self.connectionLimit = maximumConnections
        self.refusal = refusal
        self.onStop = onStop
        self.serve = serve
        do {
            wakeup = try WakeupEvent()
        } catch {
            throw Failure("cannot create the control socket's wakeup event: \(error)")
        }
        let descriptor: FileDescriptor
        do {
            descriptor = try .unixSocket(type: SOCK_STREAM, nonBlocking: true)
        } catch {
            throw Failure("socket failed: \(error)")
        }
        try Self.bind(descriptor, path: path)
        // Mode 0600 between bind and listen: until listen(2) every connect is refused.
        guard (try? FileSystem.setMode(path, 0o600)) != nil, let status = try? FileSystem.linkStatus(path),
              status.st_mode & 0o777 == 0o600 else {
            try? FileSystem.remove(path)
            throw Failure("cannot make the control socket \(path) private (mode 0600)")
        }
        socketFile = (UInt64(status.st_dev), UInt64(status.st_ino))
        do {
            try descriptor.listen(backlog: 16)
        } catch {
            try? FileSystem.remove(path)
            throw Failure("listen failed for \(path): \(error)")
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

    /// Stops accepting, tells waiting connections the key is stopping (`onStop`), closes and
    /// unlinks the socket (only if it is still the file this key created). Idempotent.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        onStop()
        wakeup.signal()
        if started.load(ordering: .acquiring) { acceptLoopDone.wait() }
        listener.close()
        if let status = try? FileSystem.linkStatus(path), UInt64(status.st_dev) == socketFile.device,
           UInt64(status.st_ino) == socketFile.inode {
            try? FileSystem.remove(path)
        }
    }

    // MARK: Serving

    private func acceptLoop() {
        defer { acceptLoopDone.signal() }
        while !stopped.load(ordering: .acquiring) {
            let ready: [Int32]
            do {
                ready = try Poller.wait(for: [listener.rawValue, wakeup.descriptor], timeoutMilliseconds: -1)
            } catch {
                logger.error("control socket: \(error); no more answers are accepted")
                return
            }
            if ready.contains(wakeup.descriptor) { wakeup.drain() }
            guard ready.contains(listener.rawValue) else { continue }
            while !stopped.load(ordering: .acquiring) {
                let client: FileDescriptor
                do {
                    // accept4: close-on-exec from the start; the connection's own reads and
                    // writes block (with poll for the request's timeout).
                    client = try listener.accept()
                    try client.setNonBlocking(false)
                } catch where error == .connectionAborted {
                    continue
                } catch {
                    break   // EAGAIN: nobody else waiting; EMFILE & co.: try again next turn
                }
                if connections.add(1, ordering: .acquiringAndReleasing).newValue > connectionLimit {
                    connections.subtract(1, ordering: .acquiringAndReleasing)
                    LineSocket.write(refusal, to: client)
                    continue
                }
                // The connection's descriptor moves to its thread, which alone uses it from here on.
                nonisolated(unsafe) let connection = client
                let serve = self.serve
                let thread = Thread { [self] in
                    serve(connection)
                    connection.close()
                    connections.subtract(1, ordering: .acquiringAndReleasing)
                }
                thread.name = "latchkey.control.connection"
                thread.start()
            }
        }
    }

    private static func servePresence(_ client: FileDescriptor, presence: ControlPresence) {
        guard let line = LineSocket.readLine(from: client, timeoutMilliseconds: Self.requestTimeoutMilliseconds, maximumLength: ControlLine.maximumLength) else {
            LineSocket.write(ControlLine.encode(ControlResponse.error("no request line (a JSON object and a newline) within 5 s")),
                            to: client)
            return
        }
        LineSocket.write(ControlLine.encode(response(to: line, client: client, presence: presence)), to: client)
    }

    static func response(to line: [UInt8], client: FileDescriptor, presence: ControlPresence) -> ControlResponse {
        switch ControlCommand(line: line) {
        case .invalid(let message):
            return .error(message)
        case .status:
            let status = presence.status()
            return ControlResponse(result: "status", pending: status.pending.map {
                ControlResponse.PendingRequest(id: status.pendingID, operation: $0.operation.rawValue, rpID: $0.rpID,
                                               user: $0.userName, waitingMilliseconds: status.pendingForMilliseconds)
            }, waitingAnswers: status.waitingAnswers)
        case let .answer(decision, target, timeout):
            switch presence.answer(decision, for: target, timeoutMilliseconds: timeout, isAbandoned: { LineSocket.peerClosed(client) }) {
            case let .applied(decision, request, id):
                return ControlResponse(result: decision == .approve ? "approved" : "denied",
                                       operation: request.operation.rawValue, rpID: request.rpID, user: request.userName,
                                       requestID: id)
            case .unused:
                let seconds = Double(timeout) / 1_000
                let what = if case .relyingParty(let rpID) = target { "no presence request for \(rpID)" } else { "no presence request" }
                return ControlResponse(result: "none", message: "\(what) came within \(String(format: "%g", seconds)) s")
            case .noMatch(let message):
                return ControlResponse(result: "none", message: message)
            case .stopped:
                return .error("the key is shutting down")
            }
        }
    }

    // MARK: Binding

    private static func bind(_ descriptor: FileDescriptor, path: String) throws(Failure) {
        let address: UnixSocketAddress
        do {
            address = try UnixSocketAddress(path: path)
        } catch {
            throw Failure(ControlIO.addressError(path, error, call: "bind"))
        }
        do {
            try descriptor.bind(to: address)
            return
        } catch where error == .addressInUse {
            // Something is there: a live key (connect works), a stale socket (refused), or another file.
        } catch {
            throw Failure(ControlIO.addressError(path, error, call: "bind"))
        }
        guard let status = try? FileSystem.linkStatus(path), status.st_mode & S_IFMT == S_IFSOCK else {
            throw Failure("\(path) exists and is not a socket; remove it or choose another --control PATH")
        }
        if let probe = try? FileDescriptor.unixSocket(type: SOCK_STREAM, nonBlocking: false),
           (try? probe.connect(to: address)) != nil {
            throw Failure("another key is already using the control socket \(path); give this one another --name or --control PATH")
        }
        do {
            try FileSystem.remove(path)
            try descriptor.bind(to: address)
        } catch {
            throw Failure(ControlIO.addressError(path, error, call: "bind"))
        }
    }
}

/// What the control socket and the rig's control socket say when their path cannot be used.
public enum ControlIO {
    public static func addressError(_ path: String, _ error: Errno, call: String) -> String {
        if error == .nameTooLong {
            return "the control socket path \(path) is too long for a UNIX socket (at most 107 bytes); pass a shorter --control PATH"
        }
        return "\(call) failed for \(path): \(error)"
    }
}
