import CBOR
import CTAP
import CTAPHID
import Foundation

/// `--remote TARGET …`: the same round trips against keys that are already running, over their
/// socket (`socket:PATH`) or their hidraw node (`/dev/hidrawN`, i.e. through uhid and the kernel's
/// HID stack). Used inside the VM rig (scripts/bench --vm), where only ratios mean anything (TCG):
/// the first target's figures are ratios to an in-process socketpair echo, every later target's
/// to the first target's same operation. Keys must answer presence at once (`--presence auto`).
enum RemoteBenchmarks {
    static func run(report: Report, targets: [String], seconds: Double) throws {
        let echo = try EchoBaseline.measure(seconds: seconds)
        report.add("remote", echo, note: "baseline: no key, two threads echoing one report")
        var first: [String: Measurement] = [:]
        for (index, target) in targets.enumerated() {
            let client = try BenchClient.open(target)
            defer { client.close() }
            let section = target.hasPrefix("socket:") ? "socket" : "hidraw"
            let ping = CTAPHIDCommand.ping.rawValue
            // 1024 B is 18 reports: within the 32 output reports the kernel queues for a uhid
            // device. Bursts longer than that lose reports under TCG (see UHIDDevice).
            let small = [UInt8](repeating: 0xA5, count: 57), large = [UInt8](repeating: 0x5A, count: 1024)
            let credential = try register(client)
            let message = BenchKey.getAssertionMessage(rpID: "bench.example", allow: [credential])
            let operations: [(String, () throws -> Void)] = [
                ("PING 57 B", { _ = try client.transact(command: ping, payload: small) }),
                ("PING 1024 B", { _ = try client.transact(command: ping, payload: large) }),
                ("getAssertion (allowList 1, ES256)", {
                    let reply = try client.transact(command: CTAPHIDCommand.cbor.rawValue, payload: message)
                    guard reply.first == 0 else { throw BenchError.failed("getAssertion status \(reply.first ?? 0xFF)") }
                }),
            ]
            for (name, body) in operations {
                let measurement = try Stopwatch.measure(name, seconds: seconds, body)
                if index == 0 {
                    first[name] = Measurement(name: "\(section) \(name)", samples: measurement.samples)
                    report.add(section, measurement, baseline: name.hasPrefix("PING 57") ? echo : nil, note: target)
                } else {
                    report.add(section, measurement, baseline: first[name], note: target)
                }
            }
        }
    }

    /// A non-resident ES256 credential made through the link (presence answered by the key).
    static func register(_ client: BenchClient) throws -> [UInt8] {
        let request = BenchKey.makeCredentialMessage(rpID: "bench.example", userID: [0x42], resident: false, format: "none")
        return try BenchKey.credentialID(fromMakeCredentialResponse:
            client.transact(command: CTAPHIDCommand.cbor.rawValue, payload: request, timeoutMilliseconds: 30_000))
    }
}
