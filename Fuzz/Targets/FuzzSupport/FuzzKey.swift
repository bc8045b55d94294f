import Authenticator
import CBOR
import CTAP
import FIDOClient
import FIDOCrypto
import KeyService
import Synchronization

/// A clock the script moves: starts at one hour of uptime, so reset windows and token timers
/// can be crossed by a few records.
public final class FuzzClock: AuthenticatorClock, @unchecked Sendable {
    private let now = Mutex<UInt64>(3_600_000_000_000)
    public init() {}
    public func monotonicNanoseconds() -> UInt64 { now.withLock { $0 } }
    public func unixSeconds() -> Int64 { 1_800_000_000 + Int64(monotonicNanoseconds() / 1_000_000_000) }
    public func advance(milliseconds: UInt64) { now.withLock { $0 &+= milliseconds &* 1_000_000 } }
}

/// Presence the script decides: approved unless the last control record said otherwise.
public final class FuzzPresence: UserPresence, @unchecked Sendable {
    private let answer = Mutex<PresenceResult>(.approved)
    public init() {}
    public func set(_ result: PresenceResult) { answer.withLock { $0 = result } }
    public func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult {
        answer.withLock { $0 }
    }
    public var answersImmediately: Bool { true }
}

/// Built-in user verification the script decides (setup bit 5): verified unless a control
/// record said otherwise.
public final class FuzzVerification: UserVerification, @unchecked Sendable {
    private let answer = Mutex<VerificationResult>(.verified)
    public init() {}
    public func set(_ result: VerificationResult) { answer.withLock { $0 = result } }
    public func verifyUser(_ request: VerificationRequest, cancellation: CancellationFlag) -> VerificationResult {
        answer.withLock { $0 }
    }
    public var modality: UInt32 { UserVerificationMethod.passcodeExternal }
}

/// Deterministic bytes (splitmix64), so that a finding replays the same keys and IDs.
public final class FuzzRandom: RandomSource, @unchecked Sendable {
    private let state = Mutex<UInt64>(0x5EED_1A7C_4B3F_0001)
    public init() {}
    public func bytes(count: Int) -> [UInt8] {
        state.withLock { state in
            var out: [UInt8] = []
            out.reserveCapacity(count + 8)
            while out.count < count {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                withUnsafeBytes(of: z) { out.append(contentsOf: $0) }
            }
            return Array(out.prefix(count))
        }
    }
}

/// One authenticator on an in-memory store, set up by the first byte of the input: resident
/// credentials (with hmac-secret, credBlob, largeBlobKey) and optionally a PIN. Every response
/// goes through `checked`, which holds the invariants every CTAP2 answer must keep.
public final class FuzzKey {
    /// Device secrets are made once per process: generating them (a CA and a leaf certificate)
    /// per input would cost more than the input itself. The store still starts empty each time.
    nonisolated(unsafe) static let deviceSecrets: DeviceSecrets = {
        do { return try DeviceSecrets.generate() } catch { fatalError("device secrets: \(error)") }
    }()
    /// What each setup variant seeded, made through the real commands the first time.
    struct Seed {
        var residents: [ResidentCredential]
        var credentialIDs: [[UInt8]]
        var pin: PINState?
    }
    nonisolated(unsafe) static var seeds: [UInt8: Seed] = [:]
    /// getInfo answers that passed `check`, by setup variant (whose seeds set the secrets).
    nonisolated(unsafe) static var checkedInfo: [UInt8: Set<[UInt8]>] = [:]
    /// The setup bits that choose what is seeded.
    let variant: UInt8
    public static let rpID = "fuzz.example"
    public static let pinText = "271828"

    public let store = InMemoryCredentialStore(maxResidentCredentials: 25)
    public let clock = FuzzClock()
    public let presence = FuzzPresence()
    /// Present when setup bit 5 gave the key built-in UV.
    public let verification: FuzzVerification?
    public let authenticator: Authenticator
    public let platform: RemoteAuthenticator
    public var channel: UInt32 = 0x4C4B_0001
    public private(set) var hasPIN = false
    /// Credential IDs of the seeded credentials (resident and not).
    public private(set) var credentialIDs: [[UInt8]] = []
    /// Bytes no response may ever carry: the wrapping key, the attestation private key, each
    /// credential's private key and hmac-secret CredRandoms.
    public private(set) var secrets: [[UInt8]] = []

    /// `setup` bits: 0 PIN set, 1 seed resident credentials, 2 seed a non-resident one,
    /// 3 presence denied at start, 4 a second RP's resident credential, 5 built-in UV (clientPIN
    /// 0x06/0x07 and the uv option; control record 0xF5 sets its answer).
    public init(setup: UInt8) {
        let verification = setup & 0x20 != 0 ? FuzzVerification() : nil
        self.verification = verification
        do {
            let secrets = Self.deviceSecrets
            _ = try store.loadDeviceSecrets(orCreate: { secrets })
            // Every algorithm but RSA: an RSA key takes ~100 ms to make (seconds under ASan), so
            // every input naming RS256 would be a slow unit; unit and socket tests cover RSA.
            // (KeySpecification's default algorithms: every one but RSA and ML-DSA.)
            authenticator = try KeySpecification().makeAuthenticator(store: store, presence: presence,
                                                                     userVerification: verification, clock: clock,
                                                                     random: FuzzRandom())
        } catch { fatalError("fuzz key: \(error)") }
        let authenticator = self.authenticator
        platform = RemoteAuthenticator(link: InProcessLink(label: "fuzz key") { message in
            authenticator.handleCTAP2(message, context: RequestContext(channel: 0x4C4B_0001))
        })
        secrets = [Self.deviceSecrets.wrappingKey.copyBytes(), Self.deviceSecrets.attestationPrivateKey.copyBytes()]
        let variant = setup & 0x37
        self.variant = variant
        if let seed = Self.seeds[variant] {
            // The same state as seeding through makeCredential and clientPIN, restored directly.
            for credential in seed.residents { try? store.saveResidentCredential(credential) }
            try? store.savePINState(seed.pin)
            credentialIDs = seed.credentialIDs
            hasPIN = seed.pin != nil
        } else {
            if setup & 0x02 != 0 {
                seed(rpID: Self.rpID, user: [1, 1], name: "ada", resident: true)
                seed(rpID: Self.rpID, user: [2, 2], name: "grace", resident: true)
            }
            if setup & 0x10 != 0 { seed(rpID: "other.example", user: [3], name: "alan", resident: true) }
            if setup & 0x04 != 0 { seed(rpID: Self.rpID, user: [4], name: "edsger", resident: false) }
            if setup & 0x01 != 0 { hasPIN = setPIN(Self.pinText) }
            var residents: [ResidentCredential] = []
            for rp in [Self.rpID, "other.example"] {
                residents += ((try? store.residentCredentials(rpIDHash: SHA256.hash(Array(rp.utf8)))) ?? []).reversed()
            }
            Self.seeds[variant] = Seed(residents: residents, credentialIDs: credentialIDs,
                                       pin: (try? store.loadPINState()) ?? nil)
        }
        for credential in Self.seeds[variant]?.residents ?? [] {
            secrets.append(credential.privateKey.copyBytes())
            if let key = credential.hmacSecretWithUV { secrets.append(key.copyBytes()) }
            if let key = credential.hmacSecretWithoutUV { secrets.append(key.copyBytes()) }
        }
        if setup & 0x08 != 0 { presence.set(.denied) }
    }

    private func seed(rpID: String, user: [UInt8], name: String, resident: Bool) {
        let request = MakeCredentialRequest(
            clientDataHash: SHA256.hash(Array("seed \(name)".utf8)), rp: RelyingPartyEntity(id: rpID, name: rpID),
            user: UserEntity(id: user, name: name, displayName: name.capitalized),
            pubKeyCredParams: [CredentialParameters(algorithm: -7)],
            extensions: MakeCredentialExtensions(credBlob: resident ? [9, 9, 9] : nil, hmacSecret: true,
                                                 largeBlobKey: resident ? true : nil),
            // With built-in UV a discoverable credential needs it (makeCredUvNotRqd).
            options: RequestOptions(resident ? (verification == nil ? ["rk": true] : ["rk": true, "uv": true]) : [:]))
        let response = authenticator.handleCTAP2([CTAPCommand.makeCredential.rawValue] + request.cborValue.encoded(),
                                                 context: RequestContext(channel: channel))
        guard response.first == 0, let body = try? CBORDecoder.decode(Array(response.dropFirst())),
              let authData = body[2]?.bytesValue, let parsed = try? AuthenticatorData(decoding: authData),
              let id = parsed.attestedCredentialData?.credentialID else {
            fatalError("fuzz key: seeding \(name) failed: \(response.first ?? 0xFF)")
        }
        credentialIDs.append(id)
    }

    public func setPIN(_ text: String) -> Bool {
        var bytes = Array(text.utf8)
        guard let pin = try? PIN(consuming: &bytes) else { return false }
        return (try? platform.setPIN(pin)) != nil
    }

    /// A pinUvAuthToken from the correct PIN, or by built-in UV on a key with UV and no PIN; nil
    /// when neither gives one (no PIN, blocked, or the fuzzer locked it or made UV fail).
    public func token(_ permissions: PinUvAuthPermissions, rpID: String? = nil) -> PinUvAuthToken? {
        if !hasPIN, verification != nil { return try? platform.uvAuthToken(permissions: permissions, rpID: rpID) }
        guard hasPIN else { return nil }
        var bytes = Array(Self.pinText.utf8)
        guard let pin = try? PIN(consuming: &bytes) else { return nil }
        return try? platform.pinUvAuthToken(pin: pin, permissions: permissions, rpID: rpID)
    }

    /// Sends one CTAP2 message (command byte ‖ parameters) and checks the answer.
    @discardableResult
    public func send(_ message: [UInt8], channel: UInt32? = nil) -> [UInt8] {
        let response = authenticator.handleCTAP2(message, context: RequestContext(channel: channel ?? self.channel))
        check(request: message, response: response)
        return response
    }

    /// makeCredential, getAssertion, clientPIN, credentialManagement (and preview), largeBlobs,
    /// config: the commands whose parameters are a map (the others ignore what follows).
    static let commandsWithParameters: Set<UInt8> = [0x01, 0x02, 0x06, 0x0A, 0x0C, 0x0D, 0x41]

    /// What every answer keeps, whatever the request:
    /// - a status byte CTAP defines, and a body only on success, which is one CBOR map;
    /// - never success for parameters that are not CBOR, or not a map;
    /// - none of `secrets` anywhere in it.
    public func check(request: [UInt8], response: [UInt8]) {
        invariant(!response.isEmpty, "empty response to \(hex(request))")
        // A getInfo answer is checked once per setup variant and text: it is most of the bytes
        // a config script reads back, and its invariants depend on nothing but its bytes.
        let memoizable = request.first == CTAPCommand.getInfo.rawValue
        if memoizable, Self.checkedInfo[variant]?.contains(response) == true { return }
        defer { if memoizable { Self.checkedInfo[variant, default: []].insert(response) } }
        let status = response[0]
        invariant(CTAP2StatusCode(rawValue: status) != nil, "undefined status 0x\(hex([status]))")
        if response.count > 1 {
            invariant(status == 0, "a body with error status 0x\(hex([status]))")
            let body = try? CBORDecoder.decode(Array(response.dropFirst()))
            invariant(body?.mapValue != nil, "success body is not a CBOR map: \(hex(response))")
        }
        if status == 0 && request.count > 1 && Self.commandsWithParameters.contains(request[0]) {
            let parameters = try? CBORDecoder.decode(Array(request.dropFirst()))
            invariant(parameters?.mapValue != nil, "success for parameters that are not a CBOR map: \(hex(request))")
        }
        for secret in secrets where occurs(secret, in: response) {
            invariant(false, "a secret (\(secret.count) bytes) in the response to \(hex(request))")
        }
    }

    /// The script's control records, shared by every CTAP2 target: move the clock, change the
    /// presence answer, power-cycle. Returns false if `op` is not a control record.
    public func control(_ op: UInt8, _ body: [UInt8]) -> Bool {
        switch op {
        case 0xF0: clock.advance(milliseconds: UInt64(body.first ?? 1) * 250)
        case 0xF1: presence.set(.approved)
        case 0xF2: presence.set([.denied, .timedOut, .cancelled][Int(body.first ?? 0) % 3])
        case 0xF3: authenticator.powerCycle()
        case 0xF4: channel = channel &+ 1
        case 0xF5: verification?.set([.verified, .notVerified, .declined, .timedOut, .cancelled][Int(body.first ?? 0) % 5])
        default: return false
        }
        return true
    }
}

extension CBORValue {
    /// The map with `entries` set (for adding pinUvAuthParam to a fuzzer-made request).
    public func setting(_ entries: [(Int, CBORValue)]) -> CBORValue? {
        guard var map = mapValue else { return nil }
        for (key, value) in entries { map[key < 0 ? .negativeInt(UInt64(-1 - key)) : .unsignedInt(UInt64(key))] = value }
        return .map(map)
    }
}
