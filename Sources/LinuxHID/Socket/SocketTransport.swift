import Glibc
import SystemIO

/// The socket transport (docs/socket-transport.md, a public contract): a UNIX
/// SOCK_SEQPACKET listening socket, mode 0600, whose clients each behave like
/// their own open handle on the HID device. Every packet in either direction
/// is one 64-byte CTAPHID report without a report-ID byte; a client packet of
/// any other size is dropped (reported as `.droppedPacket`) and the
/// connection keeps working.
public final class SocketTransport: ReportTransport {
    static let listenBacklog: Int32 = 16
    /// At most this many accepts per `readEvents` call on the listener.
    static let maximumAcceptsPerRead = 64
    /// Packets fetched per recvmmsg(2): a getAssertion request is 2–4 reports.
    static let packetsPerReceive = 16
    /// At most this many packets per `readEvents` call on a client: one recvmmsg(2), so one
    /// busy client cannot starve the others (poll is level-triggered, and every ready client
    /// gets its turn in each round). A well-behaved client's request waits behind at most
    /// this many packets from each flooding one: with 64 (four receives) an INIT flood on two
    /// connections kept 128 INITs ahead of it, about 1 ms in a debug build.
    static let maximumPacketsPerRead = packetsPerReceive
    /// Clients connected at once, by default: far more than a rig or a browser opens (the
    /// benchmark's concurrency run uses 8). One more is accepted and closed at once.
    public static let defaultMaximumConnections = 256
    /// When accept(2) fails for want of descriptors and none is spare to turn the client away
    /// with, the listener leaves the poll set this long: a listener that stays readable while
    /// nothing can be accepted would otherwise spin the poll loop at 100% CPU.
    static let acceptPauseNanoseconds: UInt64 = 200_000_000

    public let path: String
    private let listener: FileDescriptor
    /// The socket file this transport published, so `shutdown` unlinks only its own file.
    private let socketFile: PublishedSocket
    private var clients: [TransportConnection: FileDescriptor] = [:] {
        didSet { descriptors = nil }
    }
    /// What `pollDescriptors` answers: the listener's (unless paused) and the clients' in
    /// connection order, kept until a client comes or goes or the pause begins or ends — the loop
    /// asks before every poll.
    private var descriptors: (list: [Int32], listenerPaused: Bool)?
    /// The batch every client's packets are received into (one recvmmsg each), kept between reads.
    private var received = ReceivedPackets(capacity: reportSize, slots: SocketTransport.maximumPacketsPerRead)
    /// A reply's reports back to back for one sendmmsg, kept between sends.
    private var outgoing: [UInt8] = []
    /// Each client's connection and descriptor by descriptor number: a readable descriptor is one lookup.
    private var connectionsByDescriptor: [Int32: Client] = [:]
    private struct Client {
        let connection: TransportConnection
        let descriptor: FileDescriptor
    }
    private var nextConnection: TransportConnection = 1
    private let maximumConnections: Int
    /// A descriptor held in reserve (/dev/null): out of descriptors (EMFILE), it is closed so
    /// that the waiting client can be accepted and closed, then opened again.
    private var spareDescriptor: FileDescriptor?
    /// CLOCK_MONOTONIC nanoseconds until which the listener is not polled (see acceptPause).
    private var listenerPausedUntil: UInt64 = 0
    /// Reports `send` could not queue: the client does not read (its queue is
    /// full) or is gone. Log-worthy, never fatal.
    public private(set) var lostReportCount = 0

    /// Listens on `path`, published only once it accepts (`PublishedSocket`). An existing
    /// socket file nobody listens on (connect → ECONNREFUSED) is replaced; a live one is
    /// `.socketInUse`; anything else at `path` is left alone and reported. A client whose uid
    /// is neither this process's nor root's is closed at once (SO_PEERCRED), whatever the
    /// file's mode allows.
    public init(path: String, maximumConnections: Int = SocketTransport.defaultMaximumConnections) throws(TransportError) {
        self.maximumConnections = max(1, maximumConnections)
        spareDescriptor = try? FileDescriptor.open("/dev/null", flags: O_RDONLY)
        do {
            _ = try UnixSocketAddress(path: path)
        } catch {
            throw .socketPath(path, error)
        }
        self.path = path
        let published: PublishedSocket
        do {
            published = try PublishedSocket.listen(at: path, type: SOCK_SEQPACKET, backlog: Self.listenBacklog, nonBlocking: true)
        } catch {
            throw Self.transportError(error, path: path)
        }
        listener = published.descriptor
        socketFile = published
    }

    /// What a failure to publish the socket means to the user.
    static func transportError(_ failure: PublishedSocket.Failure, path: String) -> TransportError {
        switch failure {
        case .bind(let error):
            if error == .noSuchFileOrDirectory {
                let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
                return .system(call: "bind", errno: ENOENT, message:
                    "cannot make the socket \(path): the directory \(directory.isEmpty ? "/" : directory) does not exist; "
                    + "create it (mkdir -p), or choose a path in a directory that exists")
            }
            if error == .nameTooLong { return .socketPath(path, error) }
            return TransportError(error, call: "bind", path: path)
        case .mode(let error?, _):
            return TransportError(error, call: "chmod", path: path)
        case .mode(nil, let actual):
            return .system(call: "chmod", errno: EPERM,
                           message: "\(path) has mode \(String(actual, radix: 8)) after chmod 0600; use a directory on a filesystem that keeps UNIX permissions")
        case .listen(let error):
            return TransportError(error, call: "listen", path: path)
        case .notASocket:
            return .system(call: "bind", errno: EADDRINUSE, message: "\(path) exists and is not a socket; remove it or choose another path")
        case .inUse:
            return .socketInUse(path: path)
        case .permissionDenied:
            return .permissionDenied(path: path)
        case .publish(let error):
            return TransportError(error, call: "link", path: path)
        }
    }

    deinit {
        shutdown()
    }

    public var pollDescriptors: [Int32] {
        guard listener.isOpen else { return [] }
        var paused = false
        if listenerPausedUntil > 0 {
            paused = MonotonicClock.nanoseconds() < listenerPausedUntil
            if !paused { listenerPausedUntil = 0 }
        }
        if let descriptors, descriptors.listenerPaused == paused { return descriptors.list }
        let list = (paused ? [] : [listener.rawValue]) + clients.keys.sorted().compactMap { clients[$0]?.rawValue }
        descriptors = (list, paused)
        return list
    }

    public func readEvents(from fd: Int32) -> [TransportEvent] {
        guard listener.isOpen else { return [] }
        if fd == listener.rawValue {
            return acceptClients()
        }
        guard let client = connectionsByDescriptor[fd] else { return [] }
        return receivePackets(from: client.descriptor, connection: client.connection)
    }

    /// Queues `report` for the client without waiting (MSG_DONTWAIT; and
    /// MSG_NOSIGNAL: a gone client is EPIPE, not SIGPIPE). If the client's
    /// queue is full the report is lost and counted in `lostReportCount`.
    public func send(_ report: [UInt8], to connection: TransportConnection) {
        send(reports: [report], to: connection)
    }

    /// One sendmmsg(2) for all of a reply's reports instead of one send(2) each.
    public func send(reports: [[UInt8]], to connection: TransportConnection) {
        guard let client = clients[connection], !reports.isEmpty else { return }
        outgoing.removeAll(keepingCapacity: true)
        for report in reports {
            precondition(report.count == reportSize, "reports are exactly \(reportSize) bytes")
            outgoing += report
        }
        do {
            let sent = try client.sendPackets(outgoing, size: reportSize, flags: Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            lostReportCount += reports.count - sent
        } catch {
            lostReportCount += reports.count   // a hang-up is reported by readEvents when poll sees it
        }
    }

    /// Closes every client, closes the listening socket and unlinks its file
    /// (only if it is still the file this transport created). Later calls do
    /// nothing.
    public func shutdown() {
        guard listener.isOpen else { return }
        for client in clients.values { client.close() }
        clients = [:]
        connectionsByDescriptor = [:]
        listener.close()
        spareDescriptor?.close()
        socketFile.unpublish()
    }

    // MARK: Reading

    private func acceptClients() -> [TransportEvent] {
        var events: [TransportEvent] = []
        for _ in 0..<Self.maximumAcceptsPerRead {
            let client: FileDescriptor
            do {
                client = try listener.accept()
            } catch where error == .connectionAborted {
                continue
            } catch where error == .tooManyOpenFiles || error == .tooManyOpenFilesInSystem {
                events.append(refuseWithoutDescriptors())
                break
            } catch {
                break   // EAGAIN: nobody else waiting
            }
            guard client.peerIsTrusted() else {
                let who = (try? client.peerCredentials()).map { PeerCredentials.describe(uid: $0.uid) } ?? "an unknown user"
                client.close()
                events.append(.connectionRefused(reason: "a client running as \(who) is not this key's user"))
                continue
            }
            guard clients.count < maximumConnections else {
                client.close()
                events.append(.connectionRefused(reason: "\(maximumConnections) clients are connected already (the limit)"))
                continue
            }
            let connection = nextConnection
            nextConnection += 1
            clients[connection] = client
            connectionsByDescriptor[client.rawValue] = Client(connection: connection, descriptor: client)
            events.append(.connectionOpened(connection))
        }
        return events
    }

    /// Out of descriptors: the spare one makes room to accept the waiting client and close it
    /// (it sees end of stream, not a hang); without a spare, the listener pauses.
    private func refuseWithoutDescriptors() -> TransportEvent {
        let reason = "the key has no file descriptor left (raise its limit: ulimit -n)"
        if let spare = spareDescriptor {
            spare.close()
            spareDescriptor = nil
            (try? listener.accept())?.close()
            spareDescriptor = try? FileDescriptor.open("/dev/null", flags: O_RDONLY)
        }
        if spareDescriptor == nil {
            listenerPausedUntil = MonotonicClock.nanoseconds() + Self.acceptPauseNanoseconds
        }
        return .connectionRefused(reason: reason)
    }

    private func receivePackets(from client: FileDescriptor, connection: TransportConnection) -> [TransportEvent] {
        do {
            // One recvmmsg per round (maximumPacketsPerRead): up to a batch of waiting packets (a
            // request's fragments) in one call; poll calls again while more wait. MSG_TRUNC: `size`
            // is each packet's true length, so a 65-byte packet is seen as 65 (and dropped), not as
            // its first 64 bytes.
            try client.receivePackets(into: &received, flags: Int32(MSG_DONTWAIT))
        } catch {
            if error == .wouldBlock { return [] }
            // ECONNRESET or worse: the connection is over.
            close(connection)
            return [.connectionClosed(connection)]
        }
        var events: [TransportEvent] = []
        events.reserveCapacity(received.count)
        for index in 0..<received.count {
            let size = received.size(at: index)
            if size == 0 {
                // SEQPACKET returns 0 both for an empty packet and at end of
                // stream; only the latter leaves the socket hung up.
                if client.isPeerHungUp {
                    close(connection)
                    events.append(.connectionClosed(connection))
                    break
                }
                events.append(.droppedPacket(size: 0, from: connection))
            } else if size == reportSize {
                events.append(.report(received.bytes(at: index), from: connection))
            } else {
                events.append(.droppedPacket(size: size, from: connection))
            }
        }
        return events
    }

    private func close(_ connection: TransportConnection) {
        guard let client = clients.removeValue(forKey: connection) else { return }
        connectionsByDescriptor[client.rawValue] = nil
        client.close()
    }
}
