import CBOR
import CTAP

extension Authenticator {
    /// authenticatorConfig (0x0D), CTAP 2.1 §6.11.
    func authenticatorConfig(_ request: AuthenticatorConfigRequest) throws(CTAP2StatusCode) {
        // vendorPrototype: getInfo lists no vendorPrototypeConfigCommands, so there is none to run.
        guard let subcommand = request.subcommand, subcommand != .vendorPrototype else { throw .invalidSubcommand }
        // Parameters are decoded before the token is used, so a malformed request does not use it.
        let minPINLengthParameters = subcommand == .setMinPINLength
            ? try SetMinPINLengthParameters(cbor: request.subCommandParams) : nil

        // §6.11 step 4: with a PIN set — or with alwaysUv on, for everything but turning it
        // off — pinUvAuthParam = authenticate(token, 32×0xff ‖ 0x0d ‖ subCommand ‖
        // CBOR(subCommandParams)) with the acfg permission. Without either, config is open
        // (there is no way to verify the user yet).
        let alwaysUv = try isAlwaysUvEnabled()
        if try isPINSet() || (alwaysUv && subcommand != .toggleAlwaysUv) {
            _ = try authorizeCommand(pinUvAuthParam: request.pinUvAuthParam, pinUvAuthProtocol: request.pinUvAuthProtocol,
                                     message: request.authenticatedMessage, permission: .authenticatorConfiguration)
        }

        switch subcommand {
        case .enableEnterpriseAttestation:
            // §6.11.1 (EnterpriseAttestation.swift).
            try enableEnterpriseAttestation()
        case .toggleAlwaysUv:
            // §6.11.2.
            try saveSetting(AuthenticatorSetting.alwaysUv, value: alwaysUv ? nil : [0x01])
        case .setMinPINLength:
            try setMinPINLength(minPINLengthParameters ?? SetMinPINLengthParameters())
        case .vendorPrototype:
            throw .invalidSubcommand
        }
    }

    /// setMinPINLength (0x03), §6.11.4.
    private func setMinPINLength(_ parameters: SetMinPINLengthParameters) throws(CTAP2StatusCode) {
        let current = try minPINLength()
        let requested = parameters.newMinPINLength ?? UInt64(current)
        // The minimum only ever rises (reset lowers it); one above the longest PIN could never be met.
        guard requested >= UInt64(current), requested <= UInt64(PINPolicy.maxByteLength) else { throw .pinPolicyViolation }
        let newMinimum = Int(requested)
        // Storage for the RP IDs allowed to read the minimum through the minPinLength extension.
        if let rpIDs = parameters.minPinLengthRPIDs, rpIDs.count > configuration.maxRPIDsForSetMinPINLength {
            throw .keyStoreFull
        }
        var pinState = try loadPINState()
        let isPINSet = pinState?.pinHash != nil
        // forceChangePin needs a PIN to change.
        if parameters.forceChangePin == true && !isPINSet { throw .pinNotSet }
        // The current PIN must change when asked, or when it is now shorter than the minimum.
        let forceChange = parameters.forceChangePin == true || (isPINSet && (pinState?.pinCodePoints ?? 0) < newMinimum)

        // Persist in the safe order: a crash between writes never leaves a PIN that must
        // change unmarked.
        if forceChange, var state = pinState {
            // The persistent token first: it must not outlive the PIN it was issued under.
            try resetPersistentToken()
            state.forcePINChange = true
            try savePINState(state)
            pinState = state
            // The PIN may no longer be used as it is: tokens issued under it end too, the
            // persistent one included (as a YubiKey 5.8 drops it when a policy forces a change).
            pinUvAuth.resetTokens()
        }
        if let rpIDs = parameters.minPinLengthRPIDs {
            try saveSetting(AuthenticatorSetting.minPinLengthRPIDs,
                            value: rpIDs.isEmpty ? nil : CBORValue.array(rpIDs.map { .textString($0) }).encoded())
        }
        if newMinimum != current {
            try saveSetting(PINPolicy.minLengthSetting, value: [UInt8(newMinimum)])
        }
    }
}
