import Glibc

/// An owned file descriptor, closed in `deinit` (thin syscall wrapper, STYLE.md 7).
final class FileDescriptor {
    let rawValue: Int32

    init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    deinit {
        _ = Glibc.close(rawValue)
    }

    /// open(2) with O_CLOEXEC | O_NOFOLLOW added; EINTR retried.
    static func open(_ path: String, flags: Int32, mode: mode_t = 0o600) throws(Errno) -> FileDescriptor {
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC | O_NOFOLLOW, mode)
            if fd >= 0 { return FileDescriptor(rawValue: fd) }
            if errno != EINTR { throw Errno.current }
        }
    }

    func setMode(_ mode: mode_t) throws(Errno) {
        if fchmod(rawValue, mode) != 0 { throw Errno.current }
    }

    func status() throws(Errno) -> stat {
        var info = stat()
        if fstat(rawValue, &info) != 0 { throw Errno.current }
        return info
    }

    func writeAll(_ bytes: [UInt8]) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glibc.write(rawValue, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw Errno.current
            }
            offset += written
        }
    }

    /// Reads up to `limit` bytes (to end of file).
    func readAll(limit: Int) throws(Errno) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: limit + 1)
        var total = 0
        while total < buffer.count {
            let count = buffer.withUnsafeMutableBytes { raw in
                Glibc.read(rawValue, raw.baseAddress! + total, raw.count - total)
            }
            if count < 0 {
                if errno == EINTR { continue }
                wipe(&buffer)
                throw Errno.current
            }
            if count == 0 { break }
            total += count
        }
        let result = Array(buffer[0..<total])
        wipe(&buffer)
        return result
    }

    func synchronize() throws(Errno) {
        if fsync(rawValue) != 0 { throw Errno.current }
    }

    /// flock(2) exclusive, non-blocking; false when another open file description holds it.
    func tryLockExclusive() throws(Errno) -> Bool {
        while true {
            if flock(rawValue, LOCK_EX | LOCK_NB) == 0 { return true }
            let error = errno
            if error == EWOULDBLOCK { return false }
            if error != EINTR { throw Errno(rawValue: error) }
        }
    }
}

/// An errno value with its message.
struct Errno: Error, Equatable {
    let rawValue: Int32

    static var current: Errno { Errno(rawValue: errno) }

    var message: String { String(cString: strerror(rawValue)) }

    static let noEntry = Errno(rawValue: ENOENT)
    static let exists = Errno(rawValue: EEXIST)
}
