import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// Built-in user verification (CTAP 2.1 §6.5.5.7.3, §6.5.5.8, §6.1.2 step 11.2, §6.2.2 step
/// 6.2) through the `UserVerification` port: getInfo, tokens by UV, uvRetries and lockout, the
/// PIN restoring them, and the CTAP 2.0 `uv` option.
final class BuiltInUVTests: XCTestCase {
    func uvHarness(_ verification: ScriptedVerification = ScriptedVerification()) throws -> AuthenticatorHarness {
        try AuthenticatorHarness(userVerification: verification)
    }

    /// getPinUvAuthTokenUsingUvWithPermissions; returns the status and the decrypted token.
    func uvToken(_ harness: AuthenticatorHarness, permissions: PinUvAuthPermissions = [.makeCredential, .getAssertion],
                 rpID: String? = "example.com", _ pinProtocol: PlatformPinProtocol = .two) throws -> (status: CTAP2StatusCode, token: [UInt8]?) {
        let session = try harness.session(pinProtocol)
        let (status, body) = harness.clientPIN(ClientPINRequest(
            pinUvAuthProtocol: pinProtocol.version, subCommand: .getPinUvAuthTokenUsingUvWithPermissions,
            keyAgreement: session.platformKey, permissions: permissions.rawValue, rpID: rpID))
        guard status == .success, let encrypted = body?[2]?.bytesValue else { return (status, nil) }
        return (status, session.decrypt(encrypted))
    }

    func uvRetries(_ harness: AuthenticatorHarness) -> Int? {
        harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .getUVRetries)).body?[5]?.intValue
    }

    func testGetInfoAdvertisesUVOnlyWhenAMethodIsConfigured() throws {
        let without = try AuthenticatorHarness().info()
        XCTAssertNil(without?[4]?["uv"], "no method: uv absent (not capable)")
        XCTAssertNil(without?[0x11])
        XCTAssertNil(without?[0x12])
        let with = try uvHarness().info()
        XCTAssertEqual(with?[4]?["uv"]?.boolValue, true)
        XCTAssertEqual(with?[4]?["pinUvAuthToken"]?.boolValue, true)
        XCTAssertEqual(with?[0x11]?.intValue, 3, "preferredPlatformUvAttempts")
        XCTAssertEqual(with?[0x12]?.intValue, Int(UserVerificationMethod.fingerprintInternal), "uvModality")
    }

    func testWithoutAMethodTheSubcommandsDoNotExist() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(try uvToken(harness).status, .invalidSubcommand)
        XCTAssertEqual(harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .getUVRetries)).status, .invalidSubcommand)
        var request = harness.makeCredentialRequest()
        request.options = RequestOptions(["uv": true])
        XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .invalidOption)
    }

    func testATokenByUVMakesAUserVerifiedDiscoverableCredentialWithoutAPIN() throws {
        let verification = ScriptedVerification()
        let harness = try uvHarness(verification)
        for pinProtocol in [PlatformPinProtocol.one, .two] {
            let token = try XCTUnwrap(try uvToken(harness, pinProtocol).token)
            let request = AuthenticatorHarness.authorized(harness.makeCredentialRequest(resident: true), token: token, pinProtocol)
            let registration = try harness.register(request)
            XCTAssertTrue(registration.authenticatorData.flags.contains(.userVerified))
            XCTAssertTrue(registration.authenticatorData.flags.contains(.userPresent), "presence is still collected")
        }
        XCTAssertEqual(verification.asked.map(\.purpose), [.token, .token])
        XCTAssertEqual(verification.asked.first?.rpID, "example.com")
        XCTAssertEqual(harness.presence.asked.count, 2, "UV is not a touch: each makeCredential asked for presence")
    }

    func testTheTokenCarriesOnlyWhatWasAskedAndOnlyForItsRP() throws {
        let harness = try uvHarness()
        let gaOnly = try XCTUnwrap(try uvToken(harness, permissions: [.getAssertion]).token)
        let request = AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: gaOnly, .two)
        XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .pinAuthInvalid)
        let otherRP = try XCTUnwrap(try uvToken(harness, rpID: "other.example").token)
        let elsewhere = AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: otherRP, .two)
        XCTAssertEqual(harness.send(.makeCredential, elsewhere.cborValue).status, .pinAuthInvalid)
    }

    func testParameterChecksComeBeforeAnyAttempt() throws {
        let verification = ScriptedVerification()
        let harness = try uvHarness(verification)
        let session = try harness.session(.two)
        func status(_ request: ClientPINRequest) -> CTAP2StatusCode { harness.clientPIN(request).status }
        XCTAssertEqual(status(ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .getPinUvAuthTokenUsingUvWithPermissions,
                                               permissions: 1, rpID: "example.com")), .missingParameter)
        XCTAssertEqual(status(ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .getPinUvAuthTokenUsingUvWithPermissions,
                                               keyAgreement: session.platformKey, permissions: 1)), .missingParameter,
                       "mc needs an rpId")
        XCTAssertEqual(status(ClientPINRequest(pinUvAuthProtocol: 7, subCommand: .getPinUvAuthTokenUsingUvWithPermissions,
                                               keyAgreement: session.platformKey, permissions: 4)), .invalidParameter)
        XCTAssertEqual(status(ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .getPinUvAuthTokenUsingUvWithPermissions,
                                               keyAgreement: session.platformKey, permissions: 0)), .invalidParameter)
        XCTAssertEqual(try uvToken(harness, permissions: .authenticatorConfiguration, rpID: nil).status, .unauthorizedPermission,
                       "acfg needs uvAcfg, which the key does not offer")
        XCTAssertEqual(try uvToken(harness, permissions: .credentialManagement, rpID: nil).status, .success)
        XCTAssertEqual(verification.asked.count, 1, "only the valid request reached the method")
    }

    func testFailedAttemptsCountDownToUVBlockedAndAPINRestoresThem() throws {
        let verification = ScriptedVerification(.notVerified)
        let harness = try uvHarness(verification)
        XCTAssertEqual(uvRetries(harness), 3)
        XCTAssertEqual(try uvToken(harness).status, .uvInvalid)
        XCTAssertEqual(uvRetries(harness), 2)
        XCTAssertEqual(try uvToken(harness).status, .uvInvalid)
        XCTAssertEqual(try uvToken(harness).status, .uvBlocked, "the last retry spent")
        XCTAssertEqual(uvRetries(harness), 0)
        XCTAssertEqual(try uvToken(harness).status, .uvBlocked)
        XCTAssertEqual(verification.asked.count, 3, "a blocked key does not even ask")
        // A declined or timed-out attempt is no failed match: the retry comes back.
        try XCTAssertEqual(harness.setPIN("1234"), .success)
        XCTAssertEqual(uvRetries(harness), 0, "setting a PIN is not entering one")
        _ = try harness.grantedToken("1234", permissions: [.getAssertion], rpID: "example.com")
        XCTAssertEqual(uvRetries(harness), 3, "a correct PIN restores uvRetries")
        verification.queue(.declined, .timedOut)
        XCTAssertEqual(try uvToken(harness).status, .operationDenied)
        XCTAssertEqual(try uvToken(harness).status, .userActionTimeout)
        XCTAssertEqual(uvRetries(harness), 3)
        verification.queue(.verified)
        XCTAssertEqual(try uvToken(harness).status, .success)
    }

    func testUVRetriesPersistAcrossPowerCyclesAndResetRestoresThem() throws {
        let verification = ScriptedVerification(.notVerified)
        let harness = try uvHarness(verification)
        XCTAssertEqual(try uvToken(harness).status, .uvInvalid)
        harness.authenticator.powerCycle()
        XCTAssertEqual(uvRetries(harness), 2, "a power cycle gives no retry back")
        harness.authenticator.powerCycle()   // reset is allowed only just after power-up
        XCTAssertEqual(harness.send(.reset).status, .success)
        XCTAssertEqual(uvRetries(harness), 3)
    }

    func testTheUVOptionMakesTheKeyVerifyTheUserItself() throws {
        let verification = ScriptedVerification()
        let harness = try uvHarness(verification)
        var request = harness.makeCredentialRequest(resident: true)
        request.options = RequestOptions(["rk": true, "uv": true])
        let registration = try harness.register(request)
        XCTAssertTrue(registration.authenticatorData.flags.contains(.userVerified))
        XCTAssertEqual(verification.asked.map(\.purpose), [.makeCredential])
        var assertion = harness.assertionRequest()
        assertion.options = RequestOptions(["uv": true])
        let (status, body) = harness.send(.getAssertion, assertion.cborValue)
        XCTAssertEqual(status, .success)
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue))
        XCTAssertTrue(authData.flags.contains(.userVerified))
        XCTAssertEqual(body?[4]?["displayName"]?.stringValue, "Alice", "with UV the user's display name comes back")
        // A failed attempt on a key without a PIN: OPERATION_DENIED; with a PIN set, PUAT_REQUIRED
        // (fall back to the PIN); blocked and no PIN: PIN_BLOCKED (the spec's code).
        verification.queue(.notVerified, .notVerified, .notVerified)
        XCTAssertEqual(harness.send(.getAssertion, assertion.cborValue).status, .operationDenied)
        XCTAssertEqual(harness.send(.getAssertion, assertion.cborValue).status, .operationDenied)
        XCTAssertEqual(harness.send(.getAssertion, assertion.cborValue).status, .pinBlocked, "the last retry spent")
        XCTAssertEqual(harness.send(.getAssertion, assertion.cborValue).status, .pinBlocked)
        XCTAssertEqual(verification.asked.count, 5, "a blocked key does not ask")
        try XCTAssertEqual(harness.setPIN("1234"), .success)
        XCTAssertEqual(harness.send(.getAssertion, assertion.cborValue).status, .puatRequired)
    }

    /// With `auto` presence the key answers for its user: the only account of an RP comes back
    /// userSelected (no numberOfCredentials, which may not come with it), so a platform does not
    /// show its account chooser; of two, the key picks the one made or used last (AccountChooser).
    func testAutoPresenceSelectsTheOnlyAccount() throws {
        let harness = try AuthenticatorHarness(presence: ScriptedPresence(selectsForUser: true),
                                               userVerification: ScriptedVerification())
        var request = harness.makeCredentialRequest(resident: true)
        request.options = RequestOptions(["rk": true, "uv": true])
        _ = try harness.register(request)
        var assertion = harness.assertionRequest()
        assertion.options = RequestOptions(["uv": true])
        let one = harness.send(.getAssertion, assertion.cborValue).body
        XCTAssertEqual(one?[6]?.boolValue, true)
        XCTAssertNil(one?[5])
        var second = harness.makeCredentialRequest(userID: [9, 9], userName: "bob", resident: true)
        second.options = RequestOptions(["rk": true, "uv": true])
        _ = try harness.register(second)
        let two = harness.send(.getAssertion, assertion.cborValue).body
        XCTAssertEqual(two?[6]?.boolValue, true, "the key chose")
        XCTAssertNil(two?[5])
        XCTAssertEqual(two?[4]?.mapValue?["id"]?.bytesValue, [9, 9], "bob: made last")
        // A person's presence (prompt, notify, control) never selects for them.
        let person = try uvHarness()
        _ = try person.register(request)
        let asked = person.send(.getAssertion, assertion.cborValue).body
        XCTAssertNil(asked?[6])
        XCTAssertEqual(asked?[5]?.intValue, 1)
    }

    func testADiscoverableCredentialOnAUVOnlyKeyNeedsUV() throws {
        let harness = try uvHarness()
        // makeCredUvNotRqd: a non-discoverable credential may be made without UV ...
        XCTAssertNoThrow(try harness.register(harness.makeCredentialRequest()))
        // ... a discoverable one may not: with no PIN to give a token, OPERATION_DENIED.
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(resident: true).cborValue).status,
                       .operationDenied)
        try XCTAssertEqual(harness.setPIN("1234"), .success)
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(resident: true).cborValue).status,
                       .puatRequired)
    }
}
