import Authenticator
import CredentialStore
import FIDOClient
import FIDOCrypto
import Foundation

/// How the store behaves as it grows: the same operations at each size.
enum ScaleBenchmarks {
    /// A new store in `directory` with `count` resident credentials: by default one RP with up to
    /// 999 accounts, the rest spread over many RPs; `rpID` gives the n-th credential's RP instead.
    static func fill(directory: String, count: Int, privateKey fillerKey: SecretBytes,
                     rpID: (Int) -> String = { $0 < 999 ? "big.example" : "rp\($0 % 50_000).example" }) throws {
        let store = try SQLiteCredentialStore.open(directory: directory, lock: .exclusive,
                                                   options: StoreOptions(maxResidentCredentials: 2_000_000))
        defer { store.close() }
        var batch: [ResidentCredential] = []
        for index in 0..<count {
            batch.append(BenchKey.fillerCredential(rpID: rpID(index), index: index, privateKey: fillerKey))
            if batch.count == 10_000 { try store.saveResidentCredentials(batch); batch.removeAll(keepingCapacity: true) }
        }
        if !batch.isEmpty { try store.saveResidentCredentials(batch) }
    }

    static func run(report: Report, sizes: [Int], seconds: Double) throws {
        let fillerKey = try P256.Signing.PrivateKey().rawRepresentation
        for size in sizes {
            let section = "store \(size)"
            let directory = NSTemporaryDirectory() + "latchkey-scale-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: directory) }

            let fillStarted = Stopwatch.now()
            try fill(directory: directory, count: max(0, size - 2), privateKey: fillerKey)
            report.addValue(section, "fill with \(size) resident credentials", value: Double(Stopwatch.now() - fillStarted), unit: "ns",
                            note: "setup, bulk insert")

            let open = try Stopwatch.measure("store open", seconds: 0, minimumIterations: 5) {
                let store = try SQLiteCredentialStore.open(directory: directory, lock: .exclusive)
                store.close()
            }
            report.add(section, open, target: size >= 1_000_000 ? "< 300 ms" : nil)

            let key = try BenchKey(directory: directory)
            defer { key.close(removing: false) }
            report.addValue(section, "resident memory after open", value: Double(residentMemoryBytes()) / 1_048_576, unit: "MB",
                            note: size >= 1_000_000 ? "target < 150 MB" : nil)
            let solo = try key.register(rpID: "solo.example", userID: [0xAA], resident: true)
            _ = try key.register(rpID: "big.example", userID: [0xBB], resident: true)

            // Issue 13's targets, each timed alternately with the one ES256 signature it must make.
            let signing = try P256.Signing.PrivateKey()
            let message = [UInt8](repeating: 0x5A, count: 69)
            func versusSign(_ name: String, target: String?, _ body: () throws -> Void) throws {
                let (measured, sign) = try Stopwatch.measureInterleaved(name, "ES256 sign", seconds: seconds, body) {
                    _ = try signing.signature(for: message)
                }
                report.add(section, measured, baseline: sign, target: target, note: "timed alternately with the baseline")
            }
            let byID = BenchKey.getAssertionMessage(rpID: "solo.example", allow: [solo])
            try versusSign("getAssertion by allowList (resident)", target: "≤ 1.3×") { try key.expectSuccess(byID) }
            let discoverSolo = BenchKey.getAssertionMessage(rpID: "solo.example", allow: [])
            try versusSign("discoverable getAssertion, RP with 1 account", target: "≤ 1.5×") { try key.expectSuccess(discoverSolo) }
            let discoverBig = BenchKey.getAssertionMessage(rpID: "big.example", allow: [])
            let accounts = min(1_000, size)
            try versusSign("discoverable getAssertion, RP with \(accounts) accounts", target: accounts >= 1_000 ? "≤ 3×" : nil) {
                try key.expectSuccess(discoverBig)
            }
            let bigHash = SHA256.hash(Array("big.example".utf8))
            report.add(section, try Stopwatch.measure("read all of an RP's credentials (\(accounts), store)", seconds: seconds) {
                _ = try key.store.residentCredentials(rpIDHash: bigHash)
            }, note: "what `latchkey credentials list` does")
            let accepted = (0..<10_000).map { _ in SecureRandom.bytes(count: 64) } + [solo]
            report.add(section, try Stopwatch.measure("signal all-accepted over 10,000 IDs", seconds: seconds) {
                _ = try key.store.signalAllAcceptedCredentials(rpID: "solo.example", userHandle: [0xAA], acceptedIDs: accepted)
            })

            // credentialManagement through the authenticator, as a platform does it (a PIN and a
            // cm token first; the RemoteCredentialManager the CLI uses against other keys).
            // CTAP2 straight into the key's authenticator: no transport, so the figures are the
            // authenticator's and the store's.
            let remote = RemoteAuthenticator(link: InProcessLink(label: "in-process key") {
                key.authenticator.handleCTAP2($0, context: key.context)
            })
            var pinBytes = Array("2580".utf8)
            try remote.setPIN(try PIN(consuming: &pinBytes))
            pinBytes = Array("2580".utf8)
            let manager = try remote.credentialManagement(pin: try PIN(consuming: &pinBytes))
            report.add(section, try Stopwatch.measure("credMgmt enumerate all \(accounts) (Begin + GetNext each)", seconds: seconds,
                                                      minimumIterations: 3) {
                _ = try manager.credentials(rpID: "big.example")
            }, note: "each credential's public key is derived from its private key")
        }
    }
}
