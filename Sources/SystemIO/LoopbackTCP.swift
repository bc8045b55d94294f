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
            return (socket, try socket.loopbackPorts().local)
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

    /// The local and the peer's port of a connected (or, for `local`, listening) IPv4 socket.
    public func loopbackPorts() throws(Errno) -> (local: UInt16, peer: UInt16) {
        func port(_ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> UInt16? {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let result = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(rawValue, $0, &length) }
            }
            return result == 0 ? UInt16(bigEndian: address.sin_port) : nil
        }
        guard let local = port({ getsockname($0, $1, $2) }) else { throw Errno.current }
        return (local, port({ getpeername($0, $1, $2) }) ?? 0)
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

/// Who owns the other end of a TCP connection on 127.0.0.1, read from the kernel's socket table
/// (`/proc/net/tcp`, as identd answers it): both ends live in this network namespace, and the
/// connecting socket's row carries the uid that created it. Root, or this process's own user, is
/// let in (`PeerCredentials.isTrusted`), as the UNIX control sockets do with SO_PEERCRED.
public enum LoopbackPeer {
    /// The uid of the socket at 127.0.0.1:`peerPort` connected to 127.0.0.1:`localPort`, or nil.
    public static func owner(peerPort: UInt16, localPort: UInt16, table: String = "/proc/net/tcp") -> uid_t? {
        guard let file = try? FileDescriptor.open(table, flags: O_RDONLY) else { return nil }
        defer { file.close() }
        guard let text = try? file.readAll(limit: 64 << 20) else { return nil }
        return owner(peerPort: peerPort, localPort: localPort, in: String(decoding: text, as: UTF8.self))
    }

    /// The same, from the table's text. A row reads `sl local rem st tx:rx tr:when retrnsmt uid …`,
    /// addresses as `0100007F:1F90`: the IPv4 address in host byte order (little-endian here) and
    /// the port, both in hex.
    public static func owner(peerPort: UInt16, localPort: UInt16, in table: String) -> uid_t? {
        let loopback = "0100007F"
        let wantedLocal = loopback + ":" + hex(peerPort)
        let wantedRemote = loopback + ":" + hex(localPort)
        for row in table.split(separator: "\n").dropFirst() {
            let fields = row.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 7, fields[1] == wantedLocal, fields[2] == wantedRemote else { continue }
            return uid_t(fields[7])
        }
        return nil
    }

    private static func hex(_ port: UInt16) -> String {
        let digits = String(port, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }
}
