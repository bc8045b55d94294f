import Authenticator
import CredentialStore
import CTAPHID
import FIDOCrypto
@testable import KeyService
import LatchkeyTestSupport
import XCTest

/// StoreProof: a key answers its store's challenge (through StoreProvingHandler, the vendor
/// command the CTAPHID layer lets through), and no other store's key can.
final class StoreProofTests: XCTestCase {
    final class Inner: RequestHandler, @unchecked Sendable {
        var calls: [UInt8] = []
        var neverWaitsForUser: Bool { true }
        func mayRunLong(command: UInt8, payload: [UInt8]) -> Bool { false }
        func handle(command: UInt8, payload: [UInt8], context: RequestContext) -> [UInt8] { calls.append(command); return [0x00] }
        func powerCycle() {}
    }

    func testOnlyTheStoresKeyAnswersItsChallenge() {
        let ours = StoreProof.key(masterKey: SecretBytes(Array(repeating: 7, count: 32)))
        let theirs = StoreProof.key(masterKey: SecretBytes(Array(repeating: 8, count: 32)))
        let inner = Inner()
        let handler = StoreProvingHandler(inner, proofKey: ours)
        let (payload, challenge) = StoreProof.request()
        let answer = handler.handle(command: StoreProof.command, payload: payload, context: RequestContext(channel: 1))
        XCTAssertEqual(answer, [0x00] + StoreProof.expected(challenge: challenge, key: ours))
        XCTAssertNotEqual(answer, [0x00] + StoreProof.expected(challenge: challenge, key: theirs))
        XCTAssertEqual(inner.calls, [], "the proof never reaches the authenticator")
        // A fresh challenge, a fresh answer; malformed requests get one status byte.
        XCTAssertNotEqual(handler.handle(command: StoreProof.command, payload: StoreProof.request().payload,
                                         context: RequestContext(channel: 1)), answer)
        XCTAssertEqual(handler.handle(command: StoreProof.command, payload: [1, 2, 3], context: RequestContext(channel: 1)), [0x03])
        XCTAssertEqual(handler.handle(command: StoreProof.command, payload: [2] + challenge, context: RequestContext(channel: 1)), [0x02])
        // Everything else goes to the key as before.
        _ = handler.handle(command: CTAPHIDCommand.cbor.rawValue, payload: [0x04], context: RequestContext(channel: 1))
        XCTAssertEqual(inner.calls, [CTAPHIDCommand.cbor.rawValue])
        XCTAssertTrue(CTAPHIDCommand.isVendor(StoreProof.command))
        XCTAssertEqual(StoreProvingHandler.vendorCommands, [StoreProof.command])
    }
}
