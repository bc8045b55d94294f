import Authenticator
@testable import CredentialStore
import FIDOCrypto
import Foundation
import XCTest

/// architecture rule 7: crash-safe persistence, tested by killing the process mid-write. A child
/// process (this test binary, re-executed with LATCHKEY_STORE_CRASH_WRITER set) writes
/// without end and logs every operation that returned; the parent SIGKILLs it at random
/// moments and checks after each kill that the store is whole and holds everything that
/// was acknowledged.
final class CrashRecoveryTests: XCTestCase {
    static let writerVariable = "LATCHKEY_STORE_CRASH_WRITER"
    static let logVariable = "LATCHKEY_STORE_CRASH_LOG"

    /// The child's body when LATCHKEY_STORE_CRASH_WRITER=dir is set; a no-op otherwise.
    func testCrashWriterChild() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let directory = environment[Self.writerVariable], let log = environment[Self.logVariable] else { return }
        CrashWriter(directory: directory, logPath: log).run()
    }

    func testSIGKILLAtRandomMomentsLeavesThePreviousOrNextState() throws {
        let temporary = TemporaryDirectory()
        let logPath = temporary.root + "/writer.log"
        try SQLiteCredentialStore.open(directory: temporary.storePath).close()
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var maxSaved = 0
        var totals = (present: 0, deleted: 0, inFlightDeletes: 0, counters: 0)

        for round in 0..<20 {
            let logSizeBefore = Self.fileSize(logPath)
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["CredentialStoreTests.CrashRecoveryTests/testCrashWriterChild"]
            var environment = ProcessInfo.processInfo.environment
            environment[Self.writerVariable] = temporary.storePath
            environment[Self.logVariable] = logPath
            child.environment = environment
            child.standardOutput = FileHandle.nullDevice
            child.standardError = FileHandle.nullDevice
            try child.run()

            // Let it start writing, then kill it at a random moment.
            let deadline = ContinuousClock.now + .seconds(20)
            while Self.fileSize(logPath) <= logSizeBefore + 64, child.isRunning, ContinuousClock.now < deadline {
                usleep(2_000)
            }
            usleep(UInt32.random(in: 0..<250_000))
            XCTAssertTrue(child.isRunning, "round \(round): the writer stopped on its own")
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            XCTAssertEqual(child.terminationReason, .uncaughtSignal, "round \(round)")

            let log = CrashLog(path: logPath)
            maxSaved = log.saved.count
            let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
            XCTAssertTrue(try store.integrityCheck(), "round \(round): integrity")
            var present = 0
            for id in log.saved where !log.deleted.contains(id) && !log.deleting.contains(id) {
                let stored = try store.residentCredential(id: id)
                XCTAssertNotNil(stored, "round \(round): an acknowledged save is missing")
                if let stored {
                    assertSameCredential(stored, CrashWriter.credential(id: id, createdAt: stored.createdAt,
                                                                        hiddenSince: stored.hiddenSince))
                    present += 1
                }
            }
            for id in log.deleted {
                XCTAssertNil(try store.residentCredential(id: id), "round \(round): an acknowledged delete came back")
            }
            XCTAssertGreaterThanOrEqual(try store.residentCredentialCount(), present)
            if let highest = log.counters.max() {
                XCTAssertGreaterThan(try store.nextSignatureCounter(credentialID: nil), highest,
                                     "round \(round): the counter went backwards")
            }
            store.close()
            totals = (present, log.deleted.count, log.deleting.count, log.counters.count)
        }
        XCTAssertGreaterThan(maxSaved, 100, "the writer made progress")
        print("crash: 20 kills; acknowledged saves \(maxSaved), present \(totals.present), deleted \(totals.deleted), "
              + "deletes cut short \(totals.inFlightDeletes), counter values \(totals.counters)")
    }

    private static func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }
}

/// What the writer acknowledged, parsed from its log (a torn last line is ignored).
private struct CrashLog {
    var saved: [[UInt8]] = []
    var deleting: Set<[UInt8]> = []
    var deleted: Set<[UInt8]> = []
    var counters: [UInt32] = []

    init(path: String) {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        if !text.hasSuffix("\n"), !lines.isEmpty { lines.removeLast() }
        for line in lines {
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "S": if let id = CrashWriter.bytes(hex: parts[1]) { saved.append(id) }
            case "d": if let id = CrashWriter.bytes(hex: parts[1]) { deleting.insert(id) }
            case "D":
                if let id = CrashWriter.bytes(hex: parts[1]) {
                    deleting.remove(id)
                    deleted.insert(id)
                }
            case "C": if let value = UInt32(parts[1]) { counters.append(value) }
            default: continue
            }
        }
    }
}

/// The child: writes credentials (single and batched), deletes, signals, PIN state,
/// settings and counters, logging each after it returned. Stops by itself after 60 s.
struct CrashWriter {
    let directory: String
    let logPath: String

    static func credential(id: [UInt8], createdAt: Int64, hiddenSince: Int64? = nil) -> ResidentCredential {
        let digest = FIDOCrypto.SHA256.hash(id)
        return ResidentCredential(credentialID: id, rpID: "rp\(id[0] % 5).crash.example",
                                  rpIDHash: rpIDHash("rp\(id[0] % 5).crash.example"), rpName: "Crash RP",
                                  userHandle: Array(digest.prefix(16)), userName: "user-" + hex(id),
                                  userDisplayName: "User \(id[1])", algorithm: -7,
                                  privateKey: SecretBytes(FIDOCrypto.SHA256.hash(id + [1])), createdAt: createdAt,
                                  credProtect: .userVerificationOptionalWithCredentialIDList, credBlob: Array(digest.suffix(8)),
                                  hmacSecretWithUV: SecretBytes(FIDOCrypto.SHA256.hash(id + [2])),
                                  hiddenSince: hiddenSince)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    static func bytes<S: StringProtocol>(hex: S) -> [UInt8]? {
        let characters = Array(hex.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var result: [UInt8] = []
        for index in stride(from: 0, to: characters.count, by: 2) {
            guard let byte = UInt8(String(decoding: characters[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            result.append(byte)
        }
        return result
    }

    func run() -> Never {
        let log = open(logPath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard log >= 0 else { exit(3) }
        func record(_ line: String) {
            let bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(log, $0.baseAddress, $0.count) }
        }
        let store: SQLiteCredentialStore
        do {
            store = try SQLiteCredentialStore.open(directory: directory)
        } catch {
            exit(4)
        }
        var existing = ((try? store.allResidentCredentials(includeHidden: true)) ?? []).map(\.credentialID)
        let stop = ContinuousClock.now + .seconds(60)
        var step = 0
        do {
            while ContinuousClock.now < stop {
                step += 1
                let now = Int64(time(nil))
                switch step % 10 {
                case 0..<5:
                    let id = SecureRandom.bytes(count: 32)
                    try store.saveResidentCredential(Self.credential(id: id, createdAt: now))
                    record("S " + Self.hex(id))
                    existing.append(id)
                case 5:
                    let ids = (0..<25).map { _ in SecureRandom.bytes(count: 32) }
                    try store.saveResidentCredentials(ids.map { Self.credential(id: $0, createdAt: now) })
                    for id in ids { record("S " + Self.hex(id)) }
                    existing += ids
                case 6:
                    record("C \(try store.nextSignatureCounter(credentialID: nil))")
                case 7:
                    guard let index = existing.indices.randomElement() else { continue }
                    let id = existing.remove(at: index)
                    record("d " + Self.hex(id))
                    try store.deleteResidentCredential(id: id)
                    record("D " + Self.hex(id))
                case 8:
                    guard let id = existing.randomElement() else { continue }
                    let credential = Self.credential(id: id, createdAt: now)
                    if step % 20 == 8 {
                        _ = try store.signalUnknownCredential(rpID: credential.rpID, credentialID: id)
                    } else {
                        _ = try store.signalAllAcceptedCredentials(rpID: credential.rpID, userHandle: credential.userHandle,
                                                                   acceptedIDs: [id])
                    }
                    _ = try store.nextSignatureCounter(credentialID: id)
                default:
                    try store.savePINState(PINState(pinHash: SecretBytes(SecureRandom.bytes(count: 16)), pinCodePoints: 4,
                                                     retries: step % 8, forcePINChange: false))
                    try store.saveSetting("step", value: Array(String(step).utf8))
                }
            }
        } catch {
            exit(5)
        }
        exit(0)
    }
}
