import Foundation
import Glibc
import LinuxHID
import Synchronization
import SystemIO

/// `latchkey uhid-broker`: the root service that creates users' keys on /dev/uhid for them
/// (LinuxHID.UHIDBroker, docs/uhid-broker.md). Started by systemd from
/// udev/latchkey-uhid-broker.socket (socket activation: the listening socket is descriptor 3),
/// or by hand with `--socket PATH`.
public enum BrokerCommand {
    public static let spec = CommandSpec(
        name: "uhid-broker",
        abstract: "Create users' keys on /dev/uhid for them, each stamped with its user (a root service; systemd starts it).",
        options: [
            .init("socket", value: "PATH", help: "Listen here (default: the socket systemd passes, else \(UHIDDevice.brokerPath))."),
            .init("uhid", value: "PATH", help: "The uhid device to open for each key (default: /dev/uhid)."),
            .logLevel,
        ])

    public static func run(_ parsed: ParsedArguments) throws(UsageError) -> Int32 {
        guard parsed.positionals.isEmpty else { throw UsageError("`latchkey uhid-broker` takes no arguments") }
        let level = try parsed.logLevel() ?? .info
        let uhid = parsed.value("uhid") ?? "/dev/uhid"
        guard uhid.hasPrefix("/") else { throw UsageError("invalid --uhid '\(uhid)': give an absolute path") }
        let logger = Logger(level: level)
        let listener: FileDescriptor
        do {
            listener = try listeningSocket(parsed.value("socket"), environment: ProcessInfo.processInfo.environment)
        } catch {
            Console.error(error.reason)
            return 1
        }
        // The broker opens the device itself once, so that a broker that cannot is said at start.
        do {
            _ = try FileDescriptor.open(uhid, flags: O_RDWR | O_CLOEXEC | O_NONBLOCK)
        } catch {
            Console.error("cannot open \(uhid) (\(error)): the broker runs as root, where uhid is loaded (`sudo modprobe uhid`)")
            return 1
        }
        let stop = Atomic<Bool>(false)
        let signals = SignalWatcher(stop: { signal in
            logger.info("uhid broker: \(signal), stopping (every key through it goes)")
            stop.store(true, ordering: .releasing)
        }, powerCycle: {})
        defer { signals.cancel() }
        var limits = UHIDBroker.Limits()
        limits.subordinateUIDs = UHIDBrokerPolicy.subordinateRanges(subuid: (try? String(contentsOfFile: "/etc/subuid", encoding: .utf8)) ?? "")
        let broker = UHIDBroker(listener: listener, openDevice: { () throws(Errno) -> FileDescriptor in
            try FileDescriptor.open(uhid, flags: O_RDWR | O_CLOEXEC | O_NONBLOCK)
        }, logger: logger, limits: limits)
        logger.info("uhid broker: serving \(uhid) on \(parsed.value("socket") ?? "the socket systemd passed")")
        broker.run { stop.load(ordering: .acquiring) }
        return 0
    }

    struct Failure: Error { var reason: String }

    /// systemd's socket (LISTEN_FDS, LISTEN_PID: descriptor 3) when there is one and no
    /// `--socket`, else a socket bound at `path` (default /run/latchkey/uhid.socket), mode 0666
    /// in a 0755 directory: every local user may connect; what they may do is the broker's rule.
    static func listeningSocket(_ path: String?, environment: [String: String]) throws(Failure) -> FileDescriptor {
        if path == nil, environment["LISTEN_PID"] == String(getpid()), let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1 {
            let socket = FileDescriptor(owning: 3)
            try? socket.setNonBlocking(true)
            return socket
        }
        let path = path ?? UHIDDevice.brokerPath
        guard path.hasPrefix("/") else { throw Failure(reason: "invalid --socket '\(path)': give an absolute path") }
        let directory = (path as NSString).deletingLastPathComponent
        if !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileSystem.createDirectories(directory, mode: 0o755)
            } catch {
                throw Failure(reason: "cannot create \(directory): \(error.message)")
            }
        }
        var status = stat()
        if lstat(path, &status) == 0 {
            // A socket left by a broker that did not stop cleanly is replaced; anything else is not ours.
            guard status.st_mode & S_IFMT == S_IFSOCK else { throw Failure(reason: "\(path) exists and is not a socket") }
            unlink(path)
        }
        do {
            let socket = try FileDescriptor.unixSocket(type: SOCK_SEQPACKET, nonBlocking: true)
            // Mode 0666 from bind(2) itself (0777 less this umask): no chmod of a path that
            // could be swapped for a symlink meanwhile.
            let previous = umask(0o111)
            defer { umask(previous) }
            try socket.bind(to: try UnixSocketAddress(path: path))
            try socket.listen(backlog: 64)
            return socket
        } catch {
            throw Failure(reason: "cannot listen on \(path): \(error)")
        }
    }
}
