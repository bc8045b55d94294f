import FIDOCrypto
import Foundation
import Glibc

/// `latchkey-bench --backup-memory PATH/TO/latchkey [--sizes N,N]`: the peak memory (max RSS) of
/// `latchkey backup` and `latchkey restore` — the real commands, as children — on stores of each
/// size. Backups are streamed (issue 44: memory independent of the store's size); the figures say
/// whether they are.
enum BackupBenchmarks {
    static func run(report: Report, binary: String, sizes: [Int]) throws {
        let fillerKey = try P256.Signing.PrivateKey().rawRepresentation
        let work = NSTemporaryDirectory() + "latchkey-backup-bench-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let passphrase = work + "/passphrase"
        FileManager.default.createFile(atPath: passphrase, contents: Data("a backup benchmark passphrase\n".utf8),
                                       attributes: [.posixPermissions: 0o600])
        for size in sizes {
            let section = "backup \(size)"
            let store = work + "/store-\(size)", out = work + "/\(size).backup", restored = work + "/restored-\(size)"
            try ScaleBenchmarks.fill(directory: store, count: size, privateKey: fillerKey)
            let database = (try? FileManager.default.attributesOfItem(atPath: store + "/credentials.sqlite")[.size] as? Int) ?? 0
            report.addValue(section, "database size", value: Double(database) / 1_048_576, unit: "MB")
            let backup = try measure(binary, ["backup", "--store", store, "--out", out, "--passphrase-file", passphrase,
                                              "--scrypt-log-n", "10"])
            report.addValue(section, "latchkey backup: peak memory", value: backup, unit: "MB", note: "max RSS; scrypt 2^10")
            let restore = try measure(binary, ["restore", out, "--store", restored, "--passphrase-file", passphrase])
            report.addValue(section, "latchkey restore: peak memory", value: restore, unit: "MB", note: "max RSS")
            for path in [store, restored, out] { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    /// Runs `binary arguments…` (output to /dev/null) and returns its max RSS in MB; a failure is an error.
    static func measure(_ binary: String, _ arguments: [String]) throws -> Double {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        let argv = ([binary] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, binary, &actions, nil, argv, environ)
        guard spawned == 0 else { throw BenchError.failed("cannot run \(binary): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        guard status == 0 else { throw BenchError.failed("\(binary) \(arguments.prefix(1).joined()) exited with status \(status)") }
        return Double(usage.ru_maxrss) / 1024
    }
}
