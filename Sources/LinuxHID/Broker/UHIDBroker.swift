import Glibc
import SystemIO

/// The uhid broker (`latchkey uhid-broker`, docs/uhid-broker.md): a root service that creates
/// Latchkey devices for users who may not open /dev/uhid themselves. A key connects to its
/// SOCK_SEQPACKET socket and speaks uhid's own protocol over it, one `struct uhid_event` a
/// packet, as it would to /dev/uhid; the broker opens /dev/uhid for that connection alone,
/// writes the CREATE2 `UHIDBrokerPolicy` stamps with the client's uid, and then passes events
/// both ways — the kernel's all, the client's only as the policy allows. The device lives as
/// long as the connection: a client that hangs up, breaks a rule or the broker stopping
/// destroys it (closing a uhid descriptor is UHID_DESTROY).
///
/// One thread, one poll(2) loop. Bounds: devices per user and clients in all (more are
/// accepted and closed at once), a client's events to the kernel per second (past the burst
/// its socket is not read until tokens come back: back-pressure, nothing dropped), and events
/// the kernel sent that a client has not taken yet (past the bound its device is not read,
/// and the kernel's own 32-event queue is what is left — as with /dev/uhid itself).
public final class UHIDBroker {
    public struct Limits: Sendable {
        /// Keys one user may have through the broker at once (the rig runs up to 128).
        public var devicesPerUser = 128
        /// Connections in all, created or not.
        public var clients = 1024
        /// A client's events to the kernel: sustained rate and burst. A key paces long replies
        /// at one report a millisecond; four times that leaves room for several channels.
        public var eventsPerSecond = 4_000.0
        public var burst = 4_000.0
        /// Kernel events kept for a client that does not read: twice the kernel's own queue, so a
        /// user's 128 keys hold at most ~36 MB of root's memory.
        public var pendingToClient = 64
        /// How long a connection may stay without its UHID_CREATE2 (a key sends it at once): a
        /// connection that never creates is not held, so idle ones cannot fill `clients`.
        public var createWithinNanoseconds: UInt64 = 5_000_000_000
        /// Subordinate uid ranges (/etc/subuid), whose uids are refused (`UHIDBrokerPolicy.admits`).
        public var subordinateUIDs: [ClosedRange<UInt32>] = []
        /// Connections that have not created their device yet, in all: a user (or many of its
        /// uids) cannot hold the broker's places with idle connections even for the deadline.
        public var pendingCreates = 64
        /// After accept(2) fails for want of descriptors (EMFILE, ENFILE), the listener rests
        /// this long instead of waking the loop again at once.
        public var acceptPauseNanoseconds: UInt64 = 100_000_000
        public init() {}
    }

    final class Client {
        let socket: FileDescriptor
        let uid: UInt32
        var device: FileDescriptor?
        var name: String?
        var tokens: Double
        var refilledAt: UInt64
        var pending: [[UInt8]] = []
        var pendingHead = 0
        let acceptedAt: UInt64

        init(socket: FileDescriptor, uid: UInt32, tokens: Double, now: UInt64) {
            self.socket = socket
            self.uid = uid
            self.tokens = tokens
            self.refilledAt = now
            self.acceptedAt = now
        }

        var hasPending: Bool { pendingHead < pending.count }
    }

    private let listener: FileDescriptor
    private let openDevice: () throws(Errno) -> FileDescriptor
    private let logger: Logger
    private let limits: Limits
    private let clock: () -> UInt64
    private var clients: [Int32: Client] = [:]
    /// Each device's descriptor → its client's socket descriptor.
    private var clientByDevice: [Int32: Int32] = [:]
    private var listenerRestsUntil: UInt64 = 0
    private var readBuffer = [UInt8](repeating: 0, count: UHIDEventLayout.eventSize + 1)
    private var refusalsLogged = 0
    private var refusalWindowStart: UInt64 = 0

    /// `listener`: a listening SOCK_SEQPACKET socket (systemd's, or one bound by the command).
    /// `openDevice`: opens /dev/uhid (non-blocking, close-on-exec); tests give one end of a
    /// socket pair instead.
    public init(listener: FileDescriptor, openDevice: @escaping () throws(Errno) -> FileDescriptor,
                logger: Logger, limits: Limits = Limits(), clock: @escaping () -> UInt64 = MonotonicClock.nanoseconds) {
        self.listener = listener
        self.openDevice = openDevice
        self.logger = logger
        self.limits = limits
        self.clock = clock
    }

    /// Connections in all, created or not (for tests).
    public var connectionCount: Int { clients.count }

    /// Devices up now, by user (for the log and tests).
    public var devicesByUser: [UInt32: Int] {
        clients.values.filter { $0.device != nil }.reduce(into: [:]) { $0[$1.uid, default: 0] += 1 }
    }

    /// Serves until `shouldStop` says so (checked at least once a second); then every
    /// connection is closed, and with it every device.
    public func run(shouldStop: () -> Bool) {
        while !shouldStop() {
            turn(timeoutMilliseconds: 1_000)
        }
        for fd in Array(clients.keys) { drop(fd, reason: nil) }
    }

    /// One poll(2) and what it found (tests drive the loop with this).
    public func turn(timeoutMilliseconds: Int32) {
        let now = clock()
        // A connection that did not create its device in time is closed.
        for (fd, client) in clients where client.device == nil && now &- client.acceptedAt >= limits.createWithinNanoseconds {
            drop(fd, reason: "no UHID_CREATE2 within \(limits.createWithinNanoseconds / 1_000_000_000) s")
        }
        // The listener is read (but after running out of descriptors, only once it has rested):
        // a client past the limits is accepted and closed at once (it sees end of stream), rather
        // than left waiting in the backlog.
        var timeout = timeoutMilliseconds
        let listenerRests = now < listenerRestsUntil
        if listenerRests { timeout = min(timeout, Int32(max(1, (listenerRestsUntil - now) / 1_000_000))) }
        var entries = [pollfd(fd: listener.rawValue, events: listenerRests ? 0 : Int16(POLLIN), revents: 0)]
        for (fd, client) in clients {
            if client.device == nil {
                let left = (client.acceptedAt &+ limits.createWithinNanoseconds) &- now
                timeout = min(timeout, Int32(clamping: left / 1_000_000 + 1))
            }
            refill(client, now: now)
            var events: Int16 = 0
            if client.tokens >= 1 {
                events |= Int16(POLLIN)
            } else {
                let wait = Int32(((1 - client.tokens) / limits.eventsPerSecond * 1_000).rounded(.up))
                timeout = min(timeout, max(1, wait))
            }
            if client.hasPending { events |= Int16(POLLOUT) }
            entries.append(pollfd(fd: fd, events: events, revents: 0))
            if let device = client.device, client.pending.count - client.pendingHead < limits.pendingToClient {
                entries.append(pollfd(fd: device.rawValue, events: Int16(POLLIN), revents: 0))
            }
        }
        do {
            try Poller.wait(&entries, timeoutMilliseconds: timeout)
        } catch {
            logger.error("uhid broker: poll failed: \(error)")
            return
        }
        for entry in entries where entry.revents != 0 {
            if entry.fd == listener.rawValue {
                accept()
            } else if let client = clients[entry.fd] {
                if entry.revents & Int16(POLLOUT) != 0 { flush(client) }
                if entry.revents & Int16(POLLIN | POLLHUP | POLLERR | POLLNVAL) != 0 { readClient(client) }
            } else if let owner = clientByDevice[entry.fd], let client = clients[owner] {
                readDevice(client)
            }
        }
    }

    // MARK: - Connections

    private func accept() {
        let socket: FileDescriptor
        do {
            socket = try listener.accept()
        } catch {
            if error == .tooManyOpenFiles || error == .tooManyOpenFilesInSystem {
                // The listener stays readable; polling it again at once would spin.
                listenerRestsUntil = clock() &+ limits.acceptPauseNanoseconds
            }
            if error != .wouldBlock { refusal("accept failed: \(error)") }
            return
        }
        guard let credentials = try? socket.peerCredentials() else {
            refusal("a client whose credentials cannot be read")
            return   // closed as `socket` goes
        }
        let uid = UInt32(credentials.uid)
        // Refused at once, before it holds a place: a subordinate uid (a container's user).
        guard UHIDBrokerPolicy.admits(uid: uid, subordinate: limits.subordinateUIDs) else {
            refusal("uid \(uid) is a subordinate uid (/etc/subuid): it gets no keys")
            return
        }
        guard clients.values.filter({ $0.device == nil }).count < limits.pendingCreates else {
            refusal("uid \(uid): \(limits.pendingCreates) connections are waiting to create their devices already")
            return
        }
        guard clients.count < limits.clients else {
            refusal("uid \(uid): \(limits.clients) clients already")
            return
        }
        let held = clients.values.filter { $0.uid == uid }.count
        guard held < limits.devicesPerUser else {
            refusal("uid \(uid) already has \(held) keys through the broker")
            return
        }
        clients[socket.rawValue] = Client(socket: socket, uid: uid, tokens: limits.burst, now: clock())
    }

    private func readClient(_ client: Client) {
        let fd = client.socket.rawValue
        // A few events a turn, so one client cannot hold the loop.
        for _ in 0..<64 {
            refill(client, now: clock())
            guard client.tokens >= 1 else { return }
            let packet: (bytes: [UInt8], size: Int)
            do {
                packet = try client.socket.receivePacket(capacity: UHIDEventLayout.eventSize + 1, flags: Int32(MSG_DONTWAIT))
            } catch {
                if error == .wouldBlock { return }
                drop(fd, reason: nil)
                return
            }
            guard packet.size > 0 else {
                drop(fd, reason: nil)   // hung up (or an empty packet, which no event is)
                return
            }
            client.tokens -= 1
            guard packet.size <= UHIDEventLayout.eventSize else {
                drop(fd, reason: "a \(packet.size)-byte packet (an event is at most \(UHIDEventLayout.eventSize))")
                return
            }
            do {
                if client.device == nil {
                    try create(client, from: packet.bytes)
                } else {
                    try write(UHIDBrokerPolicy.relay(packet.bytes), to: client)
                }
            } catch {
                drop(fd, reason: error.reason)
                return
            }
        }
    }

    private func create(_ client: Client, from bytes: [UInt8]) throws(UHIDBrokerPolicy.Refusal) {
        let (event, name) = try UHIDBrokerPolicy.create(from: bytes, uid: client.uid)
        let device: FileDescriptor
        do {
            device = try openDevice()
        } catch {
            throw UHIDBrokerPolicy.Refusal("the broker cannot open /dev/uhid: \(error)")
        }
        client.device = device
        clientByDevice[device.rawValue] = client.socket.rawValue
        client.name = name
        try write(event, to: client)
        // Debug, not info: a user can make and drop keys as fast as they like (the journal is not theirs).
        logger.debug("uhid broker: uid \(client.uid)'s key '\(name)' created")
    }

    private func write(_ event: [UInt8], to client: Client) throws(UHIDBrokerPolicy.Refusal) {
        guard let device = client.device else { return }
        let written: Int
        do {
            written = try device.write(event)
        } catch {
            throw UHIDBrokerPolicy.Refusal("the kernel refused the event: \(error)")
        }
        guard written == event.count else { throw UHIDBrokerPolicy.Refusal("the kernel took \(written) of \(event.count) bytes") }
    }

    /// The kernel's events for this client's device, queued and sent as the client takes them.
    private func readDevice(_ client: Client) {
        guard let device = client.device else { return }
        for _ in 0..<64 {
            guard client.pending.count - client.pendingHead < limits.pendingToClient else { break }
            let device = device
            let count = readBuffer.withUnsafeMutableBytes { (try? device.read(into: $0)) ?? -1 }
            guard count > 0 else { break }
            client.pending.append(Array(readBuffer[..<count]))
        }
        flush(client)
    }

    private func flush(_ client: Client) {
        while client.hasPending {
            do {
                try client.socket.send(client.pending[client.pendingHead], flags: Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            } catch {
                if error == .wouldBlock { break }
                drop(client.socket.rawValue, reason: nil)
                return
            }
            client.pendingHead += 1
        }
        // What was sent goes at once: a client holds at most `pendingToClient` events, sent or not.
        if client.pendingHead > 0 {
            client.pending.removeFirst(client.pendingHead)
            client.pendingHead = 0
        }
    }

    /// Closes a client, and with it its device (the kernel destroys a uhid device whose
    /// descriptor closes). `reason`: a refusal, logged; nil for a client that went away.
    private func drop(_ fd: Int32, reason: String?) {
        guard let client = clients.removeValue(forKey: fd) else { return }
        // Uids as numbers: no user-database lookup (NSS, sssd) inside the loop that serves everyone.
        if let reason {
            refusal("uid \(client.uid)" + (client.name.map { "'s key '\($0)'" } ?? "") + ": \(reason)")
        } else if let name = client.name {
            logger.debug("uhid broker: uid \(client.uid)'s key '\(name)' gone")
        }
        if let device = client.device {
            clientByDevice[device.rawValue] = nil
            device.close()
        }
        client.socket.close()
    }

    private func refill(_ client: Client, now: UInt64) {
        let elapsed = Double(now &- client.refilledAt) / 1_000_000_000
        client.tokens = min(limits.burst, client.tokens + elapsed * limits.eventsPerSecond)
        client.refilledAt = now
    }

    /// A refusal, at warning level — at most 10 a minute, so no local user can fill the journal.
    private func refusal(_ text: String) {
        let now = clock()
        if now &- refusalWindowStart > 60_000_000_000 {
            if refusalsLogged > 10 { logger.warning("uhid broker: \(refusalsLogged - 10) more refusals in the last minute") }
            refusalWindowStart = now
            refusalsLogged = 0
        }
        refusalsLogged += 1
        if refusalsLogged <= 10 { logger.warning("uhid broker: refused \(text)") } else { logger.debug("uhid broker: refused \(text)") }
    }
}
