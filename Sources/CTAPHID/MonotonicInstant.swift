/// A point on a monotonic clock, in nanoseconds from an arbitrary origin.
///
/// The state machine never reads a clock: the caller passes `now` into every
/// event, which keeps the protocol logic deterministic and testable.
public struct MonotonicInstant: Comparable, Hashable, Sendable {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// Convenience for tests and callers that think in milliseconds.
    public init(milliseconds: UInt64) {
        let (product, overflow) = milliseconds.multipliedReportingOverflow(by: 1_000_000)
        self.nanoseconds = overflow ? .max : product
    }

    /// `self` plus `milliseconds`, saturating at the end of time rather than trapping.
    public func adding(milliseconds: UInt64) -> MonotonicInstant {
        let delta = MonotonicInstant(milliseconds: milliseconds).nanoseconds
        let (sum, overflow) = nanoseconds.addingReportingOverflow(delta)
        return MonotonicInstant(nanoseconds: overflow ? .max : sum)
    }

    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }
}
