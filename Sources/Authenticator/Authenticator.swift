import CBOR
import CTAP
import FIDOCrypto

/// The sans-IO CTAP2 + U2F core: one request in, one response out.
///
/// Not reentrant: the transport hands it one request at a time (from its worker), and routes
/// power cycles through the same worker. Presence may block inside a request; the transport
/// keeps serving KEEPALIVE and CANCEL meanwhile and signals through `RequestContext`.
public final class Authenticator: @unchecked Sendable {
    let configuration: AuthenticatorConfiguration
    let store: CredentialStorePort
    public let presence: UserPresence
    /// Built-in user verification (`--uv`); nil: the key has none, and getInfo no `uv` option.
    public let userVerification: (any UserVerification)?
    /// Which account a sign-in without an allowList answers with, when the key chooses.
    public let accountChooser: AccountChooser
    let clock: AuthenticatorClock
    let random: RandomSource
    /// Where new credential keys are made and kept (`serve --keys tpm`); nil: in software.
    public let keyDevice: (any CredentialKeyDevice)?

    var secrets: DeviceSecrets
    var codec: CredentialIDCodec
    var attestationKey: P256.Signing.PrivateKey
    /// Monotonic time of the last power-up (device creation or SIGHUP).
    var poweredUpAt: UInt64
    /// authenticatorGetNextAssertion state: one at a time, bound to its channel.
    var pendingAssertions: PendingAssertions?
    /// Recently opened credential IDs with their imported keys (see OpenedCredentialCache).
    var openedCredentials = OpenedCredentialCache()
    /// SHA-256 of recently seen RP IDs (see RPIDHashCache).
    var rpIDHashes = RPIDHashCache()
    /// Settings as last read from or written to the store (see `loadSetting`).
    var settingsCache: [String: [UInt8]?] = [:]
    /// Volatile clientPIN state: key-agreement keys, pinUvAuthTokens, mismatch count.
    var pinUvAuth: ClientPIN
    /// credentialManagement enumerateRPs / enumerateCredentials state, bound to its channel.
    var credentialEnumeration: CredentialEnumeration?
    /// authenticatorLargeBlobs: the array being written in fragments.
    var largeBlobWrite: LargeBlobWrite?

    public init(configuration: AuthenticatorConfiguration = .init(), store: CredentialStorePort,
                presence: UserPresence, userVerification: (any UserVerification)? = nil, clock: AuthenticatorClock,
                random: RandomSource = SystemRandom(), accountChooser: AccountChooser = AccountChooser(),
                keyDevice: (any CredentialKeyDevice)? = nil) throws(StoreError) {
        // A key whose keys all come from its random source (a seeded rig key) cannot make RSA
        // keys (primes are searched for, not drawn), so it does not offer RSA at all: a client
        // offering [RS256, ES256] then gets ES256, not a refusal after the touch.
        var configuration = configuration
        if random.derivesKeys { configuration.algorithms.removeAll { $0.rsaPadding != nil } }
        // A curve this libcrypto lacks is not offered (getInfo lists only what the key can make).
        configuration.algorithms.removeAll { !$0.isAvailableInLibcrypto }
        // A key device (a TPM) makes P-256 keys: the key then offers ES256 alone, so that no
        // credential it makes is a software key the user did not ask for.
        if keyDevice != nil { configuration.algorithms = [.es256] }
        self.configuration = configuration
        self.keyDevice = keyDevice
        self.store = store
        self.presence = presence
        self.userVerification = userVerification
        self.accountChooser = accountChooser
        self.clock = clock
        self.random = random
        let secrets = try store.loadDeviceSecrets(orCreate: {
            // A reproducible key's wrapping key comes from its seed (its credential IDs seal under it).
            var secrets = try DeviceSecrets.generate()
            if random.derivesKeys { secrets.wrappingKey = random.secret(count: 32) }
            return secrets
        })
        let attestationKey: P256.Signing.PrivateKey
        do throws(CryptoError) {
            attestationKey = switch configuration.attestation {
            case .batch: try BatchAttestation.signingKey()
            case .installation: try P256.Signing.PrivateKey(secret: secrets.attestationPrivateKey)
            }
        } catch {
            throw .corrupt("attestation key")
        }
        self.secrets = secrets
        self.codec = CredentialIDCodec(wrappingKey: secrets.wrappingKey)
        self.attestationKey = attestationKey
        self.poweredUpAt = clock.monotonicNanoseconds()
        self.pinUvAuth = ClientPIN(
            initialUsageTimeLimit: Self.nanoseconds(milliseconds: configuration.pinUvAuthTokenInitialUsageMilliseconds),
            maxUsageTimePeriod: Self.nanoseconds(milliseconds: configuration.pinUvAuthTokenMaxUsageMilliseconds))
    }

    /// The key's "power cycle" (device recreated, SIGHUP): reopens the reset window and drops
    /// all volatile state — new PIN/UV key-agreement keys and tokens, and the PIN_AUTH_BLOCKED
    /// state lifted (CTAP 2.1 §6.5.5.7).
    public func powerCycle() {
        poweredUpAt = clock.monotonicNanoseconds()
        endCommandSequences()
        openedCredentials.removeAll()
        pinUvAuth.powerUp()
    }

    /// Drops the state that spans requests of one command: a getNextAssertion sequence, a
    /// credential-management enumeration, a large-blob array half written.
    func endCommandSequences() {
        pendingAssertions = nil
        credentialEnumeration = nil
        largeBlobWrite = nil
    }

    /// The attestation CA certificate (DER), for relying parties that want to trust this key.
    public var attestationCACertificate: [UInt8] {
        configuration.attestation == .batch ? BatchAttestation.caCertificate : secrets.attestationCACertificate
    }
    /// The attestation certificate (DER): packed x5c[0], U2F registration.
    var attestationCertificate: [UInt8] {
        configuration.attestation == .batch ? BatchAttestation.certificate : secrets.attestationCertificate
    }
    public var aaguid: [UInt8] { secrets.aaguid }

    /// Handle one CTAPHID_CBOR message: command byte ‖ CBOR parameters. Returns status ‖ CBOR.
    public func handleCTAP2(_ message: [UInt8], context: RequestContext) -> [UInt8] {
        // As exchangeCTAP2, without keeping the request for a caller (no copy of it to return).
        switch request(in: message, context: context) {
        case let .success(request): respond(to: request, context: context).encoded()
        case let .failure(status): [status.rawValue]
        }
    }

    /// One CTAPHID_CBOR message read and answered, both typed: `request` is nil when the bytes
    /// were no request this key takes (the outcome then says why); the answer is encoded only
    /// by whoever sends it (`outcome.encoded()`).
    public func exchangeCTAP2(_ message: [UInt8], context: RequestContext)
        -> (request: CTAP2Request?, outcome: Result<CTAP2Response, CTAP2StatusCode>) {
        switch request(in: message, context: context) {
        case let .success(request): (request, respond(to: request, context: context))
        case let .failure(status): (nil, .failure(status))
        }
    }

    /// The request a CTAPHID_CBOR message carries, once the command sequences it ends are ended.
    private func request(in message: [UInt8], context: RequestContext) -> Result<CTAP2Request, CTAP2StatusCode> {
        guard let commandByte = message.first else { return .failure(.invalidLength) }
        guard let command = CTAPCommand(rawValue: commandByte), knowsCommand(command) else {
            return .failure(.invalidCommand)
        }
        // Sequences bound to this channel end when another command arrives on it.
        if pendingAssertions?.isEnded(by: command, on: context.channel) == true { pendingAssertions = nil }
        if credentialEnumeration?.isEnded(by: command, on: context.channel) == true { credentialEnumeration = nil }
        if command == .getAssertion, let common = GetAssertionRequest(commonShape: message.dropFirst()) {
            return .success(.getAssertion(common))     // read without the CBOR tree; the same request
        }
        do throws(CTAP2StatusCode) {
            return .success(try CTAP2Request(command: command, parameters: try Self.decodeParameters(message.dropFirst())))
        } catch {
            return .failure(error)
        }
    }

    /// The answer to one decoded request. Internal: exchangeCTAP2 checks first that this key
    /// offers the command and ends the command sequences it ends.
    func respond(to request: CTAP2Request, context: RequestContext) -> Result<CTAP2Response, CTAP2StatusCode> {
        do throws(CTAP2StatusCode) {
            switch request {
            case .getInfo: return .success(.info(try getInfo()))
            case let .makeCredential(request): return .success(.credential(try makeCredential(request, context: context)))
            case let .getAssertion(request): return .success(.assertion(try getAssertion(request, context: context)))
            case .getNextAssertion: return .success(.assertion(try getNextAssertion(context: context)))
            case .reset:
                try reset(context: context)
                return .success(.empty)
            case .selection:
                try selection(context: context)
                return .success(.empty)
            case let .clientPIN(request): return .success(try clientPIN(request, context: context).map(CTAP2Response.clientPIN) ?? .empty)
            case let .credentialManagement(request, _):
                return .success(try credentialManagement(request, context: context).map(CTAP2Response.credentialManagement) ?? .empty)
            case let .largeBlobs(request): return .success(try largeBlobs(request).map(CTAP2Response.largeBlobs) ?? .empty)
            case let .config(request):
                try authenticatorConfig(request)
                return .success(.empty)
            }
        } catch {
            return .failure(error)
        }
    }

    static func decodeParameters(_ bytes: ArraySlice<UInt8>) throws(CTAP2StatusCode) -> CBORValue? {
        guard !bytes.isEmpty else { return nil }
        do {
            return try CBORDecoder.decode(Array(bytes))
        } catch {
            throw CTAP2StatusCode(error)
        }
    }

    /// Ask for the user's touch, mapping the answer to CTAP status codes.
    /// `subject`: the bytes that identify the request (PresenceRequest.fingerprint);
    /// `rpIDHash` defaults to SHA-256 of `rpID`.
    func collectPresence(_ operation: PresenceRequest.Operation, rpID: String?, userName: String? = nil,
                         context: RequestContext, timeoutMilliseconds: UInt64? = nil,
                         subject: [UInt8]? = nil, rpIDHash: [UInt8]? = nil) throws(CTAP2StatusCode) {
        if context.cancellation.isCancelled { throw .keepaliveCancel }
        let waitsForUser = !presence.answersImmediately
        if waitsForUser { context.reportStatus(.userPresenceNeeded) }
        defer { if waitsForUser { context.reportStatus(.processing) } }
        let request = PresenceRequest(operation: operation, rpID: rpID, userName: userName,
                                      timeoutMilliseconds: timeoutMilliseconds ?? configuration.presenceTimeoutMilliseconds,
                                      rpIDHash: rpIDHash ?? rpID.map { SHA256.hash(Array($0.utf8)) },
                                      // Only a provider that waits tells repeated requests apart
                                      // (ControlPresence); one that answers at once needs no hash.
                                      fingerprint: waitsForUser ? subject.map { SHA256.hash($0) } : nil)
        switch presence.confirmPresence(request, cancellation: context.cancellation) {
        case .approved:
            if context.cancellation.isCancelled { throw .keepaliveCancel }
        case .denied: throw .operationDenied
        case .timedOut: throw .userActionTimeout
        case .cancelled: throw .keepaliveCancel
        }
    }

    func nonce() -> [UInt8] { random.nonce(count: 12) }

    /// A configured duration (milliseconds) in the clock's unit, nanoseconds; saturating, so a
    /// window of "forever" stays forever.
    static func nanoseconds(milliseconds: UInt64) -> UInt64 {
        let (product, overflow) = milliseconds.multipliedReportingOverflow(by: 1_000_000)
        return overflow ? .max : product
    }

    /// The signCount of a signature: 0 for a counterless resident credential, and for a
    /// non-discoverable one while the key makes counterless credentials; the store's next
    /// counter value otherwise.
    func signatureCounter(for resident: ResidentCredential?) throws(CTAP2StatusCode) -> UInt32 {
        if resident?.counterless ?? configuration.countersZero { return 0 }
        return try signatureCounter(credentialID: resident?.credentialID)
    }

    func signatureCounter(credentialID: [UInt8]?) throws(CTAP2StatusCode) -> UInt32 {
        try withStore { store throws(StoreError) in try store.nextSignatureCounter(credentialID: credentialID) }
    }

    /// The CTAP2 handlers make every throwing store call through here, so that its failures
    /// reach the wire through the one mapping, `CTAP2StatusCode.init(_: StoreError)`. (U2F
    /// answers with its own status words; `init` passes the StoreError on to its caller.)
    func withStore<T>(_ body: (CredentialStorePort) throws(StoreError) -> T) throws(CTAP2StatusCode) -> T {
        do {
            return try body(store)
        } catch {
            throw CTAP2StatusCode(error)
        }
    }
}

extension CTAP2StatusCode {
    /// The one mapping from store failures to the wire.
    public init(_ error: StoreError) {
        switch error {
        case .full: self = .keyStoreFull
        case .corrupt, .io, .locked, .permissions, .sealed: self = .other
        }
    }
}
