import Authenticator
import CBOR
import CTAP
import XCTest

/// A key that stores no discoverable credentials (a rig's `hasResidentKey false`): getInfo says
/// rk false, and a makeCredential asking for one is CTAP2_ERR_UNSUPPORTED_OPTION (CTAP 2.1
/// §6.1.2); non-discoverable credentials work as before.
final class NoResidentKeyTests: XCTestCase {
    func testRkIsRefusedAndSaidSoInGetInfo() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.supportsResidentKeys = false
        let key = try AuthenticatorHarness(configuration: configuration)
        let info = try XCTUnwrap(key.send(.getInfo).body)
        XCTAssertEqual(info[4]?["rk"]?.boolValue, false)
        XCTAssertNil(info[0x14], "no remainingDiscoverableCredentials")
        XCTAssertEqual(key.send(.makeCredential, key.makeCredentialRequest(resident: true).cborValue).status, .unsupportedOption)
        XCTAssertEqual(try key.store.residentCredentialCount(), 0)
        let plain = try key.register(key.makeCredentialRequest())
        XCTAssertEqual(key.send(.getAssertion, key.assertionRequest(allow: [plain.credentialID]).cborValue).status, .success)

        configuration.protocolLevel = .ctap20
        XCTAssertEqual(try AuthenticatorHarness(configuration: configuration).send(.getInfo).body?[4]?["rk"]?.boolValue, false)
    }
}
