import Authenticator
import CBOR
import CTAP
import XCTest

/// A key that offers fewer extensions (a rig's `extensions`) lists only those in getInfo and
/// ignores the others in requests, as CTAP 2.1 §9 has an authenticator do with extensions it
/// does not support: the request succeeds, with no output for them.
final class ExtensionSetTests: XCTestCase {
    func harness(_ extensions: ExtensionSet, level: AuthenticatorConfiguration.ProtocolLevel = .ctap21) throws -> AuthenticatorHarness {
        var configuration = AuthenticatorConfiguration()
        configuration.extensions = extensions
        configuration.protocolLevel = level
        return try AuthenticatorHarness(configuration: configuration)
    }

    private func extensionOutputs(_ body: CBORValue?) throws -> [CBORValue: CBORValue] {
        try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue)).extensions?.mapValue ?? [:]
    }

    func testAllOfThemByDefault() throws {
        let info = try XCTUnwrap(try AuthenticatorHarness().send(.getInfo).body)
        XCTAssertEqual(info[2]?.arrayValue?.compactMap(\.stringValue),
                       ["credProtect", "credBlob", "hmac-secret", "hmac-secret-mc", "largeBlobKey", "minPinLength",
                        "thirdPartyPayment", "previewSign"])
        XCTAssertEqual(info[4]?["largeBlobs"]?.boolValue, true)
    }

    func testGetInfoListsOnlyTheOfferedOnesAndLargeBlobsGoesWithLargeBlobKey() throws {
        let key = try harness([.hmacSecret])
        let info = try XCTUnwrap(key.send(.getInfo).body)
        XCTAssertEqual(info[2]?.arrayValue?.compactMap(\.stringValue), ["hmac-secret", "hmac-secret-mc"])
        XCTAssertNil(info[4]?["largeBlobs"], "no largeBlobs option without largeBlobKey")
        XCTAssertNil(info[0x0B], "no maxSerializedLargeBlobArray")
        XCTAssertNil(info[0x0F], "no maxCredBlobLength without credBlob")
        XCTAssertEqual(key.sendRaw([CTAPCommand.largeBlobs.rawValue, 0xA1, 0x01, 0x01]).status, .invalidCommand)
        XCTAssertEqual(try harness([]).send(.getInfo).body?[2]?.arrayValue?.count ?? 0, 0, "none: an empty list, or none")
    }

    func testRequestsForOthersAreIgnoredNotRefused() throws {
        let key = try harness([.hmacSecret])
        var request = key.makeCredentialRequest(resident: true, extensions: MakeCredentialExtensions(
            credProtect: .userVerificationRequired, credBlob: [1, 2, 3], hmacSecret: true))
        request.extensions.largeBlobKey = true
        request.extensions.minPinLength = true
        let (status, body) = key.send(.makeCredential, request.cborValue)
        XCTAssertEqual(status, .success)
        XCTAssertEqual(Set(try extensionOutputs(body).keys.compactMap(\.stringValue)), ["hmac-secret"])
        XCTAssertNil(body?[5], "no largeBlobKey")
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue))
        let credentialID = try XCTUnwrap(authData.attestedCredentialData?.credentialID)
        let stored = try XCTUnwrap(key.store.residentCredential(id: credentialID))
        XCTAssertEqual(stored.credProtect, .userVerificationOptional, "credProtect was not offered: the default level")
        XCTAssertNil(stored.credBlob)

        var assertion = key.assertionRequest(allow: [credentialID])
        assertion.extensions.credBlob = true
        assertion.extensions.largeBlobKey = true
        let asserted = key.send(.getAssertion, assertion.cborValue)
        XCTAssertEqual(asserted.status, .success)
        XCTAssertTrue(try extensionOutputs(asserted.body).isEmpty, "no credBlob output")
        XCTAssertNil(asserted.body?[7], "no largeBlobKey")
    }

    /// Ignored means not read at all: a malformed input of one it does not offer does not fail
    /// the request (while a key that offers it refuses it).
    func testMalformedInputsOfOthersAreIgnoredToo() throws {
        let request = try AuthenticatorHarness().makeCredentialRequest(resident: true)
        let malformed = AuthenticatorHarness.cbor(request, rawExtensions: ["credProtect": .unsignedInt(7), "credBlob": "text"])
        XCTAssertEqual(try harness(.all).send(.makeCredential, malformed).status, .invalidOption)
        XCTAssertEqual(try harness([.hmacSecret]).send(.makeCredential, malformed).status, .success)
        let assertion: CBORValue = .map([1: "example.com", 2: .byteString([UInt8](repeating: 1, count: 32)),
                                         4: .map(["credBlob": "not a boolean"])])
        let key = try harness([.hmacSecret])
        _ = try key.register(key.makeCredentialRequest(resident: true))
        XCTAssertEqual(key.send(.getAssertion, assertion).status, .success)
        XCTAssertEqual(try harness(.all).send(.getAssertion, assertion).status, .cborUnexpectedType)
    }

    func testTheCTAP20PersonaOffersHmacSecretOnlyAndIgnoresCredProtect() throws {
        let key = try harness(.all, level: .ctap20)
        let request = key.makeCredentialRequest(resident: true, extensions: MakeCredentialExtensions(
            credProtect: .userVerificationOptionalWithCredentialIDList, hmacSecret: true))
        let (status, body) = key.send(.makeCredential, request.cborValue)
        XCTAssertEqual(status, .success)
        XCTAssertEqual(Set(try extensionOutputs(body).keys.compactMap(\.stringValue)), ["hmac-secret"])
        XCTAssertEqual(try harness([.credBlob], level: .ctap20).send(.getInfo).body?[2]?.arrayValue?.count ?? 0, 0)
    }
}
