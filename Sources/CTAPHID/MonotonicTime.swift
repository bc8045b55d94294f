/// Time in the state machine: plain CLOCK_MONOTONIC nanoseconds (`UInt64`), the one
/// representation the transports, the authenticator's clock port and the key's poll loop use
/// too. The state machine never reads a clock: the caller passes `now` into every event,
/// which keeps the protocol logic deterministic and testable.
extension UInt64 {
    /// `self` (nanoseconds) plus `milliseconds`, saturating at the end of time rather than trapping.
    func addingMilliseconds(_ milliseconds: UInt64) -> UInt64 {
        let (delta, overflow) = milliseconds.multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else { return .max }
        let (sum, sumOverflow) = addingReportingOverflow(delta)
        return sumOverflow ? .max : sum
    }
}
