import CTAP
import FIDOCrypto

/// How a makeCredential / getAssertion request authorises itself with a pinUvAuthToken
/// (CTAP 2.1 §6.1.2 steps 1, 2, 11 and §6.2.2 steps 1, 2, 6).
extension Authenticator {
    /// Step 1: a zero-length pinUvAuthParam is the "touch to select" probe. Collect presence,
    /// then answer CTAP2_ERR_PIN_INVALID if a PIN is set, CTAP2_ERR_PIN_NOT_SET if not.
    func answerTouchProbe(ifAskedBy pinUvAuthParam: [UInt8]?, rpID: String, context: RequestContext) throws(CTAP2StatusCode) {
        guard let pinUvAuthParam, pinUvAuthParam.isEmpty else { return }
        try collectPresence(.touchProbe, rpID: rpID, context: context)
        throw try isPINSet() ? .pinInvalid : .pinNotSet
    }

    /// Step 2: the protocol a pinUvAuthParam was computed with (missing →
    /// CTAP2_ERR_MISSING_PARAMETER, unsupported → CTAP1_ERR_INVALID_PARAMETER); nil without one.
    func requestedPinUvAuthProtocol(for pinUvAuthParam: [UInt8]?, requested: UInt64?) throws(CTAP2StatusCode) -> PinUvAuthProtocol? {
        guard pinUvAuthParam != nil else { return nil }
        return try supportedPinUvAuthProtocol(requested)
    }

    /// Step 11 / 6: verify the pinUvAuthParam over clientDataHash with the current token and
    /// check its permission and RP binding. Returns whether user verification was done
    /// (always true on success: a token proves the PIN).
    func authorize(_ pinUvAuthParam: [UInt8]?, pinUvAuthProtocol: PinUvAuthProtocol?, clientDataHash: [UInt8],
                   permission: PinUvAuthPermissions, rpID: String) throws(CTAP2StatusCode) -> Bool {
        guard let pinUvAuthParam, let pinUvAuthProtocol else { return false }
        // No PIN and no built-in UV, so no token could exist: say so rather than "wrong MAC".
        guard try isProtectedByUserVerification() else { throw .pinNotSet }
        try pinUvAuth.authorize(pinUvAuthParam, pinUvAuthProtocol: pinUvAuthProtocol, clientDataHash: clientDataHash,
                                permission: permission, rpID: rpID, now: clock.monotonicNanoseconds())
        return true
    }
}

/// How credentialManagement, largeBlobs and config authorise themselves with a pinUvAuthToken.
extension Authenticator {
    /// A pinUvAuthParam over `message` (missing → CTAP2_ERR_PUAT_REQUIRED) with a supported
    /// protocol (missing → CTAP2_ERR_MISSING_PARAMETER, unsupported → CTAP1_ERR_INVALID_PARAMETER),
    /// verified with the current token, which must carry `permission`
    /// (else CTAP2_ERR_PIN_AUTH_INVALID). Returns the token's grant for RP checks.
    func authorizeCommand(pinUvAuthParam: [UInt8]?, pinUvAuthProtocol: UInt64?, message: [UInt8],
                          permission: PinUvAuthPermissions) throws(CTAP2StatusCode) -> PinUvAuthTokenState.Grant {
        guard let pinUvAuthParam else { throw .puatRequired }
        let pinUvAuthProtocol = try PinUvAuthProtocol(requested: pinUvAuthProtocol)
        return try pinUvAuth.authorizeCommand(pinUvAuthParam, pinUvAuthProtocol: pinUvAuthProtocol, message: message,
                                              permission: permission, now: clock.monotonicNanoseconds())
    }
}
