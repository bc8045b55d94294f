import Glibc

/// One connection to a key's socket transport, for tests, benchmarks and rigs
/// (SOCKET-TRANSPORT.md). Blocking sends; `receive` waits with a timeout.
/// Packets of any size may be sent, so rigs can test the key's size checks.
public final class SocketClient {
    /// The largest packet `receive` returns whole (the key sends 64 bytes).
    static let receiveCapacity = 4096

    public let path: String
    private let socket: FileDescriptor

    public init(path: String) throws(TransportError) {
        let address = try UnixSocketAddress(path: path)
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
    }

    deinit {
        close()
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
    public func receive(timeoutMilliseconds: Int32) throws(TransportError) -> [UInt8]? {
        guard socket.isOpen else {
            throw TransportError(.badFileDescriptor, call: "recv", path: path)
        }
        let ready = try Poller.wait(for: [socket.rawValue], timeoutMilliseconds: timeoutMilliseconds)
        guard !ready.isEmpty else { return nil }
        let packet: (bytes: [UInt8], size: Int)
        do {
            packet = try socket.receivePacket(capacity: Self.receiveCapacity, flags: Int32(MSG_DONTWAIT))
        } catch {
            if error == .wouldBlock { return nil }
            throw TransportError(error, call: "recv", path: path)
        }
        if packet.size == 0, socket.isPeerHungUp {
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
