import FIDOCrypto
import Foundation
import KeySealing

/// `serve --keys tpm`: a credential key made and used inside a TPM, against the same in
/// software. The TPM is the one TSS2_TCTI names, else a swtpm this benchmark starts on loopback
/// (Debian's swtpm): a software TPM over TCP, so the figures are the TPM 2.0 command path's
/// (ESAPI, the salted session, marshalling), not a chip's — a discrete TPM signs in tens of
/// milliseconds, which `scripts/bench` on real hardware shows.
enum TPMBenchmarks {
    static func run(report: Report, baselines: CryptoBaselines, seconds: Double) throws {
        var simulator: Process?
        defer { simulator?.terminate(); simulator?.waitUntilExit() }
        var tcti = ProcessInfo.processInfo.environment["TSS2_TCTI"]
        if tcti == nil {
            guard let started = startSoftwareTPM() else {
                report.addValue("tpm keys", "skipped: no TSS2_TCTI and no swtpm", value: 0, unit: "",
                                note: "apt-get install swtpm, or name a TPM with TSS2_TCTI")
                return
            }
            simulator = started.process
            tcti = started.tcti
        }
        let keys = try TPMKeys(tcti: tcti)
        let label = simulator == nil ? "TPM (\(tcti ?? ""))" : "swtpm"
        let message = [UInt8](repeating: 0x5A, count: 69)   // authData (37) + clientDataHash (32)
        let made = try keys.makeP256Key()
        let software = try P256.Signing.PrivateKey()
        let (tpmSign, softwareSign) = try Stopwatch.measureInterleaved(
            "ES256 sign in the \(label)", "ES256 sign in software", seconds: seconds, minimumIterations: 20,
            { _ = try keys.signature(blob: made.blob, for: message) }, { _ = try software.signature(for: message) })
        report.add("tpm keys", tpmSign, baseline: softwareSign, note: "the key kept loaded (one credential signing again)")
        let other = try keys.makeP256Key()
        var flip = false
        let switching = try Stopwatch.measure("ES256 sign in the \(label), key loaded first", seconds: seconds) {
            flip.toggle()
            _ = try keys.signature(blob: flip ? made.blob : other.blob, for: message)
        }
        report.add("tpm keys", switching, baseline: baselines.es256Sign, note: "TPM2_Load + TPM2_Sign: another credential each time")
        let generation = try Stopwatch.measure("P-256 key made in the \(label)", seconds: seconds, minimumIterations: 10) {
            _ = try keys.makeP256Key()
        }
        report.add("tpm keys", generation, baseline: baselines.es256Keygen, note: "TPM2_Create under the storage key")
    }

    /// A swtpm on a free loopback port pair (state in a temporary directory), or nil when
    /// swtpm is not installed or does not come up.
    static func startSoftwareTPM() -> (process: Process, tcti: String)? {
        let executable = "/usr/bin/swtpm"
        guard FileManager.default.isExecutableFile(atPath: executable) else { return nil }
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-bench-tpm-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        for _ in 0..<20 {
            let port = UInt16.random(in: 20_000...59_000)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["socket", "--tpm2", "--tpmstate", "dir=\(state)",
                                 "--server", "type=tcp,bindaddr=127.0.0.1,port=\(port)",
                                 "--ctrl", "type=tcp,bindaddr=127.0.0.1,port=\(port + 1)",
                                 "--flags", "not-need-init,startup-clear"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return nil }
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning, Date() < deadline {
                if accepts(port) { return (process, "swtpm:host=127.0.0.1,port=\(port)") }
                usleep(20_000)
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        return nil
    }

    private static func accepts(_ port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
