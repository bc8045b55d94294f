import Authenticator
import CBOR
import CTAP
import Encoding
import FIDOClient
import FIDOCrypto
import SystemIO

/// The WebAuthn client of Latchkey's passkey provider: what a browser does between a page's
/// `create()`/`get()` and the key, done by the native host for the calls the extension answers
/// (docs/native-host.md). It builds `clientDataJSON` for the origin the browser reported, runs
/// makeCredential/getAssertion on the user's running key over CTAP — so the key's presence and
/// UV providers ask the user, and its counters, credProtect and journal apply as for any
/// client — and returns WebAuthn L3's JSON form of the credential (`RegistrationResponseJSON`,
/// `AuthenticationResponseJSON`), from which the extension builds the page's object.
///
/// The RP ID is checked before (`NativeHostSession`); this type trusts `rpID`.
public final class PasskeyClient {
    /// How the page sees the key: a roaming authenticator reached over USB, as Chromium reports a
    /// security key (the passkeys live in the key, not in the browser or the platform).
    public static let attachment = "cross-platform"
    public static let transports = ["usb"]

    private let link: CTAP2Link
    private let timeoutMilliseconds: UInt64
    private let pin: PIN?

    /// `timeoutMilliseconds`: how long the ceremony may wait for the key (its user); the link
    /// cancels the request after that (`timeoutMilliseconds(_:)` gives it from the options).
    /// `pin`: what the person typed in the extension's window, for a key that verifies users by
    /// its PIN; used for one pinUvAuthToken and never kept, logged or sent anywhere else.
    public init(link: CTAP2Link, timeoutMilliseconds: UInt64 = defaultTimeoutMilliseconds, pin: PIN? = nil) {
        self.link = link
        self.timeoutMilliseconds = timeoutMilliseconds
        self.pin = pin
    }

    /// WebAuthn L3 §5.4.x: the RP's `timeout` is a hint. As Chromium does, it is kept within
    /// 10 seconds and 10 minutes, and is 5 minutes when the RP gives none.
    public static let defaultTimeoutMilliseconds: UInt64 = 300_000

    public static func timeoutMilliseconds(_ requested: Double?) -> UInt64 {
        guard let requested, requested.isFinite else { return defaultTimeoutMilliseconds }
        return UInt64(min(max(requested, 10_000), 600_000))
    }

    // MARK: - create()

    /// `topOrigin`: the top-level page's origin when the request comes from a frame of another
    /// origin (WebAuthn L3 §5.1.3: `crossOrigin` true and `topOrigin` in clientDataJSON); nil for a
    /// top-level page or a frame of its own origin.
    public func create(origin: String, topOrigin: String? = nil, rpID: String,
                       options: PasskeyCreationOptions) throws(SignalFailure) -> JSONValue {
        let largeBlobRequired = try options.extensions.largeBlob?.isRequiredForCreate() ?? false
        let info = try deviceInfo()
        let clientData = ClientDataJSON.serialize(.create, challenge: options.challenge, origin: origin,
                                                  crossOrigin: topOrigin != nil, topOrigin: topOrigin)
        // residentKey "preferred" takes a discoverable credential when the key can make one (§5.4.6).
        let residentKey = options.residentKey == "required"
            || (options.residentKey == "preferred" && info.options["rk"] == true)
        if options.residentKey == "required", info.options["rk"] != true {
            throw .notAllowed("the key cannot make discoverable credentials")
        }
        // largeBlob (§10.1.5): the key keeps a large-blob key only for a discoverable credential
        // (CTAP 2.1 §12.3); "required" on a key or a credential that cannot have one makes nothing.
        let largeBlobKey = options.extensions.largeBlob != nil && residentKey && Self.storesLargeBlobs(info)
        if largeBlobRequired, !largeBlobKey {
            throw .notSupported(residentKey ? "the key cannot store large blobs"
                                            : "largeBlob support \"required\" needs a discoverable credential")
        }
        guard !options.algorithms.isEmpty else {
            throw .notSupported("pubKeyCredParams names no public-key algorithm")
        }
        var flags: [String: Bool] = [:]
        if residentKey { flags["rk"] = true }
        let clientDataHash = SHA256.hash(clientData)
        let excluded = try excludeList(options.excludeCredentials, rpID: rpID, info: info)
        // CTAP 2.1 §6.1.2 (makeCredUvNotRqd): a key protected by user verification makes a
        // discoverable credential, or any credential without that option, only verified, so the
        // client verifies even when the RP discourages it — as Chromium does.
        let protected = info.options["uv"] == true || info.options["clientPin"] == true
        let verifyAnyway = protected && (residentKey || info.options["makeCredUvNotRqd"] != true)
        let requirement = verifyAnyway && options.userVerification == "discouraged" ? "preferred" : options.userVerification
        let verified = try userVerification(requirement, info: info, permission: .makeCredential,
                                            rpID: rpID, clientDataHash: clientDataHash)
        if case .builtIn = verified { flags["uv"] = true }
        var (inputs, hmacSecret) = try creationExtensions(options.extensions, info: info)
        if largeBlobKey { inputs.largeBlobKey = true }
        let request = MakeCredentialRequest(
            clientDataHash: clientDataHash, rp: RelyingPartyEntity(id: rpID, name: options.rpName),
            user: UserEntity(id: options.userID, name: options.userName, displayName: options.userDisplayName),
            pubKeyCredParams: options.algorithms.map { CredentialParameters(algorithm: $0) },
            excludeList: excluded.map { CredentialDescriptor(id: $0) }, extensions: inputs,
            options: RequestOptions(flags), pinUvAuthParam: verified.param, pinUvAuthProtocol: verified.protocolNumber)
        let body = try exchange(.makeCredential, request.cborValue, name: "makeCredential")
        guard let format = body[1]?.stringValue, let authDataBytes = body[2]?.bytesValue, let statement = body[3],
              let authData = try? AuthenticatorData(decoding: authDataBytes),
              let attested = authData.attestedCredentialData else {
            throw .internal("the key's makeCredential response is malformed")
        }
        // attestation "none" (the default, and what an unknown value means, §5.4.7): the
        // statement is dropped, as browsers do; "indirect", "direct" and "enterprise" get the key's own.
        let keepStatement = ["indirect", "direct", "enterprise"].contains(options.attestation)
        let attestationObject = CBORValue.map([
            .textString("fmt"): .textString(keepStatement ? format : "none"),
            .textString("attStmt"): keepStatement ? statement : .map([:]),
            .textString("authData"): .byteString(authDataBytes),
        ]).encoded()
        let algorithm = attested.publicKey[3]?.intValue ?? 0
        var response = JSONValue.Object()
        response.add("clientDataJSON", Base64URL.encode(clientData))
        response.add("authenticatorData", Base64URL.encode(authDataBytes))
        response.add("transports", strings: Self.transports)
        if let spki = COSEKey(attested.publicKey).flatMap(Self.subjectPublicKeyInfo) {
            response.add("publicKey", Base64URL.encode(spki))
        }
        response.add("publicKeyAlgorithm", Int64(algorithm))
        response.add("attestationObject", Base64URL.encode(attestationObject))
        var extensions = JSONValue.Object()
        if options.credProps {
            var credProps = JSONValue.Object()
            credProps.add("rk", residentKey)
            extensions.add("credProps", credProps)
        }
        let outputs = authData.extensions?.mapValue ?? [:]
        if options.extensions.prf != nil {
            // WebAuthn L3 §10.1.4: enabled when the key made the credential with hmac-secret;
            // results when it evaluated the inputs at creation (hmac-secret-mc).
            var prf = JSONValue.Object()
            prf.add("enabled", outputs[.textString("hmac-secret")]?.boolValue == true)
            if let hmacSecret, let encrypted = outputs[.textString("hmac-secret-mc")]?.bytesValue {
                prf.add("results", try hmacSecret.results(encrypted))
            }
            extensions.add("prf", prf)
        }
        if options.extensions.credBlob != nil {
            extensions.add("credBlob", outputs[.textString("credBlob")]?.boolValue == true)
        }
        if options.extensions.largeBlob != nil {
            // supported: the key gave the credential a large-blob key (response member 0x05).
            var largeBlob = JSONValue.Object()
            largeBlob.add("supported", body[5]?.bytesValue?.count == 32)
            extensions.add("largeBlob", largeBlob)
        }
        return Self.credentialJSON(id: attested.credentialID, response: response, extensions: extensions)
    }

    /// getPublicKey()'s SubjectPublicKeyInfo (WebAuthn L3 §5.2.1.1) for the algorithms a
    /// browser must know: ES256 (and the other NIST curves), EdDSA with Ed25519, RS256 and PS256.
    /// For anything else (ES256K, ML-DSA) it is nil, and so is getPublicKey(), as the
    /// specification allows; the page then reads the COSE key from authenticatorData.
    static func subjectPublicKeyInfo(_ key: COSEKey) -> [UInt8]? {
        switch key {
        case let .ec2P256(_, x, y):
            return SubjectPublicKeyInfo.ec(curve: .p256, x: x, y: y)
        case let .ec2(curve, _, x, y):
            switch curve {
            case .p256: return SubjectPublicKeyInfo.ec(curve: .p256, x: x, y: y)
            case .p384: return SubjectPublicKeyInfo.ec(curve: .p384, x: x, y: y)
            case .p521: return SubjectPublicKeyInfo.ec(curve: .p521, x: x, y: y)
            case .secp256k1: return nil
            }
        case let .okpEd25519(x):
            return SubjectPublicKeyInfo.ed25519(x)
        case let .rsa(_, n, e):
            return SubjectPublicKeyInfo.rsa(modulus: n, exponent: e)
        case .akp:
            return nil
        }
    }

    // MARK: - get()

    /// `allowList` is the credential the user chose in Latchkey's menu, or the page's
    /// allowCredentials; with neither, the key chooses (it holds one account, or picks for its user).
    public func get(origin: String, topOrigin: String? = nil, rpID: String, options: PasskeyRequestOptions,
                    allowList: [[UInt8]]) throws(SignalFailure) -> JSONValue {
        let largeBlob = options.extensions.largeBlob
        try largeBlob?.checkForGet(allowCredentials: options.allowCredentials)
        let info = try deviceInfo()
        let clientData = ClientDataJSON.serialize(.get, challenge: options.challenge, origin: origin,
                                                  crossOrigin: topOrigin != nil, topOrigin: topOrigin)
        var flags: [String: Bool] = [:]
        let clientDataHash = SHA256.hash(clientData)
        // A large-blob write needs a token with largeBlobWrite from a key that verifies its user
        // (its PIN, or built-in UV as a token): such a sign-in is verified whatever the site asked.
        // A key that verifies nobody writes without one (CTAP 2.1 §6.10.2).
        let protected = info.options["clientPin"] == true || info.options["uv"] == true
        let writesBlob = largeBlob?.write != nil && Self.storesLargeBlobs(info) && protected
        let verified = try userVerification(writesBlob ? "required" : options.userVerification, info: info,
                                            permission: writesBlob ? [.getAssertion, .largeBlobWrite] : .getAssertion,
                                            rpID: rpID, clientDataHash: clientDataHash, tokenForBuiltIn: writesBlob)
        if case .builtIn = verified { flags["uv"] = true }
        var inputs = GetAssertionExtensions()
        var hmacSecret: HMACSecretClient?
        let prfValues = try options.extensions.prf?.values(allowCredentials: options.allowCredentials, allowList: allowList)
        if let prfValues, info.extensions.contains("hmac-secret") {
            let client = try HMACSecretClient(link: link)
            inputs.hmacSecret = try client.input(prfValues)
            hmacSecret = client
        }
        if options.extensions.getCredBlob, info.extensions.contains("credBlob") { inputs.credBlob = true }
        if largeBlob != nil, Self.storesLargeBlobs(info) { inputs.largeBlobKey = true }
        let request = GetAssertionRequest(rpID: rpID, clientDataHash: clientDataHash,
                                          allowList: allowList.map { CredentialDescriptor(id: $0) }, extensions: inputs,
                                          options: RequestOptions(flags), pinUvAuthParam: verified.param,
                                          pinUvAuthProtocol: verified.protocolNumber)
        let body = try exchange(.getAssertion, request.cborValue, name: "getAssertion")
        guard let authData = body[2]?.bytesValue, let signature = body[3]?.bytesValue,
              let credentialID = body[1]?["id"]?.bytesValue ?? (allowList.count == 1 ? allowList[0] : nil) else {
            throw .internal("the key's getAssertion response is malformed")
        }
        var response = JSONValue.Object()
        response.add("clientDataJSON", Base64URL.encode(clientData))
        response.add("authenticatorData", Base64URL.encode(authData))
        response.add("signature", Base64URL.encode(signature))
        if let userHandle = body[4]?["id"]?.bytesValue {
            response.add("userHandle", Base64URL.encode(userHandle))
        }
        let outputs = (try? AuthenticatorData(decoding: authData))?.extensions?.mapValue ?? [:]
        var extensions = JSONValue.Object()
        if options.extensions.prf != nil {
            var prf = JSONValue.Object()
            if let hmacSecret, let encrypted = outputs[.textString("hmac-secret")]?.bytesValue {
                prf.add("results", try hmacSecret.results(encrypted))
            }
            extensions.add("prf", prf)
        }
        if options.extensions.getCredBlob {
            extensions.add("getCredBlob", Base64URL.encode(outputs[.textString("credBlob")]?.bytesValue ?? []))
        }
        if let largeBlob {
            let key = body[7]?.bytesValue.flatMap { $0.count == 32 ? SecretBytes($0) : nil }
            extensions.add("largeBlob", largeBlobResults(largeBlob, key: key, info: info, verified: verified))
        }
        return Self.credentialJSON(id: credentialID, response: response, extensions: extensions)
    }

    /// The key's makeCredential extensions for the page's (and the hmac-secret client whose
    /// shared secret decrypts hmac-secret-mc's output): prf as hmac-secret (with hmac-secret-mc
    /// when the page gave inputs and the key evaluates at creation), credProtect, credBlob.
    private func creationExtensions(_ asked: PasskeyExtensionInputs,
                                    info: DeviceInfo) throws(SignalFailure) -> (MakeCredentialExtensions, HMACSecretClient?) {
        var inputs = MakeCredentialExtensions()
        var client: HMACSecretClient?
        if let prf = asked.prf, info.extensions.contains("hmac-secret") {
            inputs.hmacSecret = true
            if let values = prf.eval, info.extensions.contains("hmac-secret-mc") {
                let made = try HMACSecretClient(link: link)
                inputs.hmacSecretMC = try made.input(values)
                client = made
            }
        }
        if let policy = asked.credentialProtectionPolicy {
            if info.extensions.contains("credProtect") {
                inputs.credProtect = policy
            } else if asked.enforceCredentialProtectionPolicy, policy != .userVerificationOptional {
                // CTAP 2.1 §12.1: the site insists, and this key cannot protect the credential so.
                throw .notAllowed("the key cannot apply the credential protection the site requires (no credProtect)")
            }
        }
        if let blob = asked.credBlob, info.extensions.contains("credBlob"), blob.count <= (info.maxCredBlobLength ?? 0) {
            inputs.credBlob = blob
        }
        return (inputs, client)
    }

    // MARK: - largeBlob

    /// Whether the key keeps a large-blob array and gives credentials keys into it.
    static func storesLargeBlobs(_ info: DeviceInfo) -> Bool {
        info.options["largeBlobs"] == true && info.extensions.contains("largeBlobKey")
    }

    /// §10.1.5's outputs of a sign-in: `{"blob"}` read with the credential's large-blob key (no
    /// member when the array holds none for it), or `{"written"}`. A credential without a key, an
    /// array that does not read or does not take the blob give no blob and `written: false`, as
    /// the specification has it: the sign-in itself succeeded.
    private func largeBlobResults(_ request: LargeBlobRequest, key: SecretBytes?, info: DeviceInfo,
                                  verified: Verification) -> JSONValue.Object {
        var results = JSONValue.Object()
        let authenticator = RemoteAuthenticator(link: link, info: info)
        if request.read {
            if let key, let array = try? authenticator.largeBlobArray(),
               let blob = try? LargeBlobStorage.blob(in: array, key: key) {
                results.add("blob", Base64URL.encode(blob))
            }
        } else if let blob = request.write {
            var written = false
            if let key, let array = try? authenticator.largeBlobArray(),
               let updated = try? LargeBlobStorage.replacingBlob(in: array, key: key, with: blob,
                                                                 maxLength: info.maxSerializedLargeBlobArray ?? 0,
                                                                 random: SystemRandom()) {
                written = (try? authenticator.writeLargeBlobArray(updated, token: verified.token)) != nil
            }
            results.add("written", written)
        }
        return results
    }

    // MARK: - The key

    /// Has the key verify its user for a sign-in at `rpID` — its built-in UV
    /// (getPinUvAuthTokenUsingUvWithPermissions), else its PIN (as `userVerification` asks for
    /// it: `.pin` when none or a wrong one was given) — before the provider lists the passkeys
    /// only a verified sign-in may use. A key that can verify nobody is NotAllowedError.
    public func verifyUser(rpID: String) throws(SignalFailure) {
        let info = try deviceInfo()
        if info.options["uv"] == true, info.options["pinUvAuthToken"] == true {
            do throws(DeviceError) {
                _ = try RemoteAuthenticator(link: link, info: info).uvAuthToken(permissions: .getAssertion, rpID: rpID)
                return
            } catch {
                throw Self.failure(error)
            }
        }
        switch try userVerification("required", info: info, permission: .getAssertion, rpID: rpID,
                                    clientDataHash: [UInt8](repeating: 0, count: 32)) {
        case .pinToken: return
        case .builtIn, .none: throw .notAllowed("the key cannot verify its user before a sign-in")
        }
    }

    private func deviceInfo() throws(SignalFailure) -> DeviceInfo {
        let body = try exchange(.getInfo, nil, name: "getInfo")
        do throws(DeviceError) {
            return try DeviceInfo(cbor: body)
        } catch {
            throw .internal("the key's getInfo response is malformed (\(error.message))")
        }
    }

    /// excludeCredentials as the key can take it. A list longer than the key's
    /// maxCredentialCountInList is probed in batches, as Chromium does: a getAssertion with
    /// up=false and a batch as allowList finds whether one of them is the key's (no touch, no
    /// signature counted as a sign-in); the makeCredential then names that one, so the key still
    /// asks for presence before CREDENTIAL_EXCLUDED. IDs longer than maxCredentialIdLength cannot
    /// be the key's and are dropped.
    private func excludeList(_ ids: [[UInt8]], rpID: String, info: DeviceInfo) throws(SignalFailure) -> [[UInt8]] {
        let usable = ids.filter { $0.count <= (info.maxCredentialIdLength ?? 1023) }
        let batch = max(1, info.maxCredentialCountInList ?? usable.count)
        guard usable.count > batch else { return usable }
        for start in stride(from: 0, to: usable.count, by: batch) {
            let slice = Array(usable[start..<min(start + batch, usable.count)])
            let probe = GetAssertionRequest(rpID: rpID, clientDataHash: [UInt8](repeating: 0, count: 32),
                                            allowList: slice.map { CredentialDescriptor(id: $0) },
                                            options: RequestOptions(["up": false]))
            do throws(SignalFailure) {
                let body = try exchange(.getAssertion, probe.cborValue, name: "getAssertion (exclude probe)")
                if let found = body[1]?["id"]?.bytesValue { return [found] }
                if slice.count == 1 { return slice }
            } catch .notAllowed {
                continue   // NO_CREDENTIALS: none of this batch is the key's
            }
        }
        return []
    }

    /// How the ceremony verifies the user: not at all, by the key itself (`uv` option), or by
    /// the key's PIN (a pinUvAuthToken's pinUvAuthParam over the clientDataHash).
    enum Verification {
        case none
        case builtIn
        case pinToken(param: [UInt8], protocolNumber: UInt64, token: PinUvAuthToken)

        var param: [UInt8]? { if case .pinToken(let param, _, _) = self { param } else { nil } }
        var protocolNumber: UInt64? { if case .pinToken(_, let number, _) = self { number } else { nil } }
        /// The token itself, for a large-blob write after the sign-in.
        var token: PinUvAuthToken? { if case .pinToken(_, _, let token) = self { token } else { nil } }
    }

    /// WebAuthn §6.1.2's choice, as Chromium and Firefox make it: "discouraged" verifies nobody;
    /// otherwise a key that verifies users itself (getInfo `uv`: Latchkey's --uv) does; a key with
    /// a PIN (and no built-in UV) gets its PIN, asked in the extension's window — for "required"
    /// and "preferred" alike, as browsers ask for a security key's PIN; a key with neither serves
    /// "preferred" unverified and refuses "required" before it is touched.
    /// `tokenForBuiltIn`: a key with built-in UV verifies for a pinUvAuthToken (getPinUvAuthToken-
    /// UsingUvWithPermissions) instead of the `uv` option, for a later command that needs one.
    private func userVerification(_ requirement: String, info: DeviceInfo, permission: PinUvAuthPermissions,
                                  rpID: String, clientDataHash: [UInt8],
                                  tokenForBuiltIn: Bool = false) throws(SignalFailure) -> Verification {
        guard requirement != "discouraged" else { return .none }
        if info.options["uv"] == true, tokenForBuiltIn, info.options["pinUvAuthToken"] == true {
            do throws(DeviceError) {
                let token = try RemoteAuthenticator(link: link, info: info).uvAuthToken(permissions: permission, rpID: rpID)
                return .pinToken(param: token.authenticate(clientDataHash),
                                 protocolNumber: UInt64(token.pinUvAuthProtocol.rawValue), token: token)
            } catch {
                throw Self.failure(error)
            }
        }
        if info.options["uv"] == true { return .builtIn }
        guard info.options["clientPin"] == true else {
            if requirement == "required" { throw .notAllowed("the key cannot verify the user (no built-in UV and no PIN)") }
            return .none
        }
        let authenticator = RemoteAuthenticator(link: link, info: info)
        let minimum = info.minPINLength ?? PIN.defaultMinimumLength
        func retries() -> Int? { try? authenticator.pinRetries().retries }
        guard let pin else { throw .pin(PINNeed(state: .required, retries: retries(), minimumLength: minimum)) }
        do throws(PIN.Problem) {
            try pin.check(minimumLength: minimum)
        } catch {
            throw .pin(PINNeed(state: .tooShort, retries: retries(), minimumLength: minimum))
        }
        do throws(DeviceError) {
            let token = try authenticator.pinUvAuthTokenKeepingStatus(pin: pin, permissions: permission, rpID: rpID)
            return .pinToken(param: token.authenticate(clientDataHash), protocolNumber: UInt64(token.pinUvAuthProtocol.rawValue),
                             token: token)
        } catch {
            switch error.statusCode {
            case .pinInvalid?: throw .pin(PINNeed(state: .wrong, retries: retries(), minimumLength: minimum))
            case .pinAuthBlocked?: throw .pin(PINNeed(state: .powerCycle, retries: retries(), minimumLength: minimum))
            case .pinBlocked?: throw .pin(PINNeed(state: .blocked, retries: 0, minimumLength: minimum))
            case .pinPolicyViolation?: throw .pin(PINNeed(state: .tooShort, retries: retries(), minimumLength: minimum))
            default: throw Self.failure(error)
            }
        }
    }

    private func exchange(_ command: CTAPCommand, _ parameters: CBORValue?, name: String) throws(SignalFailure) -> CBORValue {
        let response: [UInt8]
        let started = MonotonicClock.nanoseconds()
        do throws(DeviceError) {
            response = try link.exchange([command.rawValue] + (parameters?.encoded() ?? []))
        } catch {
            // The link gave up after the ceremony's time (and cancelled the request on the key):
            // a timeout, which WebAuthn reports as NotAllowedError.
            if case .transport = error, (MonotonicClock.nanoseconds() - started) / 1_000_000 >= timeoutMilliseconds {
                throw .notAllowed("the key's user did not answer within \(timeoutMilliseconds / 1000) s (the request's timeout)")
            }
            throw Self.failure(error)
        }
        guard let status = response.first else { throw .internal("the key answered \(name) with nothing") }
        guard status == CTAP2StatusCode.success.rawValue else {
            throw Self.failure(.status(CTAP2StatusCode(rawValue: status), raw: status, command: name))
        }
        guard let body = try? CBORDecoder.decode(Array(response.dropFirst())), body.mapValue != nil else {
            throw .internal("the key answered \(name) with malformed CBOR")
        }
        return body
    }

    /// The DOMException a browser gives the page for what the key answered (WebAuthn §6.3.2,
    /// §6.3.3 and Chromium's mapping): the page learns no more than it would from a browser.
    static func failure(_ error: DeviceError) -> SignalFailure {
        guard case let .status(code, raw, command) = error else {
            return .internal("the key could not be reached: \(error.message)")
        }
        let hex = String(raw, radix: 16, uppercase: true)
        let status = code?.specName ?? "0x" + (raw < 0x10 ? "0" : "") + hex
        switch code {
        case .credentialExcluded?:
            return .invalidState("the key already holds a credential of excludeCredentials")
        case .unsupportedAlgorithm?:
            return .notSupported("the key makes none of pubKeyCredParams' algorithms")
        case .noCredentials?:
            return .notAllowed("the key holds no passkey for this site that the request allows")
        case .operationDenied?, .userActionTimeout?, .keepaliveCancel?:
            return .notAllowed("the user did not approve \(command) on the key (\(status))")
        case .puatRequired?, .pinNotSet?, .pinInvalid?, .pinBlocked?, .pinAuthInvalid?, .uvBlocked?, .uvInvalid?:
            return .notAllowed("the key refused the user verification of \(command) (\(status))")
        default:
            return .notAllowed("the key refused \(command) (\(status))")
        }
    }

    /// `{"id", "rawId", "type", "authenticatorAttachment", "response", "clientExtensionResults"}`:
    /// the member order of WebAuthn L3's `toJSON()` output.
    static func credentialJSON(id: [UInt8], response: JSONValue.Object, extensions: JSONValue.Object) -> JSONValue {
        var credential = JSONValue.Object()
        credential.add("id", Base64URL.encode(id))
        credential.add("rawId", Base64URL.encode(id))
        credential.add("response", response)
        credential.add("authenticatorAttachment", attachment)
        credential.add("clientExtensionResults", extensions)
        credential.add("type", "public-key")
        return credential.value
    }
}
