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
    /// Device and inode of the socket file this transport bound, so
    /// `shutdown` unlinks only its own file.
    private let socketFile: (device: UInt64, inode: UInt64)
    private var clients: [TransportConnection: FileDescriptor] = [:]
    private var connectionsByDescriptor: [Int32: TransportConnection] = [:]
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

    /// Listens on `path`. An existing socket file nobody listens on
    /// (connect → ECONNREFUSED) is replaced; a live one is `.socketInUse`;
    /// anything else at `path` is left alone and reported.
    public init(path: String, maximumConnections: Int = SocketTransport.defaultMaximumConnections) throws(TransportError) {
        self.maximumConnections = max(1, maximumConnections)
        spareDescriptor = try? FileDescriptor.open("/dev/null", flags: O_RDONLY)
        let address: UnixSocketAddress
        do {
            address = try UnixSocketAddress(path: path)
        } catch {
            throw .socketPath(path, error)
        }
        self.path = path
        do {
            listener = try .unixSocket(type: SOCK_SEQPACKET, nonBlocking: true)
        } catch {
            throw TransportError(error, call: "socket")
        }
        try Self.bind(listener, to: address)
        do throws(TransportError) {
            // Mode 0600 between bind and listen: until listen(2) every connect
            // is refused, so no client can get in under the umask's mode.
            do {
                try FileSystem.setMode(path, 0o600)
            } catch {
                throw TransportError(error, call: "chmod", path: path)
            }
            let status = try Self.status(ofSocketAt: path)
            guard status.st_mode & 0o7777 == 0o600 else {
                throw TransportError.system(
                    call: "chmod", errno: EPERM,
                    message: "\(path) has mode \(String(status.st_mode & 0o7777, radix: 8)) after chmod 0600; use a directory on a filesystem that keeps UNIX permissions")
            }
            socketFile = (UInt64(status.st_dev), UInt64(status.st_ino))
            do {
                try listener.listen(backlog: Self.listenBacklog)
            } catch {
                throw TransportError(error, call: "listen", path: path)
            }
        } catch {
            try? FileSystem.remove(path)
            throw error
        }
    }

    deinit {
        shutdown()
    }

    public var pollDescriptors: [Int32] {
        guard listener.isOpen else { return [] }
        let connected = clients.keys.sorted().compactMap { clients[$0]?.rawValue }
        if listenerPausedUntil > 0, MonotonicClock.nanoseconds() < listenerPausedUntil { return connected }
        listenerPausedUntil = 0
        return [listener.rawValue] + connected
    }

    public func readEvents(from fd: Int32) -> [TransportEvent] {
        guard listener.isOpen else { return [] }
        if fd == listener.rawValue {
            return acceptClients()
        }
        guard let connection = connectionsByDescriptor[fd] else { return [] }
        return receivePackets(from: connection)
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
        var packets: [UInt8] = []
        packets.reserveCapacity(reports.count * reportSize)
        for report in reports {
            precondition(report.count == reportSize, "reports are exactly \(reportSize) bytes")
            packets += report
        }
        do {
            let sent = try client.sendPackets(packets, size: reportSize, flags: Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
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
        if let status = try? Self.status(ofSocketAt: path),
           UInt64(status.st_dev) == socketFile.device, UInt64(status.st_ino) == socketFile.inode {
            try? FileSystem.remove(path)
        }
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
            guard clients.count < maximumConnections else {
                client.close()
                events.append(.connectionRefused(reason: "\(maximumConnections) clients are connected already (the limit)"))
                continue
            }
            let connection = nextConnection
            nextConnection += 1
            clients[connection] = client
            connectionsByDescriptor[client.rawValue] = connection
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

    private func receivePackets(from connection: TransportConnection) -> [TransportEvent] {
        guard let client = clients[connection] else { return [] }
        let packets: [(bytes: [UInt8], size: Int)]
        do {
            // One recvmmsg per round (maximumPacketsPerRead): up to a batch of waiting packets (a
            // request's fragments) in one call; poll calls again while more wait. MSG_TRUNC: `size`
            // is each packet's true length, so a 65-byte packet is seen as 65 (and dropped), not as
            // its first 64 bytes.
            packets = try client.receivePackets(capacity: reportSize, maximumCount: Self.maximumPacketsPerRead,
                                                flags: Int32(MSG_DONTWAIT))
        } catch {
            if error == .wouldBlock { return [] }
            // ECONNRESET or worse: the connection is over.
            close(connection)
            return [.connectionClosed(connection)]
        }
        var events: [TransportEvent] = []
        for packet in packets {
            if packet.size == 0 {
                // SEQPACKET returns 0 both for an empty packet and at end of
                // stream; only the latter leaves the socket hung up.
                if client.isPeerHungUp {
                    close(connection)
                    events.append(.connectionClosed(connection))
                    break
                }
                events.append(.droppedPacket(size: 0, from: connection))
            } else if packet.size == reportSize {
                events.append(.report(packet.bytes, from: connection))
            } else {
                events.append(.droppedPacket(size: packet.size, from: connection))
            }
        }
        return events
    }

    private func close(_ connection: TransportConnection) {
        guard let client = clients.removeValue(forKey: connection) else { return }
        connectionsByDescriptor[client.rawValue] = nil
        client.close()
    }

    // MARK: Creating the socket file

    /// bind(2), replacing a stale socket file once.
    private static func bind(_ listener: FileDescriptor, to address: UnixSocketAddress) throws(TransportError) {
        do {
            try listener.bind(to: address)
            return
        } catch {
            guard error == .addressInUse else {
                if error == .noSuchFileOrDirectory {
                    let directory = address.path.contains("/") ? String(address.path[..<address.path.lastIndex(of: "/")!]) : "."
                    throw TransportError.system(call: "bind", errno: ENOENT, message:
                        "cannot make the socket \(address.path): the directory \(directory.isEmpty ? "/" : directory) does not exist; "
                        + "create it (mkdir -p), or choose a path in a directory that exists")
                }
                throw TransportError(error, call: "bind", path: address.path)
            }
        }
        try removeStaleSocket(at: address)
        do {
            try listener.bind(to: address)
        } catch {
            if error == .addressInUse { throw .socketInUse(path: address.path) }
            throw TransportError(error, call: "bind", path: address.path)
        }
    }

    /// Unlinks the socket file at `address` if nobody listens on it
    /// (docs/socket-transport.md: "an existing stale socket file is replaced, a
    /// live one is an error"). Not a socket → error, the file is kept.
    private static func removeStaleSocket(at address: UnixSocketAddress) throws(TransportError) {
        let path = address.path
        let status: stat
        do {
            status = try Self.status(ofSocketAt: path)
        } catch {
            if case .system(_, ENOENT, _) = error { return }   // gone meanwhile: bind again
            throw error
        }
        guard status.st_mode & S_IFMT == S_IFSOCK else {
            throw TransportError.system(
                call: "bind", errno: EADDRINUSE,
                message: "\(path) exists and is not a socket; remove it or choose another path")
        }
        let probe: FileDescriptor
        do {
            probe = try .unixSocket(type: SOCK_SEQPACKET, nonBlocking: true)
        } catch {
            throw TransportError(error, call: "socket")
        }
        do {
            try probe.connect(to: address)
        } catch {
            switch error {
            case .connectionRefused:
                break   // stale: nobody listens
            case .noSuchFileOrDirectory:
                return
            default:
                // Accepted-but-busy (EAGAIN), another socket type (EPROTOTYPE),
                // or anything else: something lives there; leave it alone.
                if error == .permissionDenied || error == .notPermitted {
                    throw .permissionDenied(path: path)
                }
                throw .socketInUse(path: path)
            }
            do {
                try FileSystem.remove(path)
            } catch {
                throw TransportError(error, call: "unlink", path: path, hint: "cannot remove the stale socket file")
            }
            return
        }
        throw .socketInUse(path: path)   // connected: a live key listens there
    }

    /// lstat(2) of `path`.
    private static func status(ofSocketAt path: String) throws(TransportError) -> stat {
        do {
            return try FileSystem.linkStatus(path)
        } catch {
            throw TransportError(error, call: "lstat", path: path)
        }
    }
}
