import Authenticator
import SystemIO

/// `--uv auto`: every user verification succeeds without asking. For test rigs (headless
/// browsers creating passkeys); `latchkey serve` says so in its log at start. The modality it
/// reports is an external passcode: the closest registry value for "the host vouched".
public struct AutoVerification: UserVerification {
    let logger: Logger
    public var modality: UInt32 { UserVerificationMethod.passcodeExternal }
    public init(logger: Logger) { self.logger = logger }
    public func verifyUser(_ request: VerificationRequest, cancellation: CancellationFlag) -> VerificationResult {
        if cancellation.isCancelled { return .cancelled }
        logger.debug("user verification auto-approved: \(request.purpose.rawValue)")
        return .verified
    }
}

/// `--uv deny`: every attempt fails, as a wrong finger would, so uvRetries count down to
/// CTAP2_ERR_UV_BLOCKED (tests of the retry, lockout and PIN-fallback paths).
public struct DenyVerification: UserVerification {
    let logger: Logger
    public var modality: UInt32 { UserVerificationMethod.passcodeExternal }
    public init(logger: Logger) { self.logger = logger }
    public func verifyUser(_ request: VerificationRequest, cancellation: CancellationFlag) -> VerificationResult {
        if cancellation.isCancelled { return .cancelled }
        logger.debug("user verification failed by policy: \(request.purpose.rawValue)")
        return .notVerified
    }
}
