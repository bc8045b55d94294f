import CTAPHID
import Foundation
import Glibc
import Synchronization

/// `--soak BINARY [--requests N] [--clients C]`: one real `latchkey serve` process (BINARY, on a
/// socket, presence auto, a fresh store) answering N getAssertions (default 1,000,000) from C
/// clients (default 8), each on its own connection and channel. Its resident memory and open
/// descriptors are read from /proc after a warm-up (the first 5 %) and at the end: a leak shows
/// as growth. The issue-34 targets: RSS growth under 1 MB after warm-up, no descriptor growth.
enum SoakBenchmark {
    struct Sample: Sendable, Equatable { var rssKilobytes: Int; var descriptors: Int }

    static func sample(_ pid: pid_t) -> Sample {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? -1
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
        return Sample(rssKilobytes: rss, descriptors: descriptors)
    }

    static func run(report: Report, binary: String, requests: Int, clients: Int) throws {
        let directory = NSTemporaryDirectory() + "latchkey-soak-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/k.sock"
        let key = Process()
        key.executableURL = URL(fileURLWithPath: binary)
        key.arguments = ["serve", "--transport", "socket:" + socket, "--presence", "auto", "--store", directory + "/store",
                         "--name", "soak", "--log-level", "error"]
        key.standardInput = FileHandle.nullDevice
        try key.run()
        defer { if key.isRunning { key.terminate(); key.waitUntilExit() } }
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: socket) {
            guard Date() < deadline, key.isRunning else { throw BenchError.failed("the key did not come up on \(socket)") }
            usleep(10_000)
        }
        let setup = try BenchClient.open("socket:" + socket)
        let credential = try RemoteBenchmarks.register(setup)
        setup.close()
        let message = BenchKey.getAssertionMessage(rpID: "bench.example", allow: [credential])

        let perClient = max(1, requests / clients)
        let warmUp = max(1, perClient / 20)
        let warmedUp = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let busy = Atomic<Int>(0)
        let warmSample = Mutex<Sample?>(nil)
        // Both samples are taken with every client connected: the end one by the last client to
        // finish, before any closes (a closed connection would read as a descriptor freed).
        let finished = Atomic<Int>(0)
        let endSample = Mutex<Sample?>(nil)
        let started = Stopwatch.now()
        var threads: [Thread] = []
        for _ in 0..<clients {
            let thread = Thread {
                do {
                    let client = try BenchClient.open("socket:" + socket)
                    defer { client.close() }
                    var done = 0
                    while done < perClient {
                        do {
                            let reply = try client.transact(command: CTAPHIDCommand.cbor.rawValue, payload: message)
                            guard reply.first == 0 else { throw BenchError.failed("status \(reply.first ?? 0xFF)") }
                            done += 1
                        } catch BenchClient.Failure.hid(CTAPHIDError.channelBusy.rawValue) {
                            busy.add(1, ordering: .relaxed)
                        }
                        if done == warmUp, warmedUp.add(1, ordering: .acquiringAndReleasing).newValue == clients {
                            warmSample.withLock { $0 = sample(key.processIdentifier) }
                        }
                    }
                    if finished.add(1, ordering: .acquiringAndReleasing).newValue == clients {
                        endSample.withLock { $0 = sample(key.processIdentifier) }
                    }
                    while endSample.withLock({ $0 == nil }) { usleep(1_000) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            threads.append(thread)
            thread.start()
        }
        for thread in threads { while !thread.isFinished { usleep(20_000) } }
        let elapsed = Double(Stopwatch.now() - started) / 1e9
        let errors = failures.withLock { $0 }
        if !errors.isEmpty { throw BenchError.failed("soak: \(errors.count) clients failed: \(errors.prefix(2))") }
        guard let warm = warmSample.withLock({ $0 }), let end = endSample.withLock({ $0 }) else {
            throw BenchError.failed("soak: a sample is missing")
        }
        let total = perClient * clients
        let growth = Double(end.rssKilobytes - warm.rssKilobytes) / 1024
        report.addValue("soak", "\(total) getAssertions from \(clients) clients: time", value: elapsed * 1e9, unit: "ns",
                        note: String(format: "%.0f ops/s, %d CHANNEL_BUSY retries", Double(total) / elapsed, busy.load(ordering: .relaxed)))
        report.addValue("soak", "key RSS after warm-up (\(warmUp * clients) requests)", value: Double(warm.rssKilobytes) / 1024,
                        unit: "MB", note: "/proc/PID/status VmRSS")
        report.addValue("soak", "key RSS growth after warm-up", value: growth, unit: "MB",
                        note: String(format: "%.1f → %.1f MB; target < 1 MB", Double(warm.rssKilobytes) / 1024,
                                     Double(end.rssKilobytes) / 1024))
        report.addValue("soak", "key descriptor growth after warm-up", value: Double(end.descriptors - warm.descriptors), unit: "",
                        note: "\(warm.descriptors) → \(end.descriptors) open; target 0")
    }
}
