import Glibc
import SystemIO

/// One connection to a key's socket transport, for tests, benchmarks and rigs
/// (docs/socket-transport.md). Blocking sends; `receive` waits with a timeout.
/// Packets of any size may be sent, so rigs can test the key's size checks.
public final class SocketClient {
    /// The largest packet `receive` returns whole (the key sends 64 bytes).
    static let receiveCapacity = 4096

    static let packetsPerReceive = 16

    public let path: String
    private let socket: FileDescriptor
    /// The last batch received; `receive` hands out its packets one at a time.
    private var received = ReceivedPackets(capacity: SocketClient.receiveCapacity, slots: SocketClient.packetsPerReceive)

    public init(path: String) throws(TransportError) {
        let address: UnixSocketAddress
        do {
            address = try UnixSocketAddress(path: path)
        } catch {
            throw .socketPath(path, error)
        }
        self.path = path
        do {
            socket = try .unixSocket(type: SOCK_SEQPACKET, nonBlocking: false)
        } catch {
            throw TransportError(error, call: "socket")
        }
        do {
            try socket.connect(to: address)
        } catch {
            if error == .noSuchFileOrDirectory || error == .connectionRefused {
                throw .system(call: "connect", errno: error.rawValue,
                              message: "no key is listening on \(path) (\(error)); start one with `latchkey serve --transport socket:\(path)`")
            }
            throw TransportError(error, call: "connect", path: path)
        }
        // Only a key of this user may hear what is sent (PINs, hmac-secret salts): whoever can
        // write in the socket's directory could otherwise put a listener there.
        let credentials = try? socket.peerCredentials()
        guard let credentials, PeerCredentials.isTrusted(uid: credentials.uid) else {
            socket.close()
            let who = credentials.map { PeerCredentials.describe(uid: $0.uid) } ?? "a user it cannot tell"
            throw .system(call: "connect", errno: EPERM,
                          message: "\(path) is served by \(who), not by you (\(PeerCredentials.describe(uid: getuid()))); "
                          + "refusing to talk to it: remove it and start your own key there, or choose another path")
        }
    }

    deinit {
        close()
    }

    /// Sends `reports` in order, batched into sendmmsg(2) calls when they are all the same size
    /// (a request's fragments); blocks until all are queued.
    public func send(reports: [[UInt8]]) throws(TransportError) {
        guard let size = reports.first?.count, size > 0, reports.allSatisfy({ $0.count == size }) else {
            for report in reports { try send(report) }
            return
        }
        var packets: [UInt8] = []
        packets.reserveCapacity(size * reports.count)   // one allocation, not flatMap's growing one
        for report in reports { packets += report }
        do {
            var offset = 0
            while offset < packets.count {
                let rest = offset == 0 ? packets : Array(packets[offset...])   // a blocking send takes all at once
                let sent = try socket.sendPackets(rest, size: size, flags: Int32(MSG_NOSIGNAL))
                offset += sent * size
            }
        } catch {
            throw TransportError(error, call: "sendmmsg", path: path)
        }
    }

    /// Sends `report` as one packet (normally 64 bytes).
    public func send(_ report: [UInt8]) throws(TransportError) {
        do {
            try socket.send(report, flags: Int32(MSG_NOSIGNAL))
        } catch {
            throw TransportError(error, call: "send", path: path)
        }
    }

    /// The next packet from the key, or nil if none arrives within the
    /// timeout (−1: wait forever). The key closing the connection throws.
    /// Every waiting packet is fetched in one recvmmsg(2) (a reply's fragments arrive together)
    /// and handed out one per call.
    public func receive(timeoutMilliseconds: Int32) throws(TransportError) -> [UInt8]? {
        guard socket.isOpen else {
            throw TransportError(.badFileDescriptor, call: "recv", path: path)
        }
        // One access to the batch per packet handed out (class properties are checked for
        // exclusive access at run time on every access).
        if let packet = received.takeNext() { return try checked(packet) }
        let readiness: Int16
        do {
            readiness = try Poller.wait(for: socket.rawValue, events: Int16(POLLIN), timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            throw .poll(error)
        }
        guard readiness != 0 else { return nil }
        do {
            try socket.receivePackets(into: &received, flags: Int32(MSG_DONTWAIT))
        } catch {
            if error == .wouldBlock { return nil }
            throw TransportError(error, call: "recvmmsg", path: path)
        }
        guard let packet = received.takeNext() else { return nil }
        return try checked(packet)
    }

    /// A packet's bytes, or the end of the connection (an empty packet on a hung-up socket).
    private func checked(_ packet: (bytes: [UInt8], size: Int)) throws(TransportError) -> [UInt8] {
        if packet.size == 0, socket.isPeerHungUp {
            received.discardRest()
            throw .system(call: "recv", errno: ECONNRESET,
                          message: "the key on \(path) closed the connection")
        }
        return packet.bytes
    }

    /// Closes the connection (the key sees `.connectionClosed`). Idempotent.
    public func close() {
        socket.close()
    }
}
