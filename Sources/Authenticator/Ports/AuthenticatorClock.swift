/// Time enters the sans-IO core only through this port, so tests drive it by hand.
public protocol AuthenticatorClock: Sendable {
    /// Monotonic milliseconds since an arbitrary origin (power-up windows, token lifetimes).
    func monotonicMilliseconds() -> UInt64
    /// Wall-clock Unix seconds (credential creation times).
    func unixSeconds() -> Int64
}
