import CSystemIO
import Glibc

/// Socket calls on an owned descriptor (UNIX-domain, as the socket transport
/// and the control socket use them). All retry EINTR except `connect`, whose retry semantics differ
/// (a repeated call reports EALREADY), so its EINTR is thrown.
extension FileDescriptor {
    /// A UNIX-domain socket of `type` (e.g. SOCK_SEQPACKET), always
    /// close-on-exec, non-blocking if asked.
    public static func unixSocket(type: __socket_type, nonBlocking: Bool) throws(Errno) -> FileDescriptor {
        var flags = Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { flags |= Int32(SOCK_NONBLOCK.rawValue) }
        let descriptor = try Errno.retryingInterrupts { Glibc.socket(AF_UNIX, flags, 0) }
        return FileDescriptor(owning: descriptor)
    }

    public func bind(to address: UnixSocketAddress) throws(Errno) {
        let descriptor = rawValue
        _ = try Errno.retryingInterrupts {
            address.withSocketAddress { Glibc.bind(descriptor, $0, $1) }
        }
    }

    public func connect(to address: UnixSocketAddress) throws(Errno) {
        let descriptor = rawValue
        if address.withSocketAddress({ Glibc.connect(descriptor, $0, $1) }) < 0 {
            throw Errno.current
        }
    }

    public func listen(backlog: Int32) throws(Errno) {
        let descriptor = rawValue
        _ = try Errno.retryingInterrupts { Glibc.listen(descriptor, backlog) }
    }

    /// accept4(2): the new connection is close-on-exec and non-blocking from
    /// the start (no window in which a fork could inherit it).
    public func accept() throws(Errno) -> FileDescriptor {
        let descriptor = rawValue
        let client = try Errno.retryingInterrupts { lk_accept4_cloexec_nonblock(descriptor) }
        return FileDescriptor(owning: client)
    }

    /// The next connection waiting on this non-blocking listener, made blocking (its reads and
    /// writes wait, with poll for their deadlines), or nil when none waits. A client gone before
    /// it was accepted (ECONNABORTED) is passed over. Out of descriptors (EMFILE, ENFILE) or any
    /// other failure: nil after waiting up to 100 ms on `wakeup` — the connection stays in the
    /// backlog and the listener readable, so an accept loop that polled again at once would spin.
    public func acceptBlocking(orWaitOn wakeup: WakeupEvent) -> FileDescriptor? {
        while true {
            let client: FileDescriptor
            do {
                client = try accept()
            } catch where error == .connectionAborted {
                continue
            } catch where error == .wouldBlock {
                return nil
            } catch {
                _ = try? Poller.wait(for: [wakeup.descriptor], timeoutMilliseconds: 100)
                return nil
            }
            do {
                try client.setNonBlocking(false)
            } catch {
                client.close()
                continue
            }
            return client
        }
    }

    /// Receives one packet into a buffer of `capacity` bytes with MSG_TRUNC,
    /// so `size` is the packet's true length even when it did not fit
    /// (`bytes` holds at most `capacity` of them). `size` 0 is either an empty
    /// packet or the peer's end of stream.
    public func receivePacket(capacity: Int, flags: Int32 = 0) throws(Errno) -> (bytes: [UInt8], size: Int) {
        let descriptor = rawValue
        var buffer = [UInt8](repeating: 0, count: max(capacity, 1))
        let size = try Errno.retryingInterrupts {
            buffer.withUnsafeMutableBytes {
                Glibc.recv(descriptor, $0.baseAddress, capacity, flags | Int32(MSG_TRUNC))
            }
        }
        buffer.removeSubrange(min(size, capacity)...)
        return (buffer, size)
    }

    /// The waiting packets, up to `packets.slots` of them, in one recvmmsg(2) into `packets`' own
    /// storage (each cut to `packets.capacity` bytes, its true length beside it: MSG_TRUNC); returns
    /// how many. Zero never happens: no packet throws `.wouldBlock` (with MSG_DONTWAIT). The
    /// storage is the caller's to keep between calls, so a receive allocates nothing.
    @discardableResult
    public func receivePackets(into packets: inout ReceivedPackets, flags: Int32 = 0) throws(Errno) -> Int {
        let descriptor = rawValue
        let capacity = packets.capacity
        let slots = packets.slots
        packets.count = 0
        packets.next = 0
        let count = try Errno.retryingInterrupts {
            packets.storage.withUnsafeMutableBufferPointer { buffer in
                packets.sizes.withUnsafeMutableBufferPointer { sizes in
                    sizes.withMemoryRebound(to: size_t.self) { sizes in
                        Int(lk_receive_packets(descriptor, buffer.baseAddress, capacity, UInt32(slots), sizes.baseAddress, flags))
                    }
                }
            }
        }
        packets.count = count
        return count
    }

    /// Packets of `size` bytes stored back to back in `packets`, in one sendmmsg(2): returns how
    /// many were sent (a full socket buffer can stop it early); throws only if none was.
    @discardableResult
    public func sendPackets(_ packets: [UInt8], size: Int, flags: Int32) throws(Errno) -> Int {
        precondition(size > 0 && packets.count % size == 0, "packets must be whole")
        let descriptor = rawValue
        let count = packets.count / size
        var sent = 0
        while sent < count {
            let batch = min(count - sent, 64)
            let offset = sent * size
            let result: Int
            do {
                result = try Errno.retryingInterrupts {
                    packets.withUnsafeBufferPointer {
                        Int(lk_send_packets(descriptor, $0.baseAddress! + offset, size, UInt32(batch), flags))
                    }
                }
            } catch {
                if sent > 0 { return sent }   // what went out counts; the caller sees the shortfall
                throw error
            }
            sent += result
            if result < batch { break }
        }
        return sent
    }

    /// One `recv(2)` of at most `count` bytes (no MSG_TRUNC: for stream sockets, and MSG_PEEK
    /// looks without consuming). An empty result is the peer's end of stream.
    public func receive(upToCount count: Int, flags: Int32 = 0) throws(Errno) -> [UInt8] {
        let descriptor = rawValue
        var buffer = [UInt8](repeating: 0, count: max(count, 1))
        let size = try Errno.retryingInterrupts {
            buffer.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, count, flags) }
        }
        buffer.removeSubrange(size...)
        return buffer
    }

    /// Clears or sets O_NONBLOCK (fcntl F_SETFL).
    public func setNonBlocking(_ nonBlocking: Bool) throws(Errno) {
        let flags = fcntl(rawValue, F_GETFL)
        guard flags >= 0 else { throw Errno.current }
        let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        guard fcntl(rawValue, F_SETFL, wanted) == 0 else { throw Errno.current }
    }

    /// SO_SNDTIMEO: a blocking send that cannot go on for this long fails (EAGAIN) instead of
    /// waiting for a peer that does not read.
    public func setSendTimeout(milliseconds: Int) throws(Errno) {
        var timeout = timeval(tv_sec: milliseconds / 1_000, tv_usec: (milliseconds % 1_000) * 1_000)
        guard setsockopt(rawValue, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
            throw Errno.current
        }
    }

    /// One `send(2)` of `bytes` as a single packet; returns the bytes sent.
    @discardableResult
    public func send(_ bytes: [UInt8], flags: Int32) throws(Errno) -> Int {
        let descriptor = rawValue
        return try Errno.retryingInterrupts {
            bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, flags) }
        }
    }

    /// Whether the peer has hung up or shut down its sending side: poll(2)
    /// for POLLRDHUP with a zero timeout.
    public var isPeerHungUp: Bool {
        let hangUp = Int16(lk_pollrdhup()) | Int16(POLLHUP)
        var entry = pollfd(fd: rawValue, events: Int16(lk_pollrdhup()), revents: 0)
        return Glibc.poll(&entry, 1, 0) > 0 && entry.revents & hangUp != 0
    }
}
