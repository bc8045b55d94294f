import FIDOCrypto
import Foundation

/// latchkey-bench: how close Latchkey is to the cost of its own cryptography, and how it scales.
/// Every latency is reported with its median and p99 and, where one applies, as a ratio to a
/// baseline measured in the same run (these machines are noisy: compare ratios, not seconds).
///
///   swift run -c release latchkey-bench [--quick] [--sizes 1000,100000,1000000] [--seconds S] [--json FILE]
///   latchkey-bench --remote socket:PATH --remote /dev/hidrawN [--seconds S] [--json FILE]
///                                                    running keys only (scripts/bench --vm)
///   latchkey-bench --profile NAME [--iterations N]    one hot path N times, for callgrind (scripts/profile)
///   latchkey-bench --prepare-store DIR [--credentials N]
///                                                    the store of N (1,000,000) credentials that the
///                                                    -1m profiles open (LATCHKEY_PROFILE_STORE=DIR)
///   latchkey-bench --tpm [--seconds S]              the baselines and the TPM-bound key rows only
///   latchkey-bench --backup-memory PATH/TO/latchkey [--sizes N,N]
///                                                    peak memory of `latchkey backup` and `restore`
///   latchkey-bench --soak PATH/TO/latchkey [--requests N] [--clients C] [--json FILE]
///                                                    one key process, N getAssertions (default 1,000,000)
///                                                    from C clients (8): its memory and descriptors
// Secrets in the secure heap, as `latchkey serve` has them (LatchkeyCLI.runProcess): its lock
// is on every key's allocation, so the figures include it.
SecureHeap.start()
var quick = false
var sizes = [1_000, 100_000]
var seconds = 1.0
var concurrencySeconds = 10.0
var jsonPath: String?
var profile: String?
var prepareStore: String?
var prepareCount = 1_000_000
var remotes: [String] = []
var iterations = 1000
var soakBinary: String?
var soakRequests = 1_000_000
var soakClients = 8
var tpmOnly = false
var backupBinary: String?
var arguments = Array(CommandLine.arguments.dropFirst())
while let argument = arguments.first {
    arguments.removeFirst()
    switch argument {
    case "--quick":
        quick = true; sizes = [1_000]; seconds = 0.05; concurrencySeconds = 0.5
    case "--sizes":
        sizes = (arguments.first ?? "").split(separator: ",").compactMap { Int($0) }
        arguments = Array(arguments.dropFirst())
    case "--seconds":
        seconds = Double(arguments.first ?? "") ?? seconds
        arguments = Array(arguments.dropFirst())
    case "--json":
        jsonPath = arguments.first
        arguments = Array(arguments.dropFirst())
    case "--remote":
        remotes.append(arguments.first ?? "")
        arguments = Array(arguments.dropFirst())
    case "--prepare-store":
        prepareStore = arguments.first
        arguments = Array(arguments.dropFirst())
    case "--credentials":
        prepareCount = Int(arguments.first ?? "") ?? prepareCount
        arguments = Array(arguments.dropFirst())
    case "--profile":
        profile = arguments.first
        arguments = Array(arguments.dropFirst())
    case "--soak":
        soakBinary = arguments.first
        arguments = Array(arguments.dropFirst())
    case "--requests":
        soakRequests = Int(arguments.first ?? "") ?? soakRequests
        arguments = Array(arguments.dropFirst())
    case "--clients":
        soakClients = Int(arguments.first ?? "") ?? soakClients
        arguments = Array(arguments.dropFirst())
    case "--tpm":
        tpmOnly = true
    case "--backup-memory":
        backupBinary = arguments.first
        arguments = Array(arguments.dropFirst())
    case "--iterations":
        iterations = Int(arguments.first ?? "") ?? iterations
        arguments = Array(arguments.dropFirst())
    case "-h", "--help":
        print("usage: latchkey-bench [--quick] [--sizes N,N,…] [--seconds S] [--json FILE] [--remote socket:PATH|/dev/hidrawN …] | --tpm | --backup-memory LATCHKEY [--sizes N,N] | --profile NAME [--iterations N] | --prepare-store DIR [--credentials N] | --soak LATCHKEY [--requests N] [--clients C]")
        exit(0)
    default:
        FileHandle.standardError.write(Data("Error: unknown argument '\(argument)'\nusage: latchkey-bench [--quick] [--sizes N,N,…] [--seconds S] [--json FILE] [--remote socket:PATH|/dev/hidrawN …] | --profile NAME [--iterations N]\n".utf8))
        exit(64)
    }
}

if let prepareStore {
    do { try Profile.prepareStore(directory: prepareStore, count: prepareCount) } catch {
        FileHandle.standardError.write(Data("latchkey-bench --prepare-store failed: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}
if let profile {
    do { try Profile.run(profile, iterations: iterations) } catch {
        FileHandle.standardError.write(Data("latchkey-bench --profile failed: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

let report = Report()
report.machine = [
    "cores": "\(ProcessInfo.processInfo.activeProcessorCount)",
    "memory": "\(ProcessInfo.processInfo.physicalMemory / 1_073_741_824) GiB",
    "kernel": ProcessInfo.processInfo.operatingSystemVersionString,
    "mode": quick ? "quick (smoke test; figures not meaningful)" : "full",
]
#if DEBUG
report.machine["build"] = "debug (use -c release for real figures)"
#else
report.machine["build"] = "release"
#endif
print("latchkey-bench (\(report.machine["mode"]!), \(report.machine["build"]!), \(report.machine["cores"]!) cores)")
report.printHeader()
do {
    if let soakBinary {
        try SoakBenchmark.run(report: report, binary: soakBinary, requests: soakRequests, clients: soakClients)
        if let jsonPath { try report.writeJSON(to: jsonPath) }
        print("benchmark: \(report.rows.count) figures")
        exit(0)
    }
    if let backupBinary {
        try BackupBenchmarks.run(report: report, binary: backupBinary, sizes: sizes)
        if let jsonPath { try report.writeJSON(to: jsonPath) }
        print("benchmark: \(report.rows.count) figures")
        exit(0)
    }
    if !remotes.isEmpty {
        try RemoteBenchmarks.run(report: report, targets: remotes, seconds: seconds)
        if let jsonPath { try report.writeJSON(to: jsonPath) }
        print("benchmark: \(report.rows.count) figures")
        exit(0)
    }
    let baselines = try CryptoBaselines.measure(seconds: seconds)
    for baseline in [baselines.es256Sign, baselines.es256Keygen, baselines.ed25519Sign, baselines.ecdh] {
        report.add("crypto", baseline, note: "baseline, straight through libcrypto")
    }
    if tpmOnly {
        try TPMBenchmarks.run(report: report, baselines: baselines, seconds: max(seconds, 3))
        if let jsonPath { try report.writeJSON(to: jsonPath) }
        print("benchmark: \(report.rows.count) figures")
        exit(0)
    }
    try CoreBenchmarks.run(report: report, baselines: baselines, seconds: seconds)
    try TransportBenchmarks.run(report: report, baselines: baselines, seconds: seconds)
    try BrokerBenchmarks.run(report: report, seconds: seconds)
    try ConcurrencyBenchmarks.run(report: report, seconds: concurrencySeconds)
    try RigBenchmarks.run(report: report, seconds: quick ? 0.2 : 3)
    try TPMBenchmarks.run(report: report, baselines: baselines, seconds: quick ? 0.2 : max(seconds, 3))
    try ScaleBenchmarks.run(report: report, sizes: sizes, seconds: seconds)
    if let jsonPath { try report.writeJSON(to: jsonPath) }
    print("benchmark: \(report.rows.count) figures")
} catch {
    FileHandle.standardError.write(Data("latchkey-bench failed: \(error)\n".utf8))
    exit(1)
}
