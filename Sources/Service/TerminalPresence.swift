import Authenticator
import Foundation
import Synchronization

/// `--presence prompt`: asks on the controlling terminal ("Approve? [y/N]") and waits for an
/// answer, the timeout, or cancellation.
///
/// U2F clients poll (each request waits only briefly, then the client asks again), so a prompt
/// that timed out stays open for a few seconds: the next request for the same operation keeps
/// waiting on it instead of printing a new one.
public final class TerminalPresence: UserPresence, @unchecked Sendable {
    private struct OpenPrompt {
        var operation: PresenceRequest.Operation
        var rpID: String?
        var lastWaited: UInt64
    }

    let ttyPath: String
    let logger: Logger
    private let openPrompt = Mutex<OpenPrompt?>(nil)
    private static let promptReuseMilliseconds: UInt64 = 10_000

    public init(ttyPath: String = "/dev/tty", logger: Logger) {
        self.ttyPath = ttyPath
        self.logger = logger
    }

    /// Fails early when there is no terminal to ask on.
    public static func terminalAvailable(path: String = "/dev/tty") -> Bool {
        let fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    public func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult {
        let fd = open(ttyPath, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else {
            logger.error("presence prompt: cannot open \(ttyPath) (\(String(cString: strerror(errno)))); denying")
            return .denied
        }
        defer { close(fd) }
        let now = SystemClock().monotonicMilliseconds()
        let reuse = openPrompt.withLock { prompt -> Bool in
            guard let prompt, prompt.operation == request.operation, prompt.rpID == request.rpID,
                  now &- prompt.lastWaited <= Self.promptReuseMilliseconds else { return false }
            return true
        }
        if !reuse {
            tcflush(fd, TCIFLUSH)
            var text = "\nLatchkey: \(request.operation.rawValue)"
            if let rpID = request.rpID { text += " at \(rpID)" }
            if let user = request.userName, !user.isEmpty { text += " for \(user)" }
            text += ". Approve? [y/N] "
            write(fd: fd, text)
        }
        openPrompt.withLock { $0 = OpenPrompt(operation: request.operation, rpID: request.rpID, lastWaited: now) }

        let deadline = now + request.timeoutMilliseconds
        while true {
            if cancellation.isCancelled {
                openPrompt.withLock { $0 = nil }
                write(fd: fd, "(cancelled by the client)\n")
                return .cancelled
            }
            let current = SystemClock().monotonicMilliseconds()
            if current >= deadline {
                openPrompt.withLock { $0?.lastWaited = current }
                if request.timeoutMilliseconds >= 2_000 {
                    openPrompt.withLock { $0 = nil }
                    write(fd: fd, "(timed out)\n")
                }
                return .timedOut
            }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(100, deadline - current)))
            guard ready > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else {
                openPrompt.withLock { $0 = nil }
                return .denied
            }
            openPrompt.withLock { $0 = nil }
            let answer = String(decoding: buffer[0..<count], as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            return answer == "y" || answer == "yes" ? .approved : .denied
        }
    }

    private func write(fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }
}
