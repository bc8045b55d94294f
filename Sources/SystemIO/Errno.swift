import Glibc

/// A POSIX error number with the names the project acts on (after
/// swift-system's `Errno`). Thrown by SystemIO's thin syscall wrappers; each
/// layer above turns it into its own error in one place (LinuxHID's
/// `TransportError.init(_:call:path:hint:)`, CredentialStore's `StoreError`).
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The calling thread's `errno`.
    public static var current: Errno {
        Errno(rawValue: errno)
    }

    public static let notPermitted = Errno(rawValue: EPERM)
    public static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    public static let interrupted = Errno(rawValue: EINTR)
    public static let ioError = Errno(rawValue: EIO)
    public static let noSuchDeviceOrAddress = Errno(rawValue: ENXIO)
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let permissionDenied = Errno(rawValue: EACCES)
    public static let noDevice = Errno(rawValue: ENODEV)
    public static let invalidArgument = Errno(rawValue: EINVAL)
    public static let brokenPipe = Errno(rawValue: EPIPE)
    public static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
    public static let badMessage = Errno(rawValue: EBADMSG)
    public static let wrongProtocolType = Errno(rawValue: EPROTOTYPE)
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    public static let connectionAborted = Errno(rawValue: ECONNABORTED)
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    public static let noBufferSpace = Errno(rawValue: ENOBUFS)
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    public static let fileExists = Errno(rawValue: EEXIST)
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    public static let tooManyOpenFilesInSystem = Errno(rawValue: ENFILE)
    public static let operationNotSupported = Errno(rawValue: EOPNOTSUPP)
    public static let inProgress = Errno(rawValue: EINPROGRESS)
    public static let timedOut = Errno(rawValue: ETIMEDOUT)

    /// `strerror(3)` text, e.g. "No such file or directory".
    public var description: String {
        String(cString: strerror(rawValue))
    }

    /// The same text, for messages that read "cannot open X: <message>".
    public var message: String { description }

    /// Runs a syscall-style `body` (−1 and `errno` on failure), retrying on
    /// EINTR; returns its non-negative result or throws the error.
    @inline(__always)
    public static func retryingInterrupts<Result: BinaryInteger>(
        _ body: () -> Result
    ) throws(Errno) -> Result {
        while true {
            let result = body()
            if result >= 0 { return result }
            let error = Errno.current
            if error != .interrupted { throw error }
        }
    }
}
