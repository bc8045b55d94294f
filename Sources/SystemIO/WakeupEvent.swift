import CSystemIO
import Glibc

/// An eventfd (EFD_NONBLOCK | EFD_CLOEXEC) that worker threads `signal()` to
/// wake the poll loop, which waits on `descriptor` and `drain()`s it when it
/// becomes readable. Signals coalesce: many before one drain wake once.
/// Sendable: the descriptor never changes and eventfd reads and writes are
/// atomic in the kernel.
public final class WakeupEvent: Sendable {
    private let rawDescriptor: Int32

    public init() throws(Errno) {
        let descriptor = lk_eventfd_cloexec_nonblock()
        guard descriptor >= 0 else { throw Errno.current }
        rawDescriptor = descriptor
    }

    deinit {
        _ = close(rawDescriptor)
    }

    /// The descriptor to poll for input.
    public var descriptor: Int32 { rawDescriptor }

    /// Makes `descriptor` readable. Never blocks (EAGAIN means the counter
    /// is already at its maximum, i.e. already signalled).
    public func signal() {
        var one: UInt64 = 1
        _ = try? Errno.retryingInterrupts {
            withUnsafeBytes(of: &one) { write(rawDescriptor, $0.baseAddress, $0.count) }
        }
    }

    /// Resets the counter so `descriptor` is no longer readable.
    public func drain() {
        var count: UInt64 = 0
        _ = try? Errno.retryingInterrupts {
            withUnsafeMutableBytes(of: &count) { read(rawDescriptor, $0.baseAddress, $0.count) }
        }
    }
}
