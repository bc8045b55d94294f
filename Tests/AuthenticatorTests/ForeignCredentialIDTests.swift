import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// A resident credential stored under an ID this key did not seal — the rig's addCredential,
/// an import — is found by its ID in an allowList and an excludeList, for its own RP only,
/// and not once it is hidden, deleted, or needs UV the request lacks.
final class ForeignCredentialIDTests: XCTestCase {
    func stored(_ harness: AuthenticatorHarness, id: [UInt8], rpID: String = "example.com",
                credProtect: CredentialProtectionPolicy = .userVerificationOptional) throws -> P256.Signing.PrivateKey {
        let key = try P256.Signing.PrivateKey()
        try harness.store.saveResidentCredential(ResidentCredential(
            credentialID: id, rpID: rpID, rpIDHash: SHA256.hash(Array(rpID.utf8)), rpName: nil, userHandle: [9, 9],
            userName: "carol", userDisplayName: nil, algorithm: COSEAlgorithm.es256.rawValue, privateKey: key.rawRepresentation,
            createdAt: 1_700_000_000, credProtect: credProtect))
        return key
    }

    func testAllowListFindsItAndTheSignatureVerifies() throws {
        let harness = try AuthenticatorHarness()
        let id = [UInt8](repeating: 0x5A, count: 16)
        let key = try stored(harness, id: id)
        let request = harness.assertionRequest(allow: [[0x01, 0x02], id])
        let (status, body) = harness.send(.getAssertion, request.cborValue)
        XCTAssertEqual(status, .success)
        let response = try XCTUnwrap(body)
        XCTAssertEqual(response[1]?["id"]?.bytesValue, id)
        XCTAssertEqual(response[4]?["id"]?.bytesValue, [9, 9])
        XCTAssertTrue(AuthenticatorHarness.verifyAssertion(response, publicKey: .ec2P256(algorithm: .es256, x: key.publicKey.x,
                                                                                          y: key.publicKey.y),
                                                           clientDataHash: request.clientDataHash))
        // Another RP does not get it, even by its ID.
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(rpID: "other.example", allow: [id]).cborValue).status,
                       .noCredentials)
        // Deleted: gone.
        XCTAssertTrue(try harness.store.deleteResidentCredential(id: id))
        XCTAssertEqual(harness.send(.getAssertion, request.cborValue).status, .noCredentials)
    }

    func testCredProtectThreeNeedsUVAndHiddenIsGone() throws {
        let harness = try AuthenticatorHarness()
        let required = [UInt8](repeating: 0x33, count: 20)
        _ = try stored(harness, id: required, credProtect: .userVerificationRequired)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [required]).cborValue).status, .noCredentials)
        let hidden = [UInt8](repeating: 0x44, count: 20)
        _ = try stored(harness, id: hidden)
        harness.store.hide(credentialID: hidden, at: 1_700_000_100)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [hidden]).cborValue).status, .noCredentials)
    }

    func testExcludeListNamesIt() throws {
        let harness = try AuthenticatorHarness()
        let id = [UInt8](repeating: 0x77, count: 32)
        _ = try stored(harness, id: id)
        let excluded = harness.makeCredentialRequest(userID: [5], excludeList: [id])
        XCTAssertEqual(harness.send(.makeCredential, excluded.cborValue).status, .credentialExcluded)
        // For another RP the same ID excludes nothing.
        let elsewhere = harness.makeCredentialRequest(rpID: "other.example", userID: [5], excludeList: [id])
        XCTAssertEqual(harness.send(.makeCredential, elsewhere.cborValue).status, .success)
    }

    /// The opened-key cache never signs for a credential with another credential's key: the same
    /// ID deleted and stored again with a new key signs with the new one, by allowList and
    /// discoverably.
    func testSameIDWithAnotherKeySignsWithTheNewKey() throws {
        let harness = try AuthenticatorHarness()
        let id = [UInt8](repeating: 0x6B, count: 16)
        _ = try stored(harness, id: id)
        let request = harness.assertionRequest(allow: [id])
        XCTAssertEqual(harness.send(.getAssertion, request.cborValue).status, .success)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest().cborValue).status, .success)
        XCTAssertTrue(try harness.store.deleteResidentCredential(id: id))
        let newKey = try stored(harness, id: id)
        let cose = COSEKey.ec2P256(algorithm: .es256, x: newKey.publicKey.x, y: newKey.publicKey.y)
        for assertion in [request, harness.assertionRequest()] {
            let (status, body) = harness.send(.getAssertion, assertion.cborValue)
            XCTAssertEqual(status, .success)
            XCTAssertTrue(AuthenticatorHarness.verifyAssertion(try XCTUnwrap(body), publicKey: cose,
                                                               clientDataHash: assertion.clientDataHash))
        }
    }
}
