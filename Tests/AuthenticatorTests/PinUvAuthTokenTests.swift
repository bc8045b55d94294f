import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// makeCredential / getAssertion with a pinUvAuthToken (CTAP 2.1 §6.1.2, §6.2.2, §6.5.2.1).
final class PinUvAuthTokenTests: XCTestCase {
    /// A harness with PIN "1234" set through `pinProtocol`.
    func pinnedHarness(_ pinProtocol: PlatformPinProtocol = .two, presence: ScriptedPresence = ScriptedPresence()) throws -> AuthenticatorHarness {
        let harness = try AuthenticatorHarness(presence: presence)
        XCTAssertEqual(try harness.setPIN("1234", pinProtocol), .success)
        return harness
    }

    func testMakeCredentialWithATokenSetsUVAndMayBeDiscoverable() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try pinnedHarness(pinProtocol)
            let token = try harness.grantedToken("1234", pinProtocol, permissions: [.makeCredential], rpID: "example.com")
            let request = AuthenticatorHarness.authorized(harness.makeCredentialRequest(resident: true), token: token, pinProtocol)
            let registration = try harness.register(request)
            XCTAssertTrue(registration.authenticatorData.flags.contains(.userVerified))
            XCTAssertTrue(registration.authenticatorData.flags.contains(.userPresent))
            XCTAssertEqual(try harness.store.residentCredentialCount(), 1)
        }
    }

    func testLegacyGetPinTokenWorksForMakeCredentialAndGetAssertion() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try pinnedHarness(pinProtocol)
            var token = try harness.grantedToken("1234", pinProtocol)
            let registration = try harness.register(AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: token, pinProtocol))
            XCTAssertTrue(registration.authenticatorData.flags.contains(.userVerified))
            token = try harness.grantedToken("1234", pinProtocol)
            let request = AuthenticatorHarness.authorized(harness.assertionRequest(allow: [registration.credentialID]), token: token, pinProtocol)
            let (status, body) = harness.send(.getAssertion, request.cborValue)
            XCTAssertEqual(status, .success)
            XCTAssertTrue(try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue)).flags.contains(.userVerified))
        }
    }

    func testTokenBoundToOneRPIsPinAuthInvalidForAnother() throws {
        let harness = try pinnedHarness()
        let token = try harness.grantedToken("1234", permissions: [.makeCredential], rpID: "a.example")
        let forB = AuthenticatorHarness.authorized(harness.makeCredentialRequest(rpID: "b.example"), token: token, .two)
        XCTAssertEqual(harness.send(.makeCredential, forB.cborValue).status, .pinAuthInvalid)
        let forA = AuthenticatorHarness.authorized(harness.makeCredentialRequest(rpID: "a.example"), token: token, .two)
        XCTAssertEqual(harness.send(.makeCredential, forA.cborValue).status, .success)
    }

    func testAnUnboundTokenBecomesBoundByItsFirstUse() throws {
        let harness = try pinnedHarness()
        let a = try harness.register(harness.makeCredentialRequest(rpID: "a.example"))
        let b = try harness.register(harness.makeCredentialRequest(rpID: "b.example"))
        // getPinToken's token has no RP. A silent assertion (up: false) does not spend it but binds it.
        let token = try harness.grantedToken("1234")
        let silentA = AuthenticatorHarness.authorized(harness.assertionRequest(rpID: "a.example", allow: [a.credentialID], up: false), token: token, .two)
        XCTAssertEqual(harness.send(.getAssertion, silentA.cborValue).status, .success)
        XCTAssertEqual(harness.send(.getAssertion, silentA.cborValue).status, .success, "up: false leaves the token's flags")
        let silentB = AuthenticatorHarness.authorized(harness.assertionRequest(rpID: "b.example", allow: [b.credentialID], up: false), token: token, .two)
        XCTAssertEqual(harness.send(.getAssertion, silentB.cborValue).status, .pinAuthInvalid)
    }

    func testPermissionsAreClearedAfterUseWithUserPresence() throws {
        // §6.1.2 step 14 / §6.2.2 step 9: clearUserVerifiedFlag() and
        // clearPinUvAuthTokenPermissionsExceptLbw(): a second use of the same token fails.
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try pinnedHarness(pinProtocol)
            let token = try harness.grantedToken("1234", pinProtocol, permissions: [.makeCredential, .getAssertion], rpID: "example.com")
            let create = AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: token, pinProtocol)
            let registration = try harness.register(create)
            XCTAssertEqual(harness.send(.makeCredential, create.cborValue).status, .pinAuthInvalid)
            let assert = AuthenticatorHarness.authorized(harness.assertionRequest(allow: [registration.credentialID]), token: token, pinProtocol)
            XCTAssertEqual(harness.send(.getAssertion, assert.cborValue).status, .pinAuthInvalid)
        }
    }

    func testTokenWithoutThePermissionIsPinAuthInvalid() throws {
        let harness = try pinnedHarness()
        let registration = try harness.register(harness.makeCredentialRequest())
        let gaOnly = try harness.grantedToken("1234", permissions: [.getAssertion], rpID: "example.com")
        XCTAssertEqual(harness.send(.makeCredential, AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: gaOnly, .two).cborValue).status,
                       .pinAuthInvalid)
        let mcOnly = try harness.grantedToken("1234", permissions: [.makeCredential], rpID: "example.com")
        let assert = AuthenticatorHarness.authorized(harness.assertionRequest(allow: [registration.credentialID]), token: mcOnly, .two)
        XCTAssertEqual(harness.send(.getAssertion, assert.cborValue).status, .pinAuthInvalid)
    }

    func testTokenExpiresWhenUnusedForTheInitialUsageTimeLimit() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try pinnedHarness(pinProtocol)
            var token = try harness.grantedToken("1234", pinProtocol, permissions: [.makeCredential], rpID: "example.com")
            harness.clock.advance(byMilliseconds: 30_000)
            let request = harness.makeCredentialRequest()
            XCTAssertEqual(harness.send(.makeCredential, AuthenticatorHarness.authorized(request, token: token, pinProtocol).cborValue).status,
                           .success, "30 s is still inside the window")
            token = try harness.grantedToken("1234", pinProtocol, permissions: [.makeCredential], rpID: "example.com")
            harness.clock.advance(byMilliseconds: 30_001)
            XCTAssertEqual(harness.send(.makeCredential, AuthenticatorHarness.authorized(request, token: token, pinProtocol).cborValue).status,
                           .pinAuthInvalid)
        }
    }

    func testAUsedTokenLastsUntilTheMaxUsageTimePeriod() throws {
        let harness = try pinnedHarness()
        let registration = try harness.register(harness.makeCredentialRequest())
        let token = try harness.grantedToken("1234", permissions: [.getAssertion], rpID: "example.com")
        let silent = AuthenticatorHarness.authorized(harness.assertionRequest(allow: [registration.credentialID], up: false), token: token, .two)
        XCTAssertEqual(harness.send(.getAssertion, silent.cborValue).status, .success)
        harness.clock.advance(byMilliseconds: 300_000)
        XCTAssertEqual(harness.send(.getAssertion, silent.cborValue).status, .success, "in use: past the initial 30 s")
        harness.clock.advance(byMilliseconds: 300_001)
        XCTAssertEqual(harness.send(.getAssertion, silent.cborValue).status, .pinAuthInvalid, "past 10 minutes")
    }

    func testPowerCycleEndsTheToken() throws {
        let harness = try pinnedHarness()
        let token = try harness.grantedToken("1234", permissions: [.makeCredential], rpID: "example.com")
        harness.authenticator.powerCycle()
        let request = AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: token, .two)
        XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .pinAuthInvalid)
    }

    func testWrongPinUvAuthParamIsPinAuthInvalid() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try pinnedHarness(pinProtocol)
            let token = try harness.grantedToken("1234", pinProtocol, permissions: [.makeCredential], rpID: "example.com")
            var request = AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: token, pinProtocol)
            let good = try XCTUnwrap(request.pinUvAuthParam)
            var flipped = good
            flipped[3] ^= 0x80
            let otherLength = PlatformPinProtocol(version: pinProtocol.version == 1 ? 2 : 1).authenticate(key: token, request.clientDataHash)
            for param in [flipped, otherLength, Array(good.dropLast()), good + [0]] {
                request.pinUvAuthParam = param
                XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .pinAuthInvalid)
            }
            request.pinUvAuthParam = good
            XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .success)
        }
    }

    func testATokenOfOneProtocolDoesNotVerifyUnderTheOther() throws {
        let harness = try pinnedHarness()
        let token = try harness.grantedToken("1234", .two, permissions: [.makeCredential], rpID: "example.com")
        let request = AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: token, .one)
        XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .pinAuthInvalid)
    }

    func testPinUvAuthParamNeedsASupportedProtocol() throws {
        let harness = try pinnedHarness()
        let token = try harness.grantedToken("1234", permissions: [.makeCredential, .getAssertion], rpID: "example.com")
        var create = AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: token, .two)
        create.pinUvAuthProtocol = nil
        XCTAssertEqual(harness.send(.makeCredential, create.cborValue).status, .missingParameter)
        create.pinUvAuthProtocol = 3
        XCTAssertEqual(harness.send(.makeCredential, create.cborValue).status, .invalidParameter)
        var assert = AuthenticatorHarness.authorized(harness.assertionRequest(), token: token, .two)
        assert.pinUvAuthProtocol = nil
        XCTAssertEqual(harness.send(.getAssertion, assert.cborValue).status, .missingParameter)
        assert.pinUvAuthProtocol = 3
        XCTAssertEqual(harness.send(.getAssertion, assert.cborValue).status, .invalidParameter)
    }

    func testPinUvAuthParamWithoutAPINIsPinNotSet() throws {
        let harness = try AuthenticatorHarness()
        let request = AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: [UInt8](repeating: 1, count: 32), .two)
        XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .pinNotSet)
    }

    func testAssertionWithUserVerificationReturnsUserNameAndDisplayName() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try pinnedHarness(pinProtocol)
            for index in 1...2 {
                let token = try harness.grantedToken("1234", pinProtocol, permissions: [.makeCredential], rpID: "example.com")
                let request = harness.makeCredentialRequest(userID: [UInt8(index)], userName: "user\(index)", resident: true)
                _ = try harness.register(AuthenticatorHarness.authorized(request, token: token, pinProtocol))
            }
            // Without UV: the user handle only.
            let plain = harness.send(.getAssertion, harness.assertionRequest().cborValue)
            XCTAssertEqual(plain.status, .success)
            XCTAssertNil(plain.body?[4]?["name"])
            // With a token: UV flag, name and displayName, also for getNextAssertion.
            let token = try harness.grantedToken("1234", pinProtocol, permissions: [.getAssertion], rpID: "example.com")
            let (status, body) = harness.send(.getAssertion, AuthenticatorHarness.authorized(harness.assertionRequest(), token: token, pinProtocol).cborValue)
            XCTAssertEqual(status, .success)
            XCTAssertTrue(try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue)).flags.contains(.userVerified))
            XCTAssertEqual(body?[4], .map(["id": .byteString([2]), "name": "user2", "displayName": "User2"]))
            XCTAssertEqual(body?[5]?.intValue, 2)
            let next = harness.send(.getNextAssertion)
            XCTAssertEqual(next.body?[4], .map(["id": .byteString([1]), "name": "user1", "displayName": "User1"]))
            XCTAssertTrue(try AuthenticatorData(decoding: try XCTUnwrap(next.body?[2]?.bytesValue)).flags.contains(.userVerified))
        }
    }

    func testDiscoverableCredentialWithoutATokenIsPuatRequiredOnceAPINIsSet() throws {
        let harness = try pinnedHarness()
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(resident: true).cborValue).status, .puatRequired)
        // makeCredUvNotRqd: a non-discoverable credential needs no token.
        let registration = try harness.register(harness.makeCredentialRequest())
        XCTAssertFalse(registration.authenticatorData.flags.contains(.userVerified))
        XCTAssertEqual(harness.info()?[4]?["makeCredUvNotRqd"], true)
    }

    func testTouchProbeIsPinInvalidOnceAPINIsSet() throws {
        let presence = ScriptedPresence()
        let harness = try pinnedHarness(presence: presence)
        var create = harness.makeCredentialRequest()
        create.pinUvAuthParam = []
        create.pinUvAuthProtocol = 1
        XCTAssertEqual(harness.send(.makeCredential, create.cborValue).status, .pinInvalid)
        XCTAssertEqual(presence.asked.last?.operation, .touchProbe)
        var assert = harness.assertionRequest()
        assert.pinUvAuthParam = []
        assert.pinUvAuthProtocol = 2
        XCTAssertEqual(harness.send(.getAssertion, assert.cborValue).status, .pinInvalid)
        presence.queue(.denied)
        XCTAssertEqual(harness.send(.getAssertion, assert.cborValue).status, .operationDenied)
    }

    func testUVOptionNextToATokenIsIgnored() throws {
        let harness = try pinnedHarness()
        var token = try harness.grantedToken("1234", permissions: [.makeCredential], rpID: "example.com")
        var create = harness.makeCredentialRequest()
        create.options = RequestOptions(["uv": true])
        XCTAssertEqual(harness.send(.makeCredential, create.cborValue).status, .invalidOption, "no built-in UV")
        let registration = try harness.register(AuthenticatorHarness.authorized(create, token: token, .two))
        XCTAssertTrue(registration.authenticatorData.flags.contains(.userVerified))
        token = try harness.grantedToken("1234", permissions: [.getAssertion], rpID: "example.com")
        var assert = harness.assertionRequest(allow: [registration.credentialID])
        assert.options = RequestOptions(["uv": true])
        XCTAssertEqual(harness.send(.getAssertion, assert.cborValue).status, .invalidOption)
        XCTAssertEqual(harness.send(.getAssertion, AuthenticatorHarness.authorized(assert, token: token, .two).cborValue).status, .success)
    }

    func testCredProtectLevelsHonourUserVerification() throws {
        let harness = try pinnedHarness()
        func token(_ permissions: PinUvAuthPermissions) throws -> [UInt8] {
            try harness.grantedToken("1234", permissions: permissions, rpID: "example.com")
        }
        let level2 = try harness.register(AuthenticatorHarness.authorized(
            harness.makeCredentialRequest(userID: [2], resident: true,
                                          extensions: .init(credProtect: .userVerificationOptionalWithCredentialIDList)),
            token: try token([.makeCredential]), .two))
        let level3 = try harness.register(AuthenticatorHarness.authorized(
            harness.makeCredentialRequest(userID: [3], resident: true, extensions: .init(credProtect: .userVerificationRequired)),
            token: try token([.makeCredential]), .two))
        // Without UV: level 3 is invisible, level 2 only by ID.
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest().cborValue).status, .noCredentials)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [level3.credentialID]).cborValue).status, .noCredentials)
        // With UV: both, discoverable too (newest first).
        let all = harness.send(.getAssertion, AuthenticatorHarness.authorized(harness.assertionRequest(), token: try token([.getAssertion]), .two).cborValue)
        XCTAssertEqual(all.status, .success)
        XCTAssertEqual(all.body?[5]?.intValue, 2)
        XCTAssertEqual(all.body?[1]?["id"]?.bytesValue, level3.credentialID)
        let byID = AuthenticatorHarness.authorized(harness.assertionRequest(allow: [level3.credentialID]), token: try token([.getAssertion]), .two)
        XCTAssertEqual(harness.send(.getAssertion, byID.cborValue).status, .success)
        // With UV the excludeList sees level 3 credentials.
        let recreate = AuthenticatorHarness.authorized(harness.makeCredentialRequest(userID: [4], excludeList: [level3.credentialID]),
                                                       token: try token([.makeCredential]), .two)
        XCTAssertEqual(harness.send(.makeCredential, recreate.cborValue).status, .credentialExcluded)
        _ = level2
    }
}
