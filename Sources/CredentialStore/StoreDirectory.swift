import Authenticator
import FIDOCrypto
import Glibc
import SystemIO

/// The files of one store: `DIR/credentials.sqlite` (+ `-wal`, `-shm`), `DIR/master.key`,
/// `DIR/lock`. ARCHITECTURE.md, Store: mode 0600 files in a 0700 directory.
struct StoreDirectory {
    static let masterKeyCount = 32

    let path: String

    var databasePath: String { path + "/credentials.sqlite" }
    var masterKeyPath: String { path + "/master.key" }
    var lockPath: String { path + "/lock" }
    var sidecarPaths: [String] { [databasePath + "-wal", databasePath + "-shm"] }

    /// Creates the directory (and missing parents) with mode 0700, whatever the umask.
    func createIfMissing() throws(StoreError) {
        do {
            try FileSystem.createDirectories(path, mode: 0o700)
        } catch {
            throw .io("cannot create directory \(path): \(error.message)")
        }
        let info: stat
        do {
            info = try FileSystem.status(path)
        } catch {
            throw .io("cannot stat \(path): \(error.message)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw .io("\(path) is not a directory") }
        try Self.requirePrivate(info, path: path, fix: "chmod 700")
    }

    /// Refuses an existing file that is not a regular file or that group/others can access.
    func checkFile(_ file: String) throws(StoreError) {
        let info: stat
        do {
            info = try FileSystem.linkStatus(file)
        } catch where error == .noSuchFileOrDirectory {
            return
        } catch {
            throw .io("cannot stat \(file): \(error.message)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw .permissions("\(file) is not a regular file (symbolic links are refused); move it away")
        }
        try Self.requirePrivate(info, path: file, fix: "chmod 600")
    }

    /// Checks the directory and every store file that exists.
    func checkPermissions() throws(StoreError) {
        let info: stat
        do {
            info = try FileSystem.status(path)
        } catch {
            throw .io("cannot stat \(path): \(error.message)")
        }
        try Self.requirePrivate(info, path: path, fix: "chmod 700")
        for file in [databasePath, masterKeyPath, lockPath] + sidecarPaths {
            try checkFile(file)
        }
    }

    private static func requirePrivate(_ info: stat, path: String, fix: String) throws(StoreError) {
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            let octal = String(mode, radix: 8)
            throw .permissions("\(path) is accessible by group or others (mode \(octal)); "
                + "the store refuses to open until you run: \(fix) '\(path)'")
        }
    }

    var databaseExists: Bool {
        ((try? FileSystem.linkStatus(databasePath))?.st_size ?? 0) > 0
    }

    /// Creates the database file empty with mode 0600 (SQLite then gives -wal and -shm the
    /// database file's mode), so that SQLite never creates it under the process umask.
    func createDatabaseFileIfMissing() throws(StoreError) {
        do {
            _ = try FileDescriptor.createPrivateFile(databasePath)
        } catch where error == .fileExists {
            return
        } catch {
            throw .io("cannot create \(databasePath): \(error.message)")
        }
    }

    /// Reads `master.key`, creating it (32 random bytes, 0600) when the store is new.
    func loadOrCreateMasterKey() throws(StoreError) -> SecretBytes {
        if let key = try readMasterKey() { return key }
        // A database without its key would be unreadable, and a new key would not help.
        if databaseExists {
            throw .corrupt("\(masterKeyPath) is missing but \(databasePath) exists; restore master.key from a backup")
        }
        try createMasterKey()
        guard let key = try readMasterKey() else {
            throw .io("\(masterKeyPath) vanished after it was created")
        }
        return key
    }

    /// The master key: 32 raw bytes, or sealed (MasterKeySeal) and opened with the passphrase.
    private func readMasterKey() throws(StoreError) -> SecretBytes? {
        guard var contents = try readMasterKeyFile() else { return nil }
        defer { wipe(&contents) }
        return try MasterKeySeal.open(contents, path: masterKeyPath, passphrase: nil, directory: path)
    }

    /// master.key's bytes (a raw key or a sealed one), checked to be a private regular file.
    func readMasterKeyFile() throws(StoreError) -> [UInt8]? {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(masterKeyPath, flags: O_RDONLY | O_NOFOLLOW)
        } catch where error == .noSuchFileOrDirectory {
            return nil
        } catch {
            throw .io("cannot open \(masterKeyPath): \(error.message)")
        }
        do {
            let info = try fd.status()
            guard info.st_mode & S_IFMT == S_IFREG else { throw StoreError.permissions("\(masterKeyPath) is not a regular file") }
            try Self.requirePrivate(info, path: masterKeyPath, fix: "chmod 600")
            var bytes = try fd.readAll(limit: MasterKeySeal.largestFile)
            guard bytes.count == Self.masterKeyCount || bytes.starts(with: MasterKeySeal.header) else {
                wipe(&bytes)
                throw StoreError.corrupt("\(masterKeyPath) is not a \(Self.masterKeyCount)-byte key")
            }
            return bytes
        } catch let error as StoreError {
            throw error
        } catch let error as Errno {
            throw .io("cannot read \(masterKeyPath): \(error.message)")
        } catch {
            throw .io("cannot read \(masterKeyPath)")
        }
    }

    /// A new random key (link(2) into place: if another process created master.key meanwhile,
    /// both processes use the winner's).
    private func createMasterKey() throws(StoreError) {
        var key = SecureRandom.bytes(count: Self.masterKeyCount)
        defer { wipe(&key) }
        _ = try linkMasterKey(key)
    }

    /// Writes `key` to a private temporary file, then link(2)s it to master.key, which must not
    /// exist: false when it did (nothing changed).
    private func linkMasterKey(_ key: [UInt8]) throws(StoreError) -> Bool {
        let temporary = try writeMasterKeyTemporary(key)
        defer { try? FileSystem.remove(temporary) }
        do {
            try FileSystem.link(temporary, to: masterKeyPath)
        } catch where error == .fileExists {
            return false
        } catch {
            throw .io("cannot create \(masterKeyPath): \(error.message)")
        }
        synchronizeDirectory()
        return true
    }

    /// Puts a given raw key in place as master.key (a restore), refusing to replace one.
    func installMasterKey(_ key: [UInt8]) throws(StoreError) {
        guard key.count == Self.masterKeyCount else { throw .corrupt("a master key is \(Self.masterKeyCount) bytes") }
        guard try linkMasterKey(key) else { throw .io("cannot create \(masterKeyPath): it exists") }
    }

    /// Replaces master.key with `contents` in one step: a private temporary file, fsync'd, then
    /// rename(2) over master.key and an fsync of the directory. A crash leaves the old file or the
    /// new one (and at worst a stray temporary, which nothing reads).
    func replaceMasterKeyFile(with contents: [UInt8]) throws(StoreError) {
        let temporary = try writeMasterKeyTemporary(contents)
        defer { try? FileSystem.remove(temporary) }
        do {
            try FileSystem.rename(temporary, to: masterKeyPath)
        } catch {
            throw .io("cannot replace \(masterKeyPath): \(error.message)")
        }
        synchronizeDirectory()
    }

    /// `contents` in a new private, fsync'd `master.key.new-PID-…` beside master.key (the name
    /// `removeStaleMasterKeyTemporaries` knows); its path.
    private func writeMasterKeyTemporary(_ contents: [UInt8]) throws(StoreError) -> String {
        let temporary = masterKeyPath + ".new-\(getpid())-" + SecureRandom.bytes(count: 4).map { String($0, radix: 16) }.joined()
        do {
            let fd = try FileDescriptor.createPrivateFile(temporary, flags: O_WRONLY)
            try fd.writeAll(contents)
            try fd.synchronize()
        } catch {
            try? FileSystem.remove(temporary)
            throw .io("cannot write \(temporary): \(error.message)")
        }
        return temporary
    }

    /// Removes `master.key.new-PID-…` files whose writer is gone: a seal, unseal or creation
    /// killed before its rename. (An unseal's temporary holds the raw key: it must not outlive it.)
    func removeStaleMasterKeyTemporaries() {
        guard let names = try? FileSystem.entries(path) else { return }
        let prefix = "master.key.new-"
        for name in names where name.hasPrefix(prefix) {
            let pid = name.dropFirst(prefix.count).split(separator: "-").first.flatMap { Int32($0) }
            if let pid, pid > 0, kill(pid, 0) == 0 || errno == EPERM { continue }   // its writer still runs
            if var stale = try? FileDescriptor.open(path + "/" + name, flags: O_RDWR | O_NOFOLLOW).readAll(limit: MasterKeySeal.largestFile) {
                wipe(&stale)
            }
            try? FileSystem.remove(path + "/" + name)
        }
        synchronizeDirectory()
    }

    /// Runs `body` holding an exclusive flock on the store's directory: one seal, unseal or
    /// change of passphrase at a time (the key's own lock, DIR/lock, is the running key's).
    func withMasterKeyLock<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        let directory: FileDescriptor
        do {
            directory = try FileDescriptor.open(path, flags: O_RDONLY | O_DIRECTORY)
            try directory.lockExclusive()
        } catch {
            throw .io("cannot lock \(path): \(error.message)")
        }
        defer { directory.close() }
        return try body()
    }

    /// fsync the directory so that a created file's name is durable.
    func synchronizeDirectory() {
        try? FileSystem.synchronizeDirectory(path)
    }

    /// Takes `DIR/lock` with flock(LOCK_EX | LOCK_NB); held while the descriptor lives.
    func lockExclusively() throws(StoreError) -> FileDescriptor {
        let fd: FileDescriptor
        do {
            fd = try openLockFile()
        } catch {
            throw .io("cannot open \(lockPath): \(error.message)")
        }
        let acquired: Bool
        do {
            acquired = try fd.tryLockExclusive()
        } catch {
            throw .io("cannot lock \(lockPath): \(error.message)")
        }
        guard acquired else { throw .locked }   // another `latchkey serve` runs this key
        return fd
    }

    private func openLockFile() throws(Errno) -> FileDescriptor {
        do {
            return try FileDescriptor.createPrivateFile(lockPath)   // created here: mode 0600, umask-proof
        } catch where error == .fileExists {
            return try FileDescriptor.open(lockPath, flags: O_RDWR | O_NOFOLLOW)   // checkPermissions vetted it
        }
    }
}
