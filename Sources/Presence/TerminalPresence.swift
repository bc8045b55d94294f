import Authenticator
import Foundation
import Synchronization
import SystemIO

/// `--presence prompt`: asks on the controlling terminal ("Approve? [y/N]") and waits for an
/// answer, the timeout, or cancellation.
///
/// U2F clients poll (each request waits only briefly, then the client asks again), so a prompt
/// that timed out stays open for a few seconds: the next request for the same operation keeps
/// waiting on it instead of printing a new one — only a repeat of that same request.
public final class TerminalPresence: UserPresence, @unchecked Sendable {
    private struct OpenPrompt {
        /// The request asked about: a repeat of it (`isRepeated`, a U2F poll of the same APDU)
        /// waits on the same prompt; another app's request gets its own.
        var request: PresenceRequest
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
        Terminal.isAvailable(path: path)
    }

    public func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult {
        let terminal: Terminal
        do {
            terminal = try Terminal(path: ttyPath)
        } catch {
            logger.error("presence prompt: cannot open \(ttyPath) (\(error)); denying")
            return .denied
        }
        let now = MonotonicClock.milliseconds()
        let reuse = openPrompt.withLock { prompt -> Bool in
            guard let prompt, prompt.request.isRepeated(by: request),
                  now &- prompt.lastWaited <= Self.promptReuseMilliseconds else { return false }
            return true
        }
        if !reuse {
            terminal.discardPendingInput()
            // RP ID and user name are the site's: shown, never acted on by the terminal.
            terminal.write("\nLatchkey: " + DisplayText.request(request.operation.rawValue, rpID: request.rpID,
                                                                 userName: request.userName) + ". Approve? [y/N] ")
        }
        openPrompt.withLock { $0 = OpenPrompt(request: request, lastWaited: now) }

        let deadline = now + request.timeoutMilliseconds
        while true {
            if cancellation.isCancelled {
                openPrompt.withLock { $0 = nil }
                terminal.write("(cancelled by the client)\n")
                return .cancelled
            }
            let current = MonotonicClock.milliseconds()
            if current >= deadline {
                openPrompt.withLock { $0?.lastWaited = current }
                if request.timeoutMilliseconds >= 2_000 {
                    openPrompt.withLock { $0 = nil }
                    terminal.write("(timed out)\n")
                }
                return .timedOut
            }
            guard let input = terminal.read(upToCount: 256, timeoutMilliseconds: Int32(min(100, deadline - current))) else {
                continue
            }
            openPrompt.withLock { $0 = nil }
            guard !input.isEmpty else { return .denied }
            let answer = String(decoding: input, as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            return answer == "y" || answer == "yes" ? .approved : .denied
        }
    }
}
