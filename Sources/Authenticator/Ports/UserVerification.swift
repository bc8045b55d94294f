/// What the key asks the user-verification method to verify: the operation and, where there is
/// one, its RP.
public struct VerificationRequest: Sendable, Equatable {
    public enum Purpose: String, Sendable {
        /// clientPIN getPinUvAuthTokenUsingUvWithPermissions: a token for later commands.
        case token = "get a token"
        case makeCredential = "register"
        case getAssertion = "sign in"
    }
    public var purpose: Purpose
    public var rpID: String?
    /// The account, where the request names one (makeCredential's user.name).
    public var userName: String?
    public var timeoutMilliseconds: UInt64

    public init(purpose: Purpose, rpID: String? = nil, userName: String? = nil, timeoutMilliseconds: UInt64) {
        self.purpose = purpose; self.rpID = rpID; self.userName = userName; self.timeoutMilliseconds = timeoutMilliseconds
    }
}

/// The method's answer to one attempt.
public enum VerificationResult: Sendable, Equatable {
    /// The user is who enrolled: the key sets UV.
    case verified
    /// A failed attempt (the wrong finger, the wrong password): it counts against uvRetries.
    case notVerified
    /// The user declined (CTAP2_ERR_OPERATION_DENIED); no retry is used.
    case declined
    case timedOut
    case cancelled
}

/// The built-in user-verification port, beside `UserPresence`: what a fingerprint sensor is to
/// a YubiKey Bio. A key without one has no built-in UV (getInfo has no `uv` option). Providers
/// may block and must return `.cancelled` promptly once `cancellation` is set.
public protocol UserVerification: Sendable {
    func verifyUser(_ request: VerificationRequest, cancellation: CancellationFlag) -> VerificationResult
    /// getInfo uvModality (0x12): the FIDO registry's USER_VERIFY_* bits of this method.
    var modality: UInt32 { get }
}

/// FIDO Registry of Predefined Values §3.1, user verification methods (the bits of uvModality).
public enum UserVerificationMethod {
    public static let presenceInternal: UInt32 = 0x0000_0001
    public static let fingerprintInternal: UInt32 = 0x0000_0002
    public static let passcodeInternal: UInt32 = 0x0000_0004
    public static let none: UInt32 = 0x0000_0200
    public static let passcodeExternal: UInt32 = 0x0000_0800
}
