import CTAP
import FIDOCrypto

extension Authenticator {
    /// authenticatorGetInfo (0x04). Advertises only what works end to end.
    func getInfo() throws(CTAP2StatusCode) -> AuthenticatorInfo {
        if configuration.protocolLevel == .ctap20 { return try ctap20Info() }
        let remaining = try withStore { store throws(StoreError) in
            max(0, store.maxResidentCredentials - (try store.residentCredentialCount()))
        }
        let alwaysUv = try isAlwaysUvEnabled()
        var info = AuthenticatorInfo(
            // U2F (CTAP1) cannot verify the user, so it is off while alwaysUv is on (§6.11.2).
            // FIDO_2_3 (CTAP 2.3, February 2026) beside FIDO_2_1, never FIDO_2_2 (2.2 defined
            // no version string): Chromium reads FIDO_2_0/FIDO_2_1 and skips versions it does not
            // know, so a 2.1 client sees the key it knew (device_response_converter.cc).
            versions: (alwaysUv ? [] : ["U2F_V2"]) + ["FIDO_2_0", "FIDO_2_1", "FIDO_2_3"],
            extensions: configuration.extensionIdentifiers,
            aaguid: secrets.aaguid,
            options: try infoOptions(alwaysUv: alwaysUv),
            maxMsgSize: configuration.maxMessageSize,
            pinUvAuthProtocols: PinUvAuthProtocol.preferenceOrder.map { Int($0.rawValue) },
            maxCredentialCountInList: configuration.maxCredentialCountInList,
            maxCredentialIdLength: configuration.maxCredentialIDLength,
            transports: ["usb"],
            algorithms: configuration.algorithms.map { CredentialParameters(algorithm: $0.rawValue) },
            maxSerializedLargeBlobArray: offersLargeBlobs ? configuration.maxSerializedLargeBlobArray : nil,
            forcePINChange: try loadPINState()?.forcePINChange ?? false,
            minPINLength: try minPINLength(),
            firmwareVersion: configuration.firmwareVersion,
            maxCredBlobLength: configuration.offeredExtensions.contains(.credBlob) ? configuration.maxCredBlobLength : nil,
            maxRPIDsForSetMinPINLength: configuration.maxRPIDsForSetMinPINLength,
            remainingDiscoverableCredentials: configuration.supportsResidentKeys ? remaining : nil,
            // Built-in UV: one attempt per clientPIN 0x06 call, up to 3 calls (as a YubiKey
            // Bio); the modality is the method's own (passcode-internal is never claimed: that
            // would be clientPin).
            preferredPlatformUvAttempts: userVerification.map { _ in BuiltInUV.preferredPlatformAttempts },
            uvModality: userVerification?.modality)
        // CTAP 2.2 §6.4 members the key can fill truthfully (a 2.1 client ignores members it
        // does not know):
        // the attestation formats makeCredential honours in attestationFormatsPreference; reset
        // works on the one transport there is; no PIN rule beyond minPINLength; a PIN is at most
        // 63 bytes, so at most 63 code points (PINPolicy); the config subcommands it answers
        // (0x01 enableEnterpriseAttestation with enterprise attestation, `ep`).
        info.attestationFormats = AttestationStatementFormat.allCases.map(\.rawValue)
        info.transportsForReset = ["usb"]
        info.pinComplexityPolicy = false
        info.maxPINLength = PINPolicy.maxByteLength
        info.authenticatorConfigCommands = [AuthenticatorConfigSubcommand.enableEnterpriseAttestation, .toggleAlwaysUv,
                                            .setMinPINLength].map { Int($0.rawValue) }
        info.encIdentifier = try encryptedIdentifier()
        info.encCredStoreState = try encryptedCredentialStoreState()
        return info
    }

    /// Whether authenticatorLargeBlobs and the `largeBlobs` option are there: with largeBlobKey.
    var offersLargeBlobs: Bool { configuration.offeredExtensions.contains(.largeBlobKey) }

    /// The CTAP 2.0 persona's getInfo (`AuthenticatorConfiguration.ProtocolLevel.ctap20`): the
    /// members CTAP 2.0 defines (0x01–0x08), as such a key reports them.
    func ctap20Info() throws(CTAP2StatusCode) -> AuthenticatorInfo {
        var options = ["rk": configuration.supportsResidentKeys, "up": true, "plat": false, "clientPin": try isPINSet()]
        if userVerification != nil { options["uv"] = true }
        return AuthenticatorInfo(versions: ["U2F_V2", "FIDO_2_0"], extensions: configuration.extensionIdentifiers,
                                 aaguid: secrets.aaguid,
                                 options: options, maxMsgSize: configuration.maxMessageSize,
                                 pinUvAuthProtocols: [Int(PinUvAuthProtocol.one.rawValue)],
                                 maxCredentialCountInList: configuration.maxCredentialCountInList,
                                 maxCredentialIdLength: configuration.maxCredentialIDLength, transports: [], algorithms: [])
    }

    /// The `uv` option on a key without built-in UV: CTAP 2.1 says CTAP2_ERR_INVALID_OPTION,
    /// CTAP 2.0 said CTAP2_ERR_UNSUPPORTED_OPTION.
    var unknownUVOptionError: CTAP2StatusCode {
        configuration.protocolLevel == .ctap20 ? .unsupportedOption : .invalidOption
    }

    /// Whether a CTAP 2.0 key knows this command (CTAP 2.0 §5: 0x01–0x08).
    func knowsCommand(_ command: CTAPCommand) -> Bool {
        // authenticatorLargeBlobs goes with the largeBlobKey extension (`ExtensionSet`).
        if command == .largeBlobs && !offersLargeBlobs { return false }
        guard configuration.protocolLevel == .ctap20 else { return true }
        switch command {
        case .makeCredential, .getAssertion, .getInfo, .clientPIN, .reset, .getNextAssertion: return true
        case .bioEnrollment, .credentialManagement, .credentialManagementPreview, .selection, .largeBlobs, .config: return false
        }
    }

    /// A PIN/UV auth protocol this key speaks (a CTAP 2.0 key: one only); unsupported →
    /// CTAP1_ERR_INVALID_PARAMETER, as for unknown ones.
    func supportedPinUvAuthProtocol(_ requested: UInt64?) throws(CTAP2StatusCode) -> PinUvAuthProtocol {
        let pinUvAuthProtocol = try PinUvAuthProtocol(requested: requested)
        if configuration.protocolLevel == .ctap20, pinUvAuthProtocol != .one { throw .invalidParameter }
        return pinUvAuthProtocol
    }

    /// getInfo 0x04. The pinUvAuthToken permissions a token may carry follow from these
    /// (`grantablePermissions()`), so a feature appears in both places at once.
    func infoOptions(alwaysUv knownAlwaysUv: Bool? = nil) throws(CTAP2StatusCode) -> [String: Bool] {
        let alwaysUv: Bool
        if let knownAlwaysUv { alwaysUv = knownAlwaysUv } else { alwaysUv = try isAlwaysUvEnabled() }
        var options: [String: Bool] = [
            "rk": configuration.supportsResidentKeys,
            "up": true,
            "plat": false,
            // Present and false until a PIN is set (CTAP 2.1 §6.4: false means "capable, not set").
            "clientPin": try isPINSet(),
            // getPinUvAuthTokenUsingPinWithPermissions (0x09) and permissions; with built-in UV
            // also getPinUvAuthTokenUsingUvWithPermissions (0x06).
            "pinUvAuthToken": true,
            // With a PIN set, non-discoverable credentials may still be made without UV —
            // unless alwaysUv asks for UV every time.
            "makeCredUvNotRqd": !alwaysUv,
            // authenticatorCredentialManagement (0x0A), and the same on the preview command 0x41.
            "credMgmt": true,
            "credentialMgmtPreview": true,
            // authenticatorConfig (0x0D): toggleAlwaysUv and setMinPINLength.
            "authnrCfg": true,
            "setMinPINLength": true,
            "alwaysUv": alwaysUv,
            // CTAP 2.2: the pcmr permission and the persistentPinUvAuthToken
            // (PersistentPinUvAuthToken.swift).
            "perCredMgmtRO": true,
            // Enterprise attestation (EnterpriseAttestation.swift): present, false until
            // authenticatorConfig enableEnterpriseAttestation turns it on (CTAP 2.1 §6.4).
            "ep": try isEnterpriseAttestationEnabled(),
        ]
        // authenticatorLargeBlobs (0x0C) with the largeBlobKey extension; absent without it.
        if offersLargeBlobs { options["largeBlobs"] = true }
        // Built-in user verification (`--uv`): present and true only when a method is
        // configured; absent (not capable) otherwise.
        if userVerification != nil { options["uv"] = true }
        return options
    }
}
