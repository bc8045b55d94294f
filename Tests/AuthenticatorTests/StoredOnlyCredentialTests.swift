import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// A stored credential that is not discoverable (a rig's non-resident credential: an ID the key
/// did not make) signs when an allowList names it, as a non-resident credential does, and is
/// never offered, listed or given a user otherwise.
final class StoredOnlyCredentialAssertionTests: XCTestCase {
    func testItSignsByIDWithoutAUserAndIsNeverDiscovered() throws {
        let harness = try AuthenticatorHarness()
        let key = try P256.Signing.PrivateKey()
        let credentialID = [UInt8](repeating: 0x5A, count: 20)
        var credential = ResidentCredential(
            credentialID: credentialID, rpID: "example.com", rpIDHash: AuthenticatorHarness.rpIDHash("example.com"),
            rpName: nil, userHandle: ResidentCredential.storedOnlyUserHandle(credentialID: credentialID), userName: nil,
            userDisplayName: nil, algorithm: -7, privateKey: key.rawRepresentation, createdAt: 1)
        credential.discoverable = false
        try harness.store.saveResidentCredential(credential)

        let request = harness.assertionRequest(allow: [credentialID])
        let (status, body) = harness.send(.getAssertion, request.cborValue)
        XCTAssertEqual(status, .success)
        let response = try XCTUnwrap(body)
        XCTAssertEqual(response[1]?["id"]?.bytesValue, credentialID)
        XCTAssertNil(response[4], "no user: the RP gave none")
        let authData = try XCTUnwrap(response[2]?.bytesValue)
        XCTAssertTrue(key.publicKey.isValidSignature(try XCTUnwrap(response[3]?.bytesValue), for: authData + request.clientDataHash))

        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest().cborValue).status, .noCredentials,
                       "not offered without an allowList")
        // An excludeList naming it is a credential of ours.
        let make = harness.makeCredentialRequest(excludeList: [credentialID])
        XCTAssertEqual(harness.send(.makeCredential, make.cborValue).status, .credentialExcluded)
    }
}
