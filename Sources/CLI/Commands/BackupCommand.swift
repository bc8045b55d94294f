import Authenticator
import CredentialStore
import Exchange
import FIDOClient
import FIDOCrypto
import Foundation
import KeySealing
import Encoding

/// `latchkey backup` and `latchkey restore`: the whole key — its wrapping key (so non-resident
/// credential IDs keep working), attestation, resident credentials with their counters, settings,
/// PIN state — as one encrypted file, and a new store made from it (StoreBackup, KeyBackup).
/// Always encrypted: to an X25519 key (HPKE) or with a passphrase.
public enum BackupCommand {
    public static let backupSpec = CommandSpec(
        name: "backup", abstract: "Back up the whole key (every credential, the PIN, settings) to an encrypted file.",
        options: CommandTarget.storeOptions + [
            .init("out", value: "FILE", help: "The backup file to write (mode 0600)."),
            .init("to", value: "RECIPIENT.pub", help: "Encrypt to this X25519 public key (HPKE; `latchkey import --new-key` makes one)."),
            .init("passphrase-file", value: "FILE", help: "Encrypt with the passphrase in FILE (default without --to: typed twice)."),
            .init("pin-file", value: "FILE", help: "The key's PIN, when it has one (else $LATCHKEY_PIN, else the terminal)."),
            ExchangeFiles.scryptOption,
            CredentialsCommand.jsonOption,
        ])
    public static let restoreSpec = CommandSpec(
        name: "restore", abstract: "Make a new key's store from a `latchkey backup` file.",
        positionals: ["file"], minimumPositionals: 1,
        options: CommandTarget.storeOptions + [
            .init("key", value: "FILE", help: "The X25519 private key (PEM) the backup was encrypted to."),
            .init("passphrase-file", value: "FILE", help: "The passphrase it was encrypted with (default: asked)."),
            CredentialsCommand.jsonOption,
        ])

    public static func backup(_ parsed: ParsedArguments) throws(UsageError) -> Int32 { try backup(parsed, io: .standard) }
    public static func restore(_ parsed: ParsedArguments) throws(UsageError) -> Int32 { try restore(parsed, io: .standard) }

    static func backup(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            guard case let .store(directory, name) = try CommandTarget.resolve(parsed, environment: io.environment, storeTakesPIN: true) else {
                throw .usage("backup works on a key's store (--name or --store)")
            }
            guard let out = parsed.value("out") else { throw .usage("give --out FILE") }
            let encryption = try ExchangeFiles.encryption(parsed, io: io, allowsPlaintext: false)
            let store = try LocalStore.openExisting(directory: directory)
            defer { store.close() }
            try ExportCommand.checkPIN(parsed, store: store, directory: directory, name: name, io: io)
            // Streamed (version 2): the snapshot is sealed and written a chunk at a time.
            let snapshot = try LocalStore.perform(directory) { () throws(StoreError) in try StoreBackup.snapshotFile(of: store) }
            defer { snapshot.remove() }
            let count = try LocalStore.perform(directory) { () throws(StoreError) in try store.residentCredentialCount() }
            let size = try writeStream(snapshot, created: Int64(Date().timeIntervalSince1970), encryption: encryption, to: out)
            if parsed.flag("json") {
                io.out(JSONValue.object([("store", .string(directory)), ("out", .string(out)), ("residentCredentials", .int(count)),
                                         ("bytes", .int(size))]).rendered)
            } else {
                io.out("Backed up the key \(name) (\(directory): \(count) resident credential(s), its wrapping key, PIN and settings) to \(out).")
            }
            return 0
        }
    }

    static func restore(_ parsed: ParsedArguments, io: CommandIO) throws(UsageError) -> Int32 {
        try CLIError.run(io) { () throws(CLIError) -> Int32 in
            guard case let .store(directory, _) = try CommandTarget.resolve(parsed, environment: io.environment) else {
                throw .usage("restore makes a key's store (--name or --store)")
            }
            let path = parsed.positionals[0]
            // Said before the passphrase is asked and scrypt spends its second on it (StoreBackup
            // checks again when it writes).
            if let entries = try? FileManager.default.contentsOfDirectory(atPath: directory), !entries.isEmpty {
                throw .failure("\(directory) is not empty: restore makes a new store (name a new --store or --name)")
            }
            let seal = try NewStoreSeal.method(for: directory, environment: io.environment, terminal: io.terminal, warn: io.err)
            let count: Int
            let created: Int64
            // Read once from the start (a pipe works as a file does).
            var opened = try ExchangeFiles.openBackup(path)
            defer { opened.file.close(); opened.rest.wipe() }
            if let line = opened.header {
                // Version 2: read, opened and written a chunk at a time.
                let header = try ExchangeFiles.perform { () throws(ExchangeError) in try BackupStream.Header(line: line) }
                (count, created) = try restoreStream(header, from: &opened, path: path, directory: directory, seal: seal,
                                                     parsed: parsed, io: io)
            } else {
                (count, created) = try restoreVersion1(&opened, path: path, directory: directory, seal: seal, parsed: parsed, io: io)
            }
            return report(count: count, created: created, directory: directory, sealed: seal != nil, parsed: parsed, io: io)
        }
    }

    /// A version 1 backup (one AES-GCM message in JSON), read whole: the largest database a
    /// version 1 backup took, and the envelope around it.
    static func restoreVersion1(_ opened: inout ExchangeFiles.OpenedBackup, path: String, directory: String,
                                seal: MasterKeySeal.Method?, parsed: ParsedArguments, io: CommandIO) throws(CLIError) -> (Int, Int64) {
        let limit = StoreBackup.maximumDatabaseBytes + (1 << 20)
        var bytes = opened.rest
        defer { bytes.wipe() }
        do {
            var more = try opened.file.readAll(limit: limit)
            defer { more.wipe() }
            bytes += more
        } catch {
            throw .failure("cannot read the backup \(path): \(error)")
        }
        guard bytes.count <= limit else { throw .failure("the backup \(path) is over \(limit >> 20) MiB: not one Latchkey wrote") }
        guard let encrypted = try ExchangeFiles.perform({ () throws(ExchangeError) in try PasskeyFile.encryptedExport(in: bytes) }),
              encrypted.contents == .backup else {
            throw .failure("\(path) is not a `latchkey backup` file (passkeys from an export come in with `latchkey import`)")
        }
        let plaintext = try ImportCommand.open(encrypted, path: path, parsed: parsed, io: io)
        let (snapshot, created) = try ExchangeFiles.perform { () throws(ExchangeError) in
            try plaintext.withUnsafeBytes { (raw) throws(ExchangeError) in try KeyBackup.decode(Array(raw)) }
        }
        let count = try LocalStore.perform(directory) { () throws(StoreError) in
            try StoreBackup.restore(snapshot, into: directory, seal: seal)
        }
        return (count, created)
    }

    static func report(count: Int, created: Int64, directory: String, sealed: Bool, parsed: ParsedArguments, io: CommandIO) -> Int32 {
        if parsed.flag("json") {
            io.out(JSONValue.object([("store", .string(directory)), ("backupCreated", .string(CredentialSummary.timestamp(created))),
                                     ("residentCredentials", .int(count)),
                                     ("masterKey", .string(sealed ? "sealed" : "unsealed"))]).rendered)
            return 0
        }
        let when = Date(timeIntervalSince1970: TimeInterval(created))
        let sealing = !sealed ? "Its master key is unsealed: seal it with `latchkey store seal --tpm|--keyring|--passphrase`"
            : "Its master key was sealed from the first byte (\(NewStoreSeal.variable))"
        io.out("Restored the backup of \(ISO8601DateFormatter().string(from: when)) into \(directory): \(count) resident credential(s). "
               + sealing + ". Run only one of the two keys: they are the same key.")
        return 0
    }
}
