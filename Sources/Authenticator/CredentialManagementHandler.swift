import CBOR
import CTAP
import FIDOCrypto

extension Authenticator {
    /// authenticatorCredentialManagement (0x0A), CTAP 2.1 §6.8, and the pre-2.1 command 0x41,
    /// which shares this handler. Both accept every subcommand: libfido2 1.12 (src/credman.c)
    /// sends all of them, updateUserInformation included, on 0x41 whatever getInfo says.
    func credentialManagement(_ request: CredentialManagementRequest, context: RequestContext) throws(CTAP2StatusCode) -> CredentialManagementResponse? {
        let subcommand = request.subcommand
        // §6.8.3 / §6.8.4: the GetNext subcommands take no pinUvAuthParam and continue the
        // enumeration their own channel began. Anything else from that channel ends it.
        switch subcommand {
        case .enumerateRPsGetNextRP: return try nextRelyingParty(context: context)
        case .enumerateCredentialsGetNextCredential: return try nextCredential(context: context)
        default:
            if credentialEnumeration?.isEnded(by: subcommand, on: context.channel) == true { credentialEnumeration = nil }
        }
        guard let subcommand else { throw .invalidSubcommand }

        // Every other subcommand: pinUvAuthParam = authenticate(pinUvAuthToken, subCommand ‖
        // CBOR(subCommandParams)) with the cm permission (missing → CTAP2_ERR_PUAT_REQUIRED).
        // The reading subcommands also take the persistentPinUvAuthToken (CTAP 2.2 pcmr);
        // with it, deleting and updating fail as a wrong MAC does (CTAP2_ERR_PIN_AUTH_INVALID).
        let reads = subcommand == .getCredsMetadata || subcommand == .enumerateRPsBegin || subcommand == .enumerateCredentialsBegin
        let grant: PinUvAuthTokenState.Grant
        if reads, configuration.protocolLevel == .ctap21,
           let persistent = try persistentGrant(pinUvAuthParam: request.pinUvAuthParam,
                                                pinUvAuthProtocol: request.pinUvAuthProtocol,
                                                message: request.authenticatedMessage) {
            grant = persistent
        } else {
            grant = try authorizeCommand(pinUvAuthParam: request.pinUvAuthParam, pinUvAuthProtocol: request.pinUvAuthProtocol,
                                         message: request.authenticatedMessage, permission: .credentialManagement)
        }
        switch subcommand {
        case .getCredsMetadata:
            return try credentialsMetadata(grant: grant)
        case .enumerateRPsBegin:
            return try beginRelyingPartyEnumeration(grant: grant, context: context)
        case .enumerateCredentialsBegin:
            return try beginCredentialEnumeration(request, grant: grant, context: context)
        case .deleteCredential:
            try deleteCredential(request, grant: grant)
            return nil
        case .updateUserInformation:
            try updateUserInformation(request, grant: grant)
            return nil
        case .enumerateRPsGetNextRP, .enumerateCredentialsGetNextCredential:
            throw .invalidSubcommand   // answered above
        }
    }

    /// getCredsMetadata (0x01), §6.8.2. Existing: the discoverable credentials, hidden ones
    /// included (they hold their slot until purged). Remaining: the slots left, which credentials
    /// stored for allowLists only also take (as in getInfo's remainingDiscoverableCredentials).
    private func credentialsMetadata(grant: PinUvAuthTokenState.Grant) throws(CTAP2StatusCode) -> CredentialManagementResponse {
        // §6.8.2: a token with a permissions RP ID may not read key-wide metadata.
        guard grant.rpID == nil else { throw .pinAuthInvalid }
        let (stored, storedOnly) = try withStore { store throws(StoreError) in
            (try store.residentCredentialCount(), try store.storedOnlyCredentialCount())
        }
        return CredentialManagementResponse(existingResidentCredentialsCount: max(0, stored - storedOnly),
                                            maxPossibleRemainingResidentCredentialsCount: max(0, store.maxResidentCredentials - stored))
    }

    /// enumerateRPsBegin (0x02), §6.8.3: the first RP (by RP ID) and how many there are.
    private func beginRelyingPartyEnumeration(grant: PinUvAuthTokenState.Grant,
                                              context: RequestContext) throws(CTAP2StatusCode) -> CredentialManagementResponse {
        guard grant.rpID == nil else { throw .pinAuthInvalid }
        let entries = try withStore { store throws(StoreError) in try store.relyingParties() }
        guard let first = entries.first else { throw .noCredentials }
        if entries.count > 1 {
            credentialEnumeration = CredentialEnumeration(channel: context.channel, items: .relyingParties(entries),
                                                          now: clock.monotonicNanoseconds())
        }
        var response = Self.response(for: first)
        response.totalRPs = entries.count
        return response
    }

    /// enumerateRPsGetNextRP (0x03), §6.8.3.
    private func nextRelyingParty(context: RequestContext) throws(CTAP2StatusCode) -> CredentialManagementResponse {
        var enumeration = try continuedEnumeration(context: context)
        guard let entry = enumeration.nextRelyingParty(now: clock.monotonicNanoseconds()) else {
            credentialEnumeration = nil
            throw .notAllowed
        }
        credentialEnumeration = enumeration.isExhausted ? nil : enumeration
        return Self.response(for: entry)
    }

    /// enumerateCredentialsBegin (0x04), §6.8.4: the RP's first visible credential (newest
    /// first) and how many there are. Hidden credentials (signals) are never listed.
    private func beginCredentialEnumeration(_ request: CredentialManagementRequest, grant: PinUvAuthTokenState.Grant,
                                            context: RequestContext) throws(CTAP2StatusCode) -> CredentialManagementResponse {
        guard let rpIDHash = request.rpIDHash else { throw .missingParameter }
        // §6.8.4: a token with a permissions RP ID only enumerates that RP.
        if let boundRPID = grant.rpID, !constantTimeEquals(SHA256.hash(Array(boundRPID.utf8)), rpIDHash) {
            throw .pinAuthInvalid
        }
        // Every visible credential, whatever its credProtect (the token stands for UV); only the
        // first is read whole, GetNext reads the others one at a time.
        let found = try withStore { store throws(StoreError) in
            try store.discoverableCredentials(rpIDHash: rpIDHash, userVerified: true)
        }
        guard let credentials = found, credentials.first.hiddenSince == nil else { throw .noCredentials }
        if credentials.count > 1 {
            credentialEnumeration = CredentialEnumeration(channel: context.channel,
                                                          items: .credentials(rpIDHash: rpIDHash, count: credentials.count),
                                                          position: credentials.position, now: clock.monotonicNanoseconds())
        }
        var response = try response(for: credentials.first)
        response.totalCredentials = credentials.count
        return response
    }

    /// enumerateCredentialsGetNextCredential (0x05), §6.8.4.
    private func nextCredential(context: RequestContext) throws(CTAP2StatusCode) -> CredentialManagementResponse {
        var enumeration = try continuedEnumeration(context: context)
        // One deleted or hidden since Begin (the CLI, a signal) is skipped by the store.
        guard let query = enumeration.nextCredentialQuery(),
              let credential = try withStore({ store throws(StoreError) in
                  try store.discoverableCredential(after: query.after, rpIDHash: query.rpIDHash, userVerified: true)
              }) else {
            credentialEnumeration = nil
            throw .notAllowed
        }
        enumeration.handedOut(credential, now: clock.monotonicNanoseconds())
        credentialEnumeration = enumeration.isExhausted ? nil : enumeration
        return try response(for: credential.credential)
    }

    /// The enumeration a GetNext continues: begun on this channel and not timed out (same
    /// 30 s as getNextAssertion), else CTAP2_ERR_NOT_ALLOWED.
    private func continuedEnumeration(context: RequestContext) throws(CTAP2StatusCode) -> CredentialEnumeration {
        guard let enumeration = credentialEnumeration, enumeration.channel == context.channel else { throw .notAllowed }
        guard !enumeration.hasExpired(now: clock.monotonicNanoseconds(),
                                      timeout: Self.nanoseconds(milliseconds: configuration.getNextAssertionTimeoutMilliseconds)) else {
            credentialEnumeration = nil
            throw .notAllowed
        }
        return enumeration
    }

    /// deleteCredential (0x06), §6.8.5. Durable when the response leaves.
    private func deleteCredential(_ request: CredentialManagementRequest, grant: PinUvAuthTokenState.Grant) throws(CTAP2StatusCode) {
        guard let descriptor = request.credentialID else { throw .missingParameter }
        let credential = try managedCredential(id: descriptor.id, grant: grant)
        _ = try withStore { store throws(StoreError) in try store.deleteResidentCredential(id: credential.credentialID) }
    }

    /// updateUserInformation (0x07), §6.8.6: user.id must be the stored user handle (else
    /// CTAP1_ERR_INVALID_PARAMETER); name and displayName are replaced, and an absent or empty
    /// one is removed. Durable when the response leaves.
    private func updateUserInformation(_ request: CredentialManagementRequest,
                                       grant: PinUvAuthTokenState.Grant) throws(CTAP2StatusCode) {
        guard let descriptor = request.credentialID, let user = request.user else { throw .missingParameter }
        let credential = try managedCredential(id: descriptor.id, grant: grant)
        guard user.id == credential.userHandle else { throw .invalidParameter }
        let name = user.name.flatMap { $0.isEmpty ? nil : $0 }
        let displayName = user.displayName.flatMap { $0.isEmpty ? nil : $0 }
        try withStore { store throws(StoreError) in
            try store.updateUser(credentialID: credential.credentialID, name: name, displayName: displayName)
        }
    }

    /// The visible resident credential `id` names (else CTAP2_ERR_NO_CREDENTIALS: hidden ones
    /// are managed through the store's own tools), within the token's permissions RP ID if it
    /// has one (else CTAP2_ERR_PIN_AUTH_INVALID).
    private func managedCredential(id: [UInt8], grant: PinUvAuthTokenState.Grant) throws(CTAP2StatusCode) -> ResidentCredential {
        let stored = try withStore { store throws(StoreError) in try store.residentCredential(id: id) }
        guard let stored, stored.hiddenSince == nil else { throw .noCredentials }
        if let boundRPID = grant.rpID, !boundRPID.utf8.elementsEqual(stored.rpID.utf8) { throw .pinAuthInvalid }
        return stored
    }

    private static func response(for entry: RelyingPartyEntry) -> CredentialManagementResponse {
        CredentialManagementResponse(rp: RelyingPartyEntity(id: entry.rpID, name: entry.name), rpIDHash: entry.rpIDHash)
    }

    /// user, credentialID, publicKey (COSE, derived from the stored private key), credProtect,
    /// largeBlobKey and thirdPartyPayment of one credential (§6.8.4).
    private func response(for credential: ResidentCredential) throws(CTAP2StatusCode) -> CredentialManagementResponse {
        let publicKey: COSEKey
        if let deviceKey = DeviceKey(stored: credential.privateKey) {
            // A device's key is listed (and can be deleted) even on a key without that device.
            publicKey = deviceKey.cosePublicKey
        } else {
            guard let algorithm = COSEAlgorithm(rawValue: credential.algorithm),
                  let key = CredentialPrivateKey(algorithm: algorithm, secret: credential.privateKey) else {
                throw .other
            }
            publicKey = key.cosePublicKey
        }
        var response = CredentialManagementResponse(
            user: UserEntity(id: credential.userHandle, name: credential.userName, displayName: credential.userDisplayName),
            credentialID: CredentialDescriptor(id: credential.credentialID),
            publicKey: publicKey.cborValue,
            credProtect: credential.credProtect,
            largeBlobKey: credential.largeBlobKey?.copyBytes())
        // Whether it is a payment credential, on a key that offers thirdPartyPayment (python-fido2
        // 2.1+ reads it as RESULT.THIRD_PARTY_PAYMENT).
        if configuration.offeredExtensions.contains(.thirdPartyPayment) { response.thirdPartyPayment = credential.thirdPartyPayment }
        return response
    }
}
