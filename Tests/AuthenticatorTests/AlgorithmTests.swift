import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// ES384, ES512 and ES256K beside ES256 and EdDSA: each makes credentials whose COSE keys have
/// the curve's shape, whose IDs carry the key, and whose assertions verify with libcrypto
/// directly (not through FIDOCrypto).
final class AlgorithmTests: XCTestCase {
    static let cases: [(algorithm: Int, curve: COSECurve, credentialIDLength: Int)] = [
        (-35, .p384, 80), (-36, .p521, 98), (-47, .secp256k1, 64),
    ]

    func testEachAlgorithmRegistersAndSignsByAllowListAndDiscoverably() throws {
        for (algorithm, curve, idLength) in Self.cases {
            let harness = try AuthenticatorHarness()
            let rpID = "alg\(-algorithm).example"
            for resident in [false, true] {
                let registration = try harness.register(harness.makeCredentialRequest(rpID: rpID, algorithms: [algorithm],
                                                                                      resident: resident))
                guard case let .ec2(gotCurve, gotAlgorithm, x, y) = registration.publicKey else {
                    return XCTFail("\(algorithm): not an EC2 key on another curve: \(registration.publicKey)")
                }
                XCTAssertEqual(gotCurve, curve)
                XCTAssertEqual(gotAlgorithm.rawValue, algorithm)
                XCTAssertEqual([x.count, y.count], [curve.coordinateByteCount, curve.coordinateByteCount])
                // The packed attestation is the batch certificate's, ES256, whatever the credential's algorithm.
                XCTAssertEqual(registration.response[3]?["alg"]?.intValue, -7)
                if !resident { XCTAssertEqual(registration.credentialID.count, idLength, "\(algorithm)") }

                let (response, _) = try signIn(harness, rpID: rpID, registration: registration, resident: resident)
                XCTAssertFalse(AuthenticatorHarness.verifyAssertion(response, publicKey: registration.publicKey,
                                                                    clientDataHash: SHA256.hash([0])), "\(algorithm)")
            }
        }
    }

    /// A getAssertion for `registration` (by allowList, or discoverable): this credential answers,
    /// and its signature verifies with libcrypto directly.
    func signIn(_ harness: AuthenticatorHarness, rpID: String, registration: AuthenticatorHarness.Registration,
                resident: Bool) throws -> (response: CBORValue, request: GetAssertionRequest) {
        let request = harness.assertionRequest(rpID: rpID, allow: resident ? [] : [registration.credentialID])
        let (status, body) = harness.send(.getAssertion, request.cborValue)
        XCTAssertEqual(status, .success, "\(rpID) resident \(resident)")
        let response = try XCTUnwrap(body)
        XCTAssertEqual(response[1]?["id"]?.bytesValue, registration.credentialID)
        XCTAssertTrue(AuthenticatorHarness.verifyAssertion(response, publicKey: registration.publicKey,
                                                           clientDataHash: request.clientDataHash), rpID)
        return (response, request)
    }

    /// RSA keys are kept in the store even for non-discoverable credentials, under a random 32-byte ID.
    func testRSACredentialsAreStoredAndSign() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.algorithms = COSEAlgorithm.credentialAlgorithms
        for algorithm in [-257, -37] {
            let store = InMemoryCredentialStore()
            let harness = try AuthenticatorHarness(store: store, configuration: configuration)
            let rpID = "rsa\(-algorithm).example"
            for resident in [false, true] {
                let registration = try harness.register(harness.makeCredentialRequest(rpID: rpID, algorithms: [algorithm],
                                                                                      resident: resident))
                guard case let .rsa(gotAlgorithm, n, e) = registration.publicKey else { return XCTFail("\(algorithm): not RSA") }
                XCTAssertEqual(gotAlgorithm.rawValue, algorithm)
                XCTAssertEqual(n.count, 256)
                XCTAssertEqual(e, [1, 0, 1])
                XCTAssertEqual(registration.credentialID.count, 32)
                let stored = try XCTUnwrap(try store.residentCredential(id: registration.credentialID))
                XCTAssertEqual(stored.discoverable, resident)
                XCTAssertEqual(stored.algorithm, algorithm)
                let (response, request) = try signIn(harness, rpID: rpID, registration: registration, resident: resident)
                // The other RSA padding does not verify it.
                let other: COSEKey = .rsa(algorithm: algorithm == -257 ? .ps256 : .rs256, n: n, e: e)
                XCTAssertFalse(AuthenticatorHarness.verifyAssertion(response, publicKey: other, clientDataHash: request.clientDataHash))
                // An excludeList naming it excludes it.
                XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(
                    rpID: rpID, algorithms: [algorithm], excludeList: [registration.credentialID]).cborValue).status,
                               .credentialExcluded)
            }
            // The non-discoverable one is not offered without an allowList: only the discoverable one
            // answers, and numberOfCredentials counts one.
            let discoverable = harness.send(.getAssertion, harness.assertionRequest(rpID: rpID).cborValue)
            XCTAssertEqual(discoverable.status, .success)
            XCTAssertEqual(discoverable.body?[5]?.intValue, 1, "one credential, not two")
            let discoverableID = try XCTUnwrap(discoverable.body?[1]?["id"]?.bytesValue)
            XCTAssertEqual(try store.residentCredential(id: discoverableID)?.discoverable, true)
        }
    }

    /// By default a key offers no RSA (each RSA credential takes a store slot): a client asking
    /// for RS256 first gets the next algorithm it offers.
    func testRSAIsOfferedOnlyWhenConfigured() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.send(.getInfo).body?[10]?.arrayValue?.compactMap { $0["alg"]?.intValue }, [-7, -8, -35, -36, -47])
        guard case .ec2P256 = try harness.register(harness.makeCredentialRequest(algorithms: [-257, -37, -7])).publicKey
        else { return XCTFail("expected ES256") }
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(algorithms: [-257]).cborValue).status,
                       .unsupportedAlgorithm)
    }

    /// A makeCredential that will make an RSA key is the one request a transport loop should not
    /// run inline (mayRunLong); nothing else is, and a key without RSA never decodes to tell.
    func testOnlyAMakeCredentialChoosingRSAMayRunLong() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.algorithms = [.es256, .rs256]
        let harness = try AuthenticatorHarness(configuration: configuration)
        func message(_ algorithms: [Int]) -> [UInt8] {
            [CTAPCommand.makeCredential.rawValue] + harness.makeCredentialRequest(algorithms: algorithms).cborValue.encoded()
        }
        XCTAssertTrue(harness.authenticator.mayRunLong(message([-257, -7])))
        XCTAssertFalse(harness.authenticator.mayRunLong(message([-7, -257])), "ES256 is chosen")
        XCTAssertFalse(harness.authenticator.mayRunLong(message([-37])), "PS256 is not this key's: nothing is made")
        XCTAssertFalse(harness.authenticator.mayRunLong([CTAPCommand.getInfo.rawValue]))
        XCTAssertFalse(harness.authenticator.mayRunLong([CTAPCommand.makeCredential.rawValue, 0xFF]), "not CBOR")
        XCTAssertFalse(harness.authenticator.mayRunLong([]))
        XCTAssertFalse(try AuthenticatorHarness().authenticator.mayRunLong(message([-257])), "a key without RSA")
    }

    /// A seeded key (reproducible fixtures) cannot derive RSA primes from its seed: asked to offer
    /// RSA, it leaves RSA out of getInfo and makes the client's next algorithm.
    func testASeededKeyOffersNoRSA() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.algorithms = [.rs256, .es256, .ps256]
        let authenticator = try Authenticator(configuration: configuration, store: InMemoryCredentialStore(),
                                              presence: ScriptedPresence(), clock: ManualClock(),
                                              random: DeterministicRandom(seed: Array("fixture".utf8)))
        func send(_ command: CTAPCommand, _ body: CBORValue? = nil) throws -> CBORValue {
            let response = authenticator.handleCTAP2([command.rawValue] + (body?.encoded() ?? []), context: RequestContext(channel: 1))
            XCTAssertEqual(response.first, 0)
            return try CBORDecoder.decode(Array(response.dropFirst()))
        }
        XCTAssertEqual(try send(.getInfo)[10]?.arrayValue?.compactMap { $0["alg"]?.intValue }, [-7])
        let harness = try AuthenticatorHarness()
        let made = try send(.makeCredential, harness.makeCredentialRequest(algorithms: [-257, -7]).cborValue)
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(made[2]?.bytesValue))
        XCTAssertEqual(try XCTUnwrap(authData.attestedCredentialData).publicKey[3]?.intValue, -7)
    }

    func testAnAlteredOrTruncatedIDOfALongerKeyOpensNothing() throws {
        let harness = try AuthenticatorHarness()
        for (algorithm, _, _) in Self.cases {
            let id = try harness.register(harness.makeCredentialRequest(algorithms: [algorithm])).credentialID
            var bad = [Array(id.dropLast()), id + [0], id.enumerated().map { $0.offset == 40 ? $0.element ^ 1 : $0.element }]
            if id.count > 64 { bad.append(Array(id.prefix(64))) }   // an ES256-length ID cut from a longer one
            for bad in bad {
                let status = harness.send(.getAssertion, harness.assertionRequest(allow: [bad]).cborValue).status
                XCTAssertEqual(status, .noCredentials, "\(algorithm), \(bad.count) bytes")
            }
        }
    }

    func testTheClientsOrderDecidesAmongTheKeysAlgorithms() throws {
        let harness = try AuthenticatorHarness()
        guard case .ec2(.secp256k1, .es256K, _, _) = try harness.register(harness.makeCredentialRequest(algorithms: [-47, -7])).publicKey
        else { return XCTFail("expected ES256K") }
        guard case .ec2P256(.es256, _, _) = try harness.register(harness.makeCredentialRequest(algorithms: [-7, -47])).publicKey
        else { return XCTFail("expected ES256") }
        guard case .ec2(.p521, .es512, _, _) = try harness.register(harness.makeCredentialRequest(algorithms: [-259, -36, -8])).publicKey
        else { return XCTFail("expected ES512") }
    }

    /// A key limited to some algorithms (a rig emulating a given key) lists only those and makes no other.
    func testAKeyLimitedToSomeAlgorithmsOffersOnlyThose() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.algorithms = [.es384, .es256]
        let harness = try AuthenticatorHarness(configuration: configuration)
        XCTAssertEqual(harness.send(.getInfo).body?[10]?.arrayValue?.compactMap { $0["alg"]?.intValue }, [-35, -7])
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(algorithms: [-8, -36, -47]).cborValue).status,
                       .unsupportedAlgorithm)
        guard case .ec2(.p384, .es384, _, _) = try harness.register(harness.makeCredentialRequest(algorithms: [-8, -35, -7])).publicKey
        else { return XCTFail("expected ES384") }
    }

    func testAlgorithmNamesForCommandLines() {
        XCTAssertEqual(COSEAlgorithm(credentialName: "es384"), .es384)
        XCTAssertEqual(COSEAlgorithm(credentialName: "EdDSA"), .edDSA)
        XCTAssertEqual(COSEAlgorithm(credentialName: "-47"), .es256K)
        XCTAssertEqual(COSEAlgorithm(credentialName: "ps256"), .ps256)
        XCTAssertEqual(COSEAlgorithm(credentialName: "-257"), .rs256)
        XCTAssertNil(COSEAlgorithm(credentialName: "RS1"))
        XCTAssertNil(COSEAlgorithm(credentialName: "-25"), "the PIN protocol's key agreement is no credential algorithm")
    }
}

/// ML-DSA credentials (FIPS 204, COSE −48/−49/−50, key type AKP): only on a key told to make
/// them; a credential ID carries the 32-byte seed, so a non-discoverable one takes no store slot.
final class MLDSACredentialTests: XCTestCase {
    func testEachMLDSAAlgorithmRegistersAndSignsWhenConfigured() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.algorithms = [.es256, .mlDSA44, .mlDSA65, .mlDSA87]
        for (algorithm, publicKeyLength) in [(-48, 1312), (-49, 1952), (-50, 2592)] {
            let store = InMemoryCredentialStore()
            let harness = try AuthenticatorHarness(store: store, configuration: configuration)
            let rpID = "mldsa\(-algorithm).example"
            for resident in [false, true] {
                let registration = try harness.register(harness.makeCredentialRequest(rpID: rpID, algorithms: [algorithm],
                                                                                      resident: resident))
                guard case let .akp(gotAlgorithm, publicKey) = registration.publicKey else {
                    return XCTFail("\(algorithm): not an AKP key: \(registration.publicKey)")
                }
                XCTAssertEqual(gotAlgorithm.rawValue, algorithm)
                XCTAssertEqual(publicKey.count, publicKeyLength)
                XCTAssertEqual(registration.publicKey.cborValue[1]?.intValue, 7, "kty AKP")
                if !resident {
                    XCTAssertEqual(registration.credentialID.count, 64, "the seed travels in the ID")
                    XCTAssertNil(try store.residentCredential(id: registration.credentialID))
                }
                let request = harness.assertionRequest(rpID: rpID, allow: resident ? [] : [registration.credentialID])
                let (status, body) = harness.send(.getAssertion, request.cborValue)
                XCTAssertEqual(status, .success)
                let response = try XCTUnwrap(body)
                XCTAssertEqual(response[1]?["id"]?.bytesValue, registration.credentialID)
                XCTAssertTrue(AuthenticatorHarness.verifyAssertion(response, publicKey: registration.publicKey,
                                                                   clientDataHash: request.clientDataHash), "\(algorithm)")
            }
        }
    }

    func testMLDSAIsNotOfferedByDefault() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(algorithms: [-48, -49, -50]).cborValue).status,
                       .unsupportedAlgorithm)
    }
}
