@testable import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// A key whose presence answers for its user picks one of an RP's accounts itself (userSelected):
/// the one a test named, else the one made or used last; `client` leaves it to the platform.
final class AccountChooserTests: XCTestCase {
    func threeAccounts(_ chooser: AccountChooser) throws -> (AuthenticatorHarness, [[UInt8]]) {
        let harness = try AuthenticatorHarness(presence: ScriptedPresence(selectsForUser: true), accountChooser: chooser)
        var ids: [[UInt8]] = []
        for (handle, name) in [([1], "alice"), ([2], "bob"), ([3], "carol")] as [([UInt8], String)] {
            ids.append(try harness.register(harness.makeCredentialRequest(userID: handle, userName: name, resident: true)).credentialID)
        }
        return (harness, ids)
    }

    /// The user handle and whether the key chose, of a sign-in with an empty allowList.
    func discoverableSignIn(_ harness: AuthenticatorHarness) -> (handle: [UInt8]?, selected: Bool?, count: Int?) {
        let (status, body) = harness.send(.getAssertion, harness.assertionRequest().cborValue)
        XCTAssertEqual(status, .success)
        return (body?[4]?.mapValue?["id"]?.bytesValue, body?[6]?.boolValue, body?[5]?.intValue)
    }

    func testTheKeyPicksTheAccountMadeOrUsedLast() throws {
        let (harness, ids) = try threeAccounts(AccountChooser())
        var answer = discoverableSignIn(harness)
        XCTAssertEqual(answer.handle, [3], "carol: made last")
        XCTAssertEqual(answer.selected, true)
        XCTAssertNil(answer.count, "numberOfCredentials never comes with userSelected")
        XCTAssertEqual(harness.send(.getNextAssertion).status, .notAllowed, "nothing more to hand out")
        // alice signs in by her credential ID (an allowList): she is the one used last.
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [ids[0]]).cborValue).status, .success)
        answer = discoverableSignIn(harness)
        XCTAssertEqual(answer.handle, [1])
    }

    func testANamedAccountAnswersTheNextSignIn() throws {
        let chooser = AccountChooser()
        let (harness, ids) = try threeAccounts(chooser)
        let rpIDHash = SHA256.hash(Array("example.com".utf8))
        chooser.select(.userHandle([2]), rpIDHash: rpIDHash)
        XCTAssertEqual(discoverableSignIn(harness).handle, [2], "bob, by user handle")
        XCTAssertEqual(discoverableSignIn(harness).handle, [2], "then still bob: used last")
        chooser.select(.credentialID(ids[0]), rpIDHash: rpIDHash)
        XCTAssertEqual(discoverableSignIn(harness).handle, [1], "alice, by credential ID")
        // One named for another RP, or not among the accounts, changes nothing here.
        chooser.select(.userHandle([3]), rpIDHash: SHA256.hash(Array("other.example".utf8)))
        chooser.select(.userHandle([9]), rpIDHash: rpIDHash)
        XCTAssertEqual(discoverableSignIn(harness).handle, [1])
    }

    func testClientPolicyLetsThePlatformChoose() throws {
        let (harness, _) = try threeAccounts(AccountChooser(policy: .client))
        let answer = discoverableSignIn(harness)
        XCTAssertNil(answer.selected)
        XCTAssertEqual(answer.count, 3)
        XCTAssertEqual(harness.send(.getNextAssertion).status, .success)
        XCTAssertEqual(harness.send(.getNextAssertion).status, .success)
    }

    func testAPersonsPresenceNeverChooses() throws {
        let harness = try AuthenticatorHarness(presence: ScriptedPresence(selectsForUser: false))
        for (handle, name) in [([1], "alice"), ([2], "bob")] as [([UInt8], String)] {
            _ = try harness.register(harness.makeCredentialRequest(userID: handle, userName: name, resident: true))
        }
        let answer = discoverableSignIn(harness)
        XCTAssertNil(answer.selected)
        XCTAssertEqual(answer.count, 2)
    }
}
