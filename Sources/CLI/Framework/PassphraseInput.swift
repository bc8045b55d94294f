import CredentialStore
import FIDOCrypto
import Foundation
import Synchronization
import KeySealing

/// Where a sealed store's passphrase comes from, wherever a command opens the store (MasterKeySeal
/// asks only for a sealed one): `--passphrase-file FILE` (serve, store), the file named by
/// LATCHKEY_PASSPHRASE_FILE, the systemd credential `latchkey-passphrase`
/// (`LoadCredential=latchkey-passphrase:…`, in $CREDENTIALS_DIRECTORY), else the controlling
/// terminal, without echo. A file must be yours and private (as a PIN file, PINInput.readFile);
/// never argv, never a log line. With none of these the open fails with a message saying how to
/// give it.
enum PassphraseInput {
    static let environmentName = "LATCHKEY_PASSPHRASE_FILE"
    static let credentialName = "latchkey-passphrase"
    /// `--passphrase-file` of the command being run.
    static let explicitFile = Mutex<String?>(nil)

    /// Installs the source every store open of this process uses (LatchkeyCLI.runProcess).
    static func install(environment: [String: String] = ProcessInfo.processInfo.environment) {
        MasterKeySeal.installPassphraseSource { directory throws(SealError) in
            do throws(CLIError) {
                return try passphrase(for: directory, environment: environment)
            } catch {
                // One error, the reason: the store's "sealed and did not open" carries it.
                switch error {
                case .usage(let usage): throw .sealed(usage.message)
                case .failure(let text): throw .sealed(text)
                }
            }
        }
    }

    /// The file a passphrase comes from, in this order: `--passphrase-file`, the file
    /// LATCHKEY_PASSPHRASE_FILE names, the systemd credential; nil when none is configured.
    static func configuredFile(environment: [String: String]) -> String? {
        if let file = explicitFile.withLock({ $0 }) { return file }
        if let file = environment[environmentName], !file.isEmpty { return file }
        if let credentials = environment["CREDENTIALS_DIRECTORY"], !credentials.isEmpty,
           FileManager.default.fileExists(atPath: credentials + "/" + credentialName) {
            return credentials + "/" + credentialName
        }
        return nil
    }

    static func passphrase(for directory: String, environment: [String: String],
                           terminal: (any UserTerminal)? = ControllingTerminal.open()) throws(CLIError) -> SecretBytes? {
        if let file = configuredFile(environment: environment) { return try read(file) }
        if let terminal, var typed = terminal.readSecret("Passphrase for the store \(directory): ") {
            defer { typed.wipe() }
            guard !typed.isEmpty else { throw .failure("an empty passphrase opens nothing") }
            return SecretBytes(typed)
        }
        return nil
    }

    /// Fewer bytes than this are refused when typed and warned about from a file (a rig's
    /// throw-away store may want a short one; a person typing one is told at once).
    static let minimumLength = 8

    /// The warning for a short passphrase from a file, or nil.
    static func shortWarning(_ passphrase: SecretBytes, file: String) -> String? {
        guard passphrase.count < minimumLength else { return nil }
        return "Warning: the passphrase in \(file) has \(Wording.count(passphrase.count, "byte")); fewer than "
            + "\(minimumLength) are easily guessed (scrypt slows each guess, it does not stop a short list)"
    }

    /// A new passphrase: from `file` (a short one warned about on `warn`), or typed twice on the terminal.
    static func new(file: String?, terminal: (any UserTerminal)?, warn: (String) -> Void = { _ in }) throws(CLIError) -> SecretBytes {
        if let file {
            let passphrase = try read(file)
            if let warning = shortWarning(passphrase, file: file) { warn(warning) }
            return passphrase
        }
        guard let terminal else {
            throw .usage("no terminal to type the new passphrase on: give --passphrase-file FILE (a file only you can read)")
        }
        guard var first = terminal.readSecret("New passphrase: ") else { throw .failure("no passphrase was entered") }
        defer { first.wipe() }
        guard var second = terminal.readSecret("Repeat the new passphrase: ") else { throw .failure("no passphrase was entered") }
        defer { second.wipe() }
        guard first == second else { throw .failure("the two passphrases differ; nothing was changed") }
        guard first.count >= minimumLength else {
            throw .failure("a passphrase of fewer than \(minimumLength) bytes is too easily guessed; nothing was changed")
        }
        return SecretBytes(first)
    }

    /// A passphrase file's one line (PINInput's rules: yours, private, one line).
    static func read(_ path: String) throws(CLIError) -> SecretBytes {
        var bytes = try PINInput.readFile(path, option: "passphrase-file")
        defer { bytes.wipe() }
        guard !bytes.isEmpty else { throw .failure("the passphrase file \(path) is empty") }
        return SecretBytes(bytes)
    }
}
