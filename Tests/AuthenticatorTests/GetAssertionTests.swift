import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

final class GetAssertionTests: XCTestCase {
    func testAssertionWithAllowListVerifiesAndCounterRises() throws {
        for algorithm in [-7, -8] {
            let harness = try AuthenticatorHarness()
            let registration = try harness.register(harness.makeCredentialRequest(algorithms: [algorithm]))
            let request = harness.assertionRequest(allow: [[0xAA, 0xBB], registration.credentialID])
            var lastCounter: UInt32 = registration.authenticatorData.signCount
            for _ in 0..<3 {
                let (status, body) = harness.send(.getAssertion, request.cborValue)
                XCTAssertEqual(status, .success)
                let response = try XCTUnwrap(body)
                XCTAssertEqual(response[1]?["id"]?.bytesValue, registration.credentialID)
                XCTAssertEqual(response[1]?["type"]?.stringValue, "public-key")
                XCTAssertTrue(AuthenticatorHarness.verifyAssertion(response, publicKey: registration.publicKey,
                                                                   clientDataHash: request.clientDataHash))
                XCTAssertFalse(AuthenticatorHarness.verifyAssertion(response, publicKey: registration.publicKey,
                                                                    clientDataHash: [UInt8](repeating: 1, count: 32)))
                let authData = try AuthenticatorData(decoding: try XCTUnwrap(response[2]?.bytesValue))
                XCTAssertTrue(authData.flags.contains(.userPresent))
                XCTAssertNil(authData.attestedCredentialData)
                XCTAssertGreaterThan(authData.signCount, lastCounter)
                lastCounter = authData.signCount
                XCTAssertNil(response[5], "numberOfCredentials is omitted with an allowList")
            }
        }
    }

    func testCredentialFromAnotherRPOrTamperedIsNotFound() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest())
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(rpID: "evil.example", allow: [registration.credentialID]).cborValue).status,
                       .noCredentials)
        for index in [0, 5, 20, 63] {
            var tampered = registration.credentialID
            tampered[index] ^= 0x01
            XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [tampered]).cborValue).status,
                           .noCredentials, "byte \(index)")
        }
        // Another key's credential (different wrapping key) is not ours either.
        let other = try AuthenticatorHarness()
        XCTAssertEqual(other.send(.getAssertion, other.assertionRequest(allow: [registration.credentialID]).cborValue).status,
                       .noCredentials)
    }

    func testSilentAssertionWithUpFalseAsksNoPresenceAndClearsUP() throws {
        let presence = ScriptedPresence()
        let harness = try AuthenticatorHarness(presence: presence)
        let registration = try harness.register(harness.makeCredentialRequest())
        let asked = presence.asked.count
        let (status, body) = harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID], up: false).cborValue)
        XCTAssertEqual(status, .success)
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue))
        XCTAssertFalse(authData.flags.contains(.userPresent))
        XCTAssertEqual(presence.asked.count, asked)
    }

    func testNoCredentialsIsAnsweredWithoutAskingForPresence() throws {
        let presence = ScriptedPresence()
        let harness = try AuthenticatorHarness(presence: presence)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest().cborValue).status, .noCredentials)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [[1, 2, 3]]).cborValue).status, .noCredentials)
        XCTAssertTrue(presence.asked.isEmpty)
    }

    func testDiscoverableAssertionsNewestFirstThenGetNextAssertion() throws {
        let harness = try AuthenticatorHarness()
        var registrations: [AuthenticatorHarness.Registration] = []
        for index in 1...3 {
            registrations.append(try harness.register(harness.makeCredentialRequest(userID: [UInt8(index)], userName: "user\(index)", resident: true)))
        }
        let request = harness.assertionRequest()
        let (status, body) = harness.send(.getAssertion, request.cborValue)
        XCTAssertEqual(status, .success)
        XCTAssertEqual(body?[5]?.intValue, 3)
        XCTAssertEqual(body?[4]?["id"]?.bytesValue, [3])
        XCTAssertNil(body?[4]?["name"], "no user name without user verification")
        var seen: [[UInt8]] = [try XCTUnwrap(body?[1]?["id"]?.bytesValue)]
        XCTAssertTrue(AuthenticatorHarness.verifyAssertion(try XCTUnwrap(body), publicKey: registrations[2].publicKey,
                                                           clientDataHash: request.clientDataHash))
        for expectedUser in [[UInt8(2)], [1]] {
            let (nextStatus, next) = harness.send(.getNextAssertion)
            XCTAssertEqual(nextStatus, .success)
            XCTAssertEqual(next?[4]?["id"]?.bytesValue, expectedUser)
            XCTAssertNil(next?[5])
            seen.append(try XCTUnwrap(next?[1]?["id"]?.bytesValue))
            let registration = registrations[Int(expectedUser[0]) - 1]
            XCTAssertTrue(AuthenticatorHarness.verifyAssertion(try XCTUnwrap(next), publicKey: registration.publicKey,
                                                               clientDataHash: request.clientDataHash))
        }
        XCTAssertEqual(Set(seen), Set(registrations.map(\.credentialID)))
        XCTAssertEqual(harness.send(.getNextAssertion).status, .notAllowed)
    }

    func testGetNextAssertionIsBoundToTheChannelAndExpires() throws {
        let harness = try AuthenticatorHarness()
        for index in 1...3 {
            _ = try harness.register(harness.makeCredentialRequest(userID: [UInt8(index)], resident: true))
        }
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest().cborValue).status, .success)
        XCTAssertEqual(harness.send(.getNextAssertion, channel: 0x9999).status, .notAllowed)
        XCTAssertEqual(harness.send(.getNextAssertion).status, .success)
        harness.clock.advance(byMilliseconds: 30_001)
        XCTAssertEqual(harness.send(.getNextAssertion).status, .notAllowed)
        // Another command on the channel ends the sequence.
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest().cborValue).status, .success)
        XCTAssertEqual(harness.send(.getInfo).status, .success)
        XCTAssertEqual(harness.send(.getNextAssertion).status, .notAllowed)
        XCTAssertEqual(harness.send(.getNextAssertion, channel: 0x4242).status, .notAllowed)
    }

    func testHiddenCredentialsAreNotOffered() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(resident: true))
        harness.store.hide(credentialID: registration.credentialID, at: 1)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest().cborValue).status, .noCredentials)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID]).cborValue).status,
                       .noCredentials)
    }

    func testCredProtectLevelsWithoutUserVerification() throws {
        let harness = try AuthenticatorHarness()
        let level2 = try harness.register(harness.makeCredentialRequest(
            userID: [2], resident: true, extensions: .init(credProtect: .userVerificationOptionalWithCredentialIDList)))
        let level3 = try harness.register(harness.makeCredentialRequest(
            userID: [3], resident: true, extensions: .init(credProtect: .userVerificationRequired)))
        // Discoverable use needs UV for levels 2 and 3 (CTAP 2.1 §12.1).
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest().cborValue).status, .noCredentials)
        // Level 2 works with its ID in the allowList; level 3 never without UV.
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [level2.credentialID]).cborValue).status, .success)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [level3.credentialID]).cborValue).status, .noCredentials)
        // Level 3 credentials are not revealed through the excludeList without UV either.
        let recreate = harness.makeCredentialRequest(userID: [4], excludeList: [level3.credentialID])
        XCTAssertEqual(harness.send(.makeCredential, recreate.cborValue).status, .success)
    }

    func testCredBlobReturnedOnRequest() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(resident: true, extensions: .init(credBlob: [1, 2, 3])))
        let (status, body) = harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID],
                                                                                  extensions: .init(credBlob: true)).cborValue)
        XCTAssertEqual(status, .success)
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue))
        XCTAssertEqual(authData.extensions, .map(["credBlob": .byteString([1, 2, 3])]))
    }

    func testRkOptionInGetAssertionIsUnsupported() throws {
        let harness = try AuthenticatorHarness()
        var request = harness.assertionRequest()
        request.options = RequestOptions(["rk": true])
        XCTAssertEqual(harness.send(.getAssertion, request.cborValue).status, .unsupportedOption)
        XCTAssertEqual(harness.send(.getAssertion, .map([2: .byteString([1])])).status, .missingParameter)
        XCTAssertEqual(harness.send(.getAssertion, .map([1: 5, 2: .byteString([1])])).status, .cborUnexpectedType)
    }
}
