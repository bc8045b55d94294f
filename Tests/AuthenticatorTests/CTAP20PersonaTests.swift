import Authenticator
import CBOR
import CTAP
import XCTest

/// The CTAP 2.0 persona (a rig's `protocol ctap2`): getInfo as a CTAP 2.0 key reports it, the
/// CTAP 2.1 commands and subcommands unknown, PIN/UV auth protocol 1 only.
final class CTAP20PersonaTests: XCTestCase {
    func harness(userVerification: (any UserVerification)? = nil) throws -> AuthenticatorHarness {
        var configuration = AuthenticatorConfiguration()
        configuration.protocolLevel = .ctap20
        // A presence that would select the only account on a CTAP 2.1 key (as `auto` does).
        return try AuthenticatorHarness(presence: ScriptedPresence(selectsForUser: true), configuration: configuration,
                                        userVerification: userVerification)
    }

    func testGetInfoHasOnlyCTAP20Members() throws {
        let key = try harness()
        let (status, body) = key.send(.getInfo)
        XCTAssertEqual(status, .success)
        let info = try XCTUnwrap(body?.mapValue)
        XCTAssertEqual(info[1]?.arrayValue?.compactMap(\.stringValue), ["U2F_V2", "FIDO_2_0"])
        XCTAssertEqual(info[2]?.arrayValue?.compactMap(\.stringValue), ["hmac-secret"])
        XCTAssertEqual(Set(try XCTUnwrap(info[4]?.mapValue).keys.compactMap(\.stringValue)), ["rk", "up", "plat", "clientPin"])
        XCTAssertEqual(info[6]?.arrayValue?.compactMap(\.intValue), [1])
        XCTAssertTrue(info.keys.compactMap(\.intValue).allSatisfy { $0 <= 8 }, "no member past 0x08: \(info.keys)")
        let withUV = try harness(userVerification: ScriptedVerification())
        XCTAssertEqual(withUV.send(.getInfo).body?[4]?["uv"]?.boolValue, true)
    }

    func testCTAP21CommandsSubcommandsAndProtocolTwoAreUnknown() throws {
        let key = try harness()
        for command in [CTAPCommand.credentialManagement, .credentialManagementPreview, .selection, .largeBlobs, .config] {
            XCTAssertEqual(key.sendRaw([command.rawValue, 0xA1, 0x01, 0x01]).status, .invalidCommand, "\(command)")
        }
        for subcommand in [0x06, 0x07, 0x08, 0x09] {
            XCTAssertEqual(key.send(.clientPIN, .map([1: .unsignedInt(1), 2: .unsignedInt(UInt64(subcommand))])).status,
                           .invalidSubcommand, "subcommand \(subcommand)")
        }
        XCTAssertEqual(key.send(.clientPIN, .map([1: .unsignedInt(2), 2: .unsignedInt(2)])).status, .invalidParameter,
                       "getKeyAgreement with protocol 2")
        XCTAssertEqual(key.send(.clientPIN, .map([1: .unsignedInt(1), 2: .unsignedInt(2)])).status, .success,
                       "getKeyAgreement with protocol 1")
        XCTAssertEqual(key.send(.makeCredential, key.makeCredentialRequest(resident: true).cborValue).status, .success)
    }

    /// CTAP 2.0 §5.1: no makeCredUvNotRqd — with a PIN set, every makeCredential needs pinAuth;
    /// `uv` on a key without UV is UNSUPPORTED_OPTION; no userSelected, numberOfCredentials always.
    func testCTAP20RulesForPINUVAndAccountSelection() throws {
        let key = try harness()
        var uvRequest = key.makeCredentialRequest()
        uvRequest.options = RequestOptions(["uv": true])
        XCTAssertEqual(key.send(.makeCredential, uvRequest.cborValue).status, .unsupportedOption)
        XCTAssertEqual(key.send(.makeCredential, key.makeCredentialRequest(resident: true).cborValue).status, .success)
        let (status, body) = key.send(.getAssertion, key.assertionRequest().cborValue)
        XCTAssertEqual(status, .success)
        XCTAssertNil(body?[6], "no userSelected from a CTAP 2.0 key")
        XCTAssertEqual(try key.setPIN("1234", .one), .success)
        XCTAssertEqual(key.send(.makeCredential, key.makeCredentialRequest(userID: [7]).cborValue).status, .puatRequired,
                       "PIN_REQUIRED for a non-resident credential too")
    }
}
