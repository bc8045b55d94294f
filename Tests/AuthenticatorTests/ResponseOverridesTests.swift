import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// The rig's response override bits reach the relying party as exactly the fault they name:
/// flags cleared under a valid signature, or a well-formed signature that does not verify.
final class ResponseOverridesTests: XCTestCase {
    func assertionParts(_ harness: AuthenticatorHarness, _ registration: AuthenticatorHarness.Registration)
        throws -> (flags: AuthenticatorData.Flags, verifies: Bool, signature: [UInt8]) {
        let request = harness.assertionRequest(allow: [registration.credentialID])
        let (status, body) = harness.send(.getAssertion, request.cborValue)
        XCTAssertEqual(status, .success)
        let response = try XCTUnwrap(body)
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(response[2]?.bytesValue))
        return (authData.flags, AuthenticatorHarness.verifyAssertion(response, publicKey: registration.publicKey,
                                                                     clientDataHash: request.clientDataHash),
                try XCTUnwrap(response[3]?.bytesValue))
    }

    func testEachBitIsTheFaultItNames() throws {
        for algorithm in [-7, -8] {
            let overrides = ResponseOverrides()
            let harness = try AuthenticatorHarness(overrides: overrides)
            let registration = try harness.register(harness.makeCredentialRequest(algorithms: [algorithm]))
            let normal = try assertionParts(harness, registration)
            XCTAssertTrue(normal.flags.contains(.userPresent))
            XCTAssertTrue(normal.verifies)

            overrides.badUP.store(true, ordering: .releasing)
            let noUP = try assertionParts(harness, registration)
            XCTAssertFalse(noUP.flags.contains(.userPresent))
            XCTAssertTrue(noUP.verifies, "the flags are cleared before signing")
            overrides.badUP.store(false, ordering: .releasing)

            overrides.bogusSignature.store(true, ordering: .releasing)
            let bogus = try assertionParts(harness, registration)
            XCTAssertTrue(bogus.flags.contains(.userPresent))
            XCTAssertFalse(bogus.verifies)
            XCTAssertEqual(bogus.signature.count, algorithm == -8 ? 64 : Int(bogus.signature[1]) + 2, "still well-formed")
            // The packed attestation signature is bogus too.
            let made = harness.send(.makeCredential, harness.makeCredentialRequest(userID: [8], algorithms: [algorithm]).cborValue)
            XCTAssertEqual(made.status, .success)
            let body = try XCTUnwrap(made.body)
            let statement = try XCTUnwrap(body[3])
            let authData = try XCTUnwrap(body[2]?.bytesValue)
            let certificate = try XCTUnwrap(statement["x5c"]?.arrayValue?.first?.bytesValue)
            let request = harness.makeCredentialRequest(userID: [8], algorithms: [algorithm])
            XCTAssertFalse(IndependentVerifier.verifyWithCertificate(certificate, signature: try XCTUnwrap(statement["sig"]?.bytesValue),
                                                                     message: authData + request.clientDataHash))
            overrides.bogusSignature.store(false, ordering: .releasing)
            XCTAssertTrue(try assertionParts(harness, registration).verifies)
        }
    }

    func testBadUVClearsTheFlagOfAVerifiedRequest() throws {
        let overrides = ResponseOverrides()
        let harness = try AuthenticatorHarness(userVerification: ScriptedVerification(), overrides: overrides)
        overrides.badUV.store(true, ordering: .releasing)
        var request = harness.makeCredentialRequest(resident: true)
        request.options = RequestOptions(["rk": true, "uv": true])
        let (status, body) = harness.send(.makeCredential, request.cborValue)
        XCTAssertEqual(status, .success)
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue))
        XCTAssertFalse(authData.flags.contains(.userVerified))
        XCTAssertTrue(authData.flags.contains(.userPresent))
    }
}
