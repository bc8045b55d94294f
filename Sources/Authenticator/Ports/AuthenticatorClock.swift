/// Time enters the sans-IO core only through this port, so tests drive it by hand.
public protocol AuthenticatorClock: Sendable {
    /// CLOCK_MONOTONIC nanoseconds since an arbitrary origin (power-up windows, token
    /// lifetimes): the one representation of monotonic time that CTAPHID's state machine, the
    /// transports and the key's poll loop use too. Durations in `AuthenticatorConfiguration`
    /// stay in milliseconds and are converted where they are compared.
    func monotonicNanoseconds() -> UInt64
    /// Wall-clock Unix seconds (credential creation times).
    func unixSeconds() -> Int64
}

