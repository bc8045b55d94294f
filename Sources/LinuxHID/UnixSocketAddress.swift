import Glibc

/// A filesystem `sockaddr_un` built from a path, checked against the size of
/// `sun_path` (108 bytes on Linux, of which one is the terminating NUL).
struct UnixSocketAddress {
    /// The longest path that fits `sun_path` with its NUL terminator.
    static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    private var storage = sockaddr_un()
    let path: String

    init(path: String) throws(TransportError) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, !bytes.contains(0) else {
            throw TransportError.system(
                call: "bind", errno: EINVAL,
                message: "the socket path \"\(path)\" is empty or contains a NUL byte; give a filesystem path such as $XDG_RUNTIME_DIR/latchkey.sock")
        }
        guard bytes.count <= Self.maximumPathLength else {
            throw TransportError.system(
                call: "bind", errno: ENAMETOOLONG,
                message: "the socket path \"\(path)\" is \(bytes.count) bytes long, but UNIX socket paths are limited to \(Self.maximumPathLength) bytes (sun_path); choose a shorter path, e.g. under $XDG_RUNTIME_DIR or /tmp")
        }
        self.path = path
        storage.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &storage.sun_path) { sunPath in
            sunPath.copyBytes(from: bytes)   // the rest is already zero: NUL-terminated
        }
    }

    /// Calls `body` (a socket call such as bind or connect) with the address
    /// as a `sockaddr` pointer and its length; returns what `body` returns.
    func withSocketAddress(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = storage
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
