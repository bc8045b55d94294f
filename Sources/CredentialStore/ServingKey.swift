import Glibc
import SystemIO

/// Where the key running on a store can be reached: `DIR/serving`, written by `latchkey serve`
/// once its device or socket is up and removed when it stops. Commands given a store (`pin`,
/// `doctor`) read it to go through the running key instead of asking the user for its socket.
/// A record left by a key that crashed names a socket nobody answers or a device that is gone:
/// readers check before they use it.
public struct ServingKey: Equatable, Sendable {
    public enum Transport: Equatable, Sendable {
        /// A uhid device, found by its HID uniq `latchkey:<name>`.
        case uhid(name: String)
        /// The socket transport at this path.
        case socket(path: String)
    }

    public var transport: Transport
    public var pid: Int32

    public init(transport: Transport, pid: Int32 = getpid()) {
        self.transport = transport
        self.pid = pid
    }

    static func path(_ directory: String) -> String { directory + "/serving" }

    /// One line: `uhid NAME PID` or `socket PID PATH` (the path last: it may hold spaces).
    var line: String {
        switch transport {
        case .uhid(let name): "uhid \(name) \(pid)\n"
        case .socket(let path): "socket \(pid) \(path)\n"
        }
    }

    /// Writes the record (mode 0600, replacing any stale one); a failure only costs the
    /// convenience, so it is returned for the caller to log, not thrown.
    public func write(directory: String) -> Errno? {
        let temporary = Self.path(directory) + ".tmp-\(getpid())"
        do throws(Errno) {
            try? FileSystem.remove(temporary)
            let file = try FileDescriptor.createPrivateFile(temporary, flags: O_WRONLY)
            defer { file.close() }
            try file.writeAll(Array(line.utf8))
            try FileSystem.rename(temporary, to: Self.path(directory))
            return nil
        } catch {
            try? FileSystem.remove(temporary)
            return error
        }
    }

    /// Removes the record if it is this process's.
    public static func remove(directory: String) {
        if read(directory: directory)?.pid == getpid() { try? FileSystem.remove(path(directory)) }
    }

    /// The record in `directory`, if there is one that parses and its process is alive.
    public static func read(directory: String) -> ServingKey? {
        guard let file = try? FileDescriptor.open(path(directory), flags: O_RDONLY | O_NOFOLLOW),
              let bytes = try? file.readAll(limit: 4096) else { return nil }
        file.close()
        guard let text = String(validating: bytes, as: UTF8.self), text.hasSuffix("\n") else { return nil }
        let fields = text.dropLast().split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 3 else { return nil }
        let record: ServingKey
        switch fields[0] {
        case "uhid":
            guard let pid = Int32(fields[2]), !fields[1].isEmpty else { return nil }
            record = ServingKey(transport: .uhid(name: fields[1]), pid: pid)
        case "socket":
            guard let pid = Int32(fields[1]), fields[2].hasPrefix("/") else { return nil }
            record = ServingKey(transport: .socket(path: fields[2]), pid: pid)
        default:
            return nil
        }
        guard record.pid > 0, kill(record.pid, 0) == 0 || errno == EPERM else { return nil }
        return record
    }
}
