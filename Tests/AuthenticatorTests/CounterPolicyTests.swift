import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// The counter policy (docs/architecture.md, Credentials and the store): counting credentials sign with a
/// counter that only goes up; counterless ones (made while `countersZero`, or imported) always
/// with 0, and keep that policy when the key's setting changes; the key's setting decides for
/// non-discoverable credentials, which keep nothing.
final class CounterPolicyTests: XCTestCase {
    private func counter(_ harness: AuthenticatorHarness, allow: [[UInt8]] = [], file: StaticString = #filePath,
                         line: UInt = #line) throws -> UInt32 {
        let (status, body) = harness.send(.getAssertion, harness.assertionRequest(allow: allow).cborValue)
        XCTAssertEqual(status, .success, file: file, line: line)
        return try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue)).signCount
    }

    func testCountingCredentialsCountAndCounterlessOnesStayAtZero() throws {
        let store = InMemoryCredentialStore()
        let counting = try AuthenticatorHarness(store: store)
        let old = try counting.register(counting.makeCredentialRequest(userID: [1], resident: true))
        XCTAssertGreaterThan(old.authenticatorData.signCount, 0)
        let first = try counter(counting, allow: [old.credentialID])
        XCTAssertGreaterThan(try counter(counting, allow: [old.credentialID]), first)
        XCTAssertFalse(try XCTUnwrap(store.residentCredential(id: old.credentialID)).counterless)

        var configuration = AuthenticatorConfiguration()
        configuration.countersZero = true
        let zero = try AuthenticatorHarness(store: store, configuration: configuration)
        let new = try zero.register(zero.makeCredentialRequest(userID: [2], resident: true))
        XCTAssertEqual(new.authenticatorData.signCount, 0)
        XCTAssertTrue(try XCTUnwrap(store.residentCredential(id: new.credentialID)).counterless)
        XCTAssertEqual(try counter(zero, allow: [new.credentialID]), 0)
        XCTAssertEqual(try counter(zero, allow: [new.credentialID]), 0, "never counting")
        // The older credential keeps counting under the new setting.
        XCTAssertGreaterThan(try counter(zero, allow: [old.credentialID]), first)
        // A non-discoverable credential follows the key's setting.
        let plain = try zero.register(zero.makeCredentialRequest(userID: [3]))
        XCTAssertEqual(plain.authenticatorData.signCount, 0)
        XCTAssertEqual(try counter(zero, allow: [plain.credentialID]), 0)

        // And the counterless one stays so on a counting key.
        let back = try AuthenticatorHarness(store: store)
        XCTAssertEqual(try counter(back, allow: [new.credentialID]), 0)
        XCTAssertGreaterThan(try counter(back, allow: [plain.credentialID]), 0, "non-discoverable: the key's setting")
    }

    func testU2FAuthenticateOfACounterlessCredentialSignsZero() throws {
        var configuration = AuthenticatorConfiguration()
        configuration.countersZero = true
        let harness = try AuthenticatorHarness(configuration: configuration)
        let registration = try harness.register(harness.makeCredentialRequest(userID: [4], resident: true))
        let application = SHA256.hash(Array("example.com".utf8))
        let body = [UInt8](repeating: 7, count: 32) + application + [UInt8(registration.credentialID.count)] + registration.credentialID
        let response = harness.authenticator.handleU2F(U2FAPDU(ins: 0x02, p1: 0x03, data: body).encoded(),
                                                       context: RequestContext(channel: harness.channel))
        XCTAssertEqual(Array(response.suffix(2)), [0x90, 0x00], "\(response)")
        XCTAssertEqual(Array(response[1..<5]), [0, 0, 0, 0], "the counter bytes")
    }
}

