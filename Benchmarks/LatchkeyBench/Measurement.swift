import Foundation

/// Latency samples of one operation, summarised robustly (median and p99, not the mean).
struct Measurement: Sendable {
    var name: String
    var samples: [Double]   // nanoseconds per operation

    var median: Double { percentile(0.5) }
    var p99: Double { percentile(0.99) }
    var operationsPerSecond: Double { median > 0 ? 1e9 / median : 0 }

    func percentile(_ fraction: Double) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sorted = samples.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))
        return sorted[index]
    }
}

enum Stopwatch {
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Run `body` repeatedly for about `seconds` (after a short warm-up), timing each call.
    static func measure(_ name: String, seconds: Double, minimumIterations: Int = 20,
                        _ body: () throws -> Void) rethrows -> Measurement {
        for _ in 0..<min(50, minimumIterations) { try body() }
        var samples: [Double] = []
        samples.reserveCapacity(4096)
        let deadline = now() + UInt64(seconds * 1e9)
        while samples.count < minimumIterations || now() < deadline {
            let start = now()
            try body()
            samples.append(Double(now() - start))
        }
        return Measurement(name: name, samples: samples)
    }
}

extension Stopwatch {
    /// Two operations timed in alternation (a, b, a, b, …), so that a machine that speeds up or
    /// slows down during the run moves both alike and their ratio stays meaningful.
    static func measureInterleaved(_ nameA: String, _ nameB: String, seconds: Double, minimumIterations: Int = 20,
                                   _ a: () throws -> Void, _ b: () throws -> Void) rethrows -> (Measurement, Measurement) {
        for _ in 0..<min(50, minimumIterations) { try a(); try b() }
        var samplesA: [Double] = [], samplesB: [Double] = []
        samplesA.reserveCapacity(4096); samplesB.reserveCapacity(4096)
        let deadline = now() + UInt64(seconds * 1e9)
        while samplesA.count < minimumIterations || now() < deadline {
            var start = now()
            try a()
            samplesA.append(Double(now() - start))
            start = now()
            try b()
            samplesB.append(Double(now() - start))
        }
        return (Measurement(name: nameA, samples: samplesA), Measurement(name: nameB, samples: samplesB))
    }
}

/// Resident set size of this process, from /proc/self/status.
func residentMemoryBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let kilobytes = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return kilobytes * 1024
    }
    return 0
}

func formatDuration(_ nanoseconds: Double) -> String {
    if nanoseconds >= 1e9 { return String(format: "%.2f s", nanoseconds / 1e9) }
    if nanoseconds >= 1e6 { return String(format: "%.2f ms", nanoseconds / 1e6) }
    return String(format: "%.1f µs", nanoseconds / 1e3)
}
