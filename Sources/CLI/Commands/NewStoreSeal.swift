import Authenticator
import CredentialStore
import FIDOCrypto
import Foundation
import KeySealing

/// How `serve`, `restore` and `import` seal a store they create: `LATCHKEY_SEAL` = `tpm`,
/// `tpm:PCR[,PCR]`, `keyring` or `passphrase` (the new passphrase from `--passphrase-file`, LATCHKEY_PASSPHRASE_FILE,
/// the systemd credential latchkey-passphrase, or typed twice on the terminal). The store's
/// master.key is then written sealed from its first byte, as `latchkey init` writes it. Unset,
/// a new store keeps 32 raw bytes, as test rigs want; an existing store is never changed here.
enum NewStoreSeal {
    static let variable = "LATCHKEY_SEAL"

    /// The method for the store in `directory` if this command will create it and a method is
    /// configured; nil otherwise.
    static func method(for directory: String, environment: [String: String], terminal: (any UserTerminal)?,
                       warn: (String) -> Void) throws(CLIError) -> MasterKeySeal.Method? {
        guard let value = environment[variable], !value.isEmpty else { return nil }
        guard !FileManager.default.fileExists(atPath: directory + "/master.key") else { return nil }
        switch value {
        case "keyring":
            return .keyring
        case "passphrase":
            let file = PassphraseInput.configuredFile(environment: environment)
            return .passphrase(try PassphraseInput.new(file: file, terminal: terminal, warn: warn), .default)
        default:
            guard value == "tpm" || value.hasPrefix("tpm:") else {
                throw .usage("\(variable)=\(DisplayText.safe(value, limit: 40)) names no seal: use tpm, tpm:PCR[,PCR], keyring or passphrase")
            }
            return .tpm(pcrs: try StoreCommand.pcrList(value == "tpm" ? nil : String(value.dropFirst(4))))
        }
    }
}
