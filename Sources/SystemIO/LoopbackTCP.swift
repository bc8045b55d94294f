import Glibc

/// TCP on 127.0.0.1 only, for the WebDriver intermediary (`latchkey rig webdriver`): WebDriver
/// clients speak HTTP over TCP and nothing else, so the socket cannot be a private UNIX one.
/// What stands in for SO_PEERCRED is `LoopbackPeer`: the kernel's socket table names the user
/// who owns the connecting end.
extension FileDescriptor {
    /// A listening socket on 127.0.0.1:`port` (0: one the kernel picks), close-on-exec and
    /// non-blocking (accept it with `accept()`), SO_REUSEADDR set so a restarted intermediary
    /// can take its port back at once; returns it with the port it got.
    public static func loopbackListener(port: UInt16, backlog: Int32 = 16) throws(Errno) -> (FileDescriptor, UInt16) {
        let socket = try tcpSocket(nonBlocking: true)
        var on: Int32 = 1
        guard setsockopt(socket.rawValue, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            let error = Errno.current
            socket.close()
            throw error
        }
        do throws(Errno) {
            var address = loopbackAddress(port: port)
            let descriptor = socket.rawValue
            _ = try Errno.retryingInterrupts {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            try socket.listen(backlog: backlog)
            return (socket, try socket.loopbackEndpoints().local.port)
        } catch {
            socket.close()
            throw error
        }
    }

    /// A blocking connection to 127.0.0.1:`port`, close-on-exec, given up after `timeoutMilliseconds`.
    public static func connectLoopback(port: UInt16, timeoutMilliseconds: Int32) throws(Errno) -> FileDescriptor {
        let socket = try tcpSocket(nonBlocking: true)
        var address = loopbackAddress(port: port)
        let descriptor = socket.rawValue
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        do throws(Errno) {
            if result < 0 {
                let error = Errno.current
                guard error == .inProgress || error == .interrupted else { throw error }
                let events = try Poller.wait(for: descriptor, events: Int16(POLLOUT), timeoutMilliseconds: timeoutMilliseconds)
                guard events != 0 else { throw Errno.timedOut }
                var failure: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length) == 0 else { throw Errno.current }
                if failure != 0 { throw Errno(rawValue: failure) }
            }
            try socket.setNonBlocking(false)
            var on: Int32 = 1
            _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            return socket
        } catch {
            socket.close()
            throw error
        }
    }

    /// The local and the peer's IPv4 address (host byte order) and port of a connected socket (for
    /// a listening one, `peer` is 0.0.0.0:0).
    public func loopbackEndpoints() throws(Errno) -> (local: IPv4Endpoint, peer: IPv4Endpoint) {
        func endpoint(_ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> IPv4Endpoint? {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let result = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(rawValue, $0, &length) }
            }
            guard result == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
            return IPv4Endpoint(address: UInt32(bigEndian: address.sin_addr.s_addr), port: UInt16(bigEndian: address.sin_port))
        }
        guard let local = endpoint({ getsockname($0, $1, $2) }) else { throw Errno.current }
        return (local, endpoint({ getpeername($0, $1, $2) }) ?? IPv4Endpoint(address: 0, port: 0))
    }

    private static func tcpSocket(nonBlocking: Bool) throws(Errno) -> FileDescriptor {
        var flags = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { flags |= Int32(SOCK_NONBLOCK.rawValue) }
        let descriptor = try Errno.retryingInterrupts { Glibc.socket(AF_INET, flags, 0) }
        return FileDescriptor(owning: descriptor)
    }

    private static func loopbackAddress(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}

/// An IPv4 address (host byte order) and a port.
public struct IPv4Endpoint: Equatable, Sendable {
    public static let loopback: UInt32 = 0x7F00_0001
    public var address: UInt32
    public var port: UInt16

    public init(address: UInt32, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// As `/proc/net/tcp` writes it: `0100007F:1F90`, the address's bytes in memory order
    /// (little-endian here) and the port, in hex.
    var tableForm: String {
        func hex<T: BinaryInteger>(_ value: T, digits: Int) -> String {
            let text = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, digits - text.count)) + text
        }
        // The kernel prints the network-order word as an integer of this machine's byte order.
        return hex(address.bigEndian, digits: 8) + ":" + hex(port, digits: 4)
    }
}

/// Who owns a TCP socket on 127.0.0.1, read from the kernel's socket table (`/proc/net/tcp`, as
/// identd answers it): both ends of a loopback connection live in this network namespace, and
/// each socket's row carries the uid that created it. Only a row that names a live socket counts:
/// state ESTABLISHED (or LISTEN for a listener) and an inode — a socket its owner has closed shows
/// uid 0 and inode 0 (TIME_WAIT always, FIN_WAIT on older kernels), which must not read as root.
/// Root, or this process's own user, is let in (`PeerCredentials.isTrusted`), as the UNIX
/// control sockets do with SO_PEERCRED.
public enum LoopbackPeer {
    static let table = "/proc/net/tcp"

    /// The uid of the socket at `peer` connected to `local`, or nil (a peer not on 127.0.0.1 too).
    public static func owner(peer: IPv4Endpoint, local: IPv4Endpoint) -> uid_t? {
        guard peer.address == IPv4Endpoint.loopback, let text = readTable() else { return nil }
        return owner(peer: peer, local: local, in: text)
    }

    /// The uid of the socket listening on 127.0.0.1:`port` (or on every address), or nil.
    public static func listenerOwner(port: UInt16) -> uid_t? {
        guard let text = readTable() else { return nil }
        return listenerOwner(port: port, in: text)
    }

    /// `owner(peer:local:)` from the table's text: the row whose local address is the peer's and
    /// whose remote one is ours. A row reads `sl local rem st tx:rx tr:when retrnsmt uid timeout inode …`.
    public static func owner(peer: IPv4Endpoint, local: IPv4Endpoint, in table: String) -> uid_t? {
        row(in: table, local: [peer.tableForm], remote: local.tableForm, state: "01")
    }

    public static func listenerOwner(port: UInt16, in table: String) -> uid_t? {
        let any = IPv4Endpoint(address: 0, port: port).tableForm
        return row(in: table, local: [IPv4Endpoint(address: IPv4Endpoint.loopback, port: port).tableForm, any],
                   remote: "00000000:0000", state: "0A")
    }

    private static func row(in table: String, local: [String], remote: String, state: String) -> uid_t? {
        for row in table.split(separator: "\n").dropFirst() {
            let fields = row.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 9, local.contains(String(fields[1])), fields[2] == remote, fields[3] == state,
                  fields[9] != "0" else { continue }
            return uid_t(fields[7])
        }
        return nil
    }

    private static func readTable() -> String? {
        guard let file = try? FileDescriptor.open(table, flags: O_RDONLY) else { return nil }
        defer { file.close() }
        guard let text = try? file.readAll(limit: 64 << 20) else { return nil }
        return String(decoding: text, as: UTF8.self)
    }
}
