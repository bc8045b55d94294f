/// Bounds how many lines one kind of warning writes: at most `burst` per `window`, after which
/// they are counted, and the next line that gets through says how many were left out. A client
/// that sends 20,000 malformed packets, or a flood of refused connections, then writes a few
/// dozen lines, not 20,000 (times are CLOCK_MONOTONIC nanoseconds, passed in).
public struct WarningThrottle: Sendable {
    let burst: Int
    let window: UInt64
    /// When the current window began (its first warning); nil before any.
    private var windowStart: UInt64?
    private var written = 0
    private var suppressed = 0

    public init(burst: Int = 20, windowNanoseconds: UInt64 = 10_000_000_000) {
        self.burst = burst
        self.window = windowNanoseconds
    }

    /// The line to write for `message` at `now`, or nil if this one is left out.
    public mutating func line(_ message: @autoclosure () -> String, now: UInt64) -> String? {
        if windowStart.map({ now &- $0 >= window }) ?? true {
            windowStart = now
            written = 0
        }
        guard written < burst else {
            suppressed += 1
            return nil
        }
        written += 1
        defer { suppressed = 0 }
        return suppressed == 0 ? message() : message() + " (\(suppressed) more like it were not logged)"
    }
}
