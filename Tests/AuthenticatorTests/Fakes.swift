import Authenticator
import Synchronization

/// Time that moves only when a test says so.
final class ManualClock: AuthenticatorClock, @unchecked Sendable {
    private let milliseconds = Mutex<UInt64>(1_000)
    private let seconds = Mutex<Int64>(1_800_000_000)
    func monotonicNanoseconds() -> UInt64 { milliseconds.withLock { $0 } * 1_000_000 }
    func unixSeconds() -> Int64 { seconds.withLock { $0 } }
    func advance(byMilliseconds delta: UInt64) {
        milliseconds.withLock { $0 += delta }
        seconds.withLock { $0 += Int64(delta / 1000) }
    }
}

/// Presence answers taken from a script; records what was asked.
final class ScriptedPresence: UserPresence, @unchecked Sendable {
    private let state = Mutex<(answers: [PresenceResult], fallback: PresenceResult, asked: [PresenceRequest])>(([], .approved, []))
    let selectsForUser: Bool
    init(_ fallback: PresenceResult = .approved, selectsForUser: Bool = false) {
        self.selectsForUser = selectsForUser
        state.withLock { $0.fallback = fallback }
    }
    func queue(_ answers: PresenceResult...) { state.withLock { $0.answers += answers } }
    var asked: [PresenceRequest] { state.withLock { $0.asked } }
    func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult {
        state.withLock { state in
            state.asked.append(request)
            if cancellation.isCancelled { return .cancelled }
            return state.answers.isEmpty ? state.fallback : state.answers.removeFirst()
        }
    }
}

/// A built-in UV method that answers from a script (then `fallback`) and records what it was asked.
final class ScriptedVerification: UserVerification, @unchecked Sendable {
    private let state = Mutex<(answers: [VerificationResult], fallback: VerificationResult, asked: [VerificationRequest])>(([], .verified, []))
    init(_ fallback: VerificationResult = .verified) { state.withLock { $0.fallback = fallback } }
    func queue(_ answers: VerificationResult...) { state.withLock { $0.answers += answers } }
    var asked: [VerificationRequest] { state.withLock { $0.asked } }
    var modality: UInt32 { UserVerificationMethod.fingerprintInternal }
    func verifyUser(_ request: VerificationRequest, cancellation: CancellationFlag) -> VerificationResult {
        state.withLock { state in
            state.asked.append(request)
            if cancellation.isCancelled { return .cancelled }
            return state.answers.isEmpty ? state.fallback : state.answers.removeFirst()
        }
    }
}

/// Deterministic bytes (SplitMix64).
final class SeededRandom: RandomSource, @unchecked Sendable {
    private let state: Mutex<UInt64>
    init(seed: UInt64) { state = Mutex(seed) }
    func bytes(count: Int) -> [UInt8] {
        state.withLock { s in
            var out: [UInt8] = []
            while out.count < count {
                s &+= 0x9E37_79B9_7F4A_7C15
                var z = s
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                withUnsafeBytes(of: z) { out += $0 }
            }
            return Array(out.prefix(count))
        }
    }
}
