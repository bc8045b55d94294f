import CBOR
import CTAP
import FIDOCrypto

/// A credential located for an assertion.
struct AssertionCandidate {
    var credentialID: [UInt8]
    var key: CredentialPrivateKey
    var resident: ResidentCredential?
    /// A non-discoverable credential made with hmac-secret (resident ones carry their values).
    var hasHMACSecret = false
    /// A non-discoverable credential made with thirdPartyPayment (resident ones say it themselves).
    var isThirdPartyPayment = false

    /// Whether it is a third-party payment credential (CTAP 2.2 §12.9).
    var allowsThirdPartyPayment: Bool { resident?.thirdPartyPayment ?? isThirdPartyPayment }
}

extension Authenticator {
    /// authenticatorGetAssertion (0x02), CTAP 2.1 §6.2.2.
    func getAssertion(_ request: GetAssertionRequest, context: RequestContext) throws(CTAP2StatusCode) -> GetAssertionResponse {
        // maxCredentialCountInList (getInfo 0x07): a longer allowList is CTAP2_ERR_LIMIT_EXCEEDED
        // (as on a YubiKey 5), before presence or any lookup.
        guard request.allowList.count <= configuration.maxCredentialCountInList else { throw .limitExceeded }
        // Step 1: a zero-length pinUvAuthParam is the "touch to select" probe.
        try answerTouchProbe(ifAskedBy: request.pinUvAuthParam, rpID: request.rpID, context: context)
        // Step 2: a pinUvAuthParam needs a supported pinUvAuthProtocol.
        let pinUvAuthProtocol = try requestedPinUvAuthProtocol(for: request.pinUvAuthParam, requested: request.pinUvAuthProtocol)
        // Options: "rk" is not an option of getAssertion. "uv" asks for built-in UV (without
        // it, CTAP2_ERR_INVALID_OPTION); next to a pinUvAuthParam it is ignored (the token
        // already verified the user).
        if request.options["rk"] != nil { throw .unsupportedOption }
        let builtInUV = request.options["uv"] == true && request.pinUvAuthParam == nil
        if builtInUV && userVerification == nil { throw unknownUVOptionError }
        let userPresence = request.options["up"] ?? true
        // alwaysUv (CTAP 2.1 §6.11.2): an assertion with user presence needs user verification,
        // a token or built-in. Silent (up: false) probes stay possible, as in OpenSK.
        if userPresence, request.pinUvAuthParam == nil, !builtInUV, try isAlwaysUvEnabled() {
            throw try missingUVError()
        }
        // Extensions are decoded with the request (GetAssertionExtensions); hmac-secret's input
        // is checked here, before the token is used.
        // Extensions the key does not offer are ignored (CTAP 2.1 §9), malformed or not.
        let extensions = try offeredInputs(decoded: request.extensions, error: request.extensionsError,
                                           inputs: request.extensionInputs)
        let wantsCredBlob = extensions.credBlob ?? false
        // largeBlobKey (§12.3): the credential's key in response member 0x07.
        let wantsLargeBlobKey = extensions.largeBlobKey ?? false
        // thirdPartyPayment (CTAP 2.2 §12.9): whether the credential is a payment one.
        let wantsThirdPartyPayment = extensions.thirdPartyPayment ?? false
        var hmacSecret: HMACSecretRequest?
        if let input = extensions.hmacSecret {
            hmacSecret = try hmacSecretRequest(input, userPresence: userPresence)
        }
        // previewSign names a key inside one credential: only with an allowList.
        if extensions.previewSign != nil, request.allowList.isEmpty { throw .invalidOption }

        // Step 6.1: the pinUvAuthToken must carry ga for this RP; then UV is done. Step 6.2: or
        // the key verifies the user itself.
        var userVerified = try authorize(request.pinUvAuthParam, pinUvAuthProtocol: pinUvAuthProtocol,
                                         clientDataHash: request.clientDataHash, permission: .getAssertion,
                                         rpID: request.rpID)
        if builtInUV {
            try verifyUserForCommand(.getAssertion, rpID: request.rpID, context: context)
            userVerified = true
        }

        let rpIDHash = rpIDHashes.hash(of: request.rpID)
        var flags: AuthenticatorData.Flags = []
        if userVerified { flags.insert(.userVerified) }

        if !request.allowList.isEmpty {
            // With an allowList: the first listed credential of ours for this RP.
            guard let candidate = try locate(request.allowList, rpIDHash: rpIDHash, userVerified: userVerified) else {
                throw .noCredentials
            }
            // previewSign: its key and data checked before presence is asked for.
            let previewSign = try extensions.previewSign.map { (input) throws(CTAP2StatusCode) in
                try previewSignPlan(input, rpIDHash: rpIDHash, credentialID: candidate.credentialID,
                                    userPresence: userPresence, userVerified: userVerified)
            }
            if userPresence {
                try collectPresence(.getAssertion, rpID: request.rpID, userName: candidate.resident?.userName, context: context,
                                    subject: request.clientDataHash, rpIDHash: rpIDHash)
                flags.insert(.userPresent)
                // Step 9: presence spends the token's flags and permissions (but lbw).
                pinUvAuth.userPresenceWasCollected()
            }
            return try assertion(for: candidate, rpIDHash: rpIDHash, clientDataHash: request.clientDataHash,
                                 flags: flags, userVerified: userVerified, wantsCredBlob: wantsCredBlob,
                                 wantsLargeBlobKey: wantsLargeBlobKey, wantsThirdPartyPayment: wantsThirdPartyPayment,
                                 hmacSecret: hmacSecret, numberOfCredentials: nil, previewSign: previewSign)
        }

        // Without an allowList: discoverable credentials of this RP, newest first; credProtect
        // level ≥ 2 needs UV here (uvOptionalWithCredentialIDList / uvRequired). Only the first
        // is read whole; getNextAssertion reads the others one at a time.
        let found = try withStore { store throws(StoreError) in
            try store.discoverableCredentials(rpIDHash: rpIDHash, userVerified: userVerified)
        }
        guard var applicable = found, applicable.first.isDiscoverable(userVerified: userVerified) else { throw .noCredentials }
        // A credential whose key another device holds (a TPM-bound one in a copied store) is
        // not this key's: passed over, as later ones are by getNextAssertion.
        while !holdsKey(of: applicable.first) {
            let next = try withStore { store throws(StoreError) in
                try store.discoverableCredential(after: applicable.position, rpIDHash: rpIDHash, userVerified: userVerified)
            }
            guard let next, applicable.count > 1 else { throw .noCredentials }
            applicable = DiscoverableCredentials(first: next.credential, position: next.position, count: applicable.count - 1)
        }
        // userSelected (0x06): the user chose this account on the key, so the platform need not
        // ask again (browsers then skip their account chooser, which no WebDriver can click). A
        // key whose presence stands in for its user (`auto`, a rig key) makes that choice for
        // them (AccountChooser: the account a test named, else the last used, else the newest),
        // one account or several; with `--account-choice client` only when there is one. Any
        // other presence: the platform lets the user choose, as a YubiKey 5 (no display) has it.
        // numberOfCredentials is then left out (it may not come with userSelected). userSelected
        // is CTAP 2.1: a CTAP 2.0 key always reports numberOfCredentials.
        let answersForUser = userPresence && presence.selectsForUser && configuration.protocolLevel == .ctap21
        let selectedOnKey = answersForUser && (applicable.count == 1 || accountChooser.policy == .recent)
        if userPresence {
            try collectPresence(.getAssertion, rpID: request.rpID, context: context, subject: request.clientDataHash,
                                rpIDHash: rpIDHash)
            flags.insert(.userPresent)
            // Step 9: presence spends the token's flags and permissions (but lbw).
            pinUvAuth.userPresenceWasCollected()
        }
        var chosen = applicable.first
        if selectedOnKey, applicable.count > 1 {
            chosen = try accountChosenOnKey(applicable, rpIDHash: rpIDHash, userVerified: userVerified)
        } else if applicable.count > 1 {
            pendingAssertions = PendingAssertions(
                channel: context.channel, rpIDHash: rpIDHash, clientDataHash: request.clientDataHash, flags: flags,
                userVerified: userVerified, wantsCredBlob: wantsCredBlob, wantsLargeBlobKey: wantsLargeBlobKey,
                wantsThirdPartyPayment: wantsThirdPartyPayment, hmacSecret: hmacSecret, position: applicable.position, remaining: applicable.count - 1,
                now: clock.monotonicNanoseconds())
        }
        return try assertion(for: try candidate(from: chosen), rpIDHash: rpIDHash, clientDataHash: request.clientDataHash,
                             flags: flags, userVerified: userVerified, wantsCredBlob: wantsCredBlob,
                             wantsLargeBlobKey: wantsLargeBlobKey, wantsThirdPartyPayment: wantsThirdPartyPayment,
                             hmacSecret: hmacSecret, numberOfCredentials: selectedOnKey ? nil : applicable.count, userSelected: selectedOnKey)
    }

    /// The account a key that chooses for its user answers with (AccountChooser.pick's rule: the
    /// named one, else the one used last, else the newest), read by its ID: one lookup, where
    /// reading every account of an RP with 1,000 costs 400 signatures. Only an account named by
    /// its user handle needs the walk over them.
    func accountChosenOnKey(_ applicable: DiscoverableCredentials, rpIDHash: [UInt8],
                            userVerified: Bool) throws(CTAP2StatusCode) -> ResidentCredential {
        func usable(_ id: [UInt8]) throws(CTAP2StatusCode) -> ResidentCredential? {
            let stored = try withStore { store throws(StoreError) in try store.residentCredential(id: id) }
            guard let stored, ByteKey.sameBytes(stored.rpIDHash, rpIDHash), stored.isDiscoverable(userVerified: userVerified),
                  holdsKey(of: stored) else { return nil }
            return stored
        }
        switch accountChooser.peekNamed(rpIDHash: rpIDHash) {
        case .userHandle?:
            let accounts = try allDiscoverable(applicable, rpIDHash: rpIDHash, userVerified: userVerified)
            return accounts[accountChooser.pick(accounts.map { ($0.credentialID, $0.userHandle) }, rpIDHash: rpIDHash)]
        case .credentialID(let id)?:
            _ = accountChooser.takeNamed(rpIDHash: rpIDHash)
            if let named = try usable(id) { return named }
        case nil:
            break
        }
        if let last = accountChooser.recent(rpIDHash: rpIDHash), let recent = try usable(last) { return recent }
        return applicable.first
    }

    /// Every discoverable credential `applicable` counts, newest first (one read each), for the
    /// key to choose among; those deleted or hidden meanwhile are left out.
    func allDiscoverable(_ applicable: DiscoverableCredentials, rpIDHash: [UInt8],
                         userVerified: Bool) throws(CTAP2StatusCode) -> [ResidentCredential] {
        var accounts = [applicable.first]
        var position = applicable.position
        while accounts.count < applicable.count {
            let next = try withStore { store throws(StoreError) in
                try store.discoverableCredential(after: position, rpIDHash: rpIDHash, userVerified: userVerified)
            }
            guard let next else { break }
            position = next.position
            if next.credential.isDiscoverable(userVerified: userVerified), holdsKey(of: next.credential) {
                accounts.append(next.credential)
            }
        }
        return accounts
    }

    /// authenticatorGetNextAssertion (0x08), CTAP 2.1 §6.3.
    func getNextAssertion(context: RequestContext) throws(CTAP2StatusCode) -> GetAssertionResponse {
        guard var pending = pendingAssertions, pending.channel == context.channel else { throw .notAllowed }
        let now = clock.monotonicNanoseconds()
        guard !pending.hasExpired(now: now, timeout: Self.nanoseconds(milliseconds: configuration.getNextAssertionTimeoutMilliseconds)),
              !pending.isExhausted else {
            pendingAssertions = nil
            throw .notAllowed
        }
        // One deleted or hidden since (CLI, signals) is skipped by the store; when that leaves
        // fewer than numberOfCredentials said, the last call finds none.
        var next = try withStore { store throws(StoreError) in
            try store.discoverableCredential(after: pending.position, rpIDHash: pending.rpIDHash, userVerified: pending.userVerified)
        }
        // One whose key another device holds is passed over (see getAssertion).
        while let skipped = next, !holdsKey(of: skipped.credential) {
            next = try withStore { store throws(StoreError) in
                try store.discoverableCredential(after: skipped.position, rpIDHash: pending.rpIDHash, userVerified: pending.userVerified)
            }
        }
        guard let next else {
            pendingAssertions = nil
            throw .noCredentials
        }
        pending.handedOut(next, now: now)
        pendingAssertions = pending.isExhausted ? nil : pending
        // The sealed record has the last word over the store's index (see SQLiteCredentialStore).
        let current = next.credential
        guard current.isDiscoverable(userVerified: pending.userVerified) else { throw .noCredentials }
        return try assertion(for: try candidate(from: current), rpIDHash: pending.rpIDHash,
                             clientDataHash: pending.clientDataHash, flags: pending.flags,
                             userVerified: pending.userVerified, wantsCredBlob: pending.wantsCredBlob,
                             wantsLargeBlobKey: pending.wantsLargeBlobKey, wantsThirdPartyPayment: pending.wantsThirdPartyPayment,
                             hmacSecret: pending.hmacSecret,
                             numberOfCredentials: nil)
    }

    /// The first descriptor that is one of our credentials for this RP and usable now.
    func locate(_ allowList: [CredentialDescriptor], rpIDHash: [UInt8], userVerified: Bool) throws(CTAP2StatusCode) -> AssertionCandidate? {
        for descriptor in allowList where descriptor.type == "public-key" {
            guard let opened = openCredential(descriptor.id, rpIDHash: rpIDHash) else {
                if let stored = try storedCredential(id: descriptor.id, rpIDHash: rpIDHash, userVerified: userVerified) {
                    return try candidate(from: stored)
                }
                continue
            }
            if opened.isResident {
                let stored = try withStore { store throws(StoreError) in try store.residentCredential(id: descriptor.id) }
                // A deleted or hidden discoverable credential is gone, even if its ID still opens.
                guard let stored, stored.hiddenSince == nil, ByteKey.sameBytes(stored.rpIDHash, rpIDHash) else { continue }
                if stored.credProtect == .userVerificationRequired && !userVerified { continue }
                // The cache holds the key this ID opened to; a credential stored under the ID since
                // (deleted and added again with another key) signs with its own.
                guard opened.key.isKey(stored.privateKey, algorithm: stored.algorithm) else { return try candidate(from: stored) }
                return AssertionCandidate(credentialID: descriptor.id, key: opened.key, resident: stored)
            }
            // credProtect userVerificationRequired is never usable without UV.
            if opened.credProtect == .userVerificationRequired && !userVerified { continue }
            return AssertionCandidate(credentialID: descriptor.id, key: opened.key, resident: nil, hasHMACSecret: opened.hasHMACSecret,
                                      isThirdPartyPayment: opened.isThirdPartyPayment)
        }
        return nil
    }

    /// A resident credential stored under an ID this key did not seal — one added as it was
    /// made elsewhere (the rig's addCredential, an import keeps the ID the RP knows) — if it is
    /// this RP's, visible, and usable with this UV state (credProtect 3 needs UV). Only IDs that
    /// fail to open come here: one indexed lookup that finds nothing for other keys' IDs.
    func storedCredential(id: [UInt8], rpIDHash: [UInt8], userVerified: Bool) throws(CTAP2StatusCode) -> ResidentCredential? {
        guard !id.isEmpty, id.count <= 1023 else { return nil }
        let stored = try withStore { store throws(StoreError) in try store.residentCredential(id: id) }
        guard let stored, ByteKey.sameBytes(stored.rpIDHash, rpIDHash), stored.hiddenSince == nil,
              stored.credProtect != .userVerificationRequired || userVerified, holdsKey(of: stored) else { return nil }
        return stored
    }

    /// Whether this key can sign with `credential`: a software key always; one a device made
    /// only when that device is this key's (`CredentialKeyDevice.holds`).
    func holdsKey(of credential: ResidentCredential) -> Bool {
        guard let deviceKey = DeviceKey(stored: credential.privateKey) else { return true }
        return keyDevice?.holds(blob: deviceKey.blob) == true
    }

    /// Unseal a credential ID for this RP and import its key, through the cache of recent ones.
    func openCredential(_ id: [UInt8], rpIDHash: [UInt8]) -> OpenedCredential? {
        if let cached = openedCredentials.credential(id: id, rpIDHash: rpIDHash) { return cached }
        guard let source = codec.open(id, rpIDHash: rpIDHash),
              let key = CredentialPrivateKey(algorithm: source.algorithm, secret: source.privateKey, device: keyDevice) else { return nil }
        let opened = OpenedCredential(isResident: source.isResident, credProtect: source.credProtect,
                                      hasHMACSecret: source.hasHMACSecret, isThirdPartyPayment: source.isThirdPartyPayment, key: key)
        openedCredentials.insert(opened, id: id, rpIDHash: rpIDHash)
        return opened
    }

    /// A stored credential ready to sign. Its imported key comes from the cache of recently
    /// opened ones when the cache holds this very key (importing a P-256 scalar derives the
    /// public point: about as costly as the signature itself).
    func candidate(from credential: ResidentCredential) throws(CTAP2StatusCode) -> AssertionCandidate {
        if let cached = openedCredentials.credential(id: credential.credentialID, rpIDHash: credential.rpIDHash),
           cached.isResident, cached.key.isKey(credential.privateKey, algorithm: credential.algorithm) {
            return AssertionCandidate(credentialID: credential.credentialID, key: cached.key, resident: credential)
        }
        guard let algorithm = COSEAlgorithm(rawValue: credential.algorithm),
              let key = CredentialPrivateKey(algorithm: algorithm, secret: credential.privateKey, device: keyDevice) else {
            throw .other
        }
        openedCredentials.insert(OpenedCredential(isResident: true, credProtect: credential.credProtect, hasHMACSecret: false,
                                                  key: key),
                                 id: credential.credentialID, rpIDHash: credential.rpIDHash)
        return AssertionCandidate(credentialID: credential.credentialID, key: key, resident: credential)
    }

    /// The CredRandom values of an assertion candidate; nil if it was created without hmac-secret.
    func credRandom(for candidate: AssertionCandidate) -> CredRandom? {
        if let resident = candidate.resident { return CredRandom(resident) }
        guard candidate.hasHMACSecret else { return nil }
        return CredRandom.derived(wrappingKey: secrets.wrappingKey, credentialID: candidate.credentialID)
    }

    func assertion(for candidate: AssertionCandidate, rpIDHash: [UInt8], clientDataHash: [UInt8],
                   flags: AuthenticatorData.Flags, userVerified: Bool, wantsCredBlob: Bool, wantsLargeBlobKey: Bool,
                   wantsThirdPartyPayment: Bool = false, hmacSecret: HMACSecretRequest?, numberOfCredentials: Int?,
                   userSelected: Bool = false, previewSign: PreviewSignPlan? = nil) throws(CTAP2StatusCode) -> GetAssertionResponse {
        var extensionOutputs: [CBORValue: CBORValue] = [:]
        if let previewSign { extensionOutputs["previewSign"] = .map([PreviewSign.Member.toBeSigned: .byteString(try previewSign.signature())]) }
        if wantsCredBlob { extensionOutputs["credBlob"] = .byteString(candidate.resident?.credBlob ?? []) }
        // thirdPartyPayment: true for a payment credential, false for any other (a YubiKey 5.8
        // answers false too rather than leaving the output out).
        if wantsThirdPartyPayment { extensionOutputs["thirdPartyPayment"] = .boolean(candidate.allowsThirdPartyPayment) }
        // hmac-secret: only for credentials created with it; CredRandom by whether UV was done.
        if let hmacSecret, let credRandom = credRandom(for: candidate) {
            extensionOutputs["hmac-secret"] = .byteString(try hmacSecret.output(credRandom: credRandom, userVerified: userVerified,
                                                                               random: random))
            // Once per credential (one rewrite, not one per assertion): it may guard a site's data
            // now. A failure to note it does not fail the assertion.
            if let resident = candidate.resident, !resident.usedHMACSecret {
                try? withStore { store throws(StoreError) in try store.markHMACSecretUsed(credentialID: resident.credentialID) }
            }
        }
        let counter = try signatureCounter(for: candidate.resident)
        // BE and BS: what a discoverable credential was stored with; the key's setting otherwise.
        let flags = flags.union(candidate.resident?.backupFlags ?? configuration.defaultBackupFlags)
        let authenticatorData = AuthenticatorData(
            rpIDHash: rpIDHash, flags: flags, signCount: counter,
            extensions: extensionOutputs.isEmpty ? nil : .map(extensionOutputs)).encoded()
        let signature = try candidate.key.signature(for: authenticatorData + clientDataHash)
        // The account a key that chooses for its user picks next time, unless a test names one.
        if let resident = candidate.resident, resident.discoverable {
            accountChooser.used(credentialID: resident.credentialID, rpIDHash: rpIDHash)
        }
        // CTAP 2.1 §6.2.2: user identifiable information only after user verification; the
        // user handle of a discoverable credential always.
        // (A stored credential that is not discoverable has no user the RP gave.)
        let user = candidate.resident.flatMap { $0.discoverable ? $0 : nil }.map {
            UserEntity(id: $0.userHandle, name: $0.userName, displayName: $0.userDisplayName)
        }
        return GetAssertionResponse(credential: CredentialDescriptor(id: candidate.credentialID),
                                    authenticatorData: authenticatorData, signature: signature,
                                    userEntity: user, identifying: userVerified,
                                    numberOfCredentials: numberOfCredentials, userSelected: userSelected ? true : nil,
                                    largeBlobKey: wantsLargeBlobKey ? candidate.resident?.largeBlobKey?.copyBytes() : nil)
    }
}
