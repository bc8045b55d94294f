import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// BE and BS (authData bits 3 and 4): none on a key's own credentials, as on every security
/// key; a test rig's defaults and per-credential settings stand for a passkey provider that syncs.
final class BackupFlagsTests: XCTestCase {
    private func flags(_ body: CBORValue?) throws -> AuthenticatorData.Flags {
        try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue)).flags
    }

    private func assertionFlags(_ harness: AuthenticatorHarness, allow: [[UInt8]] = []) throws -> AuthenticatorData.Flags {
        let (status, body) = harness.send(.getAssertion, harness.assertionRequest(allow: allow).cborValue)
        XCTAssertEqual(status, .success)
        return try flags(body)
    }

    func testAKeysOwnCredentialsAreNeitherEligibleNorBackedUp() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(resident: true))
        XCTAssertTrue(registration.authenticatorData.flags.isDisjoint(with: [.backupEligible, .backedUp]))
        XCTAssertTrue(try assertionFlags(harness).isDisjoint(with: [.backupEligible, .backedUp]))
    }

    func testTheKeysDefaultsMarkWhatItMakesAndDiscoverableCredentialsKeepThem() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.defaultBackupFlags = [.backupEligible, .backedUp, .userVerified]
        XCTAssertEqual(configuration.defaultBackupFlags, [.backupEligible, .backedUp], "only BE and BS count")
        let harness = try AuthenticatorHarness(configuration: configuration)

        let resident = try harness.register(harness.makeCredentialRequest(resident: true))
        XCTAssertTrue(resident.authenticatorData.flags.isSuperset(of: [.backupEligible, .backedUp, .userPresent]))
        let stored = try XCTUnwrap(harness.store.residentCredential(id: resident.credentialID))
        XCTAssertTrue(stored.backupEligible && stored.backedUp, "stored with the credential")
        XCTAssertTrue(try assertionFlags(harness).isSuperset(of: [.backupEligible, .backedUp]))

        // The stored flags have the last word over the key's setting for that credential.
        XCTAssertTrue(try harness.store.updateBackupState(credentialID: resident.credentialID, eligible: true, backedUp: false))
        let changed = try assertionFlags(harness)
        XCTAssertTrue(changed.contains(.backupEligible))
        XCTAssertFalse(changed.contains(.backedUp))
        XCTAssertFalse(try harness.store.updateBackupState(credentialID: [1, 2, 3], eligible: true, backedUp: true), "no such credential")

        // A non-discoverable credential keeps nothing: its assertions carry the key's setting.
        let plain = try harness.register(harness.makeCredentialRequest(userID: [9]))
        XCTAssertTrue(plain.authenticatorData.flags.isSuperset(of: [.backupEligible, .backedUp]))
        XCTAssertTrue(try assertionFlags(harness, allow: [plain.credentialID]).isSuperset(of: [.backupEligible, .backedUp]))
    }

    func testTheFlagsAreSignedWithTheRest() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.defaultBackupFlags = [.backupEligible]
        let harness = try AuthenticatorHarness(configuration: configuration)
        let registration = try harness.register(harness.makeCredentialRequest(resident: true))
        let request = harness.assertionRequest(allow: [registration.credentialID])
        let (status, body) = harness.send(.getAssertion, request.cborValue)
        XCTAssertEqual(status, .success)
        let response = try XCTUnwrap(body)
        XCTAssertTrue(try flags(response).contains(.backupEligible))
        XCTAssertTrue(AuthenticatorHarness.verifyAssertion(response, publicKey: registration.publicKey,
                                                           clientDataHash: request.clientDataHash))
    }
}
