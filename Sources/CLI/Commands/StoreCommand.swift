import Authenticator
import CredentialStore
import FIDOClient
import FIDOCrypto
import Foundation
import KeySealing
import Encoding

/// `latchkey store seal|unseal|status`: how a store's master key is kept (MasterKeySeal). Sealed
/// to the TPM, the login keyring or a passphrase, a copy of the store's directory — a backup, a
/// stolen disk — is worth nothing without it. A passphrase is then needed by every command that
/// opens the store (PassphraseInput says where it comes from); a TPM or an unlocked keyring opens
/// it without asking.
public enum StoreCommand {
    static let passphraseFileOption = CommandSpec.Option(
        "passphrase-file", value: "FILE", help: "The passphrase, one line in a file only you can read (default: typed on the terminal).")

    public static let sealSpec = CommandSpec(
        name: "store seal",
        abstract: "Seal the store's master key to this machine's TPM 2.0, the login keyring, or a passphrase (switching methods in one step).",
        options: CommandTarget.storeOptions + [
            .init("tpm", help: "Seal to this machine's TPM 2.0 (TSS2_TCTI if set, else /dev/tpmrm0): the store opens only here."),
            .init("pcr", value: "N[,N]", help: "With --tpm: also bind to these PCRs' present values (SHA-256 bank; 7 = Secure Boot state)."),
            .init("keyring", help: "Seal with a key kept in the login keyring (Secret Service: gnome-keyring, KeePassXC)."),
            .init("passphrase", help: "Seal with a passphrase (scrypt, 128 MiB per guess; AES-256-GCM)."),
            passphraseFileOption,
            .init("current-passphrase-file", value: "FILE", help: "The passphrase it is sealed with now, to change it (default: asked)."),
            ExchangeFiles.scryptOption,
            CredentialsCommand.jsonOption,
        ])
    public static let unsealSpec = CommandSpec(
        name: "store unseal", abstract: "Keep the master key unsealed again (32 bytes beside the store, as test rigs do).",
        options: CommandTarget.storeOptions + [passphraseFileOption, CredentialsCommand.jsonOption])
    public static let statusSpec = CommandSpec(
        name: "store status", abstract: "Say how the store's master key is kept.",
        options: CommandTarget.storeOptions + [CredentialsCommand.jsonOption])

    public static func group(io: @escaping @Sendable () -> CommandIO = { .standard }) -> CommandGroup {
        CommandGroup(name: "store", abstract: "Seal or unseal the store's master key, or say how it is kept (seal, unseal, status).",
                     members: [
                        .init(spec: sealSpec) { parsed throws(UsageError) in try seal(parsed, io: io()) },
                        .init(spec: unsealSpec) { parsed throws(UsageError) in try unseal(parsed, io: io()) },
                        .init(spec: statusSpec) { parsed throws(UsageError) in try status(parsed, io: io()) },
                     ])
    }

    public static var spec: CommandSpec { group().spec }
    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 { try group().run(parsed) }

    static func directory(_ parsed: ParsedArguments, io: CommandIO) throws(CLIError) -> String {
        guard case let .store(directory, _) = try CommandTarget.resolve(parsed, environment: io.environment) else {
            throw .usage("store commands work on a key's store (--name or --store)")
        }
        return directory
    }

    static func seal(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            // The new passphrase is --passphrase-file here, never the one a store open would read.
            let newPassphraseFile = parsed.value("passphrase-file")
            PassphraseInput.explicitFile.withLock { $0 = nil }
            let chosen = ["tpm", "keyring", "passphrase"].filter { parsed.flag($0) }
            guard chosen.count == 1 else { throw .usage("say how to seal, with one of --tpm, --keyring, --passphrase") }
            if parsed.value("pcr") != nil, chosen != ["tpm"] { throw .usage("--pcr binds a TPM seal: use it with --tpm") }
            let directory = try directory(parsed, io: io)
            let state = try storeState(directory)
            if state == .missing {
                throw .failure("there is no store at \(directory) yet: the first `latchkey serve` creates it")
            }
            let current = try currentPassphrase(parsed, state: state, directory: directory, io: io,
                                                option: "current-passphrase-file")
            let method: MasterKeySeal.Method
            let done: String
            switch chosen[0] {
            case "tpm":
                let pcrs = try pcrList(parsed.value("pcr"))
                method = .tpm(pcrs: pcrs)
                done = "to this machine's TPM 2.0" + (pcrs.isEmpty ? "" : " and the present values of PCR \(pcrs.map(String.init).joined(separator: ","))")
                    + ". It opens only on this machine" + (pcrs.isEmpty ? "" : " while those PCRs keep their values (a firmware or "
                    + "Secure Boot change needs `latchkey store unseal` first, on the old state)") + "; no passphrase is asked."
            case "keyring":
                method = .keyring
                done = "with a key kept in the login keyring. It opens while your desktop session's keyring is unlocked."
            default:
                let parameters = try ExchangeFiles.scryptParameters(parsed)
                method = .passphrase(try PassphraseInput.new(file: newPassphraseFile, terminal: io.terminal, warn: io.err), parameters)
                done = "with a passphrase (\(describe(parameters))). Every command that opens the store now needs it: --passphrase-file "
                    + "FILE, LATCHKEY_PASSPHRASE_FILE, the systemd credential latchkey-passphrase, or the terminal."
            }
            do throws(StoreError) {
                try MasterKeySeal.seal(directory: directory, with: method, current: current)
            } catch {
                throw .failure(error.message(directory: directory))
            }
            if parsed.flag("json") {
                io.out(JSONValue.object([("store", .string(directory)), ("masterKey", .string("sealed")),
                                         ("method", .string(chosen[0]))]).rendered)
            } else {
                io.out("Sealed the master key of \(directory) " + done)
            }
            return 0
        }
    }

    /// PCR numbers from `7` or `0,7` (SHA-256 bank, 0–23).
    static func pcrList(_ text: String?) throws(CLIError) -> [UInt8] {
        guard let text else { return [] }
        var pcrs: [UInt8] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let pcr = UInt8(part.trimmingCharacters(in: .whitespaces)), pcr < 24 else {
                throw .usage("--pcr takes PCR numbers 0–23, separated by commas (e.g. --pcr 7), not \(text)")
            }
            if !pcrs.contains(pcr) { pcrs.append(pcr) }
        }
        return pcrs.sorted()
    }

    /// A passphrase-sealed store's passphrase (from `option`'s file, else asked); nil for the other methods.
    static func currentPassphrase(_ parsed: ParsedArguments, state: MasterKeySeal.State, directory: String, io: CommandIO,
                                  option: String) throws(CLIError) -> SecretBytes? {
        guard case .sealedWithPassphrase = state else { return nil }
        let current: SecretBytes?
        if let file = parsed.value(option) {
            current = try PassphraseInput.read(file)
        } else {
            current = try PassphraseInput.passphrase(for: directory, environment: io.environment, terminal: io.terminal)
        }
        guard let current else { throw .failure("the store is sealed with a passphrase: give it (--\(option) FILE)") }
        return current
    }

    static func unseal(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let directory = try directory(parsed, io: io)
            let state = try storeState(directory)
            let report = JSONValue.object([("store", .string(directory)), ("masterKey", .string("unsealed")),
                                           ("changed", .bool(state.method != nil))]).rendered
            guard state.method != nil else {
                io.out(parsed.flag("json") ? report : "The master key of \(directory) is not sealed; nothing to do.")
                return 0
            }
            let passphrase = try currentPassphrase(parsed, state: state, directory: directory, io: io, option: "passphrase-file")
            do throws(StoreError) {
                try MasterKeySeal.unseal(directory: directory, passphrase: passphrase)
            } catch {
                throw .failure(error.message(directory: directory))
            }
            io.out(parsed.flag("json") ? report
                   : "The master key of \(directory) is unsealed: anyone who copies the directory can use its credentials.")
            return 0
        }
    }

    static func status(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let directory = try directory(parsed, io: io)
            // A store that is not there is an error (exit 1), as for every command that names one.
            try LocalStore.checkStoreDirectory(directory)
            let state = try storeState(directory)
            if parsed.flag("json") {
                var fields: [(String, JSONValue)] = [("store", .string(directory))]
                switch state {
                case .missing: fields.append(("masterKey", .string("missing")))
                case .unsealed: fields.append(("masterKey", .string("unsealed")))
                case let .sealedWithPassphrase(parameters):
                    fields += [("masterKey", .string("sealed")), ("method", .string("passphrase")),
                               ("kdf", .object([("name", .string("scrypt")), ("logN", .int(Int(parameters.logN))),
                                                ("r", .int(Int(parameters.r))), ("p", .int(Int(parameters.p))),
                                                ("memoryBytes", .int(Int(parameters.memoryBytes)))]))]
                case let .sealedWithTPM(pcrs, _):
                    fields += [("masterKey", .string("sealed")), ("method", .string("tpm")),
                               ("pcrs", .array(pcrs.map { .int(Int($0)) })),
                               ("tpmAnswers", .bool(TPMSeal.probe(tcti: nil) == nil))]
                case let .sealedWithKeyring(item):
                    fields += [("masterKey", .string("sealed")), ("method", .string("keyring")), ("item", .string(item)),
                               ("keyringAnswers", .bool(KeyringSeal.probe() == nil))]
                }
                if let weakness = state.weakness { fields.append(("weakness", .string(weakness))) }
                io.out(JSONValue.object(fields).rendered)
            } else {
                io.out("\(directory): " + describe(state))
                // Sealed to something that does not answer now: the store will not open, and
                // the line above alone would read as all is well.
                switch state {
                case .sealedWithTPM:
                    if let problem = TPMSeal.probe(tcti: nil) {
                        io.out("TPM not answering: \(problem). The store cannot open until it does.")
                    }
                case .sealedWithKeyring:
                    if let problem = KeyringSeal.probe() {
                        io.out("login keyring not answering: \(DisplayText.safe(problem)). The store cannot open until it does.")
                    }
                default: break
                }
                if let weakness = state.weakness { io.out("weaker than it can be: " + weakness) }
            }
            return 0
        }
    }

    static func storeState(_ directory: String) throws(CLIError) -> MasterKeySeal.State {
        do throws(StoreError) {
            return try MasterKeySeal.state(directory: directory)
        } catch {
            throw .failure(error.message(directory: directory))
        }
    }

    /// One line on how the master key is kept (status, doctor).
    static func describe(_ state: MasterKeySeal.State) -> String {
        switch state {
        case .missing: "no store yet"
        case .unsealed:
            "master key unsealed (anyone who copies the directory has its credentials: latchkey store seal --tpm|--keyring|--passphrase)"
        case let .sealedWithPassphrase(parameters): "master key sealed with a passphrase (\(describe(parameters)))"
        case let .sealedWithTPM(pcrs, _):
            "master key sealed to this machine's TPM 2.0" + (pcrs.isEmpty ? "" : " and PCR \(pcrs.map(String.init).joined(separator: ","))")
        case let .sealedWithKeyring(item): "master key sealed with the login keyring (Secret Service item \(item))"
        }
    }

    static func describe(_ parameters: Scrypt.Parameters) -> String {
        "scrypt N=2^\(parameters.logN), r=\(parameters.r), p=\(parameters.p): \(parameters.memoryBytes >> 20) MiB per guess"
    }
}
