import Authenticator
import Foundation
import SystemIO

/// The real clocks: CLOCK_MONOTONIC for windows and timeouts, the wall clock for creation times.
public struct SystemClock: AuthenticatorClock {
    public init() {}

    public func monotonicNanoseconds() -> UInt64 { MonotonicClock.nanoseconds() }

    public func unixSeconds() -> Int64 { Int64(time(nil)) }
}
