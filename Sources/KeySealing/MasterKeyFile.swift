import FIDOCrypto
import Glibc
import SystemIO

/// A store's `master.key`: 32 raw bytes, or a sealed record (MasterKeySeal), in a private
/// (0600) regular file that is only ever created by link(2) or replaced by rename(2), so a crash
/// leaves the old file or the new one.
public struct MasterKeyFile: Sendable {
    /// A master key's length.
    public static let keyCount = 32
    /// How a sealed master.key begins (MasterKeySeal); a raw one is 32 bytes and nothing else.
    static let sealedHeader = Array("latchkey sealed master key\n".utf8)
    /// The largest master.key read (a sealed record is a few hundred bytes).
    static let largestFile = 1024

    /// The store's directory.
    public let directory: String
    public var path: String { directory + "/master.key" }

    public init(directory: String) {
        self.directory = directory
    }

    /// The message for a file or directory that group or others can access, nil when it is private.
    public static func exposure(_ info: stat, path: String, fix: String) -> String? {
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 != 0 else { return nil }
        return "\(path) is accessible by group or others (mode \(String(mode, radix: 8))); "
            + "the store refuses to open until you run: \(fix) '\(path)'"
    }

    /// master.key's bytes (a raw key or a sealed one), checked to be a private regular file;
    /// nil when there is none.
    public func read() throws(SealError) -> [UInt8]? {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW)
        } catch where error == .noSuchFileOrDirectory {
            return nil
        } catch {
            throw .io("cannot open \(path): \(error.message)")
        }
        do {
            let info = try fd.status()
            guard info.st_mode & S_IFMT == S_IFREG else { throw SealError.permissions("\(path) is not a regular file") }
            if let exposure = Self.exposure(info, path: path, fix: "chmod 600") { throw SealError.permissions(exposure) }
            var bytes = try fd.readAll(limit: Self.largestFile)
            guard bytes.count == Self.keyCount || bytes.starts(with: Self.sealedHeader) else {
                bytes.wipe()
                throw SealError.corrupt("\(path) is not a \(Self.keyCount)-byte key")
            }
            return bytes
        } catch let error as SealError {
            throw error
        } catch let error as Errno {
            throw .io("cannot read \(path): \(error.message)")
        } catch {
            throw .io("cannot read \(path)")
        }
    }

    /// A new random key (link(2) into place: if another process created master.key meanwhile,
    /// both processes use the winner's).
    public func createRandomKey() throws(SealError) {
        var key = SecureRandom.bytes(count: Self.keyCount)
        defer { key.wipe() }
        _ = try link(key)
    }

    /// Puts `contents` (a sealed record) in place as master.key, which must not exist: false
    /// when it did (nothing changed).
    func createWith(_ contents: [UInt8]) throws(SealError) -> Bool {
        try link(contents)
    }

    /// Puts a given raw key in place as master.key (a restore), refusing to replace one.
    public func install(_ key: [UInt8]) throws(SealError) {
        guard key.count == Self.keyCount else { throw .corrupt("a master key is \(Self.keyCount) bytes") }
        guard try link(key) else { throw .io("cannot create \(path): it exists") }
    }

    /// Writes `key` to a private temporary file, then link(2)s it to master.key, which must not
    /// exist: false when it did (nothing changed).
    private func link(_ key: [UInt8]) throws(SealError) -> Bool {
        let temporary = try writeTemporary(key)
        defer { try? FileSystem.remove(temporary) }
        do {
            try FileSystem.link(temporary, to: path)
        } catch where error == .fileExists {
            return false
        } catch {
            throw .io("cannot create \(path): \(error.message)")
        }
        synchronizeDirectory()
        return true
    }

    /// Replaces master.key with `contents` in one step: a private temporary file, fsync'd, then
    /// rename(2) over master.key and an fsync of the directory. A crash leaves the old file or the
    /// new one (and at worst a stray temporary, which nothing reads).
    ///
    /// The old file's bytes (a raw key before `store seal`, the previous record after) are then
    /// overwritten with zeros and synced before its last name goes: renamed over, they would stay
    /// in freed blocks. It keeps a name (`master.key.old-PID-…`) until then, so a crash in
    /// between leaves it for `removeStaleTemporaries` to overwrite.
    func replace(with contents: [UInt8]) throws(SealError) {
        let temporary = try writeTemporary(contents)
        defer { try? FileSystem.remove(temporary) }
        let retired = path + ".old-\(getpid())-" + SecureRandom.bytes(count: 4).map { String($0, radix: 16) }.joined()
        let keptOld = (try? FileSystem.link(path, to: retired)) != nil
        do {
            try FileSystem.rename(temporary, to: path)
        } catch {
            if keptOld { try? FileSystem.remove(retired) }
            throw .io("cannot replace \(path): \(error.message)")
        }
        synchronizeDirectory()
        if keptOld { destroy(retired) }
    }

    /// Overwrites the file at `name` with zeros, syncs it, and unlinks it — unless it is
    /// master.key's own file under another name (a crash between link(2) and unlink(2)): then
    /// only the extra name goes. On a copy-on-write file system (btrfs) or a flash drive that
    /// remaps blocks, the old bytes may survive the overwrite (docs/desktop.md says so).
    func destroy(_ name: String) {
        if let current = try? FileSystem.linkStatus(path), let doomed = try? FileSystem.linkStatus(name),
           current.st_dev == doomed.st_dev, current.st_ino == doomed.st_ino {
            try? FileSystem.remove(name)
            return
        }
        if let fd = try? FileDescriptor.open(name, flags: O_WRONLY | O_NOFOLLOW), let info = try? fd.status(),
           info.st_mode & S_IFMT == S_IFREG {
            let size = min(Int(info.st_size), Self.largestFile * 4)
            try? fd.writeAll([UInt8](repeating: 0, count: size))
            try? fd.synchronize()
        }
        try? FileSystem.remove(name)
    }

    /// `contents` in a new private, fsync'd `master.key.new-PID-…` beside master.key (the name
    /// `removeStaleTemporaries` knows); its path.
    private func writeTemporary(_ contents: [UInt8]) throws(SealError) -> String {
        let temporary = path + ".new-\(getpid())-" + SecureRandom.bytes(count: 4).map { String($0, radix: 16) }.joined()
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

    /// Removes `master.key.new-PID-…` and `master.key.old-PID-…` files whose writer is gone (a
    /// seal, unseal or creation killed before it finished), their bytes overwritten first: an
    /// unseal's temporary holds the raw key, a retired file the old key or record.
    public func removeStaleTemporaries() {
        guard let names = try? FileSystem.entries(directory) else { return }
        for name in names {
            guard let prefix = ["master.key.new-", "master.key.old-"].first(where: { name.hasPrefix($0) }) else { continue }
            let pid = name.dropFirst(prefix.count).split(separator: "-").first.flatMap { Int32($0) }
            if let pid, pid > 0, kill(pid, 0) == 0 || errno == EPERM { continue }   // its writer still runs
            destroy(directory + "/" + name)
        }
        synchronizeDirectory()
    }

    /// Runs `body` holding an exclusive flock on the store's directory: one seal, unseal or
    /// change of passphrase at a time (the key's own lock, DIR/lock, is the running key's).
    func withLock<R>(_ body: () throws(SealError) -> R) throws(SealError) -> R {
        let handle: FileDescriptor
        do {
            handle = try FileDescriptor.open(directory, flags: O_RDONLY | O_DIRECTORY)
            try handle.lockExclusive()
        } catch {
            throw .io("cannot lock \(directory): \(error.message)")
        }
        defer { handle.close() }
        return try body()
    }

    /// fsync the directory so that a created file's name is durable.
    public func synchronizeDirectory() {
        try? FileSystem.synchronizeDirectory(directory)
    }
}
