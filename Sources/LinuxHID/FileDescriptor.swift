import Glibc

/// An owned file descriptor (after swift-system's `FileDescriptor`, but a
/// class so that `deinit` closes it): every transport keeps its descriptors in
/// these, and nothing else calls `close(2)`. Reads and writes retry EINTR and
/// throw `Errno`; EAGAIN on a non-blocking descriptor surfaces as
/// `Errno.wouldBlock` for the caller to treat as "nothing more for now".
public final class FileDescriptor {
    /// The descriptor number, or −1 once closed.
    public private(set) var rawValue: Int32

    /// Takes ownership of `rawValue`: it is closed by `close()` or `deinit`.
    public init(owning rawValue: Int32) {
        self.rawValue = rawValue
    }

    deinit {
        close()
    }

    public var isOpen: Bool { rawValue >= 0 }

    /// `open(2)`; `flags` should include O_CLOEXEC.
    public static func open(
        _ path: String, flags: Int32, permissions: mode_t = 0
    ) throws(Errno) -> FileDescriptor {
        let descriptor = try Errno.retryingInterrupts {
            Glibc.open(path, flags, permissions)
        }
        return FileDescriptor(owning: descriptor)
    }

    /// Reads at most `count` bytes (one `read(2)`); an empty result is end of file.
    public func read(upToCount count: Int) throws(Errno) -> [UInt8] {
        guard count > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: count)
        let descriptor = rawValue
        let received = try Errno.retryingInterrupts {
            buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        }
        buffer.removeSubrange(received...)
        return buffer
    }

    /// One `write(2)`; returns how many bytes were written.
    @discardableResult
    public func write(_ bytes: [UInt8]) throws(Errno) -> Int {
        let descriptor = rawValue
        return try Errno.retryingInterrupts {
            bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        }
    }

    /// Closes the descriptor once; later calls do nothing. EINTR from
    /// `close(2)` is not retried (on Linux the descriptor is already gone).
    public func close() {
        guard rawValue >= 0 else { return }
        _ = Glibc.close(rawValue)
        rawValue = -1
    }
}
