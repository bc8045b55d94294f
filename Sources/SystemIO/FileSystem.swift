import CSystemIO
import Glibc

/// Path-level calls (no descriptor): status, removal, modes, private directories.
public enum FileSystem {
    /// lstat(2): the link itself, not what it points to.
    public static func linkStatus(_ path: String) throws(Errno) -> stat {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw Errno.current }
        return info
    }

    /// stat(2).
    public static func status(_ path: String) throws(Errno) -> stat {
        var info = stat()
        guard stat(path, &info) == 0 else { throw Errno.current }
        return info
    }

    /// unlink(2); a missing file is not an error.
    public static func remove(_ path: String) throws(Errno) {
        guard unlink(path) == 0 || errno == ENOENT else { throw Errno.current }
    }

    /// chmod(2).
    public static func setMode(_ path: String, _ mode: mode_t) throws(Errno) {
        guard chmod(path, mode) == 0 else { throw Errno.current }
    }

    /// The names in directory `path` (without "." and "..").
    public static func entries(_ path: String) throws(Errno) -> [String] {
        guard let directory = opendir(path) else { throw Errno.current }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// rename(2): `newPath` is replaced atomically — at every moment it is the old file or the new one.
    public static func rename(_ existing: String, to newPath: String) throws(Errno) {
        guard Glibc.rename(existing, newPath) == 0 else { throw Errno.current }
    }

    /// link(2): `newPath` names `existing` too; `.fileExists` if `newPath` is taken.
    public static func link(_ existing: String, to newPath: String) throws(Errno) {
        guard Glibc.link(existing, newPath) == 0 else { throw Errno.current }
    }

    /// fsync(2) of a directory, so that a file created or renamed in it is durable by name.
    public static func synchronizeDirectory(_ path: String) throws(Errno) {
        try FileDescriptor.open(path, flags: O_RDONLY | O_DIRECTORY).synchronize()
    }

    /// Creates `path` and its missing parents with mode 0700 (set explicitly: mkdir's mode is
    /// filtered by the umask). Existing components are left as they are.
    public static func createDirectories(_ path: String, mode: mode_t = 0o700) throws(Errno) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            var existing = stat()
            if stat(prefix, &existing) == 0 { continue }
            try createDirectory(prefix, mode: mode)
        }
    }

    /// mkdir(2) of one directory with `mode` set explicitly (mkdir's mode is filtered by the
    /// umask); an existing one is left as it is.
    public static func createDirectory(_ path: String, mode: mode_t = 0o700) throws(Errno) {
        if mkdir(path, mode) == 0 {
            try setMode(path, mode)
        } else if errno != EEXIST {
            throw Errno.current
        }
    }

    /// Whether `info` is a directory (not a link to one) owned by this user with no group or
    /// other access: the test for a directory that holds sockets or secrets.
    /// The extended attribute `name` of `path` (following links), or nil when it has none.
    public static func extendedAttribute(_ path: String, _ name: String) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let size = buffer.withUnsafeMutableBytes { lk_getxattr(path, name, $0.baseAddress, $0.count) }
        guard size >= 0 else { return nil }
        return Array(buffer.prefix(size))
    }

    public static func isPrivateDirectory(_ info: stat) -> Bool {
        info.st_mode & S_IFMT == S_IFDIR && info.st_uid == getuid() && info.st_mode & 0o077 == 0
    }
}
