import CTAP

/// Built-in user verification (CTAP 2.1 §6.5.2.3, §6.5.5.7.3): the `UserVerification` port's
/// attempts, counted in uvRetries. The count persists (a store setting, so reset restores the
/// maximum) and is spent before each attempt, as PIN retries are, so that cutting power
/// mid-attempt gives no free try; an attempt that was not a failed match gives it back.
enum BuiltInUV {
    /// maxUvRetries (spec: 1 to 25). 3, as a YubiKey Bio counts fingerprint attempts.
    static let maxRetries = 3
    /// getInfo preferredPlatformUvAttempts (0x11): the platform may call 0x06 up to this many
    /// times, and each call is one attempt (no internal retry), as on a YubiKey Bio.
    static let preferredPlatformAttempts = 3
    /// The store setting holding uvRetries: one byte; absent means the maximum.
    static let retriesSetting = "uvRetries"
}

/// How one built-in UV attempt ended, for the caller's own error mapping.
enum BuiltInUVOutcome {
    case verified
    /// A failed match, with retries left.
    case failed
    case blocked
    case declined
    case timedOut
    case cancelled
}

extension Authenticator {
    /// Whether the key is "protected by some form of user verification" (CTAP 2.1 §6.1.2
    /// steps 6–8): a PIN is set or built-in UV is configured.
    func isProtectedByUserVerification() throws(CTAP2StatusCode) -> Bool {
        if userVerification != nil { return true }
        return try isPINSet()
    }

    /// A command that needs user verification came without (§6.1.2 steps 6–8): a PIN could
    /// give a token, CTAP2_ERR_PUAT_REQUIRED; a key with only built-in UV wanted the `uv`
    /// option, CTAP2_ERR_OPERATION_DENIED.
    func missingUVError() throws(CTAP2StatusCode) -> CTAP2StatusCode {
        if userVerification == nil { return .puatRequired }
        return try isPINSet() ? .puatRequired : .operationDenied
    }

    /// uvRetries (clientPIN getUVRetries 0x07).
    func uvRetries() throws(CTAP2StatusCode) -> Int {
        guard let stored = try loadSetting(BuiltInUV.retriesSetting), stored.count == 1 else { return BuiltInUV.maxRetries }
        return min(Int(stored[0]), BuiltInUV.maxRetries)
    }

    func saveUVRetries(_ retries: Int) throws(CTAP2StatusCode) {
        try saveSetting(BuiltInUV.retriesSetting, value: retries == BuiltInUV.maxRetries ? nil : [UInt8(retries)])
    }

    /// A correct PIN restores uvRetries, even when UV was blocked (§6.5.2.3; a YubiKey Bio does).
    func restoreUVRetriesAfterPIN() throws(CTAP2StatusCode) {
        guard userVerification != nil, try uvRetries() != BuiltInUV.maxRetries else { return }
        try saveUVRetries(BuiltInUV.maxRetries)
    }

    /// One attempt of the configured method (performBuiltInUv without internal retries).
    func performBuiltInUV(_ purpose: VerificationRequest.Purpose, rpID: String?, userName: String? = nil,
                          context: RequestContext) throws(CTAP2StatusCode) -> BuiltInUVOutcome {
        guard let userVerification else { throw .invalidOption }
        let before = try uvRetries()
        guard before > 0 else { return .blocked }
        try saveUVRetries(before - 1)
        let request = VerificationRequest(purpose: purpose, rpID: rpID, userName: userName,
                                          timeoutMilliseconds: configuration.presenceTimeoutMilliseconds)
        context.reportStatus(.userPresenceNeeded)
        defer { context.reportStatus(.processing) }
        let result = userVerification.verifyUser(request, cancellation: context.cancellation)
        // Only a failed match keeps the retry spent; success restores them all.
        switch result {
        case .notVerified: return before - 1 == 0 ? .blocked : .failed
        case .verified:
            try saveUVRetries(BuiltInUV.maxRetries)
            return context.cancellation.isCancelled ? .cancelled : .verified
        case .declined:
            try saveUVRetries(before)
            return .declined
        case .timedOut:
            try saveUVRetries(before)
            return .timedOut
        case .cancelled:
            try saveUVRetries(before)
            return .cancelled
        }
    }

    /// makeCredential / getAssertion with the `uv` option and no pinUvAuthParam (§6.1.2 step
    /// 11.2, §6.2.2 step 6.2: the CTAP 2.0 way): the key verifies the user itself. Errors as the
    /// spec orders them: a timeout; with a PIN set, CTAP2_ERR_PUAT_REQUIRED (the platform should
    /// fall back to the PIN); UV blocked, CTAP2_ERR_PIN_BLOCKED; else CTAP2_ERR_OPERATION_DENIED.
    func verifyUserForCommand(_ purpose: VerificationRequest.Purpose, rpID: String, userName: String? = nil,
                              context: RequestContext) throws(CTAP2StatusCode) {
        let outcome = try performBuiltInUV(purpose, rpID: rpID, userName: userName, context: context)
        switch outcome {
        case .verified: return
        case .cancelled: throw .keepaliveCancel
        case .timedOut: throw .userActionTimeout
        case .failed, .blocked, .declined:
            if try isPINSet() { throw .puatRequired }
            if case .blocked = outcome { throw .pinBlocked }
            throw .operationDenied
        }
    }

    /// getUVRetries (0x07), §6.5.5.8.
    func getUVRetries() throws(CTAP2StatusCode) -> ClientPINResponse {
        guard userVerification != nil else { throw .invalidSubcommand }
        return ClientPINResponse(uvRetries: try uvRetries())
    }

    /// getPinUvAuthTokenUsingUvWithPermissions (0x06), §6.5.5.7.3.
    func getPinUvAuthTokenUsingUvWithPermissions(_ request: ClientPINRequest,
                                                 context: RequestContext) throws(CTAP2StatusCode) -> ClientPINResponse {
        // Only a key with built-in UV has this subcommand (getInfo `uv`).
        guard userVerification != nil else { throw .invalidSubcommand }
        // Steps 1–4, as for 0x09; but acfg needs uvAcfg, which this key does not offer
        // (authenticatorConfig stays a PIN matter), and be needs uvBioEnroll (none).
        var grantable = try grantablePermissions()
        grantable.remove(.authenticatorConfiguration)
        grantable.remove(.bioEnrollment)
        let (keyAgreement, pinUvAuthProtocol, requested) = try tokenRequest(request, needsPinHashEnc: false, grantable: grantable)
        // Step 7 (before the key agreement, so a blocked key spends nothing).
        guard try uvRetries() > 0 else { throw .uvBlocked }
        let sharedSecret = try pinUvAuthProtocol.decapsulate(keyAgreement, with: try pinUvAuth.keyAgreementKey(for: pinUvAuthProtocol))
        // Steps 9–10.
        switch try performBuiltInUV(.token, rpID: request.rpID, context: context) {
        case .verified: break
        case .failed: throw .uvInvalid
        case .blocked: throw .uvBlocked
        case .declined: throw .operationDenied
        case .timedOut: throw .userActionTimeout
        case .cancelled: throw .keepaliveCancel
        }
        // Step 11 (CTAP 2.2): pcmr alone → the persistentPinUvAuthToken.
        if requested == .persistentCredentialManagementReadOnly {
            return try issuePersistentToken(sharedSecret: sharedSecret)
        }
        // Steps 12–16: a fresh token; the method gave no evidence of presence, so the token's
        // userPresent flag is false and makeCredential / getAssertion still ask for a touch.
        return try issueToken(permissions: requested, rpID: request.rpID, sharedSecret: sharedSecret)
    }
}
