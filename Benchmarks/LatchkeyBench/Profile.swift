import Authenticator
@_spi(Benchmarks) import CredentialStore
import CTAP
import CTAPHID
import FIDOCrypto
import Foundation

/// Fixed-count loops of one hot path, for `valgrind --tool=callgrind` (scripts/profile). Callgrind
/// counts instructions, which repeat exactly from run to run where wall-clock time does not; the
/// per-operation cost is the difference between two runs of different lengths, so set-up cancels.
enum Profile {
    static let names = ["es256-sign", "core-getassertion", "socket-getassertion", "socket-ping", "resident-allowlist",
                        "discoverable-1", "discoverable-1000", "resident-makecredential", "durable-commit", "store-lookup", "store-statement",
                        "p256-keygen", "sql-insert", "u2f-authenticate", "discoverable-1-1m", "discoverable-1000-1m"]

    /// The 1,000,000-credential store the `-1m` profiles open (`LATCHKEY_PROFILE_STORE`): made
    /// once, outside callgrind, by `latchkey-bench --prepare-store DIR` (filling it under callgrind
    /// would take hours; opening it is cheap).
    static let scaleStoreEnvironment = "LATCHKEY_PROFILE_STORE"
    static let scaleBigRP = "big.example", scaleSoloRP = "solo.example"

    /// A new store at `directory` with `count` resident credentials: 1,000 accounts at
    /// big.example and one at solo.example (the two `-1m` profiles' RPs, as discoverable-1000's
    /// and discoverable-1's), the rest spread over 50,000 other RPs.
    static func prepareStore(directory: String, count: Int) throws {
        try ScaleBenchmarks.fill(directory: directory, count: count, privateKey: try P256.Signing.PrivateKey().rawRepresentation) {
            $0 < 1_000 ? scaleBigRP : $0 == 1_000 ? scaleSoloRP : "rp\($0 % 50_000).example"
        }
    }

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
            // A discoverable credential made and stored (one durable commit each), new account each
            // time. The request is encoded once and only its 8-byte user ID rewritten in place: the
            // client's encoding is not the key's work (built anew each time, it added 35,000
            // instructions to every operation counted here).
            let key = try BenchKey()
            defer { key.close() }
            let marker: [UInt8] = [0xA5, 0x5A, 0xC3, 0x3C, 0x96, 0x69, 0x0F, 0xF0]
            var message = BenchKey.makeCredentialMessage(rpID: "mc.example", userID: marker, resident: true, format: "none")
            let offsets = (0...(message.count - marker.count)).filter { message[$0..<($0 + marker.count)].elementsEqual(marker) }
            guard offsets.count == 1, let offset = offsets.first else {
                throw BenchError.failed("the user ID is not where the profile rewrites it")
            }
            for index in 0..<iterations {
                withUnsafeBytes(of: UInt64(index).bigEndian) { id in
                    for position in 0..<id.count { message[offset + position] = id[position] }
                }
                try key.expectSuccess(message)
            }
        case "p256-keygen":
            // What a new ES256 credential's key costs: the key, its private scalar and public point.
            for _ in 0..<iterations { _ = try P256.Signing.PrivateKey() }
        case "sql-insert":
            // The SQL alone of a resident makeCredential's save: the same transaction and statements
            // (replaced rows, count, RP, the row, its first counter block) with the rows sealed once.
            let key = try BenchKey()
            defer { key.close() }
            let sealed = try key.store.sealedForBenchmark(BenchKey.fillerCredential(
                rpID: "mc.example", index: 0, privateKey: try P256.Signing.PrivateKey().rawRepresentation))
            for index in 0..<iterations { try key.store.saveSealedForBenchmark(sealed, index: UInt64(index) + 1) }
        case "u2f-authenticate":
            // CTAP1 authenticate (enforce presence) with a key handle from a U2F register.
            let key = try BenchKey()
            defer { key.close() }
            let application = SHA256.hash(Array("https://u2f.example".utf8))
            let registration = key.authenticator.handleU2F(
                U2FAPDU(ins: 0x01, data: SHA256.hash([1]) + application).encoded(), context: key.context)
            guard registration.suffix(2) == [0x90, 0x00], registration.count > 67 else {
                throw BenchError.failed("U2F register answered \(registration.suffix(2))")
            }
            let handle = Array(registration[67..<(67 + Int(registration[66]))])
            let message = U2FAPDU(ins: 0x02, p1: 0x03, data: SHA256.hash([2]) + application + [UInt8(handle.count)] + handle)
                .encoded()
            for _ in 0..<iterations {
                guard key.authenticator.handleU2F(message, context: key.context).suffix(2) == [0x90, 0x00] else {
                    throw BenchError.failed("U2F authenticate failed")
                }
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
                BenchKey.fillerCredential(rpID: rpID, index: $0, privateKey: privateKey, deterministic: true)
            })
            let message = BenchKey.getAssertionMessage(rpID: rpID, allow: [])
            for _ in 0..<iterations { try key.expectSuccess(message) }
        case "discoverable-1-1m", "discoverable-1000-1m":
            // discoverable-1 and discoverable-1000 in a store of 1,000,000 credentials.
            guard let directory = ProcessInfo.processInfo.environment[scaleStoreEnvironment],
                  FileManager.default.fileExists(atPath: directory) else {
                throw BenchError.failed("\(name) opens the store \(scaleStoreEnvironment) names: make it with "
                                        + "`latchkey-bench --prepare-store DIR` and set \(scaleStoreEnvironment)=DIR")
            }
            let key = try BenchKey(directory: directory)
            defer { key.close(removing: false) }
            let message = BenchKey.getAssertionMessage(rpID: name == "discoverable-1-1m" ? scaleSoloRP : scaleBigRP, allow: [])
            for _ in 0..<iterations { try key.expectSuccess(message) }
        default:
            throw BenchError.failed("unknown profile '\(name)' (one of: \(names.joined(separator: ", ")))")
        }
    }
}

