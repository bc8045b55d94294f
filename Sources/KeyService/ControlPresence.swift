import Authenticator
import Foundation
import SystemIO

/// `--presence control`: a request waits for an answer given through the control socket
/// (`latchkey approve` / `latchkey deny`, `ControlSocket`), its timeout, or cancellation.
/// Nothing is ever approved without an answer.
///
/// Which request an answer applies to (an answer is used once):
/// 1. the request pending when the answer arrives;
/// 2. else, if a request timed out at most `holdMilliseconds` (2 s) ago — a U2F client polls
///    with short requests (500 ms) and sends them again — the answer is reserved for 2 s for
///    the next request of that same operation and RP ID (even with `--timeout 0`); another
///    operation does not take it meanwhile;
/// 3. else (or once those 2 s are over) the next request of any operation that arrives while
///    the answer waits (its `--timeout`). This is what makes rigs race-free: `latchkey
///    approve` may start before or after the client sends its request.
/// An answer whose control connection closes while it waits is withdrawn.
public final class ControlPresence: UserPresence, @unchecked Sendable {
    public enum Decision: String, Sendable, Codable {
        case approve, deny
    }

    /// What happened to an answer.
    public enum Outcome: Sendable, Equatable {
        /// It decided this request.
        case applied(Decision, PresenceRequest)
        /// No request came for it in time (or its connection closed).
        case unused
        /// The key is shutting down.
        case stopped
    }

    /// For `latchkey presence status`.
    public struct Status: Sendable, Equatable {
        public var pending: PresenceRequest?
        public var pendingForMilliseconds: UInt64?
        public var waitingAnswers: Int
    }

    /// How long after a timeout an answer still binds to that operation (rule 2).
    public static let defaultHoldMilliseconds: UInt64 = 2_000
    /// How often a waiting request looks at its cancellation flag.
    static let pollMilliseconds: UInt64 = 10

    private struct Pending {
        var request: PresenceRequest
        var since: UInt64
        var answer: Decision?
    }

    private struct Answer {
        var id: UInt64
        var decision: Decision
        var deadline: UInt64
        /// Rule 2: until `until`, only a request of this operation and RP ID takes it.
        var binding: (operation: PresenceRequest.Operation, rpID: String?, until: UInt64)?
        var outcome: Outcome?

        func fits(_ request: PresenceRequest, at now: UInt64) -> Bool {
            guard let binding, now < binding.until else { return true }
            return binding.operation == request.operation && binding.rpID == request.rpID
        }
    }

    let logger: Logger
    let holdMilliseconds: UInt64
    private let condition = NSCondition()
    // Guarded by `condition`:
    private var pending: Pending?
    private var lastTimeout: (operation: PresenceRequest.Operation, rpID: String?, at: UInt64)?
    private var answers: [Answer] = []
    private var nextAnswerID: UInt64 = 1
    private var isStopped = false

    public init(logger: Logger, holdMilliseconds: UInt64 = defaultHoldMilliseconds) {
        self.logger = logger
        self.holdMilliseconds = holdMilliseconds
    }

    /// Milliseconds on CLOCK_MONOTONIC: this provider's waits are counted in the unit of
    /// `PresenceRequest.timeoutMilliseconds`.
    static func now() -> UInt64 { MonotonicClock.milliseconds() }

    // MARK: The authenticator's side

    public func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult {
        condition.lock()
        defer { condition.unlock() }
        if cancellation.isCancelled { return .cancelled }
        let start = Self.now()
        if let index = answers.firstIndex(where: { $0.outcome == nil && $0.deadline > start && $0.fits(request, at: start) }) {
            let decision = answers[index].decision
            answers[index].outcome = .applied(decision, request)
            condition.broadcast()
            logger.info("presence \(decision == .approve ? "approved" : "denied") through the control socket: \(Self.describe(request))")
            return decision == .approve ? .approved : .denied
        }
        let repeated = lastTimeout.map { $0.operation == request.operation && $0.rpID == request.rpID
            && start &- $0.at <= holdMilliseconds } ?? false
        logger.log(repeated ? .debug : .info,
                   "presence needed: \(Self.describe(request)); answer with `latchkey approve` or `latchkey deny`")
        pending = Pending(request: request, since: start, answer: nil)
        defer { pending = nil }
        let deadline = start &+ request.timeoutMilliseconds
        while true {
            if let answer = pending?.answer {
                logger.info("presence \(answer == .approve ? "approved" : "denied") through the control socket: \(Self.describe(request))")
                return answer == .approve ? .approved : .denied
            }
            if cancellation.isCancelled || isStopped { return .cancelled }
            let now = Self.now()
            if now >= deadline {
                lastTimeout = (request.operation, request.rpID, now)
                if request.timeoutMilliseconds >= holdMilliseconds {
                    logger.info("presence timed out: \(Self.describe(request))")
                }
                return .timedOut
            }
            _ = condition.wait(until: Self.date(after: min(Self.pollMilliseconds, deadline - now)))
        }
    }

    // MARK: The control socket's side

    /// Gives an answer and waits (blocking the calling thread) until a request takes it, it
    /// lapses (`timeoutMilliseconds`, or the 2 s of rule 2), `isAbandoned` turns true (the
    /// control connection closed), or the key stops.
    public func answer(_ decision: Decision, timeoutMilliseconds: UInt64,
                       isAbandoned: () -> Bool = { false }) -> Outcome {
        condition.lock()
        defer { condition.unlock() }
        if isStopped { return .stopped }
        let now = Self.now()
        if let current = pending, current.answer == nil {
            pending?.answer = decision
            condition.broadcast()
            return .applied(decision, current.request)
        }
        var answer = Answer(id: nextAnswerID, decision: decision, deadline: now &+ timeoutMilliseconds)
        nextAnswerID += 1
        if let recent = lastTimeout, now &- recent.at <= holdMilliseconds {
            // Rule 2: a U2F client between two polls. Reserved for its next request, and kept
            // that long whatever the answer's own --timeout (which may be 0: "only what is pending").
            answer.binding = (recent.operation, recent.rpID, now &+ holdMilliseconds)
            answer.deadline = max(answer.deadline, now &+ holdMilliseconds)
        }
        let id = answer.id
        answers.append(answer)
        defer { answers.removeAll { $0.id == id } }
        while true {
            guard let current = answers.first(where: { $0.id == id }) else { return .unused }
            if let outcome = current.outcome { return outcome }
            if isStopped { return .stopped }
            let now = Self.now()
            if now >= current.deadline || isAbandoned() { return .unused }
            _ = condition.wait(until: Self.date(after: min(50, current.deadline - now)))
        }
    }

    public func status() -> Status {
        condition.lock()
        defer { condition.unlock() }
        let now = Self.now()
        return Status(pending: pending?.request, pendingForMilliseconds: pending.map { now &- $0.since },
                      waitingAnswers: answers.filter { $0.outcome == nil }.count)
    }

    /// The key is stopping: waiting answers return `.stopped`, a waiting request `.cancelled`.
    public func stop() {
        condition.lock()
        isStopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// For the log: operation and RP ID, not the user's name (Logger's rule).
    static func describe(_ request: PresenceRequest) -> String {
        request.operation.rawValue + (request.rpID.map { " at \($0)" } ?? "")
    }

    private static func date(after milliseconds: UInt64) -> Date {
        Date(timeIntervalSinceNow: Double(max(milliseconds, 1)) / 1_000)
    }
}
