import Glibc

/// An owned file descriptor (after swift-system's `FileDescriptor`, but a
/// class so that `deinit` closes it): every module keeps its descriptors in
/// these, and nothing outside SystemIO calls `open(2)`, `read(2)`, `write(2)`
/// or `close(2)`. Reads and writes retry EINTR and
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

    /// `open(2)` with O_CLOEXEC added (nothing the project opens is meant for a child).
    public static func open(
        _ path: String, flags: Int32, permissions: mode_t = 0
    ) throws(Errno) -> FileDescriptor {
        let descriptor = try Errno.retryingInterrupts {
            Glibc.open(path, flags | O_CLOEXEC, permissions)
        }
        return FileDescriptor(owning: descriptor)
    }

    /// Creates `path` as a new private file: O_CREAT | O_EXCL | O_NOFOLLOW (never through a
    /// link, never an existing file), then mode 0600 set explicitly, whatever the umask.
    /// An existing file is `.fileExists`.
    public static func createPrivateFile(_ path: String, flags: Int32 = O_RDWR) throws(Errno) -> FileDescriptor {
        let descriptor = try open(path, flags: flags | O_CREAT | O_EXCL | O_NOFOLLOW, permissions: 0o600)
        try descriptor.setMode(0o600)
        return descriptor
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

    /// One `read(2)` into the caller's buffer (no allocation: for the hot paths); returns the
    /// byte count, 0 at end of file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        let descriptor = rawValue
        return try Errno.retryingInterrupts { Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
    }

    /// One `write(2)`; returns how many bytes were written.
    @discardableResult
    public func write(_ bytes: [UInt8]) throws(Errno) -> Int {
        let descriptor = rawValue
        return try Errno.retryingInterrupts {
            bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        }
    }

    /// Writes all of `bytes`, retrying short writes and EINTR.
    public func writeAll(_ bytes: [UInt8]) throws(Errno) {
        var offset = 0
        let descriptor = rawValue
        while offset < bytes.count {
            let start = offset
            offset += try Errno.retryingInterrupts {
                bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + start, $0.count - start) }
            }
        }
    }

    /// Reads to end of file, at most `limit` bytes (one more is read to tell a longer file);
    /// the read buffer is wiped, as it may hold a secret.
    public func readAll(limit: Int) throws(Errno) -> [UInt8] {
        // The buffer starts at the file's size (a regular file) or 64 KiB and doubles as needed:
        // memory follows what there is to read, not the limit (a 1 GiB limit once cost 1 GiB for
        // a 40 KB store). Every buffer given up is wiped first: what is read may be secret.
        var size = stat()
        let expected = fstat(rawValue, &size) == 0 && (size.st_mode & S_IFMT) == S_IFREG ? Int(size.st_size) + 1 : 64 << 10
        var buffer = [UInt8](repeating: 0, count: max(1, min(limit + 1, expected)))
        defer { buffer.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) } }
        var total = 0
        let descriptor = rawValue
        while total <= limit {
            if total == buffer.count {
                var larger = [UInt8](repeating: 0, count: min(limit + 1, buffer.count * 2))
                larger.withUnsafeMutableBytes { target in
                    buffer.withUnsafeBytes { target.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: total) }
                }
                buffer.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) }
                buffer = larger
            }
            let start = total
            let count = try Errno.retryingInterrupts {
                buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + start, $0.count - start) }
            }
            if count == 0 { break }
            total += count
        }
        return Array(buffer[0..<total])
    }

    /// fchmod(2).
    public func setMode(_ mode: mode_t) throws(Errno) {
        if fchmod(rawValue, mode) != 0 { throw Errno.current }
    }

    /// fstat(2).
    public func status() throws(Errno) -> stat {
        var info = stat()
        if fstat(rawValue, &info) != 0 { throw Errno.current }
        return info
    }

    /// ftruncate(2).
    public func truncate(to length: Int) throws(Errno) {
        if ftruncate(rawValue, off_t(length)) != 0 { throw Errno.current }
    }

    /// fsync(2).
    public func synchronize() throws(Errno) {
        if fsync(rawValue) != 0 { throw Errno.current }
    }

    /// flock(2) exclusive, non-blocking; false when another open file description holds it.
    /// flock(LOCK_EX), waiting for it; released when the descriptor is closed.
    public func lockExclusive() throws(Errno) {
        let descriptor = rawValue
        _ = try Errno.retryingInterrupts { flock(descriptor, LOCK_EX) }
    }

    public func tryLockExclusive() throws(Errno) -> Bool {
        let descriptor = rawValue
        do {
            _ = try Errno.retryingInterrupts { flock(descriptor, LOCK_EX | LOCK_NB) }
            return true
        } catch where error == .wouldBlock {
            return false
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
