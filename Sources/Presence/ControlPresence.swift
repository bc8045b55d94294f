import Authenticator
import FIDOCrypto
import Foundation
import SystemIO

/// `--presence control`: a request waits for an answer given through the control socket
/// (`latchkey approve` / `latchkey deny`, `ControlSocket`), its timeout, or cancellation.
/// Nothing is ever approved without an answer, and an answer names what it answers
/// (`Target`), so that it cannot be spent on a request it was not meant for — another
/// client's registration, a reset, another app's U2F poll:
/// - `.pending` (a bare `latchkey approve`): the request pending when the answer arrives.
/// - `.request(id)` (`--request ID`, the id `presence status` shows): that request.
/// - `.relyingParty(rpID)` (`--rp ID`): the pending request of that RP, or else the next one
///   of that RP while the answer waits (its `--timeout`): what makes rigs race-free, since
///   `latchkey approve --rp` may start before or after the client sends its request. U2F
///   requests match by application parameter = SHA-256 of the RP ID (what CTAP2 clients send
///   when they fall back to U2F).
/// A U2F client polls: it sends the same APDU every ~500 ms, each a request that times out. A
/// request repeated within `holdMilliseconds` (2 s) of timing out (same operation, RP and
/// fingerprint, `PresenceRequest.isRepeated`) keeps its id, so an answer that arrives between
/// two polls goes to the next poll of that same request, and only to it. An answer is used
/// once; an answer whose control connection closes while it waits is withdrawn.
public final class ControlPresence: UserPresence, @unchecked Sendable {
    public enum Decision: String, Sendable, Codable {
        case approve, deny
    }

    /// Which request an answer is for.
    public enum Target: Sendable, Equatable {
        case pending
        case request(UInt64)
        case relyingParty(String)
    }

    /// What happened to an answer.
    public enum Outcome: Sendable, Equatable {
        /// It decided this request (with its id).
        case applied(Decision, PresenceRequest, id: UInt64)
        /// No request came for it in time (or its connection closed).
        case unused
        /// Nothing it names is pending (and it does not wait): why, for the user.
        case noMatch(String)
        /// The key is shutting down.
        case stopped
    }

    /// For `latchkey presence status`.
    public struct Status: Sendable, Equatable {
        public var pending: PresenceRequest?
        public var pendingID: UInt64?
        public var pendingForMilliseconds: UInt64?
        public var waitingAnswers: Int
    }

    /// How long after a timeout a repeat of the request is the same request.
    public static let defaultHoldMilliseconds: UInt64 = 2_000
    /// How often a waiting request looks at its cancellation flag.
    static let pollMilliseconds: UInt64 = 10

    private struct Pending {
        var id: UInt64
        var request: PresenceRequest
        var since: UInt64
        var answer: Decision?
    }

    /// What a waiting answer takes: one request (by id), or the next of an RP.
    private enum Binding {
        case request(UInt64)
        case rpIDHash([UInt8])

        func fits(id: UInt64, _ request: PresenceRequest) -> Bool {
            switch self {
            case .request(let wanted): wanted == id
            case .rpIDHash(let hash): request.rpIDHash == hash
            }
        }
    }

    private struct Answer {
        var id: UInt64
        var decision: Decision
        var deadline: UInt64
        var binding: Binding
        var outcome: Outcome?
    }

    let logger: Logger
    let holdMilliseconds: UInt64
    /// How the log says to answer ("`latchkey approve` or `latchkey deny`"; the rig's method).
    let answerHint: String
    private let condition = NSCondition()
    // Guarded by `condition`:
    private var pending: Pending?
    /// Requests that timed out in the last `holdMilliseconds`, oldest first (a few: polling
    /// U2F clients and their neighbours).
    private var recentTimeouts: [(id: UInt64, request: PresenceRequest, at: UInt64)] = []
    private var answers: [Answer] = []
    private var nextAnswerID: UInt64 = 1
    private var nextRequestID: UInt64 = 1
    private var isStopped = false

    public init(logger: Logger, holdMilliseconds: UInt64 = defaultHoldMilliseconds,
                answerHint: String = "`latchkey approve` or `latchkey deny`") {
        self.logger = logger
        self.holdMilliseconds = holdMilliseconds
        self.answerHint = answerHint
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
        recentTimeouts.removeAll { start &- $0.at > holdMilliseconds }
        let earlier = recentTimeouts.last { $0.request.isRepeated(by: request) }
        let repeated = earlier != nil
        let id: UInt64
        if let earlier {
            id = earlier.id
        } else {
            id = nextRequestID
            nextRequestID += 1
        }
        if let index = answers.firstIndex(where: { $0.outcome == nil && $0.deadline > start && $0.binding.fits(id: id, request) }) {
            let decision = answers[index].decision
            answers[index].outcome = .applied(decision, request, id: id)
            condition.broadcast()
            logger.info("presence \(decision == .approve ? "approved" : "denied") through the control socket: \(Self.describe(request))")
            return decision == .approve ? .approved : .denied
        }
        logger.log(repeated ? .debug : .info,
                   "presence needed: \(Self.describe(request)) (request \(id)); answer with \(answerHint)")
        pending = Pending(id: id, request: request, since: start, answer: nil)
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
                recentTimeouts.removeAll { $0.id == id }
                recentTimeouts.append((id, request, now))
                if recentTimeouts.count > 16 { recentTimeouts.removeFirst() }
                if request.timeoutMilliseconds >= holdMilliseconds {
                    logger.info("presence timed out: \(Self.describe(request))")
                }
                return .timedOut
            }
            _ = condition.wait(until: Self.date(after: min(Self.pollMilliseconds, deadline - now)))
        }
    }

    // MARK: The control socket's side

    /// Gives an answer for `target` and waits (blocking the calling thread) until a request
    /// takes it, it lapses (`timeoutMilliseconds` for an RP's next request, 2 s for a polling
    /// U2F request's next poll), `isAbandoned` turns true (the control connection closed), or
    /// the key stops.
    public func answer(_ decision: Decision, for target: Target = .pending, timeoutMilliseconds: UInt64,
                       isAbandoned: () -> Bool = { false }) -> Outcome {
        condition.lock()
        defer { condition.unlock() }
        if isStopped { return .stopped }
        let now = Self.now()
        let rpIDHash: [UInt8]? = if case .relyingParty(let rpID) = target { SHA256.hash(Array(rpID.utf8)) } else { nil }
        if let current = pending, current.answer == nil {
            let matches = switch target {
            case .pending: true
            case .request(let id): id == current.id
            case .relyingParty: current.request.rpIDHash == rpIDHash
            }
            if matches {
                pending?.answer = decision
                condition.broadcast()
                return .applied(decision, current.request, id: current.id)
            }
        }
        // A U2F request between two polls (it timed out less than 2 s ago): its next poll.
        recentTimeouts.removeAll { now &- $0.at > holdMilliseconds }
        let binding: Binding
        var deadline: UInt64
        switch target {
        case .pending:
            guard let recent = recentTimeouts.last else {
                return .noMatch(pending == nil
                    ? "no presence request is pending (to answer one still to come, name its RP: --rp RP_ID)"
                    : "the pending request is already answered")
            }
            binding = .request(recent.id)
            deadline = now &+ holdMilliseconds
        case .request(let id):
            guard recentTimeouts.contains(where: { $0.id == id }) else {
                let current = pending.map { "; request \($0.id) is (\(Self.describeForAnswer($0.request)))" } ?? ""
                return .noMatch("request \(id) is not pending\(current)")
            }
            binding = .request(id)
            deadline = now &+ holdMilliseconds
        case .relyingParty:
            binding = .rpIDHash(rpIDHash ?? [])
            deadline = now &+ timeoutMilliseconds
            if recentTimeouts.contains(where: { $0.request.rpIDHash == rpIDHash }) {
                deadline = max(deadline, now &+ holdMilliseconds)
            }
        }
        let id = nextAnswerID
        nextAnswerID += 1
        answers.append(Answer(id: id, decision: decision, deadline: deadline, binding: binding))
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
        return Status(pending: pending?.request, pendingID: pending?.id, pendingForMilliseconds: pending.map { now &- $0.since },
                      waitingAnswers: answers.filter { $0.outcome == nil }.count)
    }

    /// The key is stopping: waiting answers return `.stopped`, a waiting request `.cancelled`.
    public func stop() {
        condition.lock()
        isStopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// For the log: the operation only, not the RP or the user (Logger's rule).
    static func describe(_ request: PresenceRequest) -> String { request.operation.rawValue }

    /// For the control client (who may see what it answers): operation and RP ID.
    static func describeForAnswer(_ request: PresenceRequest) -> String {
        // The RP ID is the site's: shown the safe way here, and again by whoever prints it.
        DisplayText.request(request.operation.rawValue, rpID: request.rpID, userName: nil)
    }

    private static func date(after milliseconds: UInt64) -> Date {
        Date(timeIntervalSinceNow: Double(max(milliseconds, 1)) / 1_000)
    }
}
