import Authenticator
import Synchronization
import KeyService
import Presence
import SystemIO

/// A rig key's presence: WebDriver's `isUserConsenting` answered at once while
/// `automaticPresenceSimulation` is on, else a wait for the rig's `answerPresence` (a
/// `ControlPresence`, with its targets and timeouts). Both settings change at run time
/// (`setUserConsenting`, `setAutomaticPresenceSimulation`). Every check is announced first
/// (`presenceRequested`).
///
/// It never claims to answer immediately, even while automatic: the setting may change between
/// requests, and the key's loop must not run a request itself that may then wait (KeyRunner).
final class RigPresence: UserPresence, @unchecked Sendable {
    let automatic: Atomic<Bool>
    let consenting: Atomic<Bool>
    let control: ControlPresence
    private let announce: @Sendable (PresenceRequest) -> Void

    init(automatic: Bool, consenting: Bool, logger: Logger, announce: @escaping @Sendable (PresenceRequest) -> Void) {
        self.automatic = Atomic(automatic)
        self.consenting = Atomic(consenting)
        self.control = ControlPresence(logger: logger, answerHint: "the rig's answerPresence")
        self.announce = announce
    }

    /// As `--presence auto`: while presence is simulated and consenting, the only account is
    /// selected on the key (no account chooser in a headless browser).
    var selectsForUser: Bool {
        automatic.load(ordering: .acquiring) && consenting.load(ordering: .acquiring)
    }

    func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult {
        if cancellation.isCancelled { return .cancelled }
        announce(request)
        if automatic.load(ordering: .acquiring) {
            return consenting.load(ordering: .acquiring) ? .approved : .denied
        }
        return control.confirmPresence(request, cancellation: cancellation)
    }
}

/// A rig key's built-in user verification (`hasUserVerification`): WebDriver's
/// `isUserVerified` — true verifies, false fails the attempt as a wrong finger would (uvRetries
/// count down). Changed at run time by `setUserVerified`. With `automaticUserVerification` off,
/// each verification waits for the rig's `answerUserVerification` instead (`VerificationControl`).
/// Announced first (`uvRequested`).
final class RigVerification: UserVerification, @unchecked Sendable {
    let verified: Atomic<Bool>
    let automatic: Atomic<Bool>
    let control = VerificationControl()
    private let announce: @Sendable (VerificationRequest) -> Void

    /// As `--uv auto`: the host vouched, the closest registry value being an external passcode.
    var modality: UInt32 { UserVerificationMethod.passcodeExternal }

    init(verified: Bool, automatic: Bool, announce: @escaping @Sendable (VerificationRequest) -> Void) {
        self.verified = Atomic(verified)
        self.automatic = Atomic(automatic)
        self.announce = announce
    }

    func verifyUser(_ request: VerificationRequest, cancellation: CancellationFlag) -> VerificationResult {
        if cancellation.isCancelled { return .cancelled }
        announce(request)
        guard automatic.load(ordering: .acquiring) else { return control.verify(request, cancellation: cancellation) }
        return verified.load(ordering: .acquiring) ? .verified : .notVerified
    }
}
