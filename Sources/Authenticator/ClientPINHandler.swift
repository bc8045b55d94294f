import CBOR
import CTAP
import FIDOCrypto

extension Authenticator {
    /// authenticatorClientPIN (0x06), CTAP 2.1 §6.5.5.
    func clientPIN(_ request: ClientPINRequest, context: RequestContext) throws(CTAP2StatusCode) -> ClientPINResponse? {
        guard let subcommand = request.subcommand else { throw .invalidSubcommand }
        // A CTAP 2.0 key has subcommands 0x01–0x05 only.
        if configuration.protocolLevel == .ctap20, subcommand.rawValue > ClientPINSubcommand.getPinToken.rawValue {
            throw .invalidSubcommand
        }
        switch subcommand {
        case .getPINRetries: return try getPINRetries()
        case .getKeyAgreement: return try getKeyAgreement(request)
        case .setPIN:
            try setPIN(request)
            return nil
        case .changePIN:
            try changePIN(request)
            return nil
        case .getPinToken: return try getPinToken(request)
        case .getPinUvAuthTokenUsingPinWithPermissions:
            return try getPinUvAuthTokenUsingPinWithPermissions(request)
        // Built-in UV (BuiltInUserVerification.swift): without it these do not exist on this
        // key (getInfo has no "uv" option), CTAP2_ERR_INVALID_SUBCOMMAND.
        case .getPinUvAuthTokenUsingUvWithPermissions:
            return try getPinUvAuthTokenUsingUvWithPermissions(request, context: context)
        case .getUVRetries: return try getUVRetries()
        }
    }

    /// getPINRetries (0x01), §6.5.5.2: pinRetries and powerCycleState.
    /// Without a PIN there are no retries to count: CTAP2_ERR_PIN_NOT_SET, as a YubiKey 5 answers
    /// (and python-fido2's device suite expects after a reset); the spec's text names no case.
    func getPINRetries() throws(CTAP2StatusCode) -> ClientPINResponse {
        guard let retries = try loadPINState()?.retries else { throw .pinNotSet }
        // powerCycleState (0x04) is CTAP 2.1.
        return ClientPINResponse(pinRetries: retries, powerCycleState: configuration.protocolLevel == .ctap20
            ? nil : pinUvAuth.isBlockedUntilPowerCycle)
    }

    /// getKeyAgreement (0x02), §6.5.5.4: the authenticator's key for the chosen protocol.
    func getKeyAgreement(_ request: ClientPINRequest) throws(CTAP2StatusCode) -> ClientPINResponse {
        let pinUvAuthProtocol = try supportedPinUvAuthProtocol(request.pinUvAuthProtocol)
        let publicKey = try pinUvAuth.keyAgreementKey(for: pinUvAuthProtocol).publicKey
        // COSE_Key {1: 2 (EC2), 3: -25 (ECDH-ES+HKDF-256), -1: 1 (P-256), -2: x, -3: y}.
        return ClientPINResponse(keyAgreement: .ec2P256(algorithm: .ecdhESHKDF256, x: publicKey.x, y: publicKey.y))
    }

    /// setPIN (0x03), §6.5.5.5.
    func setPIN(_ request: ClientPINRequest) throws(CTAP2StatusCode) {
        // Step 1: mandatory parameters.
        guard request.pinUvAuthProtocol != nil, let keyAgreement = request.keyAgreement,
              let pinUvAuthParam = request.pinUvAuthParam, let newPinEnc = request.newPinEnc else {
            throw .missingParameter
        }
        // Step 2.
        let pinUvAuthProtocol = try supportedPinUvAuthProtocol(request.pinUvAuthProtocol)
        // Step 3: "If a PIN has already been set, authenticator returns CTAP2_ERR_PIN_AUTH_INVALID".
        if try loadPINState()?.pinHash != nil { throw .pinAuthInvalid }
        // Step 4: decapsulate, else CTAP1_ERR_INVALID_PARAMETER.
        let sharedSecret = try pinUvAuthProtocol.decapsulate(keyAgreement, with: try pinUvAuth.keyAgreementKey(for: pinUvAuthProtocol))
        // Step 5: verify(shared secret, newPinEnc, pinUvAuthParam).
        guard sharedSecret.verify(newPinEnc, signature: pinUvAuthParam) else { throw .pinAuthInvalid }
        // Steps 6–11.
        let newPIN = try decryptNewPIN(newPinEnc, sharedSecret: sharedSecret)
        // Step 12: store the hash, retries to the maximum.
        try savePINState(PINState(pinHash: newPIN.hash, pinCodePoints: newPIN.codePoints,
                                  retries: PINPolicy.maxRetries, forcePINChange: false))
    }

    /// changePIN (0x04), §6.5.5.6.
    func changePIN(_ request: ClientPINRequest) throws(CTAP2StatusCode) {
        // Step 1: mandatory parameters.
        guard request.pinUvAuthProtocol != nil, let keyAgreement = request.keyAgreement,
              let pinUvAuthParam = request.pinUvAuthParam, let newPinEnc = request.newPinEnc,
              let pinHashEnc = request.pinHashEnc else {
            throw .missingParameter
        }
        // Step 2.
        let pinUvAuthProtocol = try supportedPinUvAuthProtocol(request.pinUvAuthProtocol)
        // Step 3 (pinRetries 0 → PIN_BLOCKED) and the power-cycle block.
        var state = try pinStateForVerification()
        // Step 4.
        let sharedSecret = try pinUvAuthProtocol.decapsulate(keyAgreement, with: try pinUvAuth.keyAgreementKey(for: pinUvAuthProtocol))
        // Step 5: verify(shared secret, newPinEnc ‖ pinHashEnc, pinUvAuthParam).
        guard sharedSecret.verify(newPinEnc + pinHashEnc, signature: pinUvAuthParam) else { throw .pinAuthInvalid }
        // Steps 6–8.
        try verifyPINHash(pinHashEnc, sharedSecret: sharedSecret, state: &state)
        // Steps 9–12, 14–15.
        let newPIN = try decryptNewPIN(newPinEnc, sharedSecret: sharedSecret)
        // Step 13: a forced change must change the PIN.
        if state.forcePINChange, let current = state.pinHash, constantTimeEquals(current, newPIN.hash) {
            throw .pinPolicyViolation
        }
        // Step 20 (CTAP 2.2): resetPersistentPinUvAuthToken() — pcmr is cleared on a PIN change.
        // Done first, durably: a crash between the two writes must not leave the old persistent
        // token working under the new PIN (the spec's order has no such window to care about).
        try resetPersistentToken()
        // Steps 16–18.
        try savePINState(PINState(pinHash: newPIN.hash, pinCodePoints: newPIN.codePoints,
                                  retries: PINPolicy.maxRetries, forcePINChange: false))
        // Step 19: resetPinUvAuthToken() for all protocols — existing tokens die with the old PIN.
        pinUvAuth.resetTokens()
    }

    /// getPinToken (0x05), §6.5.5.7.1 (superseded, but CTAP 2.0 platforms use it): a token with
    /// the default permissions mc and ga, not bound to an RP until first use.
    func getPinToken(_ request: ClientPINRequest) throws(CTAP2StatusCode) -> ClientPINResponse {
        // Step 1.
        guard request.pinUvAuthProtocol != nil, let keyAgreement = request.keyAgreement,
              let pinHashEnc = request.pinHashEnc else {
            throw .missingParameter
        }
        // Step 2.
        let pinUvAuthProtocol = try supportedPinUvAuthProtocol(request.pinUvAuthProtocol)
        // Steps 3–4: permissions and rpId belong to subcommand 0x09.
        if request.permissions != nil || request.rpID != nil { throw .invalidParameter }
        // Steps 5–10.
        let sharedSecret = try verifyPINForToken(keyAgreement: keyAgreement, pinHashEnc: pinHashEnc,
                                                 pinUvAuthProtocol: pinUvAuthProtocol,
                                                 forcedChangeError: .pinInvalid)
        // Steps 12–15.
        return try issueToken(permissions: .legacyDefault, rpID: nil, sharedSecret: sharedSecret)
    }

    /// getPinUvAuthTokenUsingPinWithPermissions (0x09), §6.5.5.7.2.
    func getPinUvAuthTokenUsingPinWithPermissions(_ request: ClientPINRequest) throws(CTAP2StatusCode) -> ClientPINResponse {
        let (keyAgreement, pinUvAuthProtocol, requested) = try tokenRequest(request, needsPinHashEnc: true,
                                                                            grantable: try grantablePermissions())
        // Steps 5–11.
        let sharedSecret = try verifyPINForToken(keyAgreement: keyAgreement, pinHashEnc: request.pinHashEnc ?? [],
                                                 pinUvAuthProtocol: pinUvAuthProtocol,
                                                 forcedChangeError: .pinPolicyViolation)
        // Step 12 (CTAP 2.2): pcmr alone → the persistentPinUvAuthToken; the ordinary token stays.
        if requested == .persistentCredentialManagementReadOnly {
            return try issuePersistentToken(sharedSecret: sharedSecret)
        }
        // Steps 13–17.
        return try issueToken(permissions: requested, rpID: request.rpID, sharedSecret: sharedSecret)
    }

    /// Steps 1–4 of both getPinUvAuthTokenUsing…WithPermissions subcommands (0x09 by PIN, 0x06
    /// by built-in UV): the key agreement, the protocol and the permissions asked for.
    func tokenRequest(_ request: ClientPINRequest, needsPinHashEnc: Bool, grantable: PinUvAuthPermissions)
        throws(CTAP2StatusCode) -> (keyAgreement: CBORValue, pinUvAuthProtocol: PinUvAuthProtocol, permissions: PinUvAuthPermissions) {
        // Step 1: mandatory parameters; rpId is mandatory with mc or ga (a token for those
        // operations is always bound to one RP).
        guard request.pinUvAuthProtocol != nil, let keyAgreement = request.keyAgreement,
              !needsPinHashEnc || request.pinHashEnc != nil, let rawPermissions = request.permissions else {
            throw .missingParameter
        }
        let permissions = PinUvAuthPermissions(rawValue: rawPermissions)
        if !permissions.isDisjoint(with: .requiringRPID), request.rpID == nil { throw .missingParameter }
        // Step 2.
        let pinUvAuthProtocol = try supportedPinUvAuthProtocol(request.pinUvAuthProtocol)
        // Step 3: permissions 0.
        guard rawPermissions != 0 else { throw .invalidParameter }
        // Step 4: a permission for a feature getInfo does not offer is unauthorized; undefined
        // permission bits are ignored.
        let requested = permissions.intersection(.defined)
        guard grantable.isSuperset(of: requested) else { throw .unauthorizedPermission }
        // CTAP 2.2 §6.5.5.7.2 step 4: "pcmr: perCredMgmtRO is false or absent, or any other
        // pinUvAuthToken permission is requested" → CTAP2_ERR_UNAUTHORIZED_PERMISSION.
        if requested.contains(.persistentCredentialManagementReadOnly), requested != .persistentCredentialManagementReadOnly {
            throw .unauthorizedPermission
        }
        return (keyAgreement, pinUvAuthProtocol, requested)
    }

    /// The permissions a token may carry: mc and ga always; the others only for features getInfo
    /// offers (§6.5.5.7.2 step 4: cm needs credMgmt, be bioEnroll, lbw largeBlobs, acfg authnrCfg,
    /// and in CTAP 2.2 pcmr perCredMgmtRO).
    func grantablePermissions() throws(CTAP2StatusCode) -> PinUvAuthPermissions {
        let options = try infoOptions()
        var grantable: PinUvAuthPermissions = [.makeCredential, .getAssertion]
        if options["credMgmt"] == true { grantable.insert(.credentialManagement) }
        if options["bioEnroll"] != nil { grantable.insert(.bioEnrollment) }
        if options["largeBlobs"] == true { grantable.insert(.largeBlobWrite) }
        if options["authnrCfg"] == true { grantable.insert(.authenticatorConfiguration) }
        if options["perCredMgmtRO"] == true { grantable.insert(.persistentCredentialManagementReadOnly) }
        return grantable
    }

    // MARK: - Steps shared by the subcommands

    /// The stored PIN state when a PIN attempt may be made: a PIN is set (else
    /// CTAP2_ERR_PIN_NOT_SET), retries remain (else CTAP2_ERR_PIN_BLOCKED, which only reset
    /// lifts) and no power cycle is pending (else CTAP2_ERR_PIN_AUTH_BLOCKED).
    func pinStateForVerification() throws(CTAP2StatusCode) -> PINState {
        guard let state = try loadPINState(), state.pinHash != nil else { throw .pinNotSet }
        guard state.retries > 0 else { throw .pinBlocked }
        guard !pinUvAuth.isBlockedUntilPowerCycle else { throw .pinAuthBlocked }
        return state
    }

    /// Check pinHashEnc against the stored PIN (§6.5.5.6 steps 6–8, §6.5.5.7.x steps 8–10).
    func verifyPINHash(_ pinHashEnc: [UInt8], sharedSecret: PinUvAuthSharedSecret, state: inout PINState) throws(CTAP2StatusCode) {
        // CTAP 2.1 clientPIN: retries are decremented and persisted before the comparison, so
        // cutting power mid-attempt cannot yield a free guess.
        state.retries -= 1
        try savePINState(state)
        var decrypted = sharedSecret.decrypt(pinHashEnc)
        defer { decrypted?.wipe() }
        guard let storedHash = state.pinHash, let decrypted, constantTimeEquals(storedHash, decrypted) else {
            // A decryption error counts as a mismatch.
            pinUvAuth.recordMismatch(sharedSecret.pinUvAuthProtocol)
            if state.retries == 0 { throw .pinBlocked }
            if pinUvAuth.isBlockedUntilPowerCycle { throw .pinAuthBlocked }
            throw .pinInvalid
        }
        pinUvAuth.recordMatch()
        state.retries = PINPolicy.maxRetries
        try savePINState(state)
        try restoreUVRetriesAfterPIN()
    }

    /// §6.5.5.7.x steps 5–11: checks, decapsulate, PIN verification and the forcePINChange
    /// refusal (getPinToken answers PIN_INVALID, the 2.1 subcommand PIN_POLICY_VIOLATION).
    private func verifyPINForToken(keyAgreement: CBORValue, pinHashEnc: [UInt8], pinUvAuthProtocol: PinUvAuthProtocol,
                                   forcedChangeError: CTAP2StatusCode) throws(CTAP2StatusCode) -> PinUvAuthSharedSecret {
        var state = try pinStateForVerification()
        let sharedSecret = try pinUvAuthProtocol.decapsulate(keyAgreement, with: try pinUvAuth.keyAgreementKey(for: pinUvAuthProtocol))
        try verifyPINHash(pinHashEnc, sharedSecret: sharedSecret, state: &state)
        if state.forcePINChange { throw forcedChangeError }
        return sharedSecret
    }

    /// A fresh token for all protocols, in use with `permissions`, returned encrypted to the
    /// platform: encrypt(shared secret, pinUvAuthToken).
    func issueToken(permissions: PinUvAuthPermissions, rpID: String?,
                            sharedSecret: PinUvAuthSharedSecret) throws(CTAP2StatusCode) -> ClientPINResponse {
        pinUvAuth.issueToken(permissions: permissions, rpID: rpID, now: clock.monotonicNanoseconds())
        var token = pinUvAuth.token(for: sharedSecret.pinUvAuthProtocol).copyBytes()
        defer { token.wipe() }
        return ClientPINResponse(pinUvAuthToken: try sharedSecret.encrypt(token, random: random))
    }

    /// newPinEnc → the PIN's stored hash and its length in code points (§6.5.5.5 steps 6–11).
    private func decryptNewPIN(_ newPinEnc: [UInt8], sharedSecret: PinUvAuthSharedSecret) throws(CTAP2StatusCode) -> (hash: SecretBytes, codePoints: Int) {
        guard var paddedNewPin = sharedSecret.decrypt(newPinEnc) else { throw .pinAuthInvalid }
        defer { paddedNewPin.wipe() }
        // "If paddedNewPin is NOT 64 bytes long, it returns CTAP1_ERR_INVALID_PARAMETER."
        guard paddedNewPin.count == PINPolicy.paddedLength else { throw .invalidParameter }
        // The PIN is what precedes the first 0x00 of the padding.
        let length = paddedNewPin.firstIndex(of: 0) ?? paddedNewPin.count
        let pinBytes = paddedNewPin[..<length]
        // §6.5.1: at most 63 bytes (a 64-byte block without any 0x00 is not a padded PIN).
        guard pinBytes.count <= PINPolicy.maxByteLength else { throw .pinPolicyViolation }
        // At least minPINLength code points of valid UTF-8.
        guard let codePoints = PINText.codePointCount(ofUTF8: pinBytes) else { throw .pinPolicyViolation }
        guard codePoints >= (try minPINLength()) else { throw .pinPolicyViolation }
        var digest = SHA256.hash(pinBytes)
        defer { digest.wipe() }
        return (SecretBytes(digest[..<16]), codePoints)
    }

    // MARK: - Persistent state

    /// The current minimum PIN length in code points (see `PINPolicy.minLengthSetting`).
    func minPINLength() throws(CTAP2StatusCode) -> Int {
        let setting = try withStore { store throws(StoreError) in try store.loadSetting(PINPolicy.minLengthSetting) }
        guard let setting, setting.count == 1 else { return PINPolicy.defaultMinLength }
        return min(max(Int(setting[0]), PINPolicy.defaultMinLength), PINPolicy.maxByteLength)
    }

    func loadPINState() throws(CTAP2StatusCode) -> PINState? {
        try withStore { store throws(StoreError) in try store.loadPINState() }
    }

    func savePINState(_ state: PINState) throws(CTAP2StatusCode) {
        try withStore { store throws(StoreError) in try store.savePINState(state) }
    }

    /// Whether the key is protected by a PIN (getInfo clientPin).
    func isPINSet() throws(CTAP2StatusCode) -> Bool {
        try loadPINState()?.pinHash != nil
    }
}
