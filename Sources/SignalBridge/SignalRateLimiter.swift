/// A token bucket per origin: a burst of `capacity` signals, then `refillPerSecond`. A page that
/// loops on signals gets its first ones applied and the rest refused at once (never queued, never
/// waited on), so it costs the store nothing and floods nothing. Time is a parameter (seconds on
/// a monotonic clock), so tests drive it.
public struct SignalRateLimiter: Sendable {
    public let capacity: Double
    public let refillPerSecond: Double
    /// The most origins remembered; the one seen longest ago is forgotten first.
    public let maximumOrigins: Int
    private var buckets: [String: (tokens: Double, updated: Double)] = [:]

    /// A site sends a handful of signals after a sign-in or an account change: 16 at once, then
    /// one a second, is far above that and far below what would load the key.
    public init(capacity: Double = 16, refillPerSecond: Double = 1, maximumOrigins: Int = 1000) {
        self.capacity = capacity
        self.refillPerSecond = refillPerSecond
        self.maximumOrigins = maximumOrigins
    }

    /// Takes a token for `origin` at time `now`; false when its bucket is empty.
    public mutating func admit(_ origin: String, now: Double) -> Bool {
        var bucket = buckets[origin] ?? (capacity, now)
        bucket.tokens = min(capacity, bucket.tokens + max(0, now - bucket.updated) * refillPerSecond)
        bucket.updated = now
        let admitted = bucket.tokens >= 1
        if admitted { bucket.tokens -= 1 }
        if buckets[origin] == nil, buckets.count >= maximumOrigins,
           let oldest = buckets.min(by: { $0.value.updated < $1.value.updated })?.key {
            buckets[oldest] = nil
        }
        buckets[origin] = bucket
        return admitted
    }
}
