import Authenticator
import Foundation
import LinuxHID
import Synchronization
import SystemIO

/// A private control socket: a UNIX SOCK_STREAM socket, mode 0600 in a private directory.
/// `--presence control` keys serve `ControlRequest` on it (one line each way) at
/// `$XDG_RUNTIME_DIR/latchkey/<name>.control` (or `~/.cache/latchkey/run-<host>/<name>.control`, or
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
    private let socketFile: PublishedSocket
    private let logger: Logger
    private let wakeup: WakeupEvent
    private let connections = Atomic<Int>(0)
    /// The connections' threads, which `stop()` waits for.
    private let connectionThreads = DispatchGroup()
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
    /// The line a connection from another user gets (the message names both users).
    private let foreignRefusal: @Sendable (String) -> [UInt8]

    /// Whether `stop()` has begun: connection loops that run long end when it turns true.
    public var isStopped: Bool { stopped.load(ordering: .acquiring) }

    /// Where a key's control socket lives unless `--control PATH` says otherwise.
    public static func defaultPath(name: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                                   uid: uid_t = getuid()) -> String {
        defaultDirectory(environment: environment, uid: uid) + "/" + name + ".control"
    }

    /// `$XDG_RUNTIME_DIR/latchkey`; without XDG_RUNTIME_DIR (no login session: cron, su, a
    /// container), `$XDG_CACHE_HOME/latchkey/run-<host>` (`~/.cache/…`), never a shared
    /// directory such as /tmp, where another user could make the directory first. The host name
    /// keeps two machines sharing a home over NFS from taking each other's sockets for stale ones.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment,
                                        uid: uid_t = getuid()) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return runtime + "/latchkey"
        }
        let cache: String
        if let directory = environment["XDG_CACHE_HOME"], directory.hasPrefix("/") {
            cache = directory
        } else {
            let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? homeDirectory(uid: uid) ?? ""
            cache = (home.hasSuffix("/") ? String(home.dropLast()) : home) + "/.cache"
        }
        return cache + "/latchkey/run-" + hostLabel()
    }

    /// The user database's home directory of `uid`.
    static func homeDirectory(uid: uid_t) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, let result, let directory = result.pointee.pw_dir else {
            return nil
        }
        let text = String(cString: directory)
        return text.hasPrefix("/") ? text : nil
    }

    /// This machine's host name as a file name: its first label's letters, digits and '-', at
    /// most 32 bytes ("localhost" when nothing is left).
    public static func hostLabel() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .unicodeScalars.prefix { $0 != "." }
        let label = String(String.UnicodeScalarView(name.filter {
            ($0.value >= 0x30 && $0.value <= 0x39) || ($0.value | 0x20 >= 0x61 && $0.value | 0x20 <= 0x7A) || $0 == "-"
        }).prefix(32))
        return label.isEmpty ? "localhost" : label
    }

    /// Creates the default path's directory (and missing parents, mode 0700) if needed and
    /// checks that it is private: a directory (not a symlink), owned by this user, no group or
    /// other access.
    public static func preparePrivateDirectory(_ directory: String) throws(Failure) {
        var missing: [String] = []
        var ancestor = directory
        while !ancestor.isEmpty, ancestor != "/", (try? FileSystem.linkStatus(ancestor)) == nil {
            missing.append(ancestor)
            ancestor = (ancestor as NSString).deletingLastPathComponent
        }
        for path in missing.reversed() {
            do {
                try FileSystem.createDirectory(path, mode: 0o700)
            } catch {
                throw Failure("cannot create \(path): \(error)")
            }
        }
        if let problem = privacyProblem(directory) { throw Failure(problem) }
    }

    /// Why `directory` is not a private directory of this user, or nil if it is (or does not
    /// exist: then nobody listens in it). Clients check this before connecting to a default
    /// path, as the servers do before listening.
    public static func privacyProblem(_ directory: String) -> String? {
        let status: stat
        do {
            status = try FileSystem.linkStatus(directory)
        } catch where error == .noSuchFileOrDirectory {
            return nil
        } catch {
            return "cannot inspect \(directory): \(error)"
        }
        guard !FileSystem.isPrivateDirectory(status) else { return nil }
        let kind = status.st_mode & S_IFMT == S_IFLNK ? "a symbolic link" : status.st_mode & S_IFMT == S_IFDIR ? "a directory" : "a file"
        return "\(directory) must be a directory owned by you with mode 0700 (it holds control sockets), but it is \(kind) "
            + "owned by \(PeerCredentials.describe(uid: status.st_uid)) with mode \(String(status.st_mode & 0o7777, radix: 8)): "
            + "another user may have made it to catch what you send. Remove it (if you did not make it, ask your administrator), "
            + "or pass --control PATH"
    }

    /// The control socket of `--presence control`: one `ControlRequest` line in, one response out.
    public convenience init(path: String, presence: ControlPresence, logger: Logger) throws(Failure) {
        try self.init(path: path, logger: logger, maximumConnections: Self.maximumConnections,
                      refusal: ControlLine.encode(ControlResponse.error("too many control connections")),
                      foreignRefusal: { ControlLine.encode(ControlResponse.error($0)) },
                      onStop: { presence.stop() }, serve: { Self.servePresence($0, presence: presence) })
    }

    /// Listens at `path` (mode 0600), published only once it accepts (`PublishedSocket`). A
    /// stale socket file there is replaced; a live one (another key with the same name) is an error.
    public init(path: String, logger: Logger, maximumConnections: Int, refusal: [UInt8],
                foreignRefusal: @escaping @Sendable (String) -> [UInt8],
                onStop: @escaping @Sendable () -> Void, serve: @escaping @Sendable (FileDescriptor) -> Void) throws(Failure) {
        self.path = path
        self.logger = logger
        self.connectionLimit = maximumConnections
        self.refusal = refusal
        self.foreignRefusal = foreignRefusal
        self.onStop = onStop
        self.serve = serve
        do {
            wakeup = try WakeupEvent()
        } catch {
            throw Failure("cannot create the control socket's wakeup event: \(error)")
        }
        let published: PublishedSocket
        do {
            published = try PublishedSocket.listen(at: path, type: SOCK_STREAM, backlog: 16, nonBlocking: true)
        } catch {
            throw Failure(Self.message(error, path: path))
        }
        listener = published.descriptor
        socketFile = published
    }

    static func message(_ failure: PublishedSocket.Failure, path: String) -> String {
        switch failure {
        case .bind(let error): ControlIO.addressError(path, error, call: "bind")
        case .mode: "cannot make the control socket \(path) private (mode 0600)"
        case .listen(let error): "listen failed for \(path): \(error)"
        case .notASocket: "\(path) exists and is not a socket; remove it or choose another --control PATH"
        case .inUse: "another key is already using the control socket \(path); give this one another --name or --control PATH"
        case .permissionDenied: "\(path) belongs to another user; remove it or choose another --control PATH"
        case .publish(let error): "cannot put the control socket at \(path): \(error)"
        }
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
    /// unlinks the socket (only if it is still the file this key created), then waits (up to
    /// `connectionWaitMilliseconds`) for the connections' threads to end: a process that exits
    /// while one still runs can crash in exit's teardown (seen once: `latchkey rig` ending with
    /// SIGSEGV after "rig stopped"). Idempotent.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        onStop()
        wakeup.signal()
        if started.load(ordering: .acquiring) { acceptLoopDone.wait() }
        listener.close()
        socketFile.unpublish()
        if connectionThreads.wait(timeout: .now() + .milliseconds(Self.connectionWaitMilliseconds)) == .timedOut {
            logger.debug("control socket \(path): \(connections.load(ordering: .acquiring)) connection(s) still open "
                         + "after \(Self.connectionWaitMilliseconds) ms")
        }
    }

    /// How long `stop()` waits for connection threads: the rig's connections see the stop within
    /// their poll (250 ms); a key's control connection reading a request line may hold on for its
    /// 5 s, which a stopping key does not wait out.
    static let connectionWaitMilliseconds = 1_000

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
                // accept4: close-on-exec from the start; the connection's own reads and writes block.
                guard let client = listener.acceptBlocking(orWaitOn: wakeup) else { break }
                // Only this user (or root) steers the key: the directory and the mode keep others
                // out, and so does this, whatever they are.
                let peer = try? client.peerCredentials()
                guard let peer, PeerCredentials.isTrusted(uid: peer.uid) else {
                    let who = peer.map { PeerCredentials.describe(uid: $0.uid) } ?? "an unknown user"
                    logger.warning("control socket \(path): refused a connection from \(who)")
                    LineSocket.write(foreignRefusal("this control socket belongs to \(PeerCredentials.describe(uid: getuid())); "
                                                    + "\(who) may not use it"), to: client)
                    client.close()
                    continue
                }
                if connections.add(1, ordering: .acquiringAndReleasing).newValue > connectionLimit {
                    connections.subtract(1, ordering: .acquiringAndReleasing)
                    LineSocket.write(refusal, to: client)
                    continue
                }
                // The connection's descriptor moves to its thread, which alone uses it from here on.
                nonisolated(unsafe) let connection = client
                let serve = self.serve
                connectionThreads.enter()
                let thread = Thread { [self] in
                    serve(connection)
                    connection.close()
                    connections.subtract(1, ordering: .acquiringAndReleasing)
                    connectionThreads.leave()
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
                let what = if case .relyingParty(let rpID) = target { "no presence request for \(DisplayText.safe(rpID))" } else { "no presence request" }
                return ControlResponse(result: "none", message: "\(what) came within \(String(format: "%g", seconds)) s")
            case .noMatch(let message):
                return ControlResponse(result: "none", message: message)
            case .stopped:
                return .error("the key is shutting down")
            }
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
