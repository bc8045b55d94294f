import Authenticator
import FIDOCrypto
import Glibc
import KeySealing
import SystemIO

/// The files of one store: `DIR/credentials.sqlite` (+ `-wal`, `-shm`), `DIR/master.key`,
/// `DIR/lock`. docs/architecture.md, Credentials and the store: mode 0600 files in a 0700 directory.
struct StoreDirectory {
    let path: String

    var databasePath: String { path + "/credentials.sqlite" }
    var masterKeyFile: MasterKeyFile { MasterKeyFile(directory: path) }
    var masterKeyPath: String { masterKeyFile.path }
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
        if let exposure = MasterKeyFile.exposure(info, path: path, fix: fix) { throw .permissions(exposure) }
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

    /// Reads `master.key`, creating it when the store is new (32 random bytes, 0600; or sealed
    /// from its first byte by `seal`); a sealed one is opened by its method (MasterKeySeal).
    func loadOrCreateMasterKey(seal: MasterKeySeal.Method? = nil, known: SecretBytes? = nil) throws(StoreError) -> SecretBytes {
        if let known { return known }   // a restore that just installed it (sealed: not asked for again)
        if let key = try sealing({ () throws(SealError) in try MasterKeySeal.load(masterKeyFile) }) { return key }
        // A database without its key would be unreadable, and a new key would not help.
        if databaseExists {
            throw .corrupt("\(masterKeyPath) is missing but \(databasePath) exists; restore master.key from a backup")
        }
        if let seal {
            return try sealing { () throws(SealError) in try MasterKeySeal.create(masterKeyFile, with: seal) }
        }
        try sealing { () throws(SealError) in try masterKeyFile.createRandomKey() }
        guard let key = try sealing({ () throws(SealError) in try MasterKeySeal.load(masterKeyFile) }) else {
            throw .io("\(masterKeyPath) vanished after it was created")
        }
        return key
    }

    /// Puts a given key in place as master.key (a restore), refusing to replace one: raw, or
    /// sealed by `seal` (only the sealed record is written).
    func installMasterKey(_ key: [UInt8], seal: MasterKeySeal.Method? = nil) throws(StoreError) {
        if let seal {
            _ = try sealing { () throws(SealError) in try MasterKeySeal.create(masterKeyFile, key: SecretBytes(key), with: seal) }
        } else {
            try sealing { () throws(SealError) in try masterKeyFile.install(key) }
        }
    }

    /// Takes back a store this process was making and could not finish: its files, the login
    /// keyring item its master key names (a keyring seal writes the item first), and its
    /// directory when it made it.
    func discardNewStore(removingDirectory: Bool) {
        if case let .sealedWithKeyring(item)? = try? MasterKeySeal.state(masterKeyFile) { KeyringSeal.clear(item: item) }
        for file in [databasePath, masterKeyPath, lockPath] + sidecarPaths {
            try? FileSystem.remove(file)
        }
        if removingDirectory { rmdir(path) }
    }

    func removeStaleMasterKeyTemporaries() {
        masterKeyFile.removeStaleTemporaries()
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
