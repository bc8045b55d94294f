import Authenticator
import CBOR
import CTAP
import Synchronization
import XCTest

/// The cache of opened credentials must never keep a credential alive that the store or a
/// reset removed, nor serve a credential for another RP.
final class OpenedCredentialCacheTests: XCTestCase {
    func testDeletedResidentCredentialStopsWorkingAfterBeingCached() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest(resident: true))
        let request = harness.assertionRequest(allow: [registration.credentialID]).cborValue
        XCTAssertEqual(harness.send(.getAssertion, request).status, .success)
        XCTAssertEqual(harness.send(.getAssertion, request).status, .success)
        XCTAssertTrue(try harness.store.deleteResidentCredential(id: registration.credentialID))
        XCTAssertEqual(harness.send(.getAssertion, request).status, .noCredentials)
    }

    func testCachedCredentialIsNotServedForAnotherRP() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest())
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID]).cborValue).status, .success)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(rpID: "other.example", allow: [registration.credentialID]).cborValue).status,
                       .noCredentials)
    }

    func testResetDropsCachedNonResidentCredentials() throws {
        let harness = try AuthenticatorHarness()
        let registration = try harness.register(harness.makeCredentialRequest())
        let request = harness.assertionRequest(allow: [registration.credentialID]).cborValue
        XCTAssertEqual(harness.send(.getAssertion, request).status, .success)
        XCTAssertEqual(harness.send(.reset).status, .success)
        XCTAssertEqual(harness.send(.getAssertion, request).status, .noCredentials)
    }

    func testUpNeededIsReportedOnlyWhenPresenceWaitsForSomeone() throws {
        final class Immediate: UserPresence {
            var answersImmediately: Bool { true }
            func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult { .approved }
        }
        let statuses = Mutex<[RequestContext.Status]>([])
        let context = RequestContext(channel: 1) { status in statuses.withLock { $0.append(status) } }
        let message = [CTAPCommand.selection.rawValue]

        let immediate = try Authenticator(store: InMemoryCredentialStore(), presence: Immediate(), clock: ManualClock())
        XCTAssertEqual(immediate.handleCTAP2(message, context: context), [0x00])
        XCTAssertEqual(statuses.withLock { $0 }, [])

        let waiting = try Authenticator(store: InMemoryCredentialStore(), presence: ScriptedPresence(), clock: ManualClock())
        XCTAssertEqual(waiting.handleCTAP2(message, context: context), [0x00])
        XCTAssertEqual(statuses.withLock { $0 }, [.userPresenceNeeded, .processing])
    }
}
