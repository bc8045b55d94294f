import Glibc

/// A filesystem `sockaddr_un` built from a path, checked against the size of
/// `sun_path` (108 bytes on Linux, of which one is the terminating NUL).
/// An empty path or one with a NUL byte is `.invalidArgument`, one too long
/// for `sun_path` is `.nameTooLong`: callers word the message for their user.
public struct UnixSocketAddress {
    /// The longest path that fits `sun_path` with its NUL terminator.
    public static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    private var storage = sockaddr_un()
    public let path: String

    public init(path: String) throws(Errno) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, !bytes.contains(0) else { throw .invalidArgument }
        guard bytes.count <= Self.maximumPathLength else { throw .nameTooLong }
        self.path = path
        storage.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &storage.sun_path) { sunPath in
            sunPath.copyBytes(from: bytes)   // the rest is already zero: NUL-terminated
        }
    }

    /// Calls `body` (a socket call such as bind or connect) with the address
    /// as a `sockaddr` pointer and its length; returns what `body` returns.
    public func withSocketAddress(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = storage
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
