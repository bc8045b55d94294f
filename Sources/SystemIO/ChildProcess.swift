import CSystemIO
import Glibc
import Synchronization

/// A program run with its output captured, started the way a shell starts one: an empty signal
/// mask and every signal at its default disposition. Foundation's `Process` hands the child the
/// mask of the thread that spawns it — and a key's threads block SIGINT and SIGTERM for its
/// signal watcher — so a notify-send started that way could never be interrupted: it did not
/// close its notification on SIGINT, and the SIGKILL after it left the notification on screen
/// (seen with dunst and notification-daemon). stdin is /dev/null; stdout and stderr are read
/// to the end on a thread of their own, then the child is reaped.
public final class ChildProcess: @unchecked Sendable {
    public struct Exit: Equatable, Sendable {
        /// The exit status, or 128 + the signal that ended it.
        public var status: Int32
        public var output: [UInt8]
        public var errorOutput: [UInt8]
    }

    public let pid: pid_t
    private let finished = Mutex<Exit?>(nil)
    /// Output kept at most (what these programs print is a line or two).
    static let outputLimit = 64 << 10

    /// nil while it runs.
    public var exit: Exit? { finished.withLock { $0 } }

    public init(executable: String, arguments: [String]) throws(Errno) {
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        guard lk_pipe_cloexec(&outPipe) == 0 else { throw .current }
        guard lk_pipe_cloexec(&errPipe) == 0 else {
            let error = Errno.current
            close(outPipe[0]); close(outPipe[1])
            throw error
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), all = sigset_t()
        sigemptyset(&empty)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        close(outPipe[1]); close(errPipe[1])
        guard result == 0 else {
            close(outPipe[0]); close(errPipe[0])
            throw Errno(rawValue: result)
        }
        pid = child
        let (out, err) = (outPipe[0], errPipe[0])
        let thread = Thread { [self] in collect(out: out, err: err) }
        thread.start()
    }

    /// Sends `signal` while the child has not been reaped (never to a reused PID).
    public func send(_ signal: Int32) {
        finished.withLock { exit in
            if exit == nil { _ = kill(pid, signal) }
        }
    }

    private func collect(out: Int32, err: Int32) {
        var output = [UInt8](), errorOutput = [UInt8]()
        var open = [out, err]
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !open.isEmpty {
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&fds, nfds_t(fds.count), -1) >= 0 || errno == EINTR else { break }
            for entry in fds where entry.revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    if entry.fd == out, output.count < Self.outputLimit { output += buffer.prefix(count) }
                    if entry.fd == err, errorOutput.count < Self.outputLimit { errorOutput += buffer.prefix(count) }
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    close(entry.fd)
                    open.removeAll { $0 == entry.fd }
                }
            }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import (macros).
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        finished.withLock { $0 = Exit(status: code, output: output, errorOutput: errorOutput) }
    }
}

/// Thread without Foundation (SystemIO imports Glibc alone): one detached pthread.
final class Thread: @unchecked Sendable {
    private let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }

    func start() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let thread = Unmanaged<Thread>.fromOpaque(context!).takeRetainedValue()
            thread.body()
            return nil
        }, box)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Thread>.fromOpaque(box).release()
            body()
        }
    }
}
