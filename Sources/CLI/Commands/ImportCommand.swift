import Authenticator
import CBOR
import CredentialStore
import CTAP
import Exchange
import FIDOClient
import FIDOCrypto
import Foundation
import Encoding

/// `latchkey import FILE`: passkeys from a CXF 1.0 document (plain, or as `latchkey export`
/// encrypted it), a Bitwarden JSON export or a KeePassXC `.passkey` file, onto a key's store
/// (created when there is none yet). Every passkey is checked first; they are stored counterless
/// in one transaction, and only when none was refused and no conflict is left undecided.
/// `--new-key FILE` makes the X25519 key pair an export is encrypted to.
public enum ImportCommand {
    public static let spec = CommandSpec(
        name: "import", abstract: "Import passkeys (CXF 1.0, Bitwarden JSON, KeePassXC .passkey) onto the key.",
        positionals: ["file"], minimumPositionals: 0, maximumPositionals: 1,
        options: CommandTarget.storeOptions + [
            .init("replace", help: "A passkey for an account (or credential ID) the key has replaces the key's."),
            .init("skip-existing", help: "Keep the key's passkey for an account it has; skip the file's."),
            .init("dry-run", help: "Check and report; store nothing."),
            .init("key", value: "FILE", help: "The X25519 private key (PEM) an export was encrypted to (--new-key made it)."),
            .init("passphrase-file", value: "FILE", help: "The passphrase an export was encrypted with (default: asked)."),
            .init("new-key", value: "FILE", help: "Make an X25519 key pair to receive exports: FILE (private, 0600) and FILE.pub."),
            CredentialsCommand.jsonOption,
        ])

    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 { try run(parsed, io: .standard) }

    static func run(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            if let keyPath = parsed.value("new-key") {
                guard parsed.positionals.isEmpty else { throw .usage("--new-key makes a key pair; it imports nothing") }
                return try newKey(keyPath, io: io)
            }
            guard let path = parsed.positionals.first else { throw .usage("name the FILE to import (or --new-key FILE)") }
            guard !(parsed.flag("replace") && parsed.flag("skip-existing")) else { throw .usage("give --replace or --skip-existing, not both") }
            guard case let .store(directory, _) = try CommandTarget.resolve(parsed, environment: io.environment) else {
                throw .usage("import works on a key's store (--name or --store)")
            }
            let file = try readFile(path, parsed: parsed, io: io)
            let dryRun = parsed.flag("dry-run")

            // --dry-run writes nothing anywhere: a store that does not exist yet is planned
            // against as empty, not made (its directory and master key would be writes).
            let store: SQLiteCredentialStore?
            if dryRun && !FileManager.default.fileExists(atPath: directory + "/credentials.sqlite") {
                store = nil
            } else {
                var options = StoreOptions()
                options.sealNewStore = try NewStoreSeal.method(for: directory, environment: io.environment,
                                                               terminal: io.terminal, warn: io.err)
                do throws(StoreError) {
                    store = try SQLiteCredentialStore.open(directory: directory, lock: .none, options: options)
                } catch {
                    throw LocalStore.failure(error, directory: directory)
                }
            }
            defer { store?.close() }
            let existing = try store.map { store throws(CLIError) in
                try LocalStore.perform(directory) { () throws(StoreError) in try store.allResidentCredentials(includeHidden: true) }
            } ?? []
            let rule: PasskeyImport.ConflictRule = parsed.flag("replace") ? .replace : parsed.flag("skip-existing") ? .skipExisting : .refuse
            let plan = PasskeyImport(file: file, existing: existing,
                                     algorithms: COSEAlgorithm.credentialAlgorithms.filter(\.isAvailableInLibcrypto),
                                     maxCredBlobLength: AuthenticatorConfiguration().maxCredBlobLength,
                                     conflicts: rule, now: Int64(Date().timeIntervalSince1970), random: SystemRandom())
            var applied = false
            if plan.canApply, !dryRun, !plan.credentials.isEmpty, let store {
                try apply(plan, store: store, directory: directory)
                applied = true
            }
            report(plan, file: file, path: path, directory: directory, applied: applied, dryRun: dryRun, json: parsed.flag("json"), io: io)
            return plan.canApply ? 0 : 1
        }
    }

    static func readFile(_ path: String, parsed: ParsedArguments, io: CommandIO) throws(CLIError) -> PasskeyFile {
        var bytes = try ExchangeFiles.read(path, what: "file to import")
        defer { bytes.wipe() }
        // A streamed (version 2) backup is told by its first line.
        if let newline = bytes.prefix(BackupStream.maximumHeaderLine).firstIndex(of: 0x0A),
           BackupStream.isVersion2(headerLine: Array(bytes[..<newline])) {
            throw .failure("\(path) is a whole-key backup: make a store from it with `latchkey restore \(path) --store DIR`")
        }
        guard let encrypted = try ExchangeFiles.perform({ () throws(ExchangeError) in try PasskeyFile.encryptedExport(in: bytes) }) else {
            return try ExchangeFiles.perform { () throws(ExchangeError) in try PasskeyFile(bytes) }
        }
        guard encrypted.contents == .cxf else {
            throw .failure("\(path) is a whole-key backup: make a store from it with `latchkey restore \(path) --store DIR`")
        }
        let plaintext = try open(encrypted, path: path, parsed: parsed, io: io)
        return try ExchangeFiles.perform { () throws(ExchangeError) in
            try plaintext.withUnsafeBytes { (bytes) throws(ExchangeError) in try PasskeyFile(Array(bytes)) }
        }
    }

    /// Decrypts an export or backup with --key, --passphrase-file or a passphrase typed on the terminal.
    static func open(_ encrypted: EncryptedExport, path: String, parsed: ParsedArguments, io: CommandIO) throws(CLIError) -> SecretBytes {
        let isHPKE = if case .hpke = encrypted.method { true } else { false }
        switch try ExchangeFiles.decryptionSecret(toKey: isHPKE, path: path, parsed: parsed, io: io) {
        case let .key(key): return try ExchangeFiles.perform { () throws(ExchangeError) in try encrypted.open(with: key) }
        case let .passphrase(passphrase): return try ExchangeFiles.perform { () throws(ExchangeError) in try encrypted.open(passphrase: passphrase) }
        }
    }

    /// One transaction: the credentials, and their large blobs in the key's array.
    static func apply(_ plan: PasskeyImport, store: SQLiteCredentialStore, directory: String) throws(CLIError) {
        do {
            try plan.apply(to: store, maxLargeBlobArray: AuthenticatorConfiguration().maxSerializedLargeBlobArray, random: SystemRandom())
        } catch {
            switch error {
            case let .largeBlobs(failure): throw .failure("nothing was imported: the large blobs do not fit: \(failure)")
            case .store(.full):
                throw .failure("nothing was imported: the key's store would be full (it keeps at most \(store.maxResidentCredentials) passkeys)")
            case let .store(storeError): throw .failure("nothing was imported: " + storeError.message(directory: directory))
            }
        }
    }

    static func report(_ plan: PasskeyImport, file: PasskeyFile, path: String, directory: String, applied: Bool, dryRun: Bool,
                       json: Bool, io: CommandIO) {
        func label(_ action: PasskeyImport.Action) -> (String, String?) {
            switch action {
            case .imported: (applied ? "imported" : "importable", nil)
            case .replaced: (applied ? "replaced" : "would replace", nil)
            case let .skipped(reason): ("skipped", reason)
            case let .refused(reason): ("refused", reason)
            case let .conflict(reason): ("conflict", reason)
            }
        }
        if json {
            io.out(JSONValue.object([
                ("file", .string(path)), ("format", .string(file.format.rawValue)), ("store", .string(directory)),
                ("applied", .bool(applied)), ("dryRun", .bool(dryRun)),
                ("passkeys", .array(plan.outcomes.map { outcome in
                    let (status, reason) = label(outcome.action)
                    return JSONValue.object([("origin", .string(outcome.origin)), ("rpId", .string(outcome.rpID)),
                                             ("credentialId", .string(Base64URL.encode(outcome.credentialID))),
                                             ("status", .string(status)), ("reason", reason.map(JSONValue.string) ?? .null)])
                })),
                ("skippedItems", .object(file.skipped.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.int($0.value)) })),
            ]).rendered)
            return
        }
        io.out("\(path): \(file.format.rawValue), \(file.passkeys.count) passkey(s)")
        for outcome in plan.outcomes {
            let (status, reason) = label(outcome.action)
            let user = outcome.userName.map { " \(DisplayText.safe($0))" } ?? ""
            io.out("  \(status): \(DisplayText.safe(outcome.rpID))\(user) \(Base64URL.encode(outcome.credentialID))"
                   + (reason.map { " — \($0)" } ?? "") + " [\(DisplayText.safe(outcome.origin))]")
        }
        for (kind, count) in file.skipped.sorted(by: { $0.key < $1.key }) {
            io.out("  skipped \(count) item(s) that are not passkeys: \(DisplayText.safe(kind))")
        }
        let stored = plan.credentials.count
        if applied {
            io.out("Imported \(stored) passkey(s) onto \(directory), each with a signature counter of 0 that never counts (CXF's rule).")
        } else if !plan.canApply {
            io.out("Nothing was imported: fix or leave out what is refused, or say what to do with conflicts (--replace, --skip-existing).")
        } else if dryRun {
            io.out("Dry run: \(stored) passkey(s) would be imported onto \(directory); nothing was stored.")
        } else {
            io.out("Nothing to import.")
        }
    }

    /// An X25519 key pair for receiving exports: FILE (PKCS#8 PEM, 0600) and FILE.pub (SPKI PEM).
    static func newKey(_ path: String, io: CommandIO) throws(CLIError) -> Int32 {
        guard !FileManager.default.fileExists(atPath: path) else { throw .failure("\(path) exists; choose another file (it is never overwritten)") }
        let key: X25519.PrivateKey
        do {
            key = try X25519.PrivateKey()
        } catch {
            throw .failure("cannot make a key: \(error)")
        }
        var privatePEM = key.pkcs8.withUnsafeBytes { ExchangeFiles.pemText(Array($0), label: "PRIVATE KEY") }
        defer { privatePEM.wipe() }
        try ExchangeFiles.writePrivately(privatePEM, to: path)
        try ExchangeFiles.writePrivately(ExchangeFiles.pemText(key.publicKey.subjectPublicKeyInfo, label: "PUBLIC KEY"), to: path + ".pub")
        io.out("Made \(path) (private: keep it here) and \(path).pub (give it to whoever exports: `latchkey export --to \(path).pub`).")
        return 0
    }
}
