import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// The hmac-secret extension (CTAP 2.1 §12.5). CredRandom never leaves the key, so the outputs
/// are checked by their relations: stable per (credential, salt, UV), different otherwise.
final class HmacSecretTests: XCTestCase {
    let salt1 = PlatformCrypto.sha256(Array("salt one".utf8))
    let salt2 = PlatformCrypto.sha256(Array("salt two".utf8))

    /// The hmac-secret extension input for `salts`, with the session that decrypts the output.
    func hmacSecretInput(_ harness: AuthenticatorHarness, salts: [UInt8], _ pinProtocol: PlatformPinProtocol,
                         sendProtocol: Bool = true) throws -> (input: HMACSecretInput, session: PlatformPinProtocol.Session) {
        let session = try harness.session(pinProtocol)
        let saltEnc = session.encrypt(salts)
        let input = HMACSecretInput(keyAgreement: session.platformKey, saltEnc: saltEnc, saltAuth: session.authenticate(saltEnc),
                                    pinUvAuthProtocol: sendProtocol ? pinProtocol.version : nil)
        return (input, session)
    }

    /// One assertion asking for hmac-secret; returns the decrypted output.
    func hmacSecret(_ harness: AuthenticatorHarness, credential: [UInt8]?, salts: [UInt8], _ pinProtocol: PlatformPinProtocol = .two,
                    token: [UInt8]? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        let (input, session) = try hmacSecretInput(harness, salts: salts, pinProtocol)
        var request = harness.assertionRequest(allow: credential.map { [$0] } ?? [], extensions: .init(hmacSecret: input))
        if let token { request = AuthenticatorHarness.authorized(request, token: token, pinProtocol) }
        let (status, body) = harness.send(.getAssertion, request.cborValue)
        XCTAssertEqual(status, .success, file: file, line: line)
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue, file: file, line: line))
        let encrypted = try XCTUnwrap(authData.extensions?["hmac-secret"]?.bytesValue, file: file, line: line)
        XCTAssertEqual(encrypted.count, salts.count + (pinProtocol.version == 2 ? 16 : 0), "encrypt(): IV only for protocol two",
                       file: file, line: line)
        return try XCTUnwrap(session.decrypt(encrypted), file: file, line: line)
    }

    /// A stored credential that gave an output is marked (`usedHMACSecret`: its deletion warns);
    /// one asked without a salt is not.
    func testAnOutputMarksTheStoredCredentialOnce() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(resident: true, extensions: .init(hmacSecret: true)))
        func used() throws -> Bool { try XCTUnwrap(harness.store.residentCredential(id: registration.credentialID)).usedHMACSecret }
        XCTAssertFalse(try used())
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID]).cborValue).0, .success)
        XCTAssertFalse(try used(), "no salt, no output")
        _ = try hmacSecret(harness, credential: registration.credentialID, salts: salt1)
        XCTAssertTrue(try used())
        _ = try hmacSecret(harness, credential: registration.credentialID, salts: salt1)
        XCTAssertTrue(try used())
    }

    func testMakeCredentialWithHmacSecretTrueReportsHmacSecretTrue() throws {
        let harness = try AuthenticatorHarness()
        for resident in [false, true] {
            let registration = try harness.register(harness.makeCredentialRequest(resident: resident, extensions: .init(hmacSecret: true)))
            XCTAssertEqual(registration.authenticatorData.extensions, .map(["hmac-secret": true]))
        }
        XCTAssertNotNil(try harness.store.residentCredentials(rpIDHash: SHA256.hash(Array("example.com".utf8))).first?.hmacSecretWithUV)
        let without = try harness.register(harness.makeCredentialRequest(userID: [9], extensions: .init(hmacSecret: false)))
        XCTAssertNil(without.authenticatorData.extensions)
        XCTAssertEqual(harness.send(.makeCredential, AuthenticatorHarness.cbor(harness.makeCredentialRequest(),
                                                                             rawExtensions: ["hmac-secret": 1])).status,
                       .cborUnexpectedType)
    }

    func testTheSameSaltGivesTheSameOutputAcrossAssertions() throws {
        for resident in [false, true] {
            for pinProtocol in PlatformPinProtocol.both {
                let harness = try AuthenticatorHarness()
                let registration = try harness.register(harness.makeCredentialRequest(resident: resident, extensions: .init(hmacSecret: true)))
                let first = try hmacSecret(harness, credential: registration.credentialID, salts: salt1, pinProtocol)
                XCTAssertEqual(first.count, 32)
                // A new key agreement each time, the same secret behind it; also across a power cycle.
                XCTAssertEqual(try hmacSecret(harness, credential: registration.credentialID, salts: salt1, pinProtocol), first)
                harness.authenticator.powerCycle()
                XCTAssertEqual(try hmacSecret(harness, credential: registration.credentialID, salts: salt1, pinProtocol), first)
                // And the protocol only wraps the output: both protocols see the same value.
                let other = PlatformPinProtocol(version: pinProtocol.version == 1 ? 2 : 1)
                XCTAssertEqual(try hmacSecret(harness, credential: registration.credentialID, salts: salt1, other), first)
                // Discoverable use finds the same credential and the same output.
                if resident {
                    XCTAssertEqual(try hmacSecret(harness, credential: nil, salts: salt1, pinProtocol), first)
                }
            }
        }
    }

    func testDifferentSaltsOrCredentialsGiveDifferentOutputs() throws {
        let harness = try AuthenticatorHarness()
        let one = try harness.register(harness.makeCredentialRequest(userID: [1], extensions: .init(hmacSecret: true)))
        let two = try harness.register(harness.makeCredentialRequest(userID: [2], extensions: .init(hmacSecret: true)))
        let a = try hmacSecret(harness, credential: one.credentialID, salts: salt1)
        XCTAssertNotEqual(try hmacSecret(harness, credential: one.credentialID, salts: salt2), a)
        XCTAssertNotEqual(try hmacSecret(harness, credential: two.credentialID, salts: salt1), a)
    }

    func testTwoSaltsGiveBothOutputsInOrder() throws {
        for resident in [false, true] {
            let harness = try AuthenticatorHarness()
            let registration = try harness.register(harness.makeCredentialRequest(resident: resident, extensions: .init(hmacSecret: true)))
            let both = try hmacSecret(harness, credential: registration.credentialID, salts: salt1 + salt2)
            XCTAssertEqual(both.count, 64)
            XCTAssertEqual(Array(both[0..<32]), try hmacSecret(harness, credential: registration.credentialID, salts: salt1))
            XCTAssertEqual(Array(both[32..<64]), try hmacSecret(harness, credential: registration.credentialID, salts: salt2))
        }
    }

    func testCredRandomWithUVDiffersFromCredRandomWithoutUV() throws {
        for resident in [false, true] {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(try harness.setPIN("1234"), .success)
            let create = harness.makeCredentialRequest(resident: resident, extensions: .init(hmacSecret: true))
            let registration = try harness.register(AuthenticatorHarness.authorized(
                create, token: try harness.grantedToken("1234", permissions: [.makeCredential], rpID: "example.com"), .two))
            let withoutUV = try hmacSecret(harness, credential: registration.credentialID, salts: salt1)
            let token = try harness.grantedToken("1234", permissions: [.getAssertion], rpID: "example.com")
            let withUV = try hmacSecret(harness, credential: registration.credentialID, salts: salt1, token: token)
            XCTAssertNotEqual(withUV, withoutUV)
            let again = try harness.grantedToken("1234", permissions: [.getAssertion], rpID: "example.com")
            XCTAssertEqual(try hmacSecret(harness, credential: registration.credentialID, salts: salt1, token: again), withUV)
        }
    }

    func testAbsentPinUvAuthProtocolMeansProtocolOne() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(extensions: .init(hmacSecret: true)))
        let (input, session) = try hmacSecretInput(harness, salts: salt1, .one, sendProtocol: false)
        let (status, body) = harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID],
                                                                                  extensions: .init(hmacSecret: input)).cborValue)
        XCTAssertEqual(status, .success)
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue))
        let output = try XCTUnwrap(session.decrypt(try XCTUnwrap(authData.extensions?["hmac-secret"]?.bytesValue)))
        XCTAssertEqual(output, try hmacSecret(harness, credential: registration.credentialID, salts: salt1, .one))
    }

    func testGetNextAssertionCarriesEachCredentialsOutput() throws {
        let harness = try AuthenticatorHarness()
        for index in 1...2 {
            _ = try harness.register(harness.makeCredentialRequest(userID: [UInt8(index)], resident: true, extensions: .init(hmacSecret: true)))
        }
        let (input, session) = try hmacSecretInput(harness, salts: salt1, .two)
        let first = harness.send(.getAssertion, harness.assertionRequest(extensions: .init(hmacSecret: input)).cborValue)
        XCTAssertEqual(first.status, .success)
        let next = harness.send(.getNextAssertion)
        XCTAssertEqual(next.status, .success)
        var outputs: [[UInt8]] = []
        for body in [first.body, next.body] {
            let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue))
            outputs.append(try XCTUnwrap(session.decrypt(try XCTUnwrap(authData.extensions?["hmac-secret"]?.bytesValue))))
        }
        XCTAssertNotEqual(outputs[0], outputs[1])
    }

    func testCredentialWithoutHmacSecretGivesNoOutput() throws {
        let harness = try AuthenticatorHarness()
        for resident in [false, true] {
            let registration = try harness.register(harness.makeCredentialRequest(userID: [resident ? 1 : 2], resident: resident))
            let (input, _) = try hmacSecretInput(harness, salts: salt1, .two)
            let (status, body) = harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID],
                                                                                      extensions: .init(hmacSecret: input)).cborValue)
            XCTAssertEqual(status, .success)
            XCTAssertNil(try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue)).extensions)
        }
    }

    func testTamperedSaltAuthIsPinAuthInvalid() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let presence = ScriptedPresence()
            let harness = try AuthenticatorHarness(presence: presence)
            let registration = try harness.register(harness.makeCredentialRequest(extensions: .init(hmacSecret: true)))
            let session = try harness.session(pinProtocol)
            let saltEnc = session.encrypt(salt1)
            var saltAuth = session.authenticate(saltEnc)
            saltAuth[0] ^= 1
            let asked = presence.asked.count
            for auth in [saltAuth, Array(saltAuth.prefix(pinProtocol.version == 1 ? 15 : 16)), session.authenticate(saltEnc + [1])] {
                let input = HMACSecretInput(keyAgreement: session.platformKey, saltEnc: saltEnc, saltAuth: auth,
                                            pinUvAuthProtocol: pinProtocol.version)
                let request = harness.assertionRequest(allow: [registration.credentialID], extensions: .init(hmacSecret: input))
                XCTAssertEqual(harness.send(.getAssertion, request.cborValue).status, .pinAuthInvalid)
            }
            XCTAssertEqual(presence.asked.count, asked, "refused before asking for a touch")
        }
    }

    func testSaltsOtherThan32Or64BytesAreInvalidParameter() throws {
        // §12.5: "If the decryption fails, or if the result is not 32 or 64 bytes long, return
        // CTAP1_ERR_INVALID_PARAMETER."
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            let registration = try harness.register(harness.makeCredentialRequest(extensions: .init(hmacSecret: true)))
            for length in [16, 48, 96] {
                let (input, _) = try hmacSecretInput(harness, salts: [UInt8](repeating: 5, count: length), pinProtocol)
                let request = harness.assertionRequest(allow: [registration.credentialID], extensions: .init(hmacSecret: input))
                XCTAssertEqual(harness.send(.getAssertion, request.cborValue).status, .invalidParameter, "\(length) bytes")
            }
        }
    }

    func testMalformedInputsAndUpFalse() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(extensions: .init(hmacSecret: true)))
        let (input, _) = try hmacSecretInput(harness, salts: salt1, .two)
        func status(_ value: CBORValue, up: Bool? = nil) -> CTAP2StatusCode {
            harness.send(.getAssertion, AuthenticatorHarness.cbor(harness.assertionRequest(allow: [registration.credentialID], up: up),
                                                                  rawExtensions: ["hmac-secret": value])).status
        }
        var map = input.cborValue.mapValue!
        map[3] = nil
        XCTAssertEqual(status(.map(map)), .missingParameter)
        XCTAssertEqual(status(true), .cborUnexpectedType)
        map = input.cborValue.mapValue!
        map[4] = 3
        XCTAssertEqual(status(.map(map)), .invalidParameter, "unsupported pinUvAuthProtocol")
        map = input.cborValue.mapValue!
        map[1] = .map([1: 2, 3: -25, -1: 1, -2: .byteString([UInt8](repeating: 0, count: 32)), -3: .byteString([UInt8](repeating: 0, count: 32))])
        XCTAssertEqual(status(.map(map)), .invalidParameter, "not a point on P-256")
        // The secret is only released after a touch.
        XCTAssertEqual(status(input.cborValue, up: false), .unsupportedOption)
        XCTAssertEqual(status(input.cborValue), .success)
    }
}

/// hmac-secret-mc (CTAP 2.2 §12.7): the output a later assertion would give, at registration.
extension HmacSecretTests {
    var mcSalt: [UInt8] { PlatformCrypto.sha256(Array("mc salt".utf8)) }

    func testHmacSecretMCOutputEqualsTheAssertionOutputForTheSameSalt() throws {
        for resident in [false, true] {
            for pinProtocol in PlatformPinProtocol.both {
                let harness = try AuthenticatorHarness()
                let (input, session) = try hmacSecretInput(harness, salts: mcSalt, pinProtocol)
                let (status, body) = harness.send(.makeCredential, harness.makeCredentialRequest(
                    resident: resident, extensions: .init(hmacSecret: true, hmacSecretMC: input)).cborValue)
                XCTAssertEqual(status, .success)
                let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue))
                XCTAssertEqual(authData.extensions?["hmac-secret"], true)
                let encrypted = try XCTUnwrap(authData.extensions?["hmac-secret-mc"]?.bytesValue)
                let atCreation = try XCTUnwrap(session.decrypt(encrypted))
                XCTAssertEqual(atCreation.count, 32)
                let credentialID = try XCTUnwrap(authData.attestedCredentialData?.credentialID)
                XCTAssertEqual(try hmacSecret(harness, credential: credentialID, salts: mcSalt, pinProtocol), atCreation)
                XCTAssertNotEqual(try hmacSecret(harness, credential: credentialID, salts: PlatformCrypto.sha256([1]), pinProtocol),
                                  atCreation)
            }
        }
    }

    func testHmacSecretMCNeedsHmacSecretAndAValidInput() throws {
        let harness = try AuthenticatorHarness()
        let (input, _) = try hmacSecretInput(harness, salts: mcSalt, .two)
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(extensions: .init(hmacSecretMC: input)).cborValue).status,
                       .invalidOption)
        var tampered = input
        tampered.saltAuth = [UInt8](repeating: 0, count: 32)
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(
            extensions: .init(hmacSecret: true, hmacSecretMC: tampered)).cborValue).status, .pinAuthInvalid)
    }
}
