import Authenticator
import CBOR
import CTAP
import XCTest

final class ResetAndInfoTests: XCTestCase {
    func testGetInfoAdvertisesWhatWorks() throws {
        let harness = try AuthenticatorHarness()
        let (status, body) = harness.send(.getInfo)
        XCTAssertEqual(status, .success)
        let info = try XCTUnwrap(body)
        XCTAssertEqual(info[1]?.arrayValue?.compactMap(\.stringValue), ["U2F_V2", "FIDO_2_0", "FIDO_2_1", "FIDO_2_3"])
        XCTAssertEqual(info[3]?.bytesValue, AuthenticatorConfiguration.latchkeyAAGUID)
        XCTAssertEqual(info[4]?["rk"]?.boolValue, true)
        XCTAssertEqual(info[4]?["up"]?.boolValue, true)
        XCTAssertEqual(info[2]?.arrayValue?.compactMap(\.stringValue),
                       ["credProtect", "credBlob", "hmac-secret", "hmac-secret-mc", "largeBlobKey", "minPinLength",
                        "thirdPartyPayment", "previewSign"])
        // CTAP 2.1 features: credential management (both commands), config, large blobs.
        for option in ["credMgmt", "credentialMgmtPreview", "authnrCfg", "setMinPINLength", "largeBlobs"] {
            XCTAssertEqual(info[4]?[.textString(option)]?.boolValue, true, option)
        }
        XCTAssertEqual(info[4]?["alwaysUv"]?.boolValue, false)
        XCTAssertEqual(info[0x0B]?.intValue, 4096, "maxSerializedLargeBlobArray")
        XCTAssertEqual(info[0x10]?.intValue, 8, "maxRPIDsForSetMinPINLength")
        // clientPIN is offered (false: capable, no PIN set yet), with tokens and permissions.
        XCTAssertEqual(info[4]?["clientPin"]?.boolValue, false)
        XCTAssertEqual(info[4]?["pinUvAuthToken"]?.boolValue, true)
        XCTAssertEqual(info[4]?["makeCredUvNotRqd"]?.boolValue, true)
        XCTAssertNil(info[4]?["uv"], "no built-in user verification")
        XCTAssertEqual(info[6]?.arrayValue, [2, 1], "protocol two preferred")
        XCTAssertEqual(info[0x0C]?.boolValue, false)
        XCTAssertEqual(info[0x0D]?.intValue, 4)
        XCTAssertEqual(info[5]?.intValue, 1200, "a YubiKey 5's maxMsgSize")
        XCTAssertEqual(info[9]?.arrayValue, ["usb"])
        XCTAssertEqual(info[10]?.arrayValue?.compactMap { $0["alg"]?.intValue }, [-7, -8, -35, -36, -47])
        XCTAssertEqual(info[0x14]?.intValue, 1000)
        // CTAP 2.2 members it can fill truthfully; versions stay 2.1: CTAP 2.2 defines no
        // "FIDO_2_2" (CTAP 2.3 §6.4: it "MUST not be present").
        XCTAssertEqual(info[0x16]?.arrayValue, ["packed", "none"], "attestationFormats")
        XCTAssertEqual(info[0x1A]?.arrayValue, ["usb"], "transportsForReset")
        XCTAssertEqual(info[0x1B]?.boolValue, false, "pinComplexityPolicy")
        XCTAssertEqual(info[0x1D]?.intValue, 63, "maxPINLength")
        XCTAssertEqual(info[0x1F]?.arrayValue, [1, 2, 3],
                       "authenticatorConfigCommands: enableEnterpriseAttestation, toggleAlwaysUv, setMinPINLength")
        XCTAssertEqual(info[4]?["ep"]?.boolValue, false, "enterprise attestation: capable, off")
        XCTAssertEqual(info[4]?["perCredMgmtRO"]?.boolValue, true)
        XCTAssertNil(info[0x19], "encIdentifier: no persistent token yet")
        XCTAssertNil(info[0x18], "longTouchForReset: absent is false")
        XCTAssertFalse(info[1]?.arrayValue?.contains("FIDO_2_2") ?? true)
        _ = try harness.register(harness.makeCredentialRequest(resident: true))
        XCTAssertEqual(harness.send(.getInfo).body?[0x14]?.intValue, 999)
    }

    func testResetWithinTenSecondsWipesEverything() throws {
        let harness = try AuthenticatorHarness()
        let resident = try harness.register(harness.makeCredentialRequest(resident: true))
        let plain = try harness.register(harness.makeCredentialRequest(userID: [7]))
        XCTAssertEqual(harness.send(.reset).status, .success)
        XCTAssertEqual(try harness.store.residentCredentialCount(), 0)
        // Non-resident IDs were sealed under the old wrapping key: gone too.
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [plain.credentialID]).cborValue).status, .noCredentials)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [resident.credentialID]).cborValue).status, .noCredentials)
    }

    func testResetAfterTheWindowIsNotAllowedUntilPowerCycle() throws {
        let presence = ScriptedPresence()
        let harness = try AuthenticatorHarness(presence: presence)
        harness.clock.advance(byMilliseconds: 10_001)
        XCTAssertEqual(harness.send(.reset).status, .notAllowed)
        XCTAssertTrue(presence.asked.isEmpty)
        harness.authenticator.powerCycle()
        presence.queue(.denied)
        XCTAssertEqual(harness.send(.reset).status, .operationDenied)
        presence.queue(.timedOut)
        XCTAssertEqual(harness.send(.reset).status, .userActionTimeout)
        XCTAssertEqual(harness.send(.reset).status, .success)
    }

    func testSelectionNeedsATouch() throws {
        let presence = ScriptedPresence()
        let harness = try AuthenticatorHarness(presence: presence)
        XCTAssertEqual(harness.send(.selection).status, .success)
        presence.queue(.denied)
        XCTAssertEqual(harness.send(.selection).status, .operationDenied)
        XCTAssertEqual(presence.asked.first?.operation, .selection)
    }

    func testEmptyMessageIsInvalidLength() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.sendRaw([]).status, .invalidLength)
    }
}
