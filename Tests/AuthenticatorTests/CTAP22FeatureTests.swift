import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// CTAP 2.2 behaviour beyond 2.1: the persistentPinUvAuthToken (pcmr, perCredMgmtRO,
/// encIdentifier), the thirdPartyPayment extension, and enterprise attestation (ep, epAtt).
final class CTAP22FeatureTests: XCTestCase {
    let pcmr = PinUvAuthPermissions.persistentCredentialManagementReadOnly

    // MARK: - persistentPinUvAuthToken

    func testPCMRAloneGivesAPersistentTokenThatReadsCredentialsAcrossPowerCycles() throws {
        let harness = try AuthenticatorHarness()
        _ = try harness.register(harness.makeCredentialRequest(resident: true))
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        XCTAssertEqual(harness.info()?[4]?["perCredMgmtRO"]?.boolValue, true)
        // §6.5.5.7.2 step 4: pcmr with any other permission is CTAP2_ERR_UNAUTHORIZED_PERMISSION.
        for other: PinUvAuthPermissions in [.credentialManagement, .getAssertion, .largeBlobWrite] {
            XCTAssertEqual(try harness.pinToken(AuthenticatorHarness.pin, permissions: [pcmr, other], rpID: "example.com").status,
                           .unauthorizedPermission, "pcmr + \(other.rawValue)")
        }
        let ordinary = try harness.cmToken()
        // The rpId is ignored for pcmr; asking again gives the same token, and the ordinary one lives on.
        let persistent = try harness.grantedToken(AuthenticatorHarness.pin, permissions: pcmr, rpID: "example.com")
        XCTAssertEqual(persistent.count, 32)
        XCTAssertEqual(try harness.grantedToken(AuthenticatorHarness.pin, .one, permissions: pcmr), persistent)
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: ordinary).status, .success)
        XCTAssertNotEqual(persistent, ordinary)

        harness.authenticator.powerCycle()
        harness.clock.advance(byMilliseconds: 3_600_000)   // no usage timer either
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: ordinary).status, .pinAuthInvalid,
                       "the ordinary token died with the power cycle")
        let metadata = harness.credentialManagement(.getCredsMetadata, token: persistent)
        XCTAssertEqual(metadata.status, .success)
        XCTAssertEqual(metadata.body?[1]?.intValue, 1)
        let rps = harness.credentialManagement(.enumerateRPsBegin, token: persistent)
        XCTAssertEqual(rps.status, .success)
        XCTAssertEqual(rps.body?[3]?["id"]?.stringValue, "example.com")
        let params: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("example.com"))])
        let credentials = harness.credentialManagement(.enumerateCredentialsBegin, params: params, token: persistent)
        XCTAssertEqual(credentials.status, .success)
        let id = try XCTUnwrap(credentials.body?[7]?["id"]?.bytesValue)
        // Read only: deleting and renaming with it fail as a wrong MAC does; the credential stays.
        XCTAssertEqual(harness.credentialManagement(.deleteCredential, params: AuthenticatorHarness.credentialParams(id),
                                                    token: persistent).status, .pinAuthInvalid)
        let user: CBORValue = .map(["id": .byteString([1, 2, 3]), "name": "mallory"])
        XCTAssertEqual(harness.credentialManagement(.updateUserInformation,
                                                    params: .map([2: .map(["id": .byteString(id), "type": "public-key"]), 3: user]),
                                                    token: persistent).status, .pinAuthInvalid)
        XCTAssertEqual(try harness.store.residentCredential(id: id)?.userName, "alice")
        // A wrong MAC is still refused.
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: [UInt8](repeating: 7, count: 32)).status, .pinAuthInvalid)
    }

    func testAPINChangeOrAResetEndsThePersistentToken() throws {
        let harness = try AuthenticatorHarness()
        _ = try harness.register(harness.makeCredentialRequest(resident: true))
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        let persistent = try harness.grantedToken(AuthenticatorHarness.pin, permissions: pcmr)
        XCTAssertEqual(try harness.changePIN(from: AuthenticatorHarness.pin, to: "5678"), .success)
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: persistent).status, .pinAuthInvalid)
        XCTAssertNil(harness.info()?[0x19], "no persistent token, no encIdentifier")
        let renewed = try harness.grantedToken("5678", permissions: pcmr)
        XCTAssertNotEqual(renewed, persistent)
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: renewed).status, .success)
        // A forced PIN change (setMinPINLength above the PIN's length) ends it too.
        XCTAssertEqual(harness.config(0x03, params: .map([1: 6]), token: try harness.grantedToken("5678", permissions: [.authenticatorConfiguration])).status,
                       .success)
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: renewed).status, .pinAuthInvalid)
        // Reset.
        XCTAssertEqual(try harness.changePIN(from: "5678", to: "123456"), .success)
        let last = try harness.grantedToken("123456", permissions: pcmr)
        XCTAssertEqual(harness.send(.reset).status, .success)
        XCTAssertEqual(try harness.setPIN("123456"), .success)
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: last).status, .pinAuthInvalid)
    }

    func testBuiltInUVGivesThePersistentTokenToo() throws {
        let harness = try AuthenticatorHarness(userVerification: ScriptedVerification())
        let session = try harness.session(.two)
        let request = ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .getPinUvAuthTokenUsingUvWithPermissions,
                                       keyAgreement: session.platformKey, permissions: pcmr.rawValue)
        let (status, body) = harness.clientPIN(request)
        XCTAssertEqual(status, .success)
        let token = try XCTUnwrap(session.decrypt(try XCTUnwrap(body?[2]?.bytesValue)))
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: token).status, .success)
    }

    func testEncIdentifierIsTheSameIdentifierUnderAFreshIVAndChangesWithAReset() throws {
        let harness = try AuthenticatorHarness.pinned()
        let token = try harness.grantedToken(AuthenticatorHarness.pin, permissions: pcmr)
        func identifier(_ token: [UInt8]) throws -> (raw: [UInt8], plain: [UInt8]) {
            let encrypted = try XCTUnwrap(harness.info()?[0x19]?.bytesValue)
            XCTAssertEqual(encrypted.count, 32, "iv ‖ one AES block")
            // CTAP 2.2 §6.4: AES-128-CBC under HKDF-SHA-256(salt 32×0, token, "encIdentifier", 16).
            let key = HKDFSHA256.deriveKey(inputKeyMaterial: token, salt: [UInt8](repeating: 0, count: 32),
                                           info: Array("encIdentifier".utf8), outputByteCount: 16)
            return (encrypted, try AES128CBC.decrypt(Array(encrypted[16...]), key: key, iv: Array(encrypted[..<16])))
        }
        let first = try identifier(token)
        let second = try identifier(token)
        XCTAssertNotEqual(first.raw, second.raw, "a fresh iv for every getInfo")
        XCTAssertEqual(first.plain, second.plain)
        harness.authenticator.powerCycle()
        XCTAssertEqual(try identifier(token).plain, first.plain)
        XCTAssertEqual(harness.send(.reset).status, .success)
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        XCTAssertNotEqual(try identifier(try harness.grantedToken(AuthenticatorHarness.pin, permissions: pcmr)).plain, first.plain)
    }

    // MARK: - thirdPartyPayment (CTAP 2.2 §12.9)

    func testThirdPartyPaymentIsFixedAtCreationAndReportedOnAssertion() throws {
        let harness = try AuthenticatorHarness()
        let payment = MakeCredentialExtensions(thirdPartyPayment: true)
        for resident in [false, true] {
            let rpID = resident ? "bank.example" : "card.example"
            let paying = try harness.register(harness.makeCredentialRequest(rpID: rpID, userID: [9], resident: resident,
                                                                            extensions: payment))
            XCTAssertEqual(paying.authenticatorData.extensions, .map(["thirdPartyPayment": true]))
            let plain = try harness.register(harness.makeCredentialRequest(rpID: rpID, userID: [8], resident: resident))
            XCTAssertNil(plain.authenticatorData.extensions)
            for (registration, expected) in [(paying, true), (plain, false)] {
                let request = harness.assertionRequest(rpID: rpID, allow: [registration.credentialID],
                                                       extensions: GetAssertionExtensions(thirdPartyPayment: true))
                let (status, body) = harness.send(.getAssertion, request.cborValue)
                XCTAssertEqual(status, .success)
                let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue))
                XCTAssertEqual(authData.extensions, .map(["thirdPartyPayment": .boolean(expected)]), "resident \(resident)")
                XCTAssertTrue(AuthenticatorHarness.verifyAssertion(try XCTUnwrap(body), publicKey: registration.publicKey,
                                                                   clientDataHash: request.clientDataHash))
                // Not asked, not said.
                let quiet = harness.send(.getAssertion, harness.assertionRequest(rpID: rpID, allow: [registration.credentialID]).cborValue)
                XCTAssertNil(try AuthenticatorData(decoding: try XCTUnwrap(quiet.body?[2]?.bytesValue)).extensions)
            }
        }
        // Credential management says which discoverable credential is a payment one.
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        let params: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("bank.example"))])
        let listed = harness.credentialManagement(.enumerateCredentialsBegin, params: params, token: try harness.cmToken())
        XCTAssertEqual(listed.status, .success)
        XCTAssertEqual(listed.body?[9]?.intValue, 2)
        let next = harness.credentialManagement(.enumerateCredentialsGetNextCredential)
        XCTAssertEqual(Set([listed.body?[0x0C]?.boolValue, next.body?[0x0C]?.boolValue]), [true, false])
        // A wrong type is CTAP2_ERR_CBOR_UNEXPECTED_TYPE.
        let bad = AuthenticatorHarness.cbor(harness.makeCredentialRequest(), rawExtensions: ["thirdPartyPayment": 1])
        XCTAssertEqual(harness.send(.makeCredential, bad).status, .cborUnexpectedType)
    }

    func testAKeyWithoutThirdPartyPaymentIgnoresIt() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.extensions = [.credProtect]
        let harness = try AuthenticatorHarness(configuration: configuration)
        XCTAssertFalse(harness.info()?[2]?.arrayValue?.contains("thirdPartyPayment") ?? true)
        let registration = try harness.register(harness.makeCredentialRequest(extensions: MakeCredentialExtensions(thirdPartyPayment: true)))
        XCTAssertNil(registration.authenticatorData.extensions)
    }

    // MARK: - Enterprise attestation (CTAP 2.1 §7.1)

    func enterpriseRequest(_ harness: AuthenticatorHarness, rpID: String, value: UInt64?) -> MakeCredentialRequest {
        var request = harness.makeCredentialRequest(rpID: rpID)
        request.enterpriseAttestation = value
        return request
    }

    func testEnterpriseAttestationIsOffUntilEnabledAndThenIdentifiesTheInstallation() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.enterpriseAttestationRPIDs = ["corp.example"]
        let harness = try AuthenticatorHarness(configuration: configuration)
        XCTAssertEqual(harness.info()?[4]?["ep"]?.boolValue, false)
        // Step 9: capable but disabled → CTAP1_ERR_INVALID_PARAMETER, before any touch.
        XCTAssertEqual(harness.send(.makeCredential, enterpriseRequest(harness, rpID: "corp.example", value: 1).cborValue).status,
                       .invalidParameter)
        XCTAssertEqual(harness.presence.asked.count, 0)
        XCTAssertEqual(harness.config(0x01).status, .success)
        XCTAssertEqual(harness.config(0x01).status, .success, "enabling twice changes nothing")
        XCTAssertEqual(harness.info()?[4]?["ep"]?.boolValue, true)
        XCTAssertEqual(harness.send(.makeCredential, enterpriseRequest(harness, rpID: "corp.example", value: 3).cborValue).status,
                       .invalidOption)

        let secrets = try harness.store.loadDeviceSecrets(orCreate: { throw StoreError.corrupt("made at init") })
        XCTAssertNotEqual(secrets.attestationCertificate, BatchAttestation.certificate)
        // Vendor-facilitated for a configured RP, and platform-managed for any: the store's chain.
        for (rpID, value) in [("corp.example", UInt64(1)), ("anything.example", 2)] {
            let request = enterpriseRequest(harness, rpID: rpID, value: value)
            let (status, body) = harness.send(.makeCredential, request.cborValue)
            XCTAssertEqual(status, .success)
            XCTAssertEqual(body?[4]?.boolValue, true, "epAtt")
            XCTAssertEqual(body?[1]?.stringValue, "packed")
            let x5c = try XCTUnwrap(body?[3]?["x5c"]?.arrayValue?.compactMap(\.bytesValue))
            XCTAssertEqual(x5c, [secrets.attestationCertificate, secrets.attestationCACertificate])
            XCTAssertTrue(IndependentVerifier.verifyWithCertificate(x5c[0], signature: try XCTUnwrap(body?[3]?["sig"]?.bytesValue),
                                                                    message: try XCTUnwrap(body?[2]?.bytesValue) + request.clientDataHash))
        }
        // Vendor-facilitated for an RP not on the list: treated as absent, the ordinary attestation.
        let (status, body) = harness.send(.makeCredential, enterpriseRequest(harness, rpID: "elsewhere.example", value: 1).cborValue)
        XCTAssertEqual(status, .success)
        XCTAssertNil(body?[4])
        XCTAssertEqual(body?[3]?["x5c"]?.arrayValue, [.byteString(BatchAttestation.certificate)])
        // Reset turns it off (§7.1.3).
        XCTAssertEqual(harness.send(.reset).status, .success)
        XCTAssertEqual(harness.info()?[4]?["ep"]?.boolValue, false)
        XCTAssertEqual(harness.send(.makeCredential, enterpriseRequest(harness, rpID: "corp.example", value: 2).cborValue).status,
                       .invalidParameter)
    }

    func testEnablingEnterpriseAttestationNeedsTheACFGTokenWhenAPINIsSet() throws {
        let harness = try AuthenticatorHarness.pinned()
        XCTAssertEqual(harness.config(0x01).status, .puatRequired)
        XCTAssertEqual(harness.info()?[4]?["ep"]?.boolValue, false)
        XCTAssertEqual(harness.config(0x01, token: try harness.cmToken()).status, .pinAuthInvalid)
        XCTAssertEqual(harness.config(0x01, token: try harness.acfgToken()).status, .success)
        XCTAssertEqual(harness.info()?[4]?["ep"]?.boolValue, true)
    }
}
