import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// CTAP 2.3: `FIDO_2_3` in getInfo beside `FIDO_2_1`, and encCredStoreState (0x1E).
final class CTAP23FeatureTests: XCTestCase {
    let pcmr = PinUvAuthPermissions.persistentCredentialManagementReadOnly

    func testVersionsListFIDO23BesideFIDO21AndNeverFIDO22() throws {
        let versions = try AuthenticatorHarness().info()?[1]?.arrayValue?.compactMap(\.stringValue)
        XCTAssertEqual(versions, ["U2F_V2", "FIDO_2_0", "FIDO_2_1", "FIDO_2_3"])
    }

    /// The state decrypts (AES-128-CBC under HKDF-SHA-256(token, salt 32×0, "encCredStoreState"))
    /// to the same 16 bytes across reads, assertions and power cycles, and to new ones after a
    /// discoverable credential is made or deleted.
    func testEncCredStoreStateChangesWithTheCredentialsAndOnlyThen() throws {
        let harness = try AuthenticatorHarness.pinned()
        XCTAssertNil(harness.info()?[0x1E], "no persistent token, no state")
        let token = try harness.grantedToken(AuthenticatorHarness.pin, permissions: pcmr)
        func state() throws -> [UInt8] {
            let encrypted = try XCTUnwrap(harness.info()?[0x1E]?.bytesValue)
            XCTAssertEqual(encrypted.count, 32, "iv ‖ one AES block")
            let key = HKDFSHA256.deriveKey(inputKeyMaterial: token, salt: [UInt8](repeating: 0, count: 32),
                                           info: Array("encCredStoreState".utf8), outputByteCount: 16)
            return try AES128CBC.decrypt(Array(encrypted[16...]), key: key, iv: Array(encrypted[..<16]))
        }
        let empty = try state()
        XCTAssertEqual(try state(), empty)
        let makeToken = try harness.grantedToken(AuthenticatorHarness.pin, permissions: [.makeCredential], rpID: "example.com")
        let made = try harness.register(AuthenticatorHarness.authorized(harness.makeCredentialRequest(resident: true),
                                                                         token: makeToken, .two))
        let afterMaking = try state()
        XCTAssertNotEqual(afterMaking, empty)
        let signIn = harness.assertionRequest(allow: [made.credentialID])
        let getToken = try harness.grantedToken(AuthenticatorHarness.pin, permissions: [.getAssertion], rpID: "example.com")
        XCTAssertEqual(harness.send(.getAssertion, AuthenticatorHarness.authorized(signIn, token: getToken, .two).cborValue).status,
                       .success)
        harness.authenticator.powerCycle()
        XCTAssertEqual(try state(), afterMaking, "reads, assertions and power cycles leave it")
        let manage = try harness.grantedToken(AuthenticatorHarness.pin, permissions: [.credentialManagement])
        XCTAssertEqual(harness.credentialManagement(.deleteCredential, params: .map([2: CredentialDescriptor(id: made.credentialID).cborValue]),
                                                    token: manage).status, .success)
        XCTAssertNotEqual(try state(), afterMaking)
        XCTAssertNotEqual(try state(), empty, "a count, not the set: back to none is a new state too")
    }
}
