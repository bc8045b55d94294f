import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// One authenticator with fakes, and helpers to speak CTAP2 to it as a client would.
final class AuthenticatorHarness {
    let clock = ManualClock()
    let presence: ScriptedPresence
    let store: InMemoryCredentialStore
    let authenticator: Authenticator
    var channel: UInt32 = 0x0102_0304

    /// `port`, when given, is what the authenticator talks to (a wrapper around `store`).
    init(presence: ScriptedPresence = ScriptedPresence(), store: InMemoryCredentialStore = InMemoryCredentialStore(),
         port: CredentialStorePort? = nil, configuration: AuthenticatorConfiguration = AuthenticatorConfiguration(),
         userVerification: (any UserVerification)? = nil, accountChooser: AccountChooser = AccountChooser(),
         keyDevice: (any CredentialKeyDevice)? = nil, seed: UInt64 = 7) throws {
        self.presence = presence
        self.store = store
        self.authenticator = try Authenticator(configuration: configuration, store: port ?? store, presence: presence,
                                               userVerification: userVerification, clock: clock, random: SeededRandom(seed: seed),
                                               accountChooser: accountChooser, keyDevice: keyDevice)
    }

    /// Send command ‖ CBOR(parameters); return (status, decoded body).
    func send(_ command: CTAPCommand, _ parameters: CBORValue? = nil, cancellation: CancellationFlag = CancellationFlag(),
              channel: UInt32? = nil) -> (status: CTAP2StatusCode, body: CBORValue?) {
        let message = [command.rawValue] + (parameters?.encoded() ?? [])
        return sendRaw(message, cancellation: cancellation, channel: channel)
    }

    func sendRaw(_ message: [UInt8], cancellation: CancellationFlag = CancellationFlag(),
                 channel: UInt32? = nil) -> (status: CTAP2StatusCode, body: CBORValue?) {
        let response = authenticator.handleCTAP2(message, context: RequestContext(channel: channel ?? self.channel, cancellation: cancellation))
        guard let first = response.first, let status = CTAP2StatusCode(rawValue: first) else {
            XCTFail("bad status byte in \(response)")
            return (.other, nil)
        }
        if response.count == 1 { return (status, nil) }
        guard let body = try? CBORDecoder.decode(Array(response.dropFirst())) else {
            XCTFail("undecodable body")
            return (status, nil)
        }
        return (status, body)
    }

    static func clientDataHash(_ seed: String) -> [UInt8] { SHA256.hash(Array(seed.utf8)) }

    func makeCredentialRequest(rpID: String = "example.com", userID: [UInt8] = [1, 2, 3], userName: String = "alice",
                               algorithms: [Int] = [-7], resident: Bool = false, excludeList: [[UInt8]] = [],
                               extensions: MakeCredentialExtensions = .init(), formats: [String]? = nil) -> MakeCredentialRequest {
        MakeCredentialRequest(
            clientDataHash: Self.clientDataHash("mc-\(rpID)-\(userName)"),
            rp: RelyingPartyEntity(id: rpID, name: "Example"),
            user: UserEntity(id: userID, name: userName, displayName: userName.capitalized),
            pubKeyCredParams: algorithms.map { CredentialParameters(algorithm: $0) },
            excludeList: excludeList.map { CredentialDescriptor(id: $0) },
            extensions: extensions,
            options: resident ? RequestOptions(["rk": true]) : RequestOptions(),
            attestationFormatsPreference: formats)
    }

    struct Registration {
        var credentialID: [UInt8]
        var authenticatorData: AuthenticatorData
        var publicKey: COSEKey
        var response: CBORValue
        var clientDataHash: [UInt8]
    }

    func register(_ request: MakeCredentialRequest, file: StaticString = #filePath, line: UInt = #line) throws -> Registration {
        let (status, body) = send(.makeCredential, request.cborValue)
        XCTAssertEqual(status, .success, file: file, line: line)
        let body2 = try XCTUnwrap(body, file: file, line: line)
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(body2[2]?.bytesValue))
        let attested = try XCTUnwrap(authData.attestedCredentialData)
        return Registration(credentialID: attested.credentialID, authenticatorData: authData,
                            publicKey: try XCTUnwrap(COSEKey(attested.publicKey)), response: body2,
                            clientDataHash: request.clientDataHash)
    }

    func assertionRequest(rpID: String = "example.com", allow: [[UInt8]] = [], up: Bool? = nil,
                          extensions: GetAssertionExtensions = .init()) -> GetAssertionRequest {
        GetAssertionRequest(rpID: rpID, clientDataHash: Self.clientDataHash("ga-\(rpID)"),
                            allowList: allow.map { CredentialDescriptor(id: $0) }, extensions: extensions,
                            options: up.map { RequestOptions(["up": $0]) } ?? RequestOptions())
    }

    /// `request` as sent, but with `extensions` as its extensions map (0x06), whatever it holds:
    /// for inputs a typed request cannot carry (wrong types, levels that do not exist).
    static func cbor(_ request: MakeCredentialRequest, rawExtensions extensions: [CBORValue: CBORValue]) -> CBORValue {
        var map = request.cborValue.mapValue ?? [:]
        map[6] = .map(extensions)
        return .map(map)
    }

    /// `request` as sent, but with `extensions` as its extensions map (0x04), whatever it holds.
    static func cbor(_ request: GetAssertionRequest, rawExtensions extensions: [CBORValue: CBORValue]) -> CBORValue {
        var map = request.cborValue.mapValue ?? [:]
        map[4] = .map(extensions)
        return .map(map)
    }

    /// Check an assertion signature with libcrypto directly.
    static func verifyAssertion(_ body: CBORValue, publicKey: COSEKey, clientDataHash: [UInt8]) -> Bool {
        guard let authData = body[2]?.bytesValue, let signature = body[3]?.bytesValue else { return false }
        switch publicKey {
        case let .ec2P256(_, x, y):
            return IndependentVerifier.verifyES256(x: x, y: y, signature: signature, message: authData + clientDataHash)
        case let .ec2(curve, _, x, y):
            return IndependentVerifier.verifyECDSA(curve: curve, x: x, y: y, signature: signature, message: authData + clientDataHash)
        case let .rsa(algorithm, n, e):
            return IndependentVerifier.verifyRSA(n: n, e: e, pss: algorithm == .ps256, signature: signature,
                                                 message: authData + clientDataHash)
        case let .okpEd25519(x):
            return IndependentVerifier.verifyEd25519(publicKey: x, signature: signature, message: authData + clientDataHash)
        case let .akp(algorithm, publicKey):
            // libcrypto 3.0 has no ML-DSA: FIDOCrypto's own verifier here; the socket suite checks
            // the same signatures with the `cryptography` package.
            guard let parameterSet = algorithm.mlDSAParameterSet,
                  let key = try? MLDSA.PublicKey(parameterSet: parameterSet, rawRepresentation: publicKey) else { return false }
            return key.isValidSignature(signature, for: authData + clientDataHash)
        }
    }
}
