import CTAP
import FIDOCrypto

/// The volatile half of clientPIN (CTAP 2.1 §6.5): per-protocol key-agreement keys and
/// pinUvAuthTokens, the token's state, and the consecutive-mismatch count. All of it is
/// regenerated at power-up; the persistent half (PIN hash, retries, forcePINChange) is the
/// store's `PINState`.
struct ClientPIN {
    /// CTAP 2.1 §6.5.5.7: 3 consecutive mismatches → CTAP2_ERR_PIN_AUTH_BLOCKED until power cycle.
    static let maxConsecutiveMismatches = 3

    /// Generated lazily after each power-up or regeneration (key generation can fail only if
    /// libcrypto does, and then the subcommand that needs the key answers CTAP1_ERR_OTHER).
    private var keyAgreementKeys: [PinUvAuthProtocol: P256.KeyAgreement.PrivateKey] = [:]
    private var tokens: [PinUvAuthProtocol: SecretBytes] = [:]
    private(set) var tokenState: PinUvAuthTokenState
    private(set) var consecutiveMismatches = 0

    init(initialUsageTimeLimit: UInt64, maxUsageTimePeriod: UInt64) {
        tokenState = PinUvAuthTokenState(initialUsageTimeLimit: initialUsageTimeLimit,
                                         maxUsageTimePeriod: maxUsageTimePeriod)
        powerUp()
    }

    /// initialize() of every protocol (CTAP 2.1 §6.5.4): fresh key-agreement keys and tokens,
    /// no token in use, the mismatch count back to zero.
    mutating func powerUp() {
        for pinUvAuthProtocol in PinUvAuthProtocol.allCases { regenerate(pinUvAuthProtocol) }
        resetTokens()
        consecutiveMismatches = 0
    }

    /// Whether PIN attempts wait for a power cycle (getPINRetries' powerCycleState).
    var isBlockedUntilPowerCycle: Bool { consecutiveMismatches >= Self.maxConsecutiveMismatches }

    /// getPublicKey()'s key for `pinUvAuthProtocol`.
    mutating func keyAgreementKey(for pinUvAuthProtocol: PinUvAuthProtocol) throws(CTAP2StatusCode) -> P256.KeyAgreement.PrivateKey {
        if let key = keyAgreementKeys[pinUvAuthProtocol] { return key }
        guard let key = try? P256.KeyAgreement.PrivateKey() else { throw .other }
        keyAgreementKeys[pinUvAuthProtocol] = key
        return key
    }

    /// regenerate(): a new key-agreement key for one protocol.
    mutating func regenerate(_ pinUvAuthProtocol: PinUvAuthProtocol) {
        keyAgreementKeys[pinUvAuthProtocol] = try? P256.KeyAgreement.PrivateKey()
    }

    /// resetPinUvAuthToken() for all protocols: every token handed out so far is worthless.
    mutating func resetTokens() {
        for pinUvAuthProtocol in PinUvAuthProtocol.allCases { tokens[pinUvAuthProtocol] = SecretBytes(randomCount: 32) }
        tokenState.stop()
    }

    /// The current pinUvAuthToken of one protocol.
    func token(for pinUvAuthProtocol: PinUvAuthProtocol) -> SecretBytes {
        // Both protocols always have a token after `resetTokens()`.
        tokens[pinUvAuthProtocol]!
    }

    /// CTAP 2.1 §6.5.5.7 step 9.1: a mismatch regenerates that protocol's key-agreement key
    /// and counts towards the power-cycle block.
    mutating func recordMismatch(_ pinUvAuthProtocol: PinUvAuthProtocol) {
        regenerate(pinUvAuthProtocol)
        consecutiveMismatches += 1
    }

    mutating func recordMatch() { consecutiveMismatches = 0 }

    /// Issue a fresh token: resetPinUvAuthToken() for all protocols, then
    /// beginUsingPinUvAuthToken(userIsPresent: false) with the granted permissions.
    mutating func issueToken(permissions: PinUvAuthPermissions, rpID: String?, now: UInt64) {
        resetTokens()
        tokenState.begin(permissions: permissions, rpID: rpID, userIsPresent: false, now: now)
    }

    /// The pinUvAuthParam checks of makeCredential (CTAP 2.1 §6.1.2 step 11) and getAssertion
    /// (§6.2.2 step 6). Every failure is CTAP2_ERR_PIN_AUTH_INVALID: the MAC, a token not in use
    /// (expired, reset, never issued), a missing permission, a token bound to another RP, or a
    /// token whose user-verified flag was cleared. On success an unbound token is bound to
    /// `rpID`.
    mutating func authorize(_ pinUvAuthParam: [UInt8], pinUvAuthProtocol: PinUvAuthProtocol, clientDataHash: [UInt8],
                            permission: PinUvAuthPermissions, rpID: String, now: UInt64) throws(CTAP2StatusCode) {
        guard let grant = tokenState.grant(now: now),
              pinUvAuthProtocol.verify(key: token(for: pinUvAuthProtocol), message: clientDataHash,
                                       signature: pinUvAuthParam) else {
            throw .pinAuthInvalid
        }
        guard grant.permissions.contains(permission) else { throw .pinAuthInvalid }
        if let boundRPID = grant.rpID, !boundRPID.utf8.elementsEqual(rpID.utf8) { throw .pinAuthInvalid }
        guard grant.isUserVerified else { throw .pinAuthInvalid }
        tokenState.markUsed(bindingTo: rpID)
    }

    /// The pinUvAuthParam checks of the commands that authenticate their own message rather
    /// than a clientDataHash: credentialManagement (CTAP 2.1 §6.8), largeBlobs set (§6.10.2)
    /// and config (§6.11). A token not in use or a wrong MAC, and a token without `permission`,
    /// are CTAP2_ERR_PIN_AUTH_INVALID. The token's user-verified flag is not consulted: these
    /// commands only ask for the permission (lbw deliberately outlives the flag, §6.1.2 step 14).
    /// A use does not bind the token; the grant (with any permissions RP ID) is returned for the
    /// caller's RP checks.
    mutating func authorizeCommand(_ pinUvAuthParam: [UInt8], pinUvAuthProtocol: PinUvAuthProtocol, message: [UInt8],
                                   permission: PinUvAuthPermissions, now: UInt64) throws(CTAP2StatusCode) -> PinUvAuthTokenState.Grant {
        guard let grant = tokenState.grant(now: now),
              pinUvAuthProtocol.verify(key: token(for: pinUvAuthProtocol), message: message,
                                       signature: pinUvAuthParam) else {
            throw .pinAuthInvalid
        }
        guard grant.permissions.contains(permission) else { throw .pinAuthInvalid }
        tokenState.markUsed(bindingTo: nil)
        return grant
    }

    /// After makeCredential / getAssertion collected user presence (CTAP 2.1 §6.1.2 step 14,
    /// §6.2.2 step 9): clear the UP/UV flags and every permission but lbw.
    mutating func userPresenceWasCollected() {
        tokenState.consumeAfterPresence()
    }
}
