import CSystemIO
import Glibc

/// Who is at the other end of a connected UNIX socket (SO_PEERCRED): for a server, the process
/// that connected; for a client, the process that called listen(2).
public struct PeerCredentials: Sendable, Equatable {
    public var uid: uid_t
    public var pid: pid_t

    public init(uid: uid_t, pid: pid_t) {
        self.uid = uid
        self.pid = pid
    }

    /// Whether a peer running as `uid` may be talked to: this process's user, or root (who can
    /// read any process's memory anyway), as ssh-agent decides for its socket.
    public static func isTrusted(uid: uid_t) -> Bool {
        uid == getuid() || uid == 0
    }

    /// "uid 1001 (bob)", or "uid 1001" when the user database has no name for it.
    public static func describe(uid: uid_t) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 1024)
        if getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, let result, let name = result.pointee.pw_name {
            let text = String(cString: name)
            // Names from the user database are shown only when they are plain.
            if !text.isEmpty, text.utf8.count <= 32,
               text.utf8.allSatisfy({ $0 >= 0x21 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }) {
                return "uid \(uid) (\(text))"
            }
        }
        return "uid \(uid)"
    }
}

extension FileDescriptor {
    /// SO_PEERCRED of a connected UNIX socket.
    public func peerCredentials() throws(Errno) -> PeerCredentials {
        var uid: UInt32 = 0
        var pid: Int32 = 0
        guard lk_peer_credentials(rawValue, &uid, &pid) == 0 else { throw Errno.current }
        return PeerCredentials(uid: uid_t(uid), pid: pid_t(pid))
    }

    /// Whether the peer runs as this process's user or root (`PeerCredentials.isTrusted`); a
    /// peer whose credentials cannot be read is not.
    public func peerIsTrusted() -> Bool {
        (try? peerCredentials()).map { PeerCredentials.isTrusted(uid: $0.uid) } ?? false
    }
}

/// A listening UNIX socket that appeared at its path only once it accepted connections.
///
/// Every socket the project listens on (the socket transport, a key's control socket, the rig's)
/// is bound under a temporary name in its directory, given mode 0600, put in the listening
/// state, and only then linked onto its path. So a path that exists is accepting: a client
/// that waits for the file to appear is never refused, and a key starting on a path cannot take
/// another starting key's socket for a stale one (a socket at the path that refuses
/// connections was left by a key that is gone).
public struct PublishedSocket {
    public enum Failure: Error, Equatable {
        /// The temporary name could not be bound (`path` is the temporary name's directory).
        case bind(Errno)
        case mode(chmod: Errno?, actual: mode_t)
        case listen(Errno)
        /// Something that is not a socket is at the path.
        case notASocket
        /// A socket that accepts connections is at the path.
        case inUse
        /// The socket at the path cannot be probed (another user's).
        case permissionDenied
        /// Linking or renaming onto the path failed.
        case publish(Errno)
    }

    public let path: String
    public let descriptor: FileDescriptor
    /// The socket file's device and inode: `unpublish` removes the path only while it is this file.
    public let device: UInt64
    public let inode: UInt64

    /// Creates the socket (`type`, close-on-exec, non-blocking if asked) and publishes it at `path`.
    /// A stale socket at `path` (connect is refused) is replaced; a live one is `.inUse`.
    public static func listen(at path: String, type: __socket_type, backlog: Int32,
                              nonBlocking: Bool) throws(Failure) -> PublishedSocket {
        let final: UnixSocketAddress
        do {
            final = try UnixSocketAddress(path: path)
        } catch {
            throw .bind(error)
        }
        let descriptor: FileDescriptor
        do {
            descriptor = try .unixSocket(type: type, nonBlocking: nonBlocking)
        } catch {
            throw .bind(error)
        }
        let temporary = try bindTemporary(descriptor, near: path)
        // From here on the temporary name goes away whatever happens; the path gets the file.
        defer { try? FileSystem.remove(temporary) }
        do throws(Failure) {
            do {
                try FileSystem.setMode(temporary, 0o600)
            } catch {
                throw .mode(chmod: error, actual: 0)
            }
            guard let status = try? FileSystem.linkStatus(temporary) else { throw .mode(chmod: nil, actual: 0) }
            guard status.st_mode & 0o7777 == 0o600 else { throw .mode(chmod: nil, actual: status.st_mode & 0o7777) }
            do {
                try descriptor.listen(backlog: backlog)
            } catch {
                throw .listen(error)
            }
            try publish(temporary, at: final, type: type)
            return PublishedSocket(path: path, descriptor: descriptor, device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
        } catch {
            descriptor.close()
            throw error
        }
    }

    /// Whether the file at `path` is still this socket.
    public var isStillPublished: Bool {
        guard let status = try? FileSystem.linkStatus(path) else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// Removes the path if it is still this socket (another key may have replaced it since).
    public func unpublish() {
        if isStillPublished { try? FileSystem.remove(path) }
    }

    /// Binds to `.lk-XXXXXXXX` beside `path` (a fresh name on a collision).
    private static func bindTemporary(_ descriptor: FileDescriptor, near path: String) throws(Failure) -> String {
        let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? ""
        var attempts = 0
        while true {
            let name = directory + ".lk-" + String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
            do {
                try descriptor.bind(to: UnixSocketAddress(path: name))
                return name
            } catch where error == .addressInUse && attempts < 8 {
                attempts += 1
            } catch {
                throw .bind(error)
            }
        }
    }

    /// link(2) onto the path, which fails if anything is there; a stale socket is then replaced by
    /// rename(2), atomically.
    private static func publish(_ temporary: String, at final: UnixSocketAddress, type: __socket_type) throws(Failure) {
        for _ in 0..<4 {
            do {
                try FileSystem.link(temporary, to: final.path)
                return
            } catch where error == .fileExists {
                // Something is there: look at it below.
            } catch where error == .notPermitted || error == .operationNotSupported {
                // A filesystem without hard links: rename, after the same look.
                if (try? FileSystem.linkStatus(final.path)) == nil {
                    do { try FileSystem.rename(temporary, to: final.path) } catch { throw .publish(error) }
                    return
                }
            } catch {
                throw .publish(error)
            }
            guard let status = try? FileSystem.linkStatus(final.path) else { continue }   // gone meanwhile
            guard status.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket }
            switch probe(final, type: type) {
            case .live: throw .inUse
            case .forbidden: throw .permissionDenied
            case .gone: continue
            case .stale:
                do {
                    try FileSystem.rename(temporary, to: final.path)
                } catch {
                    throw .publish(error)
                }
                return
            }
        }
        throw .inUse
    }

    private enum Probe { case live, stale, gone, forbidden }

    /// Connects to the socket at `address`: refused means nobody listens (published sockets are
    /// listening from the moment they appear, so that is a key that is gone).
    private static func probe(_ address: UnixSocketAddress, type: __socket_type) -> Probe {
        guard let probe = try? FileDescriptor.unixSocket(type: type, nonBlocking: true) else { return .live }
        defer { probe.close() }
        do {
            try probe.connect(to: address)
            return .live
        } catch {
            switch error {
            case .connectionRefused: return .stale
            case .noSuchFileOrDirectory: return .gone
            case .permissionDenied, .notPermitted: return .forbidden
            default: return .live   // busy (EAGAIN), another socket type: something lives there
            }
        }
    }
}
