import Glibc

/// CLOCK_MONOTONIC, the one clock the project's timeouts, windows and deadlines are measured
/// on. The sans-IO layers never read it: time reaches them as a parameter (plain nanoseconds)
/// or through an injected clock, so tests drive it by hand.
public enum MonotonicClock {
    /// Nanoseconds since an arbitrary origin (boot).
    public static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// The same clock in milliseconds, for waits measured in poll(2)'s unit.
    public static func milliseconds() -> UInt64 { nanoseconds() / 1_000_000 }
}
