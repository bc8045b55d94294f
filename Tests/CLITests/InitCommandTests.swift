@testable import CLI
import CredentialStore
import FIDOCrypto
import Foundation
import KeySealing
import LatchkeyTestSupport
import Synchronization
import XCTest

/// `latchkey init`: a store sealed from its first byte by the best method the machine has, the
/// user unit and the browsers, and a report of what is left — against a real store in a scratch
/// home, with the machine's TPM, keyring and systemctl given by the test.
final class InitCommandTests: XCTestCase {
    var scratch: ScratchDirectory!
    var home: String { scratch.path + "/home" }
    var store: String { home + "/.local/share/latchkey/default" }
    let output = CapturedOutput()
    let calls = CallLog()

    override func setUpWithError() throws {
        scratch = try ScratchDirectory()
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
    }

    override func tearDown() {
        scratch.remove()
    }

    /// A machine with neither TPM nor keyring unless told, no unit, no package host.
    func system(tpm: Bool = false, keyring: Bool = false, lockedTPM: Bool = false, unit: Bool = false,
                systemctlStatus: Int32 = 0) -> InitCommand.System {
        var system = InitCommand.System()
        system.tpmProblem = { tpm ? nil : "no TPM answered (test)" }
        system.keyringProblem = { keyring ? nil : "no Secret Service (test)" }
        system.lockedTPMDevice = { lockedTPM ? "/dev/tpmrm0" : nil }
        system.unitInstalled = { _ in unit }
        system.packagedHost = { false }
        system.systemctl = { [calls] arguments in
            calls.list.withLock { $0.append(arguments) }
            return (systemctlStatus, systemctlStatus == 0 ? "" : "Failed to connect to bus: No medium found")
        }
        return system
    }

    func run(_ arguments: [String], system: InitCommand.System, terminal: (any UserTerminal)? = nil) -> CommandOutcome {
        let io = output.io(environment: ["HOME": home, "XDG_DATA_HOME": home + "/.local/share", "XDG_CONFIG_HOME": home + "/.config",
                                         "USER": "alice"], terminal: terminal)
        do {
            let parsed = try CommandLineParser.parse(arguments, spec: InitCommand.spec)
            return .status(try InitCommand.run(parsed, io: io, system: system))
        } catch {
            return .usage(error.message)
        }
    }

    func passphraseFile(_ text: String = "correct horse battery staple") throws -> String {
        let path = scratch.path + "/passphrase"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data((text + "\n").utf8),
                                                     attributes: [.posixPermissions: 0o600]))
        return path
    }

    func testWithoutTPMOrKeyringTheStoreIsSealedWithAPassphraseFromItsFirstByte() throws {
        let file = try passphraseFile()
        XCTAssertEqual(run(["--passphrase-file", file, "--scrypt-log-n", "10", "--json"], system: system()), .status(0), output.err)
        guard case .sealedWithPassphrase = try MasterKeySeal.state(directory: store) else {
            return XCTFail("not sealed with a passphrase: \(try MasterKeySeal.state(directory: store))")
        }
        // Only the sealed record was ever in the directory: no raw 32-byte key, no leftover.
        let files = try FileManager.default.contentsOfDirectory(atPath: store).sorted()
        XCTAssertFalse(files.contains { $0.hasPrefix("master.key.") }, "\(files)")
        XCTAssertTrue(files.contains("credentials.sqlite"), "\(files)")
        let record = try XCTUnwrap(FileManager.default.contents(atPath: store + "/master.key"))
        XCTAssertTrue(record.starts(with: Data("latchkey sealed master key\n".utf8)))
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(output.out.utf8)) as? [String: Any])
        let done = try XCTUnwrap(report["done"] as? [String])
        let left = try XCTUnwrap(report["left"] as? [String])
        XCTAssertTrue(done[0].contains("sealed with a passphrase"), "\(done)")
        XCTAssertTrue(done[0].contains("from the first byte"), "\(done)")
        XCTAssertTrue(left.contains { $0.contains("no user unit latchkey.service is installed") }, "\(left)")
        XCTAssertTrue(done.contains { $0.contains("wired the browsers") }, "with --passphrase-file the host can open it: \(done)")
        // The passphrase opens it (unsealing needs the key inside).
        try MasterKeySeal.unseal(directory: store, passphrase: SecretBytes(Array("correct horse battery staple".utf8)))
        XCTAssertEqual(try MasterKeySeal.state(directory: store), .unsealed)
    }

    func testATPMOnlyGroupTssMayOpenIsNamedWithItsFix() throws {
        let file = try passphraseFile()
        XCTAssertEqual(run(["--passphrase-file", file, "--scrypt-log-n", "10", "--no-unit", "--no-bridge"],
                           system: system(lockedTPM: true)), .status(0), output.err)
        XCTAssertTrue(output.out.contains("this machine's TPM (/dev/tpmrm0) is there but only group tss may use it: "
                                          + "sudo adduser alice tss, log in again, then latchkey store seal --tpm"), output.out)
        // Asked for by name, the TPM that does not answer is a failure with the same fix, and nothing is made.
        let elsewhere = scratch.path + "/tpm-store"
        XCTAssertEqual(run(["--tpm", "--store", elsewhere, "--no-unit", "--no-bridge"], system: system(lockedTPM: true)), .status(1))
        XCTAssertTrue(output.err.contains("only for group tss"), output.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: elsewhere))
    }

    func testNoMethodAtAllCreatesNothingAndSaysWhatToGive() throws {
        let outcome = run(["--no-unit", "--no-bridge"], system: system())
        XCTAssertEqual(outcome, .status(1))
        XCTAssertTrue(output.err.contains("--passphrase-file FILE"), output.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: store), "a store was made without a seal")
    }

    func testAnUnsealedStoreIsSealedAndASealedOneKept() throws {
        try SQLiteCredentialStore.open(directory: store, lock: .none).close()
        XCTAssertEqual(try MasterKeySeal.state(directory: store), .unsealed)
        let file = try passphraseFile()
        XCTAssertEqual(run(["--passphrase", "--passphrase-file", file, "--scrypt-log-n", "10", "--no-unit", "--no-bridge"],
                           system: system()), .status(0), output.err)
        XCTAssertEqual(try MasterKeySeal.state(directory: store).method, "passphrase")
        XCTAssertTrue(output.out.contains("sealed the master key of the existing store"), output.out)
        output.clear()
        XCTAssertEqual(run(["--keyring", "--no-unit", "--no-bridge"], system: system(keyring: true)), .status(0))
        XCTAssertEqual(try MasterKeySeal.state(directory: store).method, "passphrase", "a sealed store is kept")
        XCTAssertTrue(output.out.contains("latchkey store seal --keyring"), output.out)
    }

    func testAPassphraseSealedKeyIsNotStartedByTheUnitWithoutTheCredential() throws {
        let file = try passphraseFile()
        XCTAssertEqual(run(["--passphrase-file", file, "--scrypt-log-n", "10", "--no-bridge"], system: system(unit: true)),
                       .status(0), output.err)
        XCTAssertEqual(calls.list.withLock { $0 }, [], "a unit that cannot ask for the passphrase was started")
        XCTAssertTrue(output.out.contains("LoadCredential=latchkey-passphrase:%h/.config/latchkey/passphrase"), output.out)
        // Run again: the store is kept (still sealed with the passphrase), and the unit still is not started.
        output.clear()
        XCTAssertEqual(run(["--no-bridge"], system: system(unit: true)), .status(0), output.err)
        XCTAssertEqual(calls.list.withLock { $0 }, [])
        XCTAssertTrue(output.out.contains("kept the store"), output.out)
    }

    func testAKeyOtherThanTheDefaultIsNotTheUnits() throws {
        let file = try passphraseFile()
        XCTAssertEqual(run(["--name", "work", "--passphrase-file", file, "--scrypt-log-n", "10", "--no-bridge"],
                           system: system(unit: true)), .status(0), output.err)
        XCTAssertEqual(calls.list.withLock { $0 }, [])
        XCTAssertTrue(output.out.contains("run this one with: latchkey serve --name work"), output.out)
    }
}

/// The systemctl commands a test's machine was asked to run.
final class CallLog: Sendable {
    let list = Mutex<[[String]]>([])
}
