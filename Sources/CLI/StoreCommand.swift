import Authenticator
import CredentialStore
import FIDOClient
import FIDOCrypto
import Foundation

/// `latchkey store seal|unseal|status`: how a store's master key is kept (MasterKeySeal). Sealed
/// with a passphrase, a copy of the store's directory — a backup, a stolen disk, another process
/// of the user — is worth nothing without it; every command that opens the store then needs it
/// (PassphraseInput says where it comes from).
public enum StoreCommand {
    static let passphraseFileOption = CommandSpec.Option(
        "passphrase-file", value: "FILE", help: "The passphrase, one line in a file only you can read (default: typed on the terminal).")

    public static let sealSpec = CommandSpec(
        name: "store seal", abstract: "Seal the store's master key with a passphrase (scrypt, 128 MiB per guess; AES-256-GCM).",
        options: CommandTarget.storeOptions + [
            .init("passphrase", help: "Seal with a passphrase (the method this Latchkey has; TPM 2.0 and the login keyring are not built yet)."),
            passphraseFileOption,
            .init("current-passphrase-file", value: "FILE", help: "The passphrase it is sealed with now, to change it (default: asked)."),
            ExchangeFiles.scryptOption,
        ])
    public static let unsealSpec = CommandSpec(
        name: "store unseal", abstract: "Keep the master key unsealed again (32 bytes beside the store, as test rigs do).",
        options: CommandTarget.storeOptions + [passphraseFileOption])
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
            PassphraseInput.explicitFile.withLock { $0 = nil }
            guard parsed.flag("passphrase") else { throw .usage("say how to seal: --passphrase") }
            let directory = try directory(parsed, io: io)
            let parameters = try ExchangeFiles.scryptParameters(parsed)
            let state = try storeState(directory)
            var current: SecretBytes?
            if case .sealedWithPassphrase = state {
                if let file = parsed.value("current-passphrase-file") {
                    current = try PassphraseInput.read(file)
                } else {
                    current = try PassphraseInput.passphrase(for: directory, environment: io.environment, terminal: io.terminal)
                }
                guard current != nil else { throw .failure("the store is sealed: give its passphrase (--current-passphrase-file FILE)") }
            } else if state == .missing {
                throw .failure("there is no store at \(directory) yet: the first `latchkey serve` creates it")
            }
            let passphrase = try PassphraseInput.new(file: parsed.value("passphrase-file"), terminal: io.terminal)
            do throws(StoreError) {
                try MasterKeySeal.seal(directory: directory, passphrase: passphrase, current: current, parameters: parameters)
            } catch {
                throw .failure(error.message(directory: directory))
            }
            io.out("Sealed the master key of \(directory) with a passphrase (\(describe(parameters))). Every command that opens "
                + "the store now needs it: --passphrase-file FILE, LATCHKEY_PASSPHRASE_FILE, the systemd credential "
                + "latchkey-passphrase, or the terminal.")
            return 0
        }
    }

    static func unseal(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let directory = try directory(parsed, io: io)
            guard case .sealedWithPassphrase = try storeState(directory) else {
                io.out("The master key of \(directory) is not sealed; nothing to do.")
                return 0
            }
            let passphrase: SecretBytes?
            if let file = parsed.value("passphrase-file") {
                passphrase = try PassphraseInput.read(file)
            } else {
                passphrase = try PassphraseInput.passphrase(for: directory, environment: io.environment, terminal: io.terminal)
            }
            guard let passphrase else { throw .failure("give the store's passphrase (--passphrase-file FILE)") }
            do throws(StoreError) {
                try MasterKeySeal.unseal(directory: directory, passphrase: passphrase)
            } catch {
                throw .failure(error.message(directory: directory))
            }
            io.out("The master key of \(directory) is unsealed: anyone who copies the directory can use its credentials.")
            return 0
        }
    }

    static func status(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            let directory = try directory(parsed, io: io)
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
                }
                io.out(JSONValue.object(fields).rendered)
            } else {
                io.out("\(directory): " + describe(state))
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
        case .unsealed: "master key unsealed (anyone who copies the directory has its credentials: latchkey store seal --passphrase)"
        case let .sealedWithPassphrase(parameters): "master key sealed with a passphrase (\(describe(parameters)))"
        }
    }

    static func describe(_ parameters: Scrypt.Parameters) -> String {
        "scrypt N=2^\(parameters.logN), r=\(parameters.r), p=\(parameters.p): \(parameters.memoryBytes >> 20) MiB per guess"
    }
}
