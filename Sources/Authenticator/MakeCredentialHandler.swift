import CBOR
import CTAP
import FIDOCrypto

extension Authenticator {
    /// The ID of a credential whose key lives in the store (RSA): random, and of a length no
    /// sealed ID has, so it is never tried as one.
    static let storedCredentialIDLength = 32

    /// CTAP 2.1 §6.1.2 step 3: the first of the client's pubKeyCredParams this key makes.
    func chosenAlgorithm(_ request: MakeCredentialRequest) -> COSEAlgorithm? {
        for parameter in request.pubKeyCredParams where parameter.type == "public-key" {
            if let algorithm = COSEAlgorithm(rawValue: parameter.algorithm), configuration.algorithms.contains(algorithm) {
                return algorithm
            }
        }
        return nil
    }

    /// Whether handling the CTAP2 message `message` (command byte and CBOR) may take long: a
    /// makeCredential that will make an RSA key (50 ms to a second). A transport loop that runs
    /// requests inline (its presence never waits) hands such a one to its worker instead, so that
    /// it goes on answering other channels and sending KEEPALIVE. Free unless the key offers RSA.
    public func mayRunLong(_ message: [UInt8]) -> Bool {
        guard message.first == CTAPCommand.makeCredential.rawValue,
              configuration.algorithms.contains(where: { $0.rsaPadding != nil }),
              let value = try? CBORDecoder.decode(Array(message.dropFirst())),
              let request = try? MakeCredentialRequest(cbor: value) else { return false }
        return chosenAlgorithm(request)?.rsaPadding != nil
    }

    /// authenticatorMakeCredential (0x01), CTAP 2.1 §6.1.2.
    func makeCredential(_ request: MakeCredentialRequest, context: RequestContext) throws(CTAP2StatusCode) -> MakeCredentialResponse {
        // getInfo's maxCredentialCountInList (0x07) is a promise: a longer excludeList is refused
        // before anything else, as a YubiKey 5 does (CTAP2_ERR_LIMIT_EXCEEDED); clients split
        // longer lists into batches of that size.
        guard request.excludeList.count <= configuration.maxCredentialCountInList else { throw .limitExceeded }
        // §6.1.2 step 1: a zero-length pinUvAuthParam is the "touch to select" probe.
        try answerTouchProbe(ifAskedBy: request.pinUvAuthParam, rpID: request.rp.id, context: context)
        // Step 2: a pinUvAuthParam needs a supported pinUvAuthProtocol.
        let pinUvAuthProtocol = try requestedPinUvAuthProtocol(for: request.pinUvAuthParam, requested: request.pinUvAuthProtocol)
        // Step 3: the first supported algorithm in the RP's order of preference.
        guard let algorithm = chosenAlgorithm(request) else { throw .unsupportedAlgorithm }
        // Step 4 (2.1; step 5 in later texts): options. "up": false is invalid for makeCredential.
        // "uv" asks for built-in UV (CTAP 2.0 style): without it, CTAP2_ERR_INVALID_OPTION;
        // next to a pinUvAuthParam it is ignored (the token already verified the user; some
        // platforms send both).
        if request.options["up"] == false { throw .invalidOption }
        let builtInUV = request.options["uv"] == true && request.pinUvAuthParam == nil
        if builtInUV && userVerification == nil { throw unknownUVOptionError }
        let isResident = request.options["rk"] ?? false
        // A key too long for a credential ID (RSA's DER) is kept in the store even for a
        // non-discoverable credential, under a random ID; it then takes a slot as the rig's
        // allowList-only credentials do.
        // So is a key device's blob (a TPM's is over 200 bytes, and only that TPM opens it).
        // A rig key standing in for WebDriver's virtual authenticator keeps them all.
        let idCarriesKey = keyDevice == nil && CredentialPrivateKey.secretByteCount(algorithm) != nil
            && !configuration.keepsNonDiscoverableCredentials
        let isStored = isResident || !idCarriesKey
        // A key without resident credentials (getInfo rk false): CTAP 2.1 §6.1.2 step 4.
        if isResident && !configuration.supportsResidentKeys { throw .unsupportedOption }
        // The makeCredUvNotRqd rule (getInfo says true): on a key protected by user
        // verification, a discoverable credential needs UV (a token or built-in); a
        // non-discoverable one may be made without. alwaysUv (§6.11.2): every credential needs
        // it. Without: CTAP2_ERR_PUAT_REQUIRED when a PIN could give a token, else
        // CTAP2_ERR_OPERATION_DENIED (steps 6–8).
        if request.pinUvAuthParam == nil, !builtInUV {
            // CTAP 2.0 §5.1 step 6 had no makeCredUvNotRqd: with a PIN set, every makeCredential
            // needs pinAuth (CTAP2_ERR_PIN_REQUIRED, the code 2.1 calls PUAT_REQUIRED).
            if configuration.protocolLevel == .ctap20, try isPINSet() { throw .puatRequired }
            // The PIN state is read only for a discoverable credential, as before built-in UV.
            if isResident, try isProtectedByUserVerification() { throw try missingUVError() }
            if try isAlwaysUvEnabled() { throw try missingUVError() }
        }
        // Step 9: enterprise attestation (EnterpriseAttestation.swift).
        let enterpriseAttestation = try grantsEnterpriseAttestation(request.enterpriseAttestation, rpID: request.rp.id)

        let rpIDHash = rpIDHashes.hash(of: request.rp.id)

        // Extensions (CTAP 2.1 §12), decoded with the request (MakeCredentialExtensions); what
        // they need of the key is checked here, before the token, so that a malformed request
        // does not bind or use it. Those the key does not offer are ignored (CTAP 2.1 §9),
        // malformed or not.
        let extensions = try offeredInputs(decoded: request.extensions, error: request.extensionsError,
                                           inputs: request.extensionInputs)
        let credProtect = extensions.credProtect ?? .userVerificationOptional
        var credBlob = extensions.credBlob
        // hmac-secret (§12.5): the credential gets CredRandom values.
        let hasHMACSecret = extensions.hmacSecret ?? false
        // hmac-secret-mc (CTAP 2.2 §12.7): the hmac-secret output for the new credential, already
        // at registration; same input as getAssertion's hmac-secret (decoding made sure
        // hmac-secret is on).
        var hmacSecretAtCreation: HMACSecretRequest?
        if let input = extensions.hmacSecretMC {
            hmacSecretAtCreation = try hmacSecretRequest(input, userPresence: true)
        }
        // largeBlobKey (§12.3): a per-credential key for the large-blob array, for discoverable
        // credentials only.
        let wantsLargeBlobKey = extensions.largeBlobKey ?? false
        if wantsLargeBlobKey && !isResident { throw .invalidOption }
        // minPinLength (§12.4): the current minimum, for the RPs setMinPINLength allowed.
        let reportsMinPINLength = extensions.minPinLength ?? false
        // thirdPartyPayment (CTAP 2.2 §12.9): the credential is marked now, for good.
        let isThirdPartyPayment = extensions.thirdPartyPayment ?? false
        // previewSign: the signing key's algorithm and flags, refused now if none fits.
        let previewSign = try extensions.previewSign.map(previewSignChoice)

        // Step 11.1: the pinUvAuthToken must carry mc for this RP; then UV is done. Step 11.2:
        // or the key verifies the user itself.
        var userVerified = try authorize(request.pinUvAuthParam, pinUvAuthProtocol: pinUvAuthProtocol,
                                         clientDataHash: request.clientDataHash, permission: .makeCredential,
                                         rpID: request.rp.id)
        if builtInUV {
            try verifyUserForCommand(.makeCredential, rpID: request.rp.id, userName: request.user.name, context: context)
            userVerified = true
        }

        // Step 12: excludeList. A credential of ours for this RP → presence, then EXCLUDED;
        // userVerificationRequired (credProtect 3) credentials are invisible without UV.
        for descriptor in request.excludeList where descriptor.type == "public-key" {
            guard try excludes(descriptor.id, rpIDHash: rpIDHash, userVerified: userVerified) else { continue }
            try? collectPresence(.credentialExcluded, rpID: request.rp.id, context: context)
            if context.cancellation.isCancelled { throw .keepaliveCancel }
            throw .credentialExcluded
        }

        if isStored {
            let count = try withStore { store throws(StoreError) in try store.residentCredentialCount() }
            // Only a full store needs to know whether this replaces an existing account's
            // credential; reading the RP's credentials decrypts every one of them.
            if count >= store.maxResidentCredentials {
                // A stored non-discoverable credential (RSA) is kept under a user handle of its
                // own: it never replaces an account's.
                let replacing = isResident ? try withStore { store throws(StoreError) in
                    try store.residentCredentials(rpIDHash: rpIDHash).contains { $0.userHandle == request.user.id }
                } : false
                if !replacing { throw .keyStoreFull }
            }
        }

        // Step 14: user presence; then the token's flags and permissions (but lbw) are spent.
        try collectPresence(.makeCredential, rpID: request.rp.id, userName: request.user.name, context: context,
                            subject: request.clientDataHash)
        pinUvAuth.userPresenceWasCollected()

        // Then the credential.
        let key = try CredentialPrivateKey.generate(algorithm, random: random, device: keyDevice)
        let credentialID: [UInt8]
        if idCarriesKey {
            let source = CredentialSource(isResident: isResident, algorithm: algorithm, credProtect: credProtect,
                                          privateKey: key.rawRepresentation, hasHMACSecret: hasHMACSecret,
                                          isThirdPartyPayment: isThirdPartyPayment)
            credentialID = try codec.seal(source, rpIDHash: rpIDHash, nonce: nonce())
        } else {
            credentialID = random.bytes(count: Self.storedCredentialIDLength)
        }

        var storedBlob = false
        let largeBlobKey = wantsLargeBlobKey ? random.secret(count: 32) : nil
        // Discoverable credentials keep random CredRandom values; non-discoverable ones derive
        // theirs from the wrapping key and the ID (`CredRandom.derived`).
        let credRandom: CredRandom? = !hasHMACSecret ? nil
            : isStored ? CredRandom.generate(random: random) : CredRandom.derived(wrappingKey: secrets.wrappingKey, credentialID: credentialID)
        if isStored {
            if isResident, let blob = credBlob, blob.count <= configuration.maxCredBlobLength { storedBlob = true; credBlob = blob } else { credBlob = nil }
            var credential = ResidentCredential(
                credentialID: credentialID, rpID: request.rp.id, rpIDHash: rpIDHash, rpName: request.rp.name,
                userHandle: isResident ? request.user.id : ResidentCredential.storedOnlyUserHandle(credentialID: credentialID),
                userName: isResident ? request.user.name : nil, userDisplayName: isResident ? request.user.displayName : nil,
                algorithm: algorithm.rawValue, privateKey: key.rawRepresentation, createdAt: clock.unixSeconds(),
                credProtect: credProtect, credBlob: credBlob, largeBlobKey: largeBlobKey,
                hmacSecretWithUV: credRandom?.withUV, hmacSecretWithoutUV: credRandom?.withoutUV)
            credential.backupFlags = configuration.defaultBackupFlags
            credential.discoverable = isResident
            credential.thirdPartyPayment = isThirdPartyPayment
            credential.counterless = configuration.countersZero
            credential.usedHMACSecret = hmacSecretAtCreation != nil && credRandom != nil
            try withStore { store throws(StoreError) in try store.saveResidentCredential(credential) }
            // A passkey just made is the account its user means at that RP next (AccountChooser).
            if isResident { accountChooser.used(credentialID: credential.credentialID, rpIDHash: credential.rpIDHash) }
        }

        var extensionOutputs: [CBORValue: CBORValue] = [:]
        if let requested = extensions.credProtect { extensionOutputs["credProtect"] = .unsignedInt(UInt64(requested.rawValue)) }
        if extensions.credBlob != nil { extensionOutputs["credBlob"] = .boolean(storedBlob) }
        if hasHMACSecret { extensionOutputs["hmac-secret"] = true }
        if let requested = extensions.thirdPartyPayment { extensionOutputs["thirdPartyPayment"] = .boolean(requested) }
        if let hmacSecretAtCreation, let credRandom {
            extensionOutputs["hmac-secret-mc"] = .byteString(try hmacSecretAtCreation.output(
                credRandom: credRandom, userVerified: userVerified, random: random))
        }
        if reportsMinPINLength, try minPinLengthRPIDs().contains(where: { $0.utf8.elementsEqual(request.rp.id.utf8) }) {
            extensionOutputs["minPinLength"] = .unsignedInt(UInt64(try minPINLength()))
        }

        // The credential's flags, AT and ED as its authData will have them (a previewSign key's
        // authData copies them, and has both).
        var flags: AuthenticatorData.Flags = configuration.defaultBackupFlags.union([.userPresent, .attestedCredentialData,
                                                                                      .extensionData])
        if userVerified { flags.insert(.userVerified) }
        // Attestation: the first format in the client's preference that we support
        // (CTAP 2.2 attestationFormatsPreference); packed with the batch certificate by default.
        // An enterprise attestation the platform asked for and the key granted is packed with
        // the store's own chain whatever the format preference: asking for it is the stronger
        // wish, and `none` would make the request pointless. A previewSign key's attestation
        // is made the same way.
        let format: AttestationStatementFormat = enterpriseAttestation ? .packed
            : AttestationStatementFormat.chosen(from: request.attestationFormatsPreference)
        func attest(_ data: [UInt8]) throws(CTAP2StatusCode) -> (format: String, statement: CBORValue) {
            if enterpriseAttestation {
                return (format.rawValue, try enterpriseAttestationStatement(signing: data + request.clientDataHash))
            }
            switch format {
            case .none:
                return (format.rawValue, .map([:]))
            case .packed:
                let signature: [UInt8]
                do { signature = try attestationKey.signature(for: data + request.clientDataHash) } catch { throw .other }
                return (format.rawValue, .map(["alg": CBORValue(COSEAlgorithm.es256.rawValue), "sig": .byteString(signature),
                                               "x5c": .array([.byteString(attestationCertificate)])]))
            }
        }
        var unsignedOutputs: [CBORValue: CBORValue]?
        if let (algorithm, signFlags) = previewSign {
            let generated = try previewSignKey(algorithm: algorithm, flags: signFlags, rpIDHash: rpIDHash,
                                               credentialID: credentialID, credentialFlags: flags, attest: attest)
            extensionOutputs["previewSign"] = generated.signed
            unsignedOutputs = ["previewSign": .map([PreviewSign.Member.seven: .byteString(generated.attestationObject)])]
        }

        let counter = configuration.countersZero ? 0 : try signatureCounter(credentialID: isStored ? credentialID : nil)
        let authenticatorData = AuthenticatorData(
            rpIDHash: rpIDHash, flags: flags, signCount: counter,
            attestedCredentialData: .init(aaguid: secrets.aaguid, credentialID: credentialID,
                                          coseKey: key.cosePublicKey),
            extensions: extensionOutputs.isEmpty ? nil : .map(extensionOutputs)).encoded()

        let (formatName, statement) = try attest(authenticatorData)
        return MakeCredentialResponse(format: formatName, authenticatorData: authenticatorData, attestationStatement: statement,
                                      largeBlobKey: largeBlobKey?.copyBytes(), enterpriseAttestation: enterpriseAttestation ? true : nil,
                                      unsignedExtensionOutputs: unsignedOutputs)
    }

    /// Whether an excludeList ID is a credential of ours for this RP that this request can see:
    /// one this key sealed (a resident one still stored and visible), or one stored under the
    /// ID it was added with; credProtect 3 credentials are invisible without UV.
    func excludes(_ id: [UInt8], rpIDHash: [UInt8], userVerified: Bool) throws(CTAP2StatusCode) -> Bool {
        guard let source = codec.open(id, rpIDHash: rpIDHash) else {
            return try storedCredential(id: id, rpIDHash: rpIDHash, userVerified: userVerified) != nil
        }
        if source.isResident {
            let stored = try withStore { store throws(StoreError) in try store.residentCredential(id: id) }
            guard let stored, stored.hiddenSince == nil else { return false }
        }
        return source.credProtect != .userVerificationRequired || userVerified
    }
}
