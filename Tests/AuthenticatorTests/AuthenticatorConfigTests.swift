import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// authenticatorConfig (CTAP 2.1 §6.11): toggleAlwaysUv, setMinPINLength and the minPinLength
/// extension; the rest is refused.
final class AuthenticatorConfigTests: XCTestCase {
    let toggleAlwaysUv: UInt64 = 0x02
    let setMinPINLength: UInt64 = 0x03

    func u2fVersion(_ harness: AuthenticatorHarness) -> UInt16 {
        let response = harness.authenticator.handleU2F(U2FAPDU(ins: 0x03).encoded(), context: RequestContext(channel: 1))
        return UInt16(response[response.count - 2]) << 8 | UInt16(response[response.count - 1])
    }

    // MARK: - toggleAlwaysUv (0x02)

    func testToggleAlwaysUvWithoutAPINNeedsNoTokenAndRequiresUVEverywhere() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest())
        XCTAssertEqual(harness.config(toggleAlwaysUv).status, .success)
        XCTAssertEqual(try harness.store.loadSetting("alwaysUv"), [0x01], "persisted")
        let info = try XCTUnwrap(harness.info())
        XCTAssertEqual(info[4]?["alwaysUv"], true)
        XCTAssertEqual(info[4]?["makeCredUvNotRqd"], false)
        XCTAssertEqual(info[1], ["FIDO_2_0", "FIDO_2_1", "FIDO_2_3"], "no U2F while alwaysUv is on")
        // Every makeCredential and every assertion with presence needs a token.
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest().cborValue).status, .puatRequired)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID]).cborValue).status,
                       .puatRequired)
        // A silent probe (up: false) still answers.
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID], up: false).cborValue).status,
                       .success)
        // U2F cannot verify the user: its instructions are gone.
        XCTAssertEqual(u2fVersion(harness), 0x6D00)

        // Toggling again (still no PIN: no token) turns it off.
        XCTAssertEqual(harness.config(toggleAlwaysUv).status, .success)
        XCTAssertEqual(harness.info()?[4]?["alwaysUv"], false)
        XCTAssertEqual(harness.info()?[1], ["U2F_V2", "FIDO_2_0", "FIDO_2_1", "FIDO_2_3"])
        XCTAssertEqual(u2fVersion(harness), 0x9000)
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest().cborValue).status, .success)
    }

    func testAlwaysUvWithAPINWorksWithATokenAndNeedsOneToChangeConfig() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(resident: true))
        XCTAssertEqual(harness.config(toggleAlwaysUv).status, .success)
        // alwaysUv without a PIN: nothing but toggling it off is open any more.
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: 6])).status, .puatRequired)
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        let mc = try harness.grantedToken(AuthenticatorHarness.pin, permissions: [.makeCredential], rpID: "example.com")
        let created = try harness.register(AuthenticatorHarness.authorized(harness.makeCredentialRequest(userID: [5]), token: mc, .two))
        XCTAssertTrue(created.authenticatorData.flags.contains(.userVerified))
        let ga = try harness.grantedToken(AuthenticatorHarness.pin, permissions: [.getAssertion], rpID: "example.com")
        let assertion = AuthenticatorHarness.authorized(harness.assertionRequest(allow: [registration.credentialID]), token: ga, .two)
        XCTAssertEqual(harness.send(.getAssertion, assertion.cborValue).status, .success)
        // With a PIN set, even toggling needs an acfg token.
        XCTAssertEqual(harness.config(toggleAlwaysUv).status, .puatRequired)
        XCTAssertEqual(harness.config(toggleAlwaysUv, token: try harness.acfgToken()).status, .success)
        XCTAssertEqual(harness.info()?[4]?["alwaysUv"], false)
    }

    func testWithAPINConfigNeedsAnAcfgTokenOverTheSpecMessage() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin, pinProtocol), .success)
            XCTAssertEqual(harness.config(toggleAlwaysUv).status, .puatRequired)
            // A token without acfg.
            let cm = try harness.grantedToken(AuthenticatorHarness.pin, pinProtocol, permissions: [.credentialManagement])
            XCTAssertEqual(harness.config(toggleAlwaysUv, token: cm, pinProtocol).status, .pinAuthInvalid)
            let token = try harness.acfgToken(pinProtocol)
            // A MAC over other parameters than those sent.
            let mac = pinProtocol.authenticate(key: token, [UInt8](repeating: 0xFF, count: 32) + [0x0D, 0x03]
                                               + CBORValue.map([1: 8]).encoded())
            XCTAssertEqual(harness.send(.config, .map([1: 3, 2: .map([1: 9]), 3: .unsignedInt(pinProtocol.version),
                                                       4: .byteString(mac)])).status, .pinAuthInvalid)
            XCTAssertEqual(harness.send(.config, .map([1: 2, 4: .byteString(mac)])).status, .missingParameter)
            XCTAssertEqual(harness.send(.config, .map([1: 2, 3: 7, 4: .byteString(mac)])).status, .invalidParameter)
            XCTAssertEqual(harness.config(toggleAlwaysUv, token: token, pinProtocol).status, .success)
            XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: 6, 3: false]), token: token, pinProtocol).status, .success)
            XCTAssertEqual(harness.info()?[0x0D], 6)
        }
    }

    // MARK: - setMinPINLength (0x03)

    func testSetMinPINLengthOnlyRaisesTheMinimum() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: 6])).status, .success)
        XCTAssertEqual(harness.info()?[0x0D], 6)
        XCTAssertEqual(try harness.store.loadSetting("minPINLength"), [6], "the PIN policy's one-byte setting")
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: 5])).status, .pinPolicyViolation)
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: 64])).status, .pinPolicyViolation)
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: 6])).status, .success, "the same minimum is fine")
        XCTAssertEqual(harness.config(setMinPINLength).status, .success, "no parameters: nothing changes")
        XCTAssertEqual(harness.info()?[0x0D], 6)
        // The new minimum applies to setPIN.
        XCTAssertEqual(try harness.setPIN("12345"), .pinPolicyViolation)
        XCTAssertEqual(try harness.setPIN("123456"), .success)
        XCTAssertEqual(harness.info()?[0x0C], false, "a PIN that meets the minimum need not change")
    }

    func testRaisingTheMinimumAboveTheCurrentPINForcesAChange() throws {
        let harness = try AuthenticatorHarness.pinned()
        let token = try harness.acfgToken()
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: 6]), token: token).status, .success)
        XCTAssertEqual(harness.info()?[0x0D], 6)
        XCTAssertEqual(harness.info()?[0x0C], true, "forcePINChange")
        XCTAssertEqual(try harness.store.loadPINState()?.forcePINChange, true)
        // The PIN's tokens ended with it, and no new one is issued until the PIN changes.
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: 6]), token: token).status, .pinAuthInvalid)
        XCTAssertEqual(try harness.pinToken(AuthenticatorHarness.pin, permissions: [.credentialManagement]).status, .pinPolicyViolation)
        XCTAssertEqual(try harness.changePIN(from: AuthenticatorHarness.pin, to: "12345"), .pinPolicyViolation, "still too short")
        XCTAssertEqual(try harness.changePIN(from: AuthenticatorHarness.pin, to: "654321"), .success)
        XCTAssertEqual(harness.info()?[0x0C], false)
        XCTAssertEqual(try harness.pinToken("654321", permissions: [.credentialManagement]).status, .success)
    }

    func testForceChangePin() throws {
        // Without a PIN there is nothing to change.
        XCTAssertEqual(try AuthenticatorHarness().config(setMinPINLength, params: .map([3: true])).status, .pinNotSet)
        let harness = try AuthenticatorHarness.pinned()
        let token = try harness.acfgToken()
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([3: true]), token: token).status, .success)
        XCTAssertEqual(harness.info()?[0x0C], true)
        XCTAssertEqual(harness.info()?[0x0D], 4, "the minimum is unchanged")
        // The PIN's tokens ended with it.
        XCTAssertEqual(harness.config(toggleAlwaysUv, token: token).status, .pinAuthInvalid)
        XCTAssertEqual(try harness.changePIN(from: AuthenticatorHarness.pin, to: "4321"), .success)
        XCTAssertEqual(harness.info()?[0x0C], false)
    }

    func testMinPinLengthExtensionAnswersOnlyTheListedRPs() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: 7, 2: ["example.com", "corp.example"]])).status, .success)
        let listed = try harness.register(harness.makeCredentialRequest(extensions: .init(minPinLength: true)))
        XCTAssertEqual(listed.authenticatorData.extensions, .map(["minPinLength": 7]))
        XCTAssertTrue(listed.authenticatorData.flags.contains(.extensionData))
        let other = try harness.register(harness.makeCredentialRequest(rpID: "other.example", extensions: .init(minPinLength: true)))
        XCTAssertNil(other.authenticatorData.extensions)
        let notAsked = try harness.register(harness.makeCredentialRequest(userID: [8]))
        XCTAssertNil(notAsked.authenticatorData.extensions)
        XCTAssertEqual(harness.send(.makeCredential, AuthenticatorHarness.cbor(harness.makeCredentialRequest(),
                                                                             rawExtensions: ["minPinLength": 1])).status,
                       .cborUnexpectedType)
        // A new list replaces the old one; without a list the old one stays.
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: 8])).status, .success)
        XCTAssertEqual(try harness.register(harness.makeCredentialRequest(extensions: .init(minPinLength: true))).authenticatorData.extensions,
                       .map(["minPinLength": 8]))
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([2: ["other.example"]])).status, .success)
        XCTAssertNil(try harness.register(harness.makeCredentialRequest(extensions: .init(minPinLength: true))).authenticatorData.extensions)
        // More RP IDs than maxRPIDsForSetMinPINLength (8) cannot be stored.
        let nine = CBORValue.array((0..<9).map { .textString("rp\($0).example") })
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([2: nine])).status, .keyStoreFull)
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([2: .array([1])])).status, .cborUnexpectedType)
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: "six"])).status, .cborUnexpectedType)
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([3: 1])).status, .cborUnexpectedType)
    }

    // MARK: - What is refused

    func testVendorPrototypeAndUnknownSubcommands() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.config(0xFF, params: .map([1: 1])).status, .invalidSubcommand)
        XCTAssertEqual(harness.config(0x04).status, .invalidSubcommand)
        XCTAssertEqual(harness.send(.config, .map([2: .map([:])])).status, .missingParameter)
        XCTAssertEqual(harness.send(.config, .map([1: 2, 2: 5])).status, .cborUnexpectedType)
        XCTAssertEqual(harness.sendRaw([CTAPCommand.config.rawValue]).status, .missingParameter)
        // With a PIN, every subcommand needs the acfg token first.
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        XCTAssertEqual(harness.config(0x01).status, .puatRequired)
        XCTAssertEqual(harness.config(0x04, token: try harness.acfgToken()).status, .invalidSubcommand)
    }

    func testResetPutsEveryConfigurationBack() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.config(setMinPINLength, params: .map([1: 10, 2: ["example.com"]])).status, .success)
        XCTAssertEqual(harness.config(toggleAlwaysUv).status, .success)
        XCTAssertEqual(harness.send(.reset).status, .success)
        let info = try XCTUnwrap(harness.info())
        XCTAssertEqual(info[4]?["alwaysUv"], false)
        XCTAssertEqual(info[0x0D], 4)
        XCTAssertNil(try harness.register(harness.makeCredentialRequest(extensions: .init(minPinLength: true))).authenticatorData.extensions)
    }
}
