import Authenticator
import CTAPHID
import CredentialStore
import FIDOCrypto
import Foundation
import KeyService
import LinuxHID
import Presence
import Synchronization
import SystemIO

/// The real poll loop and socket transport in this process, served on a background thread.
final class InProcessServer: @unchecked Sendable {
    let key: BenchKey
    let path: String
    let runner: KeyRunner
    private let thread: Thread

    init() throws {
        let directory = NSTemporaryDirectory() + "latchkey-bench-\(UUID().uuidString)"
        path = directory + ".sock"
        let logger = Logger(level: .error)
        var assembly = KeyAssembly(specification: BenchKey.specification, storeDirectory: directory,
                                   transport: .socket(path: path), deviceName: "bench", presence: AutoPresence(logger: logger),
                                   logger: logger)
        assembly.storeOptions = StoreOptions(counterReservationBlock: 1024)
        let assembled = try assembly.assemble()
        key = BenchKey(assembled: assembled, directory: directory)
        runner = assembled.runner
        let runner = self.runner
        thread = Thread { runner.run() }
        thread.start()
    }

    func stop() {
        runner.requestStop()
        while !thread.isFinished { usleep(1000) }
        key.close()
    }
}

enum TransportBenchmarks {
    static func run(report: Report, baselines: CryptoBaselines, seconds: Double) throws {
        let section = "socket"
        let server = try InProcessServer()
        defer { server.stop() }
        let client = try BenchClient(path: server.path)
        defer { client.close() }
        let small = [UInt8](repeating: 0xA5, count: 57)
        let large = [UInt8](repeating: 0x5A, count: 7609)
        let ping = CTAPHIDCommand.ping.rawValue
        let echo = try EchoBaseline.measure(seconds: seconds)
        report.add(section, echo, note: "baseline: no key, two threads echoing one report")
        report.add(section, try Stopwatch.measure("PING 57 B (one report each way)", seconds: seconds) {
            _ = try client.transact(command: ping, payload: small)
        }, baseline: echo, note: "round trip through the poll loop")
        report.add(section, try Stopwatch.measure("PING 7609 B (129 reports each way)", seconds: seconds) {
            _ = try client.transact(command: ping, payload: large)
        })

        let credential = try server.key.register(rpID: "bench.example", userID: [9], resident: false)
        let message = BenchKey.getAssertionMessage(rpID: "bench.example", allow: [credential])
        let cbor = CTAPHIDCommand.cbor.rawValue
        let core = try Stopwatch.measure("core getAssertion", seconds: seconds) { try server.key.expectSuccess(message) }
        let overSocket = try Stopwatch.measure("getAssertion over socket + CTAPHID", seconds: seconds) {
            let reply = try client.transact(command: cbor, payload: message)
            guard reply.first == 0 else { throw BenchError.failed("status \(reply.first ?? 0xFF)") }
        }
        // What a getAssertion over a socket cannot avoid: one report each way between two threads
        // and one ES256 signature in between (the echoing thread signs before it answers).
        let signer = try P256.Signing.PrivateKey()
        let echoAndSign = try EchoBaseline.measure("64 B echo + one ES256 sign (baseline)", seconds: seconds) {
            _ = try? signer.signature(for: message)
        }
        report.add(section, echoAndSign, note: "baseline: the OS round trip plus the signature")
        report.add(section, overSocket, baseline: echoAndSign, target: "≤ +50 µs")
        report.addValue(section, "transport overhead per getAssertion (median)", value: overSocket.median - core.median,
                        unit: "ns", note: "over socket − in process; target ≤ 50 µs")
        report.addValue(section, "getAssertion over socket − echo + sign baseline", value: overSocket.median - echoAndSign.median,
                        unit: "ns", note: "Latchkey's own share of the round trip; target ≤ 50 µs")
    }
}

enum ConcurrencyBenchmarks {
    static func run(report: Report, seconds: Double, clients: Int = 8) throws {
        let server = try InProcessServer()
        defer { server.stop() }
        let credential = try server.key.register(rpID: "bench.example", userID: [7], resident: false)
        let message = BenchKey.getAssertionMessage(rpID: "bench.example", allow: [credential])
        struct Tally: Sendable { var latencies: [Double] = []; var busy = 0; var errors: [String] = [] }
        let tally = Mutex(Tally())
        let deadline = Stopwatch.now() + UInt64(seconds * 1e9)
        var threads: [Thread] = []
        for _ in 0..<clients {
            let thread = Thread {
                var local = Tally()
                do {
                    let client = try BenchClient(path: server.path)
                    defer { client.close() }
                    while Stopwatch.now() < deadline {
                        let start = Stopwatch.now()
                        do {
                            let reply = try client.transact(command: CTAPHIDCommand.cbor.rawValue, payload: message)
                            if reply.first == 0 { local.latencies.append(Double(Stopwatch.now() - start)) }
                            else { local.errors.append("CTAP status \(reply.first ?? 0xFF)") }
                        } catch BenchClient.Failure.hid(CTAPHIDError.channelBusy.rawValue) {
                            local.busy += 1   // the spec's answer while another channel's request runs: retry
                        }
                    }
                } catch {
                    local.errors.append("\(error)")
                }
                let finished = local
                tally.withLock { $0.latencies += finished.latencies; $0.busy += finished.busy; $0.errors += finished.errors }
            }
            threads.append(thread)
            thread.start()
        }
        for thread in threads { while !thread.isFinished { usleep(2000) } }
        let result = tally.withLock { $0 }
        let measurement = Measurement(name: "getAssertion, \(clients) clients on \(clients) channels", samples: result.latencies)
        let throughput = Double(result.latencies.count) / seconds
        report.add("concurrency", measurement,
                   note: String(format: "%.0f ops/s total, %d CHANNEL_BUSY retries, %d errors", throughput, result.busy, result.errors.count))
        if !result.errors.isEmpty { throw BenchError.failed("concurrency errors: \(result.errors.prefix(3))") }
    }
}
