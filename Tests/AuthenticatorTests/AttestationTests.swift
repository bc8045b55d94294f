import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// Issue 16, item 3: attestation must not tell one installation from another.
final class AttestationTests: XCTestCase {
    func x5c(_ harness: AuthenticatorHarness, rpID: String = "example.com") throws -> (leaf: [UInt8], registration: AuthenticatorHarness.Registration) {
        let registration = try harness.register(harness.makeCredentialRequest(rpID: rpID))
        let statement = try XCTUnwrap(registration.response[3])
        let leaf = try XCTUnwrap(statement["x5c"]?.arrayValue?.first?.bytesValue)
        let signature = try XCTUnwrap(statement["sig"]?.bytesValue)
        let authData = try XCTUnwrap(registration.response[2]?.bytesValue)
        XCTAssertTrue(IndependentVerifier.verifyWithCertificate(leaf, signature: signature,
                                                                message: authData + registration.clientDataHash))
        return (leaf, registration)
    }

    /// Two stores (two installations), two RPs, before and after a reset: the same certificate,
    /// the shared batch one, issued by the shared root and saying only "a Latchkey".
    func testEveryInstallationSharesTheBatchCertificate() throws {
        let first = try AuthenticatorHarness()
        let second = try AuthenticatorHarness(store: InMemoryCredentialStore())
        let a = try x5c(first).leaf
        XCTAssertEqual(a, try x5c(second, rpID: "other.example").leaf, "another installation, another RP")
        XCTAssertEqual(a, BatchAttestation.certificate)
        XCTAssertEqual(first.authenticator.attestationCACertificate, BatchAttestation.caCertificate)
        let leaf = try X509Certificate(derEncoded: a)
        let root = try X509Certificate(derEncoded: BatchAttestation.caCertificate)
        XCTAssertTrue(leaf.isSigned(by: root))
        XCTAssertEqual(leaf.subject["CN"], "Latchkey Batch Attestation")
        XCTAssertEqual(leaf.subject["OU"], "Authenticator Attestation")
        XCTAssertFalse(leaf.isCA)
        XCTAssertTrue(root.isCA)
        XCTAssertEqual(leaf.extensionValue(oid: "1.3.6.1.4.1.45724.1.1.4"), [0x04, 0x10] + AuthenticatorConfiguration.latchkeyAAGUID)
        XCTAssertGreaterThan(leaf.notAfter, Date(timeIntervalSince1970: 2_400_000_000).timeIntervalSince1970, "valid for decades")
        // The store's own certificate (made with it) is not what goes out.
        let stored = try first.store.loadDeviceSecrets(orCreate: { throw StoreError.io("exists") })
        XCTAssertNotEqual(stored.attestationCertificate, a)
        // A reset changes nothing about it.
        first.authenticator.powerCycle()
        XCTAssertEqual(first.send(.reset).status, .success)
        XCTAssertEqual(try x5c(first).leaf, a)
    }

    /// `--attestation installation` (rigs testing chains): the store's certificate, and a reset
    /// remakes it, so registrations before and after cannot be linked.
    func testInstallationAttestationIsTheStoresAndAResetRemakesIt() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.attestation = .installation
        let harness = try AuthenticatorHarness(configuration: configuration)
        let stored = try harness.store.loadDeviceSecrets(orCreate: { throw StoreError.io("exists") })
        let before = try x5c(harness).leaf
        XCTAssertEqual(before, stored.attestationCertificate)
        XCTAssertEqual(harness.authenticator.attestationCACertificate, stored.attestationCACertificate)
        XCTAssertNotEqual(before, BatchAttestation.certificate)
        harness.authenticator.powerCycle()
        XCTAssertEqual(harness.send(.reset).status, .success)
        let after = try x5c(harness).leaf
        XCTAssertNotEqual(after, before, "a reset remakes the installation's identity")
        let remade = try harness.store.loadDeviceSecrets(orCreate: { throw StoreError.io("exists") })
        XCTAssertEqual(remade.attestationCertificate, after, "and the store keeps the new one")
        XCTAssertTrue(try X509Certificate(derEncoded: after).isSigned(by: X509Certificate(derEncoded: remade.attestationCACertificate)))
    }
}
