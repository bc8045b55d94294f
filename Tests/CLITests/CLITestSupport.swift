import Authenticator
import CLI
import CredentialStore
import FIDOClient
import FIDOCrypto
import Foundation
import KeyService
import LatchkeyTestSupport
import Synchronization
import XCTest

/// What a CLI command printed, and a `CommandIO` that records it.
final class CapturedOutput: @unchecked Sendable {
    private let state = Mutex<(out: [String], err: [String])>(([], []))
    var out: String { state.withLock { $0.out.joined(separator: "\n") } }
    var err: String { state.withLock { $0.err.joined(separator: "\n") } }

    func io(environment: [String: String] = [:], terminal: (any UserTerminal)? = nil,
            openDevice: (@Sendable (DeviceSelection) throws(DeviceError) -> any CTAP2Link)? = nil) -> CommandIO {
        let record: @Sendable (String) -> Void = { [self] line in state.withLock { $0.out.append(line) } }
        let recordError: @Sendable (String) -> Void = { [self] line in state.withLock { $0.err.append(line) } }
        if let openDevice {
            return CommandIO(out: record, err: recordError, environment: environment, terminal: terminal, openDevice: openDevice)
        }
        return CommandIO(out: record, err: recordError, environment: environment, terminal: terminal,
                         openDevice: { selection throws(DeviceError) in throw .transport("no devices in tests (\(selection.path))") })
    }

    func clear() { state.withLock { $0 = ([], []) } }
}

/// A terminal whose user answers from a script; records the prompts.
final class ScriptedTerminal: UserTerminal, @unchecked Sendable {
    private let state = Mutex<(answers: [String], prompts: [String])>(([], []))
    init(_ answers: [String]) { state.withLock { $0.answers = answers } }
    var prompts: [String] { state.withLock { $0.prompts } }

    func confirm(_ prompt: String) -> Bool {
        let answer = next(prompt)
        return answer == "y" || answer == "yes"
    }

    func readSecret(_ prompt: String) -> [UInt8]? {
        next(prompt).map { Array($0.utf8) }
    }

    private func next(_ prompt: String) -> String? {
        state.withLock { state in
            state.prompts.append(prompt)
            return state.answers.isEmpty ? nil : state.answers.removeFirst()
        }
    }
}

/// How a command ended: its status, or the usage error `latchkey` would print (exit 64).
enum CommandOutcome: Equatable {
    case status(Int32)
    case usage(String)

    var exitStatus: Int32 {
        switch self {
        case .status(let status): status
        case .usage: 64
        }
    }
}

/// Parses `arguments` as `latchkey <group> …` does (the group's spec first) and runs the group.
func runCommand(_ group: CommandGroup, _ arguments: [String]) -> CommandOutcome {
    do {
        let parsed = try CommandLineParser.parse(arguments, spec: group.spec)
        return .status(try group.run(parsed))
    } catch {
        return .usage(error.message)
    }
}

/// A store in a fresh temporary directory, with resident credentials saved straight into it.
final class TestStore {
    let scratch: ScratchDirectory
    var directory: String { scratch.path + "/store" }

    init() throws {
        scratch = try ScratchDirectory()
        let store = try SQLiteCredentialStore.open(directory: directory, lock: .none)
        store.close()
    }

    deinit { scratch.remove() }

    func open(lock: StoreLock = .none) throws -> SQLiteCredentialStore {
        try SQLiteCredentialStore.open(directory: directory, lock: lock)
    }

    @discardableResult
    func add(rpID: String, userHandle: [UInt8], name: String?, displayName: String?, createdAt: Int64 = 1_800_000_000,
             credentialID: [UInt8]? = nil) throws -> ResidentCredential {
        let credential = try makeResidentCredential(rpID: rpID, userHandle: userHandle, name: name, displayName: displayName,
                                                    createdAt: createdAt, credentialID: credentialID)
        let store = try open()
        defer { store.close() }
        try store.saveResidentCredential(credential)
        return credential
    }

    func all(includeHidden: Bool = true) throws -> [ResidentCredential] {
        let store = try open()
        defer { store.close() }
        return try store.allResidentCredentials(includeHidden: includeHidden)
    }
}

/// A random credential ID that starts like Latchkey's own (version byte 0x01), so its base64url
/// form never begins with '-' and is not read as an option on a command line. (Users passing a
/// foreign key's ID that starts with '-' put `--` before it.)
func randomCredentialID(count: Int) -> [UInt8] { [0x01] + SecureRandom.bytes(count: count - 1) }

/// A resident credential with a real P-256 key (credential management derives its public key).
func makeResidentCredential(rpID: String, userHandle: [UInt8], name: String?, displayName: String?,
                            createdAt: Int64 = 1_800_000_000, credentialID: [UInt8]? = nil) throws -> ResidentCredential {
    ResidentCredential(credentialID: credentialID ?? randomCredentialID(count: 48), rpID: rpID,
                       rpIDHash: FIDOCrypto.SHA256.hash(Array(rpID.utf8)), rpName: rpID.uppercased(),
                       userHandle: userHandle, userName: name, userDisplayName: displayName, algorithm: -7,
                       privateKey: try P256.Signing.PrivateKey().rawRepresentation, createdAt: createdAt)
}

/// A file holding `text` (PIN files, ID files) in `directory`, mode `mode` (PIN files must be
/// private to their owner).
func writeFile(_ directory: String, _ name: String, _ text: String, mode: mode_t = 0o600) throws -> String {
    let path = directory + "/" + name
    try text.write(toFile: path, atomically: false, encoding: .utf8)
    guard chmod(path, mode) == 0 else { throw CocoaError(.fileWriteNoPermission) }
    return path
}
