import Authenticator
import CredentialStore
import FIDOCrypto
import Foundation
import LatchkeyTestSupport
import SignalBridge
import SystemIO
import XCTest
import Encoding

/// The native host's replies byte for byte (docs/native-host.md is a contract: members only
/// added, in this order, compact). Whatever writes them, these texts stay.
final class NativeHostRepliesTests: XCTestCase {
    private var directory: ShortTempDirectory!
    private var store: SQLiteCredentialStore!
    private let credentialID: [UInt8] = Array(repeating: 0xA1, count: 16)

    override func setUpWithError() throws {
        directory = try ShortTempDirectory()
        store = try SQLiteCredentialStore.open(directory: directory.path + "/store")
        try store.saveResidentCredential(ResidentCredential(
            credentialID: credentialID, rpID: "example.com", rpIDHash: FIDOCrypto.SHA256.hash(Array("example.com".utf8)),
            rpName: nil, userHandle: Array("alice".utf8), userName: "al\"ice", userDisplayName: "Alice\u{1}",
            algorithm: -7, privateKey: SecretBytes(randomCount: 32), createdAt: 1_700_000_000,
            credProtect: .userVerificationOptional, credBlob: nil, largeBlobKey: nil,
            hmacSecretWithUV: nil, hmacSecretWithoutUV: nil, hiddenSince: nil))
    }

    override func tearDown() {
        store?.close()
    }

    private func session() -> NativeHostSession {
        NativeHostSession(openStore: NativeHostTests.reopening(store.directory),
                          loadSuffixes: { PublicSuffixList(rules: "com\nexample\n") }, limiter: SignalRateLimiter(), now: { 1000 })
    }

    private func reply(_ json: String) -> String {
        session().handle(Array(json.utf8)).reply
    }

    func testASignalsReply() {
        let id = Base64URL.encode(credentialID)
        XCTAssertEqual(reply(#"{"id": 7, "type": "signal", "origin": "https://login.example.com", "method": "unknownCredential", "options": {"rpId": "example.com", "credentialId": "\#(id)"}}"#),
                       #"{"id":7,"ok":true,"hidden":["\#(id)"],"unhidden":[],"renamed":[]}"#)
    }

    func testAnErrorsReply() {
        XCTAssertEqual(reply(#"{"id": 9, "type": "signal", "origin": "https://login.example.com", "method": "unknownCredential", "options": {"rpId": "example.com", "credentialId": "AAAA"}}"#),
                       #"{"id":9,"ok":false,"error":"NotFoundError","message":"the key holds no credential that this unknownCredential signal names at example.com; nothing changed"}"#)
        XCTAssertEqual(reply(#"{"id": 1, "#), #"{"id":null,"ok":false,"error":"TypeError","message":"the message is not JSON (UTF-8)"}"#)
    }

    func testThePublicSuffixRulesReply() {
        XCTAssertEqual(reply(#"{"id": 3, "type": "publicSuffixes"}"#), #"{"id":3,"ok":true,"rules":["com","example"]}"#)
    }

    func testAnAccountsReplyEscapesTheSitesNames() {
        XCTAssertEqual(reply(#"{"id": 4, "type": "accounts", "origin": "https://login.example.com", "rpId": "example.com"}"#),
                       #"{"id":4,"ok":true,"rpId":"example.com","verified":false,"accounts":[{"credentialId":"\#(Base64URL.encode(credentialID))","userHandle":"YWxpY2U","name":"al\"ice","displayName":"Alice\u0001"}]}"#)
    }

    func testTheBridgeContactFile() throws {
        BridgeContact(time: 1_796_620_000, caller: "chrome-extension://x/").write(storeDirectory: store.directory)
        XCTAssertEqual(try String(contentsOfFile: store.directory + "/bridge-contact", encoding: .utf8),
                       #"{"time":1796620000,"caller":"chrome-extension://x/"}"# + "\n")
    }
}
