import Authenticator
import Foundation
import SystemIO

/// User verification decided by the rig per request (`automaticUserVerification: false`): a
/// verification waits for `answerUserVerification` — given while it waits, or before it comes
/// (an answer naming an RP waits up to its timeout for that RP's next verification) — until its
/// own timeout or cancellation. An answer is used once. What `--uv control` is to a rig.
final class VerificationControl: @unchecked Sendable {
    enum Outcome: Equatable {
        /// It decided this verification.
        case applied(verified: Bool, VerificationRequest)
        /// No verification came for it in time.
        case unused
        /// The key is stopping.
        case stopped
    }

    private struct Answer {
        var id: UInt64
        var verified: Bool
        var rpID: String?
        var deadline: UInt64
        var outcome: Outcome?
    }

    /// How often a waiting verification looks at its cancellation flag.
    static let pollMilliseconds: UInt64 = 10

    private let condition = NSCondition()
    // Guarded by `condition`:
    private var pending: (request: VerificationRequest, answer: Bool?)?
    private var answers: [Answer] = []
    private var nextAnswerID: UInt64 = 1
    private var isStopped = false

    private static func date(after milliseconds: UInt64) -> Date {
        Date(timeIntervalSinceNow: Double(max(milliseconds, 1)) / 1_000)
    }

    /// The key's side: waits for an answer.
    func verify(_ request: VerificationRequest, cancellation: CancellationFlag) -> VerificationResult {
        condition.lock()
        defer { condition.unlock() }
        let start = MonotonicClock.milliseconds()
        if let index = answers.firstIndex(where: { $0.outcome == nil && $0.deadline > start && ($0.rpID == nil || $0.rpID == request.rpID) }) {
            answers[index].outcome = .applied(verified: answers[index].verified, request)
            condition.broadcast()
            return answers[index].verified ? .verified : .notVerified
        }
        pending = (request, nil)
        defer { pending = nil }
        let deadline = start &+ request.timeoutMilliseconds
        while true {
            if let answer = pending?.answer { return answer ? .verified : .notVerified }
            if cancellation.isCancelled || isStopped { return .cancelled }
            let now = MonotonicClock.milliseconds()
            if now >= deadline { return .timedOut }
            _ = condition.wait(until: Self.date(after: min(Self.pollMilliseconds, deadline - now)))
        }
    }

    /// The rig's side: answers the verification waiting now (of `rpID`, if given), or else the
    /// next one within `timeoutMilliseconds`. Blocks the calling thread until then.
    func answer(verified: Bool, rpID: String?, timeoutMilliseconds: UInt64, isAbandoned: () -> Bool = { false }) -> Outcome {
        condition.lock()
        defer { condition.unlock() }
        if isStopped { return .stopped }
        if let current = pending, current.answer == nil, rpID == nil || rpID == current.request.rpID {
            pending?.answer = verified
            condition.broadcast()
            return .applied(verified: verified, current.request)
        }
        let id = nextAnswerID
        nextAnswerID += 1
        answers.append(Answer(id: id, verified: verified, rpID: rpID, deadline: MonotonicClock.milliseconds() &+ timeoutMilliseconds))
        defer { answers.removeAll { $0.id == id } }
        while true {
            guard let current = answers.first(where: { $0.id == id }) else { return .unused }
            if let outcome = current.outcome { return outcome }
            if isStopped { return .stopped }
            let now = MonotonicClock.milliseconds()
            if now >= current.deadline || isAbandoned() { return .unused }
            _ = condition.wait(until: Self.date(after: min(50, current.deadline - now)))
        }
    }

    /// Waiting answers return `.stopped`, a waiting verification `.cancelled`.
    func stop() {
        condition.lock()
        isStopped = true
        condition.broadcast()
        condition.unlock()
    }
}
