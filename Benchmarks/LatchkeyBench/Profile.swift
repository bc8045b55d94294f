import Authenticator
import CTAPHID
import FIDOCrypto
import Foundation

/// Fixed-count loops of one hot path, for `valgrind --tool=callgrind` (scripts/profile). Callgrind
/// counts instructions, which repeat exactly from run to run where wall-clock time does not; the
/// per-operation cost is the difference between two runs of different lengths, so set-up cancels.
enum Profile {
    static let names = ["es256-sign", "core-getassertion", "socket-getassertion", "socket-ping", "resident-allowlist",
                        "discoverable-1", "discoverable-1000", "resident-makecredential", "durable-commit", "store-lookup", "store-statement"]

    static func run(_ name: String, iterations: Int) throws {
        switch name {
        case "es256-sign":
            let signing = try P256.Signing.PrivateKey()
            let message = [UInt8](repeating: 0x5A, count: 69)
            for _ in 0..<iterations { _ = try signing.signature(for: message) }
        case "core-getassertion":
            let key = try BenchKey()
            defer { key.close() }
            let credential = try key.register(rpID: "bench.example", userID: [1], resident: false)
            let message = BenchKey.getAssertionMessage(rpID: "bench.example", allow: [credential])
            for _ in 0..<iterations { try key.expectSuccess(message) }
        case "socket-getassertion", "socket-ping":
            let server = try InProcessServer()
            defer { server.stop() }
            let client = try BenchClient(path: server.path)
            defer { client.close() }
            if name == "socket-ping" {
                let payload = [UInt8](repeating: 0xA5, count: 57)
                for _ in 0..<iterations { _ = try client.transact(command: CTAPHIDCommand.ping.rawValue, payload: payload) }
            } else {
                let credential = try server.key.register(rpID: "bench.example", userID: [9], resident: false)
                let message = BenchKey.getAssertionMessage(rpID: "bench.example", allow: [credential])
                for _ in 0..<iterations {
                    let reply = try client.transact(command: CTAPHIDCommand.cbor.rawValue, payload: message)
                    guard reply.first == 0 else { throw BenchError.failed("status \(reply.first ?? 0xFF)") }
                }
            }
        case "resident-allowlist", "discoverable-1":
            // A resident credential by its ID in the allowList, and the only account of an RP without one.
            let key = try BenchKey()
            defer { key.close() }
            let credential = try key.register(rpID: "one.example", userID: [1], resident: true)
            let message = BenchKey.getAssertionMessage(rpID: "one.example", allow: name == "discoverable-1" ? [] : [credential])
            for _ in 0..<iterations { try key.expectSuccess(message) }
        case "store-lookup", "store-statement":
            // The store's share of a resident assertion by ID: the lookup (statement, decryption,
            // decoding), and the least any statement costs (its read transaction).
            let key = try BenchKey()
            defer { key.close() }
            let credential = try key.register(rpID: "one.example", userID: [1], resident: true)
            for _ in 0..<iterations {
                if name == "store-lookup" { _ = try key.store.residentCredential(id: credential) }
                else { _ = try key.store.residentCredentialCount() }
            }
        case "resident-makecredential":
            // A discoverable credential made and stored (one durable commit each), new account each time.
            let key = try BenchKey()
            defer { key.close() }
            for index in 0..<iterations {
                try key.expectSuccess(BenchKey.makeCredentialMessage(rpID: "mc.example", userID: CoreBenchmarks.bytes(UInt64(index)),
                                                                     resident: true, format: "none"))
            }
        case "durable-commit":
            // The baseline of the resident makeCredential: the store's smallest durable transaction.
            let key = try BenchKey()
            defer { key.close() }
            for index in 0..<iterations { try key.store.saveSetting("bench.commit", value: CoreBenchmarks.bytes(UInt64(index))) }
        case "discoverable-1000":
            // Discoverable getAssertion for an RP with 1,000 accounts (ScaleBenchmarks' case).
            let key = try BenchKey()
            defer { key.close() }
            let privateKey = try P256.Signing.PrivateKey().rawRepresentation
            let rpID = "big.example"
            try key.store.saveResidentCredentials((0..<1_000).map {
                BenchKey.fillerCredential(rpID: rpID, index: $0, privateKey: privateKey)
            })
            let message = BenchKey.getAssertionMessage(rpID: rpID, allow: [])
            for _ in 0..<iterations { try key.expectSuccess(message) }
        default:
            throw BenchError.failed("unknown profile '\(name)' (one of: \(names.joined(separator: ", ")))")
        }
    }
}
