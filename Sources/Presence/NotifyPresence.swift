import Authenticator
import Foundation
import Synchronization
import SystemIO

/// `--presence notify`: a desktop notification with Approve and Deny buttons, through
/// `notify-send --action=… --wait` (libnotify-bin ≥ 0.8), which prints the chosen action's
/// name and exits when the notification is answered or closed.
///
/// Results: "approve" or "default" (the notification itself clicked) → approved; "deny" → denied; closed without an action → denied, unless
/// that happens at the request's deadline (the server expired it) → timed out; the deadline
/// → the notification is closed, timed out; cancellation → closed, cancelled. notify-send
/// closes its notification on SIGINT, which is how it is closed here.
///
/// U2F clients poll (each request waits 500 ms, then the client asks again): when a request
/// shorter than `holdMilliseconds` (2 s) times out, its notification stays up, and the next
/// request of the same operation and RP ID within 2 s takes it over — including an answer
/// clicked in between. Otherwise (no such request in 2 s) the notification is closed.
public final class NotifyPresence: UserPresence, @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// How long a short request's notification outlives its timeout, waiting for the next poll
    /// (requests shorter than this are polls).
    public static let defaultHoldMilliseconds: UInt64 = 2_000
    /// The notification's own expiry is at least this (a U2F poll is much shorter than a person).
    static let minimumExpireMilliseconds: UInt64 = 30_000
    /// A notification closed without an action this close to the deadline has expired.
    static let expiryMarginMilliseconds: UInt64 = 500
    static let pollMicroseconds: UInt32 = 20_000

    private struct Open: Sendable {
        /// The request shown: a repeat of it (`isRepeated`, a U2F poll) reuses the notification.
        var request: PresenceRequest
        var process: RunningProgram
        /// When the last request using it timed out (nil while a request waits on it).
        var idleSince: UInt64?
        var generation: UInt64
    }

    let executable: String
    let runner: ProgramRunner
    let logger: Logger
    let holdMilliseconds: UInt64
    private let open = Mutex<Open?>(nil)
    private let generations = Atomic<UInt64>(0)

    public init(executable: String = "notify-send", runner: ProgramRunner = ChildProcessRunner(), logger: Logger,
                holdMilliseconds: UInt64 = defaultHoldMilliseconds) {
        self.executable = executable
        self.runner = runner
        self.logger = logger
        self.holdMilliseconds = holdMilliseconds
    }

    /// Milliseconds on CLOCK_MONOTONIC: this provider's waits are counted in the unit of
    /// `PresenceRequest.timeoutMilliseconds`.
    static func now() -> UInt64 { MonotonicClock.milliseconds() }

    // MARK: Command

    /// notify-send's arguments for `request`.
    public static func arguments(for request: PresenceRequest) -> [String] {
        let expire = max(request.timeoutMilliseconds, minimumExpireMilliseconds)
        return ["--app-name=Latchkey", "--urgency=critical", "--icon=security-high",
                // Approve is the default action too: what a click on the notification itself, dunst's
                // middle click or `dunstctl action` invokes. With two actions and no default, dunst
                // asks dmenu which one — and without dmenu the click does nothing until the request
                // times out (passless#370, #375). Deny stays a button of its own.
                "--action=default=Approve", "--action=approve=Approve", "--action=deny=Deny", "--wait", "--expire-time=\(expire)",
                "--", "Latchkey", body(for: request)]
    }

    /// "register at example.com for alice", escaped for notify-send (which expands backslash
    /// escapes in the body) and for servers that render body markup.
    static func body(for request: PresenceRequest) -> String {
        let text = DisplayText.request(request.operation.rawValue, rpID: request.rpID, userName: request.userName)
        var escaped = ""
        for character in text {
            switch character {
            case "\\": escaped += "\\\\"
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// What a finished notify-send means for a request whose deadline is `deadline`.
    static func result(of exit: ProgramExit, finishedAt now: UInt64, deadline: UInt64) -> PresenceResult {
        switch exit.output.trimmingCharacters(in: .whitespacesAndNewlines) {
        case "approve", "default": return .approved
        case "deny": return .denied
        default:
            if exit.status == 0, now + expiryMarginMilliseconds >= deadline { return .timedOut }
            return .denied
        }
    }

    /// Checks at `serve` start that notifications can work: a session bus and notify-send
    /// ≥ 0.8 (actions). Returns notify-send's path.
    public static func checkEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment,
                                        version: (String) -> String? = ChildProcessRunner.version(of:)) throws(Failure) -> String {
        guard let bus = environment["DBUS_SESSION_BUS_ADDRESS"], !bus.isEmpty else {
            throw Failure("--presence notify needs a desktop session bus, and DBUS_SESSION_BUS_ADDRESS is not set: run the key "
                          + "inside your desktop session (e.g. as the systemd user service), or use --presence prompt or control")
        }
        guard let path = ChildProcessRunner.locate("notify-send", environment: environment) else {
            throw Failure("--presence notify needs notify-send, which is not installed (Debian: apt install libnotify-bin)")
        }
        if let text = version(path) {
            // "notify-send 0.8.1": actions (--action) came with 0.8.
            let numbers = text.split(whereSeparator: { !$0.isNumber && $0 != "." }).last?
                .split(separator: ".").compactMap { Int($0) } ?? []
            if numbers.count >= 2, (numbers[0], numbers[1]) < (0, 8) {
                throw Failure("--presence notify needs notify-send 0.8 or later for its Approve/Deny buttons; \(path) is "
                              + "\(text.trimmingCharacters(in: .whitespacesAndNewlines))")
            }
        }
        return path
    }

    // MARK: Presence

    public func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult {
        if cancellation.isCancelled { return .cancelled }
        let start = Self.now()
        let deadline = start &+ request.timeoutMilliseconds
        let (reused, stale) = open.withLock { current -> (RunningProgram?, RunningProgram?) in
            guard let existing = current else { return (nil, nil) }
            if existing.request.isRepeated(by: request),
               let idle = existing.idleSince, start &- idle <= holdMilliseconds {
                current?.idleSince = nil
                return (existing.process, nil)
            }
            current = nil
            return (nil, existing.process)
        }
        stale?.close()
        let process: RunningProgram
        let generation: UInt64
        if let reused {
            process = reused
            generation = open.withLock { $0?.generation ?? 0 }
        } else {
            do {
                process = try runner.start(executable: executable, arguments: Self.arguments(for: request))
            } catch {
                logger.error("presence notify: \(error.description); denying")
                return .denied
            }
            generation = generations.add(1, ordering: .relaxed).newValue
            open.withLock { $0 = Open(request: request, process: process,
                                      idleSince: nil, generation: generation) }
            logger.info("presence: notification shown: \(ControlPresence.describe(request))")
        }
        while true {
            if let exit = process.exit {
                forget(generation)
                if exit.status != 0, !exit.errorOutput.isEmpty {
                    logger.warning("presence notify: notify-send: \(exit.errorOutput.trimmingCharacters(in: .whitespacesAndNewlines))")
                }
                let result = Self.result(of: exit, finishedAt: Self.now(), deadline: deadline)
                logger.info("presence \(result == .approved ? "approved" : result == .denied ? "denied" : "timed out") in the notification")
                return result
            }
            if cancellation.isCancelled {
                forget(generation)
                process.close()
                return .cancelled
            }
            let now = Self.now()
            if now >= deadline {
                if request.timeoutMilliseconds < holdMilliseconds {
                    keepForNextPoll(generation: generation, idleSince: now)
                } else {
                    forget(generation)
                    process.close()
                    logger.info("presence timed out: \(ControlPresence.describe(request))")
                }
                return .timedOut
            }
            usleep(Self.pollMicroseconds)
        }
    }

    /// Drops the open notification if it is still `generation`.
    private func forget(_ generation: UInt64) {
        open.withLock { if $0?.generation == generation { $0 = nil } }
    }

    /// A short request timed out: the notification waits `holdMilliseconds` for the next poll,
    /// then is closed if nobody took it over.
    private func keepForNextPoll(generation: UInt64, idleSince: UInt64) {
        open.withLock { if $0?.generation == generation { $0?.idleSince = idleSince } }
        // Holds `self` for those 2 s: a key's presence provider lives as long as the key anyway.
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(holdMilliseconds) + 50)) { [self] in
            let expired = open.withLock { current -> RunningProgram? in
                guard let existing = current, existing.generation == generation, existing.idleSince == idleSince else { return nil }
                current = nil
                return existing.process
            }
            expired?.close()
        }
    }
}
