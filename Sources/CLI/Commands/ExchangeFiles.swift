import Exchange
import FIDOCrypto
import Foundation
import SystemIO

/// Files of `latchkey export` and `import`: written private and whole (a temporary beside the
/// target, fsync, rename), read with a size cap; X25519 keys as the PEM files OpenSSL writes.
enum ExchangeFiles {
    /// Far above any key's export (a few KiB a passkey); a bigger file is no export.
    static let readLimit = 64 << 20

    static let scryptOption = CommandSpec.Option(
        "scrypt-log-n", value: "N", help: "scrypt cost 2^N for a passphrase (default 17: 128 MiB and about a second per guess; 10…22).")

    /// `--scrypt-log-n`, or the default cost.
    static func scryptParameters(_ parsed: ParsedArguments) throws(CLIError) -> Scrypt.Parameters {
        var parameters = Scrypt.Parameters.default
        if let text = parsed.value("scrypt-log-n") {
            guard let value = UInt8(text), (10...22).contains(value) else {
                throw .usage("invalid --scrypt-log-n '\(text)': a number from 10 to 22")
            }
            parameters.logN = value
        }
        return parameters
    }

    /// How an export or backup is encrypted.
    enum Encryption {
        case recipient(X25519.PublicKey)
        case passphrase(SecretBytes, Scrypt.Parameters)
        case none
    }

    /// `--to`, `--passphrase-file`, `--plaintext` (where allowed), else a passphrase typed twice on
    /// the terminal; asked before the store is read.
    static func encryption(_ parsed: ParsedArguments, io: CommandIO, allowsPlaintext: Bool) throws(CLIError) -> Encryption {
        let plaintext = allowsPlaintext && parsed.flag("plaintext")
        guard [parsed.value("to") != nil, parsed.value("passphrase-file") != nil, plaintext].filter({ $0 }).count <= 1 else {
            throw .usage(allowsPlaintext ? "give one of --to, --passphrase-file and --plaintext" : "give --to or --passphrase-file, not both")
        }
        let parameters = try scryptParameters(parsed)
        if let to = parsed.value("to") { return .recipient(try recipientKey(to)) }
        if let file = parsed.value("passphrase-file") {
            return .passphrase(try PassphraseInput.new(file: file, terminal: nil, warn: io.err), parameters)
        }
        if plaintext { return .none }
        guard io.terminal != nil else {
            throw .usage("say how to encrypt: --to RECIPIENT.pub, --passphrase-file FILE" + (allowsPlaintext ? ", or --plaintext" : ""))
        }
        return .passphrase(try PassphraseInput.new(file: nil, terminal: io.terminal), parameters)
    }

    /// The file to write: `plaintext` sealed as `encryption` says (or as it is, for `.none`).
    static func seal(_ plaintext: [UInt8], contents: EncryptedExport.Contents, _ encryption: Encryption) throws(CLIError) -> [UInt8] {
        try perform { () throws(ExchangeError) -> [UInt8] in
            switch encryption {
            case let .recipient(key): try EncryptedExport.seal(plaintext, contents: contents, to: key).json()
            case let .passphrase(passphrase, parameters):
                try EncryptedExport.seal(plaintext, contents: contents, passphrase: passphrase, parameters: parameters).json()
            case .none: plaintext + [0x0A]
            }
        }
    }

    /// An exchange failure as a CLI failure (its text names what is wrong).
    static func perform<R>(_ body: () throws(ExchangeError) -> R) throws(CLIError) -> R {
        do {
            return try body()
        } catch {
            throw .failure(error.description)
        }
    }

    static func read(_ path: String, what: String, limit readLimit: Int = readLimit) throws(CLIError) -> [UInt8] {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, flags: O_RDONLY | O_CLOEXEC)
        } catch {
            throw .failure("cannot read the \(what) \(path): \(error)")
        }
        defer { file.close() }
        do {
            let bytes = try file.readAll(limit: readLimit + 1)
            guard bytes.count <= readLimit else {
                throw CLIError.failure("the \(what) \(path) is over \(readLimit >> 20) MiB: not one Latchkey wrote")
            }
            return bytes
        } catch let error as CLIError {
            throw error
        } catch {
            throw .failure("cannot read the \(what) \(path): \(error)")
        }
    }

    /// Writes `bytes` to `path` mode 0600, replacing it whole or not at all; missing parent
    /// directories are made first, mode 0700 (`import --new-key ~/.config/latchkey/receive.key`
    /// on an account that has no ~/.config/latchkey yet).
    static func writePrivately(_ bytes: [UInt8], to path: String) throws(CLIError) {
        let temporary = path + ".tmp-\(getpid())"
        do {
            if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
                try FileSystem.createDirectories(String(path[..<slash]), mode: 0o700)
            }
            let file = try FileDescriptor.createPrivateFile(temporary, flags: O_WRONLY | O_CLOEXEC)
            defer { file.close() }
            try file.writeAll(bytes)
            try file.synchronize()
            try FileSystem.rename(temporary, to: path)
        } catch {
            try? FileSystem.remove(temporary)
            throw .failure("cannot write \(path): \(error)")
        }
    }

    /// An X25519 public key from a PEM `PUBLIC KEY` file (`openssl pkey -pubout`, or the `.pub`
    /// that `latchkey import --new-key` writes).
    static func recipientKey(_ path: String) throws(CLIError) -> X25519.PublicKey {
        let der = try pem(read(path, what: "recipient key"), label: "PUBLIC KEY", path: path)
        do {
            return try X25519.PublicKey(subjectPublicKeyInfo: der)
        } catch {
            throw .failure("\(path) is not an X25519 public key (make one with `latchkey import --new-key FILE`, "
                           + "or `openssl genpkey -algorithm X25519`)")
        }
    }

    /// An X25519 private key from a PEM `PRIVATE KEY` file, which must be private.
    static func privateKey(_ path: String) throws(CLIError) -> X25519.PrivateKey {
        var bytes = try PINInput.readPrivateFile(path, option: "key", limit: 4096)
        defer { bytes.wipe() }
        var der = try pem(bytes, label: "PRIVATE KEY", path: path)
        defer { der.wipe() }
        do {
            return try X25519.PrivateKey(pkcs8: der)
        } catch {
            throw .failure("\(path) is not an X25519 private key")
        }
    }

    static func pem(_ bytes: [UInt8], label: String, path: String) throws(CLIError) -> [UInt8] {
        let text = String(decoding: bytes, as: UTF8.self)
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        guard let begin = lines.firstIndex(of: "-----BEGIN \(label)-----"),
              let end = lines.firstIndex(of: "-----END \(label)-----"), end > begin + 1,
              let der = Data(base64Encoded: lines[(begin + 1)..<end].joined()) else {
            throw .failure("\(path) is not a PEM file with a \(label)")
        }
        return Array(der)
    }

    static func pemText(_ der: [UInt8], label: String) -> [UInt8] {
        let base64 = Data(der).base64EncodedString()
        var lines = ["-----BEGIN \(label)-----"]
        var index = base64.startIndex
        while index < base64.endIndex {
            let next = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(String(base64[index..<next]))
            index = next
        }
        lines.append("-----END \(label)-----")
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }
}

// MARK: - Opening encrypted files

extension ExchangeFiles {
    /// What opens an encrypted export or backup.
    enum DecryptionSecret {
        case key(X25519.PrivateKey)
        case passphrase(SecretBytes)
    }

    /// `--key` for a file encrypted to a key (`toKey`), else `--passphrase-file` or a passphrase
    /// typed on the terminal.
    static func decryptionSecret(toKey: Bool, path: String, parsed: ParsedArguments, io: CommandIO) throws(CLIError) -> DecryptionSecret {
        if toKey {
            guard let keyPath = parsed.value("key") else {
                throw .usage("\(path) is encrypted to a key: give --key with its private key (the FILE of `latchkey import --new-key FILE`)")
            }
            return .key(try privateKey(keyPath))
        }
        if let file = parsed.value("passphrase-file") { return .passphrase(try PassphraseInput.read(file)) }
        if let terminal = io.terminal, var typed = terminal.readSecret("Passphrase of \(path): ") {
            defer { typed.wipe() }
            return .passphrase(SecretBytes(typed))
        }
        throw .usage("\(path) is encrypted with a passphrase: give --passphrase-file FILE")
    }
}

// MARK: - Streamed backups (BackupStream)

extension ExchangeFiles {
    /// Reads up to `count` bytes, fewer only at end of file.
    static func readFully(_ file: FileDescriptor, _ count: Int) throws(Errno) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            let piece = try file.read(upToCount: count - bytes.count)
            if piece.isEmpty { break }
            bytes += piece
        }
        return bytes
    }

    /// A backup file opened and its first bytes read (at most BackupStream.maximumHeaderLine):
    /// read once, so a pipe (`restore <(…)`) works as a file does. `header` is the first line when
    /// it is a version 2 header; `rest` the bytes read after it (or all of them, for version 1).
    struct OpenedBackup {
        let file: FileDescriptor
        let header: [UInt8]?
        var rest: [UInt8]
    }

    static func openBackup(_ path: String) throws(CLIError) -> OpenedBackup {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, flags: O_RDONLY | O_CLOEXEC)
        } catch {
            throw .failure("cannot read the backup \(path): \(error)")
        }
        do {
            let start = try readFully(file, BackupStream.maximumHeaderLine)
            if let newline = start.firstIndex(of: 0x0A), BackupStream.isVersion2(headerLine: Array(start[..<newline])) {
                return OpenedBackup(file: file, header: Array(start[..<newline]), rest: Array(start[(newline + 1)...]))
            }
            return OpenedBackup(file: file, header: nil, rest: start)
        } catch {
            file.close()
            throw .failure("cannot read the backup \(path): \(error)")
        }
    }
}
