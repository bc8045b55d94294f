import Authenticator
import CTAPHID
import Foundation

/// The real clocks: CLOCK_MONOTONIC for windows and timeouts, the wall clock for creation times.
public struct SystemClock: AuthenticatorClock {
    public init() {}

    public func monotonicMilliseconds() -> UInt64 { Self.monotonicNanoseconds() / 1_000_000 }

    public func unixSeconds() -> Int64 { Int64(time(nil)) }

    public static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    public static func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: monotonicNanoseconds()) }
}
