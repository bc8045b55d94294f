import Authenticator
import CredentialStore
import Exchange
import FIDOCrypto
import Foundation
import KeySealing
import SystemIO

/// `latchkey backup` and `restore` as streams (BackupStream, version 2): the store's snapshot
/// is read, sealed and written one 64 KiB chunk at a time, and a backup is opened and written
/// into the new store's database the same way, so neither holds the store in memory.
extension BackupCommand {
    /// Writes the backup of `snapshot` to `out` (through a private temporary file renamed into
    /// place); returns the file's size.
    static func writeStream(_ snapshot: StoreBackup.SnapshotFile, created: Int64, encryption: ExchangeFiles.Encryption,
                            to out: String) throws(CLIError) -> Int {
        let (header, sealer) = try ExchangeFiles.perform { () throws(ExchangeError) -> ([UInt8], BackupStream.Sealer) in
            switch encryption {
            case let .recipient(key): return try BackupStream.start(to: key)
            case let .passphrase(passphrase, parameters): return try BackupStream.start(passphrase: passphrase, parameters: parameters)
            case .none: throw .encryption("a backup is always encrypted")
            }
        }
        let temporary = out + ".tmp-\(getpid())-" + SecureRandom.bytes(count: 4).map { String($0, radix: 16) }.joined()
        var written = 0
        do {
            if let slash = out.lastIndex(of: "/"), slash != out.startIndex {
                try FileSystem.createDirectories(String(out[..<slash]), mode: 0o700)
            }
            let file = try FileDescriptor.createPrivateFile(temporary, flags: O_WRONLY | O_CLOEXEC)
            defer { file.close() }
            try file.writeAll(header)
            written += header.count
            var pending = BackupStream.prologue(masterKey: snapshot.masterKey, created: created, databaseLength: snapshot.size)
            defer { pending.wipe() }
            // Room for a chunk and the next piece: `pending` is never moved, so no copy of the
            // prologue (the master key) is left behind unwiped.
            pending.reserveCapacity(pending.count + 2 * BackupStream.chunkSize)
            let total = pending.count + snapshot.size
            var sent = 0
            var databaseRead = 0
            repeat {
                while pending.count < BackupStream.chunkSize, databaseRead < snapshot.size {
                    var piece = try ExchangeFiles.readFully(snapshot.file, min(BackupStream.chunkSize, snapshot.size - databaseRead))
                    defer { piece.wipe() }
                    guard !piece.isEmpty else { throw CLIError.failure("the store's snapshot ended early") }
                    databaseRead += piece.count
                    pending += piece
                }
                let count = min(BackupStream.chunkSize, pending.count)
                let last = sent + count == total
                var chunk = Array(pending[..<count])
                defer { chunk.wipe() }
                pending.removeFirst(count)
                let sealed = try ExchangeFiles.perform { () throws(ExchangeError) in try sealer.seal(chunk, last: last) }
                try file.writeAll(sealed)
                written += sealed.count
                sent += count
            } while sent < total
            try file.synchronize()
            try FileSystem.rename(temporary, to: out)
        } catch let error as CLIError {
            try? FileSystem.remove(temporary)
            throw error
        } catch {
            try? FileSystem.remove(temporary)
            throw .failure("cannot write \(out): \(error)")
        }
        return written
    }

    /// Restores a version 2 backup from `file` (just after its header line) into `directory`;
    /// returns (resident credentials, when it was made).
    static func restoreStream(_ header: BackupStream.Header, from opened: inout ExchangeFiles.OpenedBackup, path: String,
                              directory: String, seal: MasterKeySeal.Method?, parsed: ParsedArguments,
                              io: CommandIO) throws(CLIError) -> (Int, Int64) {
        let opener = try opener(header, path: path, parsed: parsed, io: io)
        let sealedChunk = BackupStream.chunkSize + BackupStream.tagSize
        let file = opened.file
        var buffered = opened.rest   // what was read after the header line
        opened.rest = []
        // `count` bytes, the buffered ones first; fewer only at end of file.
        func read(_ count: Int) throws(CLIError) -> [UInt8] {
            var bytes = Array(buffered.prefix(count))
            buffered.removeFirst(bytes.count)
            do { bytes += try ExchangeFiles.readFully(file, count - bytes.count) } catch {
                throw .failure("cannot read the backup \(path): \(error)")
            }
            return bytes
        }
        // One chunk ahead: a full chunk is the last one only when the file ends after it.
        var next = try read(sealedChunk)
        func nextPlaintext() throws(CLIError) -> (bytes: [UInt8], last: Bool)? {
            guard !next.isEmpty else { return nil }
            let current = next
            next = current.count < sealedChunk ? [] : try read(sealedChunk)
            let last = next.isEmpty
            return (try ExchangeFiles.perform { () throws(ExchangeError) in try opener.open(current, last: last) }, last)
        }
        guard var first = try nextPlaintext() else { throw .failure("\(path) is cut short: it has no contents after its header") }
        defer { first.bytes.wipe() }
        guard let prologue = try ExchangeFiles.perform({ () throws(ExchangeError) in try BackupStream.readPrologue(first.bytes) }) else {
            throw .failure("\(path) is damaged: its first chunk does not hold the backup's header map")
        }
        // A database cannot be longer than the file that carries it: refused before anything is written.
        var status = stat()
        if fstat(file.rawValue, &status) == 0, status.st_mode & S_IFMT == S_IFREG, prologue.databaseLength > Int(status.st_size) {
            throw .failure("\(path) is damaged: it announces a \(prologue.databaseLength)-byte database in a \(status.st_size)-byte file")
        }
        var ended = first.last
        var failure: CLIError?   // why the backup did not open, said instead of the store's error it caused
        // The database, written into the new store's file as the chunks open.
        func writeDatabase(_ database: FileDescriptor) throws(StoreError) {
            var remaining = prologue.databaseLength
            func write(_ bytes: ArraySlice<UInt8>) throws(StoreError) {
                guard bytes.count <= remaining else { throw .corrupt("the backup holds more than its database's \(prologue.databaseLength) bytes") }
                var copy = Array(bytes)
                defer { copy.wipe() }
                do throws(Errno) { try database.writeAll(copy) } catch { throw .io("cannot write the database: \(error.message)") }
                remaining -= bytes.count
            }
            try write(first.bytes[prologue.consumed...])
            while !ended {
                let piece: (bytes: [UInt8], last: Bool)?
                do throws(CLIError) {
                    piece = try nextPlaintext()
                } catch {
                    failure = error
                    throw .corrupt("the backup did not open")
                }
                guard var piece else { break }
                defer { piece.bytes.wipe() }
                try write(piece.bytes[...])
                ended = piece.last
            }
            guard ended, remaining == 0 else {
                failure = .failure("\(path) is cut short: \(remaining) bytes of its database are missing")
                throw .corrupt("the backup is cut short")
            }
        }
        do throws(CLIError) {
            let count = try LocalStore.perform(directory) { () throws(StoreError) -> Int in
                try StoreBackup.restore(masterKey: prologue.masterKey, into: directory, seal: seal, writeDatabase: writeDatabase)
            }
            return (count, prologue.created)
        } catch {
            throw failure ?? error
        }
    }

    static func opener(_ header: BackupStream.Header, path: String, parsed: ParsedArguments, io: CommandIO) throws(CLIError) -> BackupStream.Opener {
        let isHPKE = if case .hpke = header.method { true } else { false }
        switch try ExchangeFiles.decryptionSecret(toKey: isHPKE, path: path, parsed: parsed, io: io) {
        case let .key(key): return try ExchangeFiles.perform { () throws(ExchangeError) in try header.opener(key: key) }
        case let .passphrase(passphrase): return try ExchangeFiles.perform { () throws(ExchangeError) in try header.opener(passphrase: passphrase) }
        }
    }
}
