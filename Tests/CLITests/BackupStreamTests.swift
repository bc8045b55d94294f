@testable import CLI
import CredentialStore
import Exchange
import FIDOCrypto
import Foundation
import Glibc
import LatchkeyTestSupport
import XCTest

/// `latchkey backup` as a stream (BackupStream, version 2) and `restore` of it — and of version 1
/// files, which still restore — against real stores, with a real passphrase seal.
final class BackupStreamTests: XCTestCase {
    let output = CapturedOutput()

    func run(_ spec: CommandSpec, _ arguments: [String],
             _ body: (ParsedArguments, CommandIO) throws(UsageError) -> Int32) -> CommandOutcome {
        do {
            let parsed = try CommandLineParser.parse(arguments, spec: spec)
            return .status(try body(parsed, output.io()))
        } catch {
            return .usage(error.message)
        }
    }

    func backup(_ store: TestStore, to out: String, passphrase: String) -> CommandOutcome {
        run(BackupCommand.backupSpec, ["--store", store.directory, "--out", out, "--passphrase-file", passphrase, "--scrypt-log-n", "10"]) { (parsed, io) throws(UsageError) in
            try BackupCommand.backup(parsed, io: io)
        }
    }

    func restore(_ file: String, into directory: String, passphrase: String) -> CommandOutcome {
        run(BackupCommand.restoreSpec, [file, "--store", directory, "--passphrase-file", passphrase, "--json"]) { (parsed, io) throws(UsageError) in
            try BackupCommand.restore(parsed, io: io)
        }
    }

    /// A store whose database spans several 64 KiB chunks.
    func filledStore(count: Int) throws -> TestStore {
        let store = try TestStore()
        let opened = try store.open()
        defer { opened.close() }
        try opened.saveResidentCredentials(try (0..<count).map { index in
            try makeResidentCredential(rpID: "rp\(index % 7).example", userHandle: Array("user-\(index)".utf8),
                                       name: "user\(index)@example.com", displayName: "User \(index)")
        })
        return store
    }

    func testABackupIsWrittenAndRestoredAChunkAtATime() throws {
        let store = try filledStore(count: 400)
        let passphrase = try writeFile(store.scratch.path, "passphrase", "a long backup passphrase\n")
        let out = store.scratch.path + "/key.backup"
        XCTAssertEqual(backup(store, to: out, passphrase: passphrase), .status(0), output.err)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: out))
        let newline = try XCTUnwrap(bytes.firstIndex(of: 0x0A))
        XCTAssertTrue(BackupStream.isVersion2(headerLine: Array(bytes[..<newline])))
        let chunks = Double(bytes.count - newline - 1) / Double(BackupStream.chunkSize + BackupStream.tagSize)
        XCTAssertGreaterThan(chunks, 2, "the test store should span several chunks")
        XCTAssertNil(bytes.range(of: Data("user7@example.com".utf8)), "the file is encrypted")

        let restored = store.scratch.path + "/restored"
        output.clear()
        XCTAssertEqual(restore(out, into: restored, passphrase: passphrase), .status(0), output.err)
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(output.out.utf8)) as? [String: Any])
        XCTAssertEqual(report["residentCredentials"] as? Int, 400)
        let reopened = try SQLiteCredentialStore.open(directory: restored, lock: .none)
        defer { reopened.close() }
        XCTAssertEqual(Set(try reopened.allResidentCredentials(includeHidden: true).map(\.credentialID)),
                       Set(try store.all().map(\.credentialID)))
    }

    /// `restore <(…)`: the file is read once, from its start, so a pipe works as a file does.
    func testABackupRestoresFromAPipe() throws {
        let store = try filledStore(count: 100)
        let passphrase = try writeFile(store.scratch.path, "passphrase", "a long backup passphrase\n")
        let out = store.scratch.path + "/key.backup"
        XCTAssertEqual(backup(store, to: out, passphrase: passphrase), .status(0), output.err)
        let fifo = store.scratch.path + "/backup.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let contents = try XCTUnwrap(FileManager.default.contents(atPath: out))
        let writer = Thread {
            if let handle = FileHandle(forWritingAtPath: fifo) { handle.write(contents); try? handle.close() }
        }
        writer.start()
        output.clear()
        XCTAssertEqual(restore(fifo, into: store.scratch.path + "/from-pipe", passphrase: passphrase), .status(0), output.err)
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(output.out.utf8)) as? [String: Any])
        XCTAssertEqual(report["residentCredentials"] as? Int, 100)
    }

    func testAnAlteredOrCutBackupRestoresNothing() throws {
        let store = try filledStore(count: 400)
        let passphrase = try writeFile(store.scratch.path, "passphrase", "a long backup passphrase\n")
        let out = store.scratch.path + "/key.backup"
        XCTAssertEqual(backup(store, to: out, passphrase: passphrase), .status(0), output.err)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: out))
        let start = try XCTUnwrap(bytes.firstIndex(of: 0x0A)) + 1
        let sealedChunk = BackupStream.chunkSize + BackupStream.tagSize
        var flipped = bytes
        flipped[start + sealedChunk + 100] ^= 0x01                              // a byte of the second chunk
        let cases: [(String, Data, String)] = [
            ("altered", flipped, "does not open"),
            // Shorter than the database it announces: refused before anything is written.
            ("cut at a chunk boundary", bytes.prefix(start + 2 * sealedChunk), "is damaged"),
            ("cut inside a chunk", bytes.prefix(start + sealedChunk + 1000), "is damaged"),
            ("a chunk dropped", bytes.prefix(start + sealedChunk) + bytes.suffix(from: start + 2 * sealedChunk), "is damaged"),
            // The last chunk dropped but padded back to length: its successor is not marked last.
            ("the last chunk replaced", bytes.prefix(bytes.count - 100) + Data(repeating: 0, count: 100), "does not open"),
        ]
        for (name, damaged, words) in cases {
            let path = store.scratch.path + "/damaged.backup"
            FileManager.default.createFile(atPath: path, contents: damaged, attributes: [.posixPermissions: 0o600])
            let target = store.scratch.path + "/restored-\(name.replacingOccurrences(of: " ", with: "-"))"
            output.clear()
            XCTAssertEqual(restore(path, into: target, passphrase: passphrase), .status(1), name)
            XCTAssertTrue(output.err.contains(words), "\(name): \(output.err)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: target), "\(name): something was left at \(target)")
        }
        let wrong = try writeFile(store.scratch.path, "wrong", "not the passphrase\n")
        output.clear()
        XCTAssertEqual(restore(out, into: store.scratch.path + "/wrong", passphrase: wrong), .status(1))
        XCTAssertTrue(output.err.contains("wrong passphrase"), output.err)
    }

    func testAVersion1BackupStillRestores() throws {
        let store = try filledStore(count: 20)
        let opened = try store.open()
        let snapshot = try StoreBackup.snapshot(of: opened)
        opened.close()
        var plaintext = KeyBackup.encode(snapshot, created: 1_800_000_000)
        defer { plaintext.wipe() }
        var parameters = Scrypt.Parameters.default
        parameters.logN = 10
        let file = try EncryptedExport.seal(plaintext, contents: .backup, passphrase: SecretBytes(Array("version one".utf8)),
                                            parameters: parameters).json()
        let path = store.scratch.path + "/v1.backup"
        FileManager.default.createFile(atPath: path, contents: Data(file), attributes: [.posixPermissions: 0o600])
        let passphrase = try writeFile(store.scratch.path, "v1-passphrase", "version one\n")
        XCTAssertEqual(restore(path, into: store.scratch.path + "/from-v1", passphrase: passphrase), .status(0), output.err)
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(output.out.utf8)) as? [String: Any])
        XCTAssertEqual(report["residentCredentials"] as? Int, 20)
    }
}
