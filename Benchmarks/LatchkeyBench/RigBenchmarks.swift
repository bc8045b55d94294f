import Authenticator
import CTAPHID
import CredentialStore
import FIDOCrypto
import Foundation
import KeyService
import Synchronization
import Rig
import SystemIO

/// `latchkey rig` at scale (issue 13): 64 keys in one process, each on its own socket, started
/// through the control API; their start time, their memory, and 8 clients on each at once.
enum RigBenchmarks {
    static let keyCount = 64
    static let clientsPerKey = 8

    static func call(_ rig: Rig, _ method: String, _ params: [String: Any]) throws -> [String: Any] {
        let line = try JSONSerialization.data(withJSONObject: ["v": 1, "id": 1, "method": method, "params": params])
        let response = rig.respond(to: Array(line) + [0x0A])
        guard let object = try JSONSerialization.jsonObject(with: Data(response)) as? [String: Any],
              let result = object["result"] as? [String: Any] else {
            throw BenchError.failed("rig \(method): \(String(decoding: response, as: UTF8.self))")
        }
        return result
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func run(report: Report, seconds: Double) throws {
        let section = "rig"
        var template = Array("/tmp/lk-rigbench-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else { throw BenchError.failed("mkdtemp") }
        let directory = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let rig = Rig(root: directory, uhidPath: "/dev/uhid", logger: Logger(level: .error))
        defer { rig.stop() }

        // A store created and a socket bound per key: the baseline is creating a store alone.
        var stores: [Double] = []
        for index in 0..<16 {
            let started = Stopwatch.now()
            let store = try SQLiteCredentialStore.open(directory: "\(directory)/baseline-\(index)")
            _ = try store.loadDeviceSecrets(orCreate: { try DeviceSecrets.generate() })
            stores.append(Double(Stopwatch.now() - started))
            store.close()
        }
        let storeBaseline = Measurement(name: "create a store (SQLite, master key, device secrets)", samples: stores)
        report.add(section, storeBaseline, note: "baseline")
        let before = residentMemoryBytes()
        var starts: [Double] = []
        var paths: [String] = []
        let credentialID = [UInt8](repeating: 0xB7, count: 16)
        let key = try P256.Signing.PrivateKey()
        let pkcs8 = base64URL(try PKCS8PrivateKey.encode(.p256, key.rawRepresentation).copyBytes())
        for index in 0..<keyCount {
            let path = "\(directory)/k\(index).sock"
            let started = Stopwatch.now()
            _ = try call(rig, "addAuthenticator", ["transport": "socket", "socketPath": path])
            starts.append(Double(Stopwatch.now() - started))
            paths.append(path)
            _ = try call(rig, "addCredential", ["authenticatorId": "k\(index + 1)", "credential": [
                "credentialId": base64URL(credentialID), "rpId": "rig.bench", "privateKey": pkcs8, "userHandle": "AQ",
            ]])
        }
        let after = residentMemoryBytes()
        report.add(section, Measurement(name: "start a key (store, socket, loop), \(keyCount) in one process", samples: starts),
                   baseline: storeBaseline, target: "< 50 ms")
        report.addValue(section, "resident memory per key (\(keyCount) keys)", value: Double(after - before) / Double(keyCount) / 1_048_576,
                        unit: "MB", note: "target < 3 MB")

        // 8 clients per key, all at once, each doing getAssertions for `seconds`.
        let message = BenchKey.getAssertionMessage(rpID: "rig.bench", allow: [credentialID])
        let errors = Atomic<Int>(0)
        let busy = Atomic<Int>(0)
        let samples = Mutex<[Double]>([])
        let group = DispatchGroup()
        let deadline = Stopwatch.now() + UInt64(seconds * 1e9)
        for path in paths {
            for _ in 0..<clientsPerKey {
                group.enter()
                let thread = Thread {
                    defer { group.leave() }
                    var mine: [Double] = []
                    do {
                        let client = try BenchClient(path: path)
                        defer { client.close() }
                        while Stopwatch.now() < deadline {
                            let started = Stopwatch.now()
                            do {
                                let reply = try client.transact(command: CTAPHIDCommand.cbor.rawValue, payload: message,
                                                                timeoutMilliseconds: 30_000)
                                if reply.first != 0 { errors.add(1, ordering: .relaxed) }
                                mine.append(Double(Stopwatch.now() - started))
                            } catch BenchClient.Failure.hid(CTAPHIDError.channelBusy.rawValue) {
                                // The spec's answer while another channel's request runs: retry, as
                                // libfido2 does, after a moment.
                                busy.add(1, ordering: .relaxed)
                                usleep(1_000)
                            }
                        }
                    } catch {
                        if errors.add(1, ordering: .relaxed).newValue == 1 {
                            FileHandle.standardError.write(Data("rig benchmark: first client error: \(error)\n".utf8))
                        }
                    }
                    samples.withLock { $0 += mine }
                }
                thread.stackSize = 256 * 1024
                thread.start()
            }
        }
        group.wait()
        report.addValue(section, "resident memory per key, after that load", value: Double(residentMemoryBytes() - before)
                        / Double(keyCount) / 1_048_576, unit: "MB", note: "target < 3 MB")
        let all = samples.withLock { $0 }
        let count = all.count
        report.add(section, Measurement(name: "getAssertion, \(clientsPerKey) clients on each of \(keyCount) keys at once",
                                        samples: all.isEmpty ? [0] : all),
                   note: "\(count) requests, \(busy.load(ordering: .relaxed)) CHANNEL_BUSY retries")
        report.addValue(section, "errors among those \(keyCount * clientsPerKey) clients", value: Double(errors.load(ordering: .relaxed)),
                        unit: "errors", note: "target 0")
    }
}
