import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

final class MakeCredentialTests: XCTestCase {
    func testES256PackedAttestationVerifiesWithTheBatchCertificate() throws {
        let harness = try AuthenticatorHarness()
        let request = harness.makeCredentialRequest()
        let registration = try harness.register(request)
        XCTAssertEqual(registration.response[1]?.stringValue, "packed")
        let authData = registration.authenticatorData
        XCTAssertEqual(authData.rpIDHash, SHA256.hash(Array("example.com".utf8)))
        XCTAssertTrue(authData.flags.contains(.userPresent))
        XCTAssertFalse(authData.flags.contains(.userVerified))
        XCTAssertEqual(authData.attestedCredentialData?.aaguid, AuthenticatorConfiguration.latchkeyAAGUID)
        guard case .ec2P256(.es256, let x, let y) = registration.publicKey else { return XCTFail("not ES256") }
        XCTAssertEqual(x.count, 32); XCTAssertEqual(y.count, 32)

        let statement = try XCTUnwrap(registration.response[3])
        XCTAssertEqual(statement["alg"]?.intValue, -7)
        let x5c = try XCTUnwrap(statement["x5c"]?.arrayValue)
        XCTAssertEqual(x5c.count, 1)
        let certificate = try XCTUnwrap(x5c[0].bytesValue)
        let signature = try XCTUnwrap(statement["sig"]?.bytesValue)
        let rawAuthData = try XCTUnwrap(registration.response[2]?.bytesValue)
        // WebAuthn §8.2: sig over authenticatorData ‖ clientDataHash with the x5c[0] key.
        XCTAssertTrue(IndependentVerifier.verifyWithCertificate(certificate, signature: signature,
                                                                message: rawAuthData + request.clientDataHash))
        XCTAssertFalse(IndependentVerifier.verifyWithCertificate(certificate, signature: signature,
                                                                 message: rawAuthData + [UInt8](repeating: 0, count: 32)))
        // The certificate meets the packed attestation rules.
        let parsed = try X509Certificate(derEncoded: certificate)
        XCTAssertEqual(parsed.version, 3)
        XCTAssertEqual(parsed.subject["OU"], "Authenticator Attestation")
        XCTAssertFalse(parsed.isCA)
        XCTAssertEqual(parsed.extensionValue(oid: "1.3.6.1.4.1.45724.1.1.4"), [0x04, 0x10] + AuthenticatorConfiguration.latchkeyAAGUID)
    }

    func testEdDSACredentialWhenTheRPPrefersIt() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(algorithms: [-8, -7]))
        guard case .okpEd25519(let x) = registration.publicKey else { return XCTFail("not EdDSA") }
        XCTAssertEqual(x.count, 32)
    }

    func testFirstSupportedAlgorithmInRPOrderIsChosen() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(algorithms: [-259, -7, -8]))
        guard case .ec2P256 = registration.publicKey else { return XCTFail("expected ES256") }
    }

    func testNoneAttestationWhenTheClientPrefersIt() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(formats: ["none"]))
        XCTAssertEqual(registration.response[1]?.stringValue, "none")
        XCTAssertEqual(registration.response[3], .map([:]))
    }

    func testUnsupportedAlgorithm() throws {
        let harness = try AuthenticatorHarness()
        // RS512 and RS1: algorithms no security key makes.
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(algorithms: [-259, -65535]).cborValue).status,
                       .unsupportedAlgorithm)
    }

    /// CTAP 2.1 §6.1.2: the checks run in the specification's order, so a request with an
    /// unsupported algorithm and a malformed extension gets the algorithm's status, and a touch
    /// probe with a malformed extension is still a touch probe.
    func testMalformedExtensionsAreReportedAtTheExtensionsStep() throws {
        let presence = ScriptedPresence()
        let harness = try AuthenticatorHarness(presence: presence)
        let badAlgorithm = AuthenticatorHarness.cbor(harness.makeCredentialRequest(algorithms: [-259]),
                                                     rawExtensions: ["credProtect": 9])
        XCTAssertEqual(harness.send(.makeCredential, badAlgorithm).status, .unsupportedAlgorithm)
        XCTAssertEqual(harness.send(.makeCredential, AuthenticatorHarness.cbor(harness.makeCredentialRequest(),
                                                                             rawExtensions: ["credProtect": 9])).status,
                       .invalidOption)
        var probe = harness.makeCredentialRequest()
        probe.pinUvAuthParam = []
        probe.pinUvAuthProtocol = 1
        XCTAssertEqual(harness.send(.makeCredential, AuthenticatorHarness.cbor(probe, rawExtensions: ["hmac-secret": 1])).status,
                       .pinNotSet)
        XCTAssertEqual(presence.asked.last?.operation, .touchProbe)
    }

    func testMissingRequiredParameters() throws {
        let harness = try AuthenticatorHarness()
        let full = harness.makeCredentialRequest().cborValue.mapValue!
        for key in [1, 2, 3, 4] {
            var map = full
            map[CBORValue(key)] = nil
            XCTAssertEqual(harness.send(.makeCredential, .map(map)).status, .missingParameter, "key \(key)")
        }
        XCTAssertEqual(harness.send(.makeCredential).status, .missingParameter)
    }

    func testWrongTypesAreUnexpectedType() throws {
        let harness = try AuthenticatorHarness()
        let full = harness.makeCredentialRequest().cborValue.mapValue!
        let wrong: [(Int, CBORValue)] = [(1, "text"), (2, .byteString([1])), (3, .array([])), (4, .map([:])),
                                         (7, .map(["rk": 1]))]
        for (key, value) in wrong {
            var map = full
            map[CBORValue(key)] = value
            XCTAssertEqual(harness.send(.makeCredential, .map(map)).status, .cborUnexpectedType, "key \(key)")
        }
        XCTAssertEqual(harness.send(.makeCredential, .array([])).status, .cborUnexpectedType)
    }

    func testMalformedCBORIsInvalidCBOR() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.sendRaw([0x01, 0xA1, 0x01]).status, .invalidCBOR)
        XCTAssertEqual(harness.sendRaw([0x01, 0xA1, 0x01, 0x01, 0x00]).status, .invalidCBOR)   // trailing byte
        XCTAssertEqual(harness.sendRaw([0x01, 0xA2, 0x01, 0x01, 0x01, 0x02]).status, .invalidCBOR)   // duplicate key
    }

    func testUnknownCommandIsInvalidCommand() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.sendRaw([0x55]).status, .invalidCommand)
        XCTAssertEqual(harness.sendRaw([0x09, 0xA0]).status, .invalidCommand)   // bioEnrollment not offered
        XCTAssertEqual(harness.sendRaw([0x06, 0xA0]).status, .missingParameter) // clientPIN is: subCommand missing
    }

    func testUpFalseIsInvalidOption() throws {
        let harness = try AuthenticatorHarness()
        var request = harness.makeCredentialRequest()
        request.options = RequestOptions(["up": false])
        XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .invalidOption)
    }

    func testPresenceDeniedTimedOutCancelled() throws {
        let presence = ScriptedPresence()
        let harness = try AuthenticatorHarness(presence: presence)
        presence.queue(.denied, .timedOut, .cancelled)
        let request = harness.makeCredentialRequest().cborValue
        XCTAssertEqual(harness.send(.makeCredential, request).status, .operationDenied)
        XCTAssertEqual(harness.send(.makeCredential, request).status, .userActionTimeout)
        XCTAssertEqual(harness.send(.makeCredential, request).status, .keepaliveCancel)
        let cancelled = CancellationFlag()
        cancelled.cancel()
        XCTAssertEqual(harness.send(.makeCredential, request, cancellation: cancelled).status, .keepaliveCancel)
        XCTAssertEqual(presence.asked.first?.operation, .makeCredential)
        XCTAssertEqual(presence.asked.first?.rpID, "example.com")
    }

    func testExcludeListHitAfterPresenceIsCredentialExcluded() throws {
        let presence = ScriptedPresence()
        let harness = try AuthenticatorHarness(presence: presence)
        let first = try harness.register(harness.makeCredentialRequest())
        let asked = presence.asked.count
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(excludeList: [first.credentialID]).cborValue).status,
                       .credentialExcluded)
        XCTAssertEqual(presence.asked.count, asked + 1, "presence is collected before CREDENTIAL_EXCLUDED")
        // The same ID presented for another RP is not ours there: creation proceeds.
        _ = try harness.register(harness.makeCredentialRequest(rpID: "other.example", excludeList: [first.credentialID]))
    }

    /// getInfo advertises maxCredentialCountInList 8 (a YubiKey 5's): 8 IDs are fine, 9 are LIMIT_EXCEEDED, for
    /// excludeList and allowList, without asking for presence.
    func testListsLongerThanMaxCredentialCountInListAreLimitExceeded() throws {
        let presence = ScriptedPresence()
        let harness = try AuthenticatorHarness(presence: presence)
        let first = try harness.register(harness.makeCredentialRequest())
        let strangers = (0..<8).map { [UInt8](repeating: UInt8($0), count: 48) }
        let info = harness.send(.getInfo).body
        XCTAssertEqual(info?[7]?.intValue, 8)
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(excludeList: strangers).cborValue).status,
                       .success)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: strangers + [first.credentialID]).cborValue).status,
                       .limitExceeded)
        let asked = presence.asked.count
        XCTAssertEqual(harness.send(.makeCredential,
                                    harness.makeCredentialRequest(excludeList: strangers + [first.credentialID]).cborValue).status,
                       .limitExceeded)
        XCTAssertEqual(presence.asked.count, asked, "refused before presence")
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: Array(strangers.prefix(7)) + [first.credentialID]).cborValue).status,
                       .success)
    }

    func testTouchProbeWithEmptyPinUvAuthParamAnswersPinNotSet() throws {
        let presence = ScriptedPresence()
        let harness = try AuthenticatorHarness(presence: presence)
        var request = harness.makeCredentialRequest()
        request.pinUvAuthParam = []
        request.pinUvAuthProtocol = 1
        XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .pinNotSet)
        XCTAssertEqual(presence.asked.last?.operation, .touchProbe)
        presence.queue(.denied)
        XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .operationDenied)
    }

    func testResidentCredentialForTheSameUserReplacesTheOldOne() throws {
        let harness = try AuthenticatorHarness()
        let first = try harness.register(harness.makeCredentialRequest(resident: true))
        let second = try harness.register(harness.makeCredentialRequest(resident: true))
        XCTAssertNotEqual(first.credentialID, second.credentialID)
        XCTAssertEqual(try harness.store.residentCredentialCount(), 1)
        XCTAssertNil(try harness.store.residentCredential(id: first.credentialID))
        // The old ID no longer signs.
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [first.credentialID]).cborValue).status,
                       .noCredentials)
    }

    func testKeyStoreFull() throws {
        let harness = try AuthenticatorHarness(store: InMemoryCredentialStore(maxResidentCredentials: 2))
        _ = try harness.register(harness.makeCredentialRequest(userID: [1], resident: true))
        _ = try harness.register(harness.makeCredentialRequest(userID: [2], resident: true))
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(userID: [3], resident: true).cborValue).status,
                       .keyStoreFull)
        // Replacing an existing account still works when full.
        _ = try harness.register(harness.makeCredentialRequest(userID: [2], resident: true))
    }

    func testCredProtectAndCredBlobExtensionOutputs() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(
            resident: true, extensions: .init(credProtect: .userVerificationOptionalWithCredentialIDList, credBlob: [9, 8, 7])))
        XCTAssertEqual(registration.authenticatorData.extensions, .map(["credProtect": 2, "credBlob": true]))
        XCTAssertTrue(registration.authenticatorData.flags.contains(.extensionData))
        let tooLong = try harness.register(harness.makeCredentialRequest(
            userID: [9], resident: true, extensions: .init(credBlob: [UInt8](repeating: 1, count: 33))))
        XCTAssertEqual(tooLong.authenticatorData.extensions, .map(["credBlob": false]))
        XCTAssertEqual(harness.send(.makeCredential, AuthenticatorHarness.cbor(harness.makeCredentialRequest(),
                                                                             rawExtensions: ["credProtect": 4])).status,
                       .invalidOption)
    }

    func testUserHandleLongerThan64BytesIsRejected() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.send(.makeCredential, harness.makeCredentialRequest(userID: [UInt8](repeating: 1, count: 65)).cborValue).status,
                       .invalidLength)
    }
}
