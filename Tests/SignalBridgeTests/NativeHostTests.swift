import Authenticator
import CBOR
import CredentialStore
import FIDOCrypto
import Foundation
import LatchkeyTestSupport
import SignalBridge
import SystemIO
import XCTest
import Encoding

/// The native-messaging host against a real SQLite store: the framing, every member checked,
/// the origin rule, the rate limit, and the journal.
final class NativeHostTests: XCTestCase {
    private var directory: ShortTempDirectory!
    private var store: SQLiteCredentialStore!
    private var now = 1000.0
    private let alice: [UInt8] = Array("alice-handle".utf8)
    private var aliceLaptop: ResidentCredential!
    private var alicePhone: ResidentCredential!
    private var bob: ResidentCredential!

    override func setUpWithError() throws {
        directory = try ShortTempDirectory()
        store = try SQLiteCredentialStore.open(directory: directory.path + "/store")
        aliceLaptop = credential(rpID: "example.com", user: alice, name: "alice")
        alicePhone = credential(rpID: "example.com", user: alice, name: "alice")
        bob = credential(rpID: "other.example", user: Array("bob".utf8), name: "bob")
        try store.saveResidentCredentials([aliceLaptop, bob])
    }

    override func tearDown() {
        store?.close()
    }

    private func credential(rpID: String, user: [UInt8], name: String) -> ResidentCredential {
        ResidentCredential(credentialID: SecureRandom.bytes(count: 32), rpID: rpID,
                           rpIDHash: FIDOCrypto.SHA256.hash(Array(rpID.utf8)), rpName: nil, userHandle: user,
                           userName: name, userDisplayName: name.capitalized, algorithm: -7,
                           privateKey: SecretBytes(randomCount: 32), createdAt: 1_700_000_000,
                           credProtect: .userVerificationOptional, credBlob: nil, largeBlobKey: nil,
                           hmacSecretWithUV: nil, hmacSecretWithoutUV: nil, hiddenSince: nil)
    }

    private func session(limiter: SignalRateLimiter = SignalRateLimiter()) -> NativeHostSession {
        // Its own connection, as `latchkey native-host` opens one beside the running key's (the
        // session closes what it opened).
        NativeHostSession(openStore: Self.reopening(store.directory), loadSuffixes: { PublicSuffixList(rules: "com\nexample\n") },
                          limiter: limiter, now: { [unowned self] in now })
    }

    /// Opens the test's store again, without its lock, for each session (its own connection).
    static func reopening(_ path: String) -> NativeHostSession.StoreOpener {
        { () throws(SignalFailure) -> SQLiteCredentialStore in
            do throws(StoreError) {
                return try SQLiteCredentialStore.open(directory: path, lock: .none)
            } catch {
                throw .internal("\(error)")
            }
        }
    }

    private func message(_ id: Int, origin: String = "https://login.example.com", method: String, _ options: String) -> [UInt8] {
        Array(#"{"id": \#(id), "type": "signal", "origin": "\#(origin)", "method": "\#(method)", "options": \#(options)}"#.utf8)
    }

    private func reply(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    private func b64(_ bytes: [UInt8]) -> String { Base64URL.encode(bytes) }

    func testUnknownCredentialHidesItAndIsJournaledWithTheOrigin() throws {
        let host = session()
        let (text, understood) = host.handle(message(7, method: "unknownCredential",
                                                     #"{"rpId": "example.com", "credentialId": "\#(b64(aliceLaptop.credentialID))"}"#))
        XCTAssertTrue(understood)
        let answer = try reply(text)
        XCTAssertEqual(answer["id"] as? Int, 7)
        XCTAssertEqual(answer["ok"] as? Bool, true)
        XCTAssertEqual(answer["hidden"] as? [String], [b64(aliceLaptop.credentialID)])
        XCTAssertEqual(answer["unhidden"] as? [String], [])
        XCTAssertNotNil(try store.residentCredential(id: aliceLaptop.credentialID)?.hiddenSince)
        let entry = try XCTUnwrap(try store.signalJournal().last)
        XCTAssertEqual(entry.source, "https://login.example.com")
        XCTAssertEqual(entry.rpID, "example.com")
        XCTAssertEqual(entry.method, "unknownCredential")
    }

    func testAHiddenCredentialThatGavePRFOutputsIsNamed() throws {
        XCTAssertNil(try reply(session().handle(message(1, method: "unknownCredential",
            #"{"rpId": "example.com", "credentialId": "\#(b64(aliceLaptop.credentialID))"}"#)).0)["prfUsed"], "none: the member is left out")
        var prf = credential(rpID: "example.com", user: Array("carol".utf8), name: "carol")
        prf.usedHMACSecret = true
        try store.saveResidentCredential(prf)
        let answer = try reply(session().handle(message(2, method: "unknownCredential",
                                                        #"{"rpId": "example.com", "credentialId": "\#(b64(prf.credentialID))"}"#)).0)
        XCTAssertEqual(answer["hidden"] as? [String], [b64(prf.credentialID)])
        XCTAssertEqual(answer["prfUsed"] as? [String], [b64(prf.credentialID)])
    }

    func testAllAcceptedAndCurrentUserDetails() throws {
        try store.saveResidentCredential(alicePhone)   // replaces the laptop's (same account): one per account
        let host = session()
        var answer = try reply(host.handle(message(1, method: "allAcceptedCredentials",
            #"{"rpId": "example.com", "userId": "\#(b64(alice))", "allAcceptedCredentialIds": ["AAAA"]}"#)).reply)
        XCTAssertEqual(answer["hidden"] as? [String], [b64(alicePhone.credentialID)])
        answer = try reply(host.handle(message(2, method: "allAcceptedCredentials",
            #"{"rpId": "example.com", "userId": "\#(b64(alice))", "allAcceptedCredentialIds": ["\#(b64(alicePhone.credentialID))"]}"#)).reply)
        XCTAssertEqual(answer["unhidden"] as? [String], [b64(alicePhone.credentialID)])
        answer = try reply(host.handle(message(3, method: "currentUserDetails",
            #"{"rpId": "example.com", "userId": "\#(b64(alice))", "name": "alice@new", "displayName": "Alice \"A\" Liddell"}"#)).reply)
        XCTAssertEqual(answer["renamed"] as? [String], [b64(alicePhone.credentialID)])
        let renamed = try XCTUnwrap(try store.residentCredential(id: alicePhone.credentialID))
        XCTAssertEqual(renamed.userName, "alice@new")
        XCTAssertEqual(renamed.userDisplayName, "Alice \"A\" Liddell")
        XCTAssertEqual(try store.signalJournal().map(\.method), ["allAcceptedCredentials", "allAcceptedCredentials", "currentUserDetails"])
    }

    /// A site can only reach its own credentials: another RP's credential is not found, and a
    /// signal naming another RP ID is a SecurityError.
    func testAnotherRPsCredentialsAreOutOfReach() throws {
        let host = session()
        var answer = try reply(host.handle(message(1, method: "unknownCredential",
            #"{"rpId": "example.com", "credentialId": "\#(b64(bob.credentialID))"}"#)).reply)
        XCTAssertEqual(answer["error"] as? String, "NotFoundError")
        answer = try reply(host.handle(message(2, method: "unknownCredential",
            #"{"rpId": "other.example", "credentialId": "\#(b64(bob.credentialID))"}"#)).reply)
        XCTAssertEqual(answer["error"] as? String, "SecurityError")
        answer = try reply(host.handle(message(3, origin: "http://example.com", method: "unknownCredential",
            #"{"rpId": "example.com", "credentialId": "\#(b64(aliceLaptop.credentialID))"}"#)).reply)
        XCTAssertEqual(answer["error"] as? String, "SecurityError", "http is refused but on localhost")
        answer = try reply(host.handle(message(4, origin: "https://example.com", method: "unknownCredential",
            #"{"rpId": "com", "credentialId": "\#(b64(aliceLaptop.credentialID))"}"#)).reply)
        XCTAssertEqual(answer["error"] as? String, "SecurityError", "a public suffix")
        XCTAssertNil(try store.residentCredential(id: bob.credentialID)?.hiddenSince)
        XCTAssertNil(try store.residentCredential(id: aliceLaptop.credentialID)?.hiddenSince)
        XCTAssertEqual(try store.signalJournal(), [])
    }

    func testEveryMemberIsChecked() throws {
        let host = session()
        let cases: [(String, String)] = [
            (#"{"type": "signal"}"#, "TypeError"),                                           // no id
            (#"{"id": true, "type": "signal"}"#, "TypeError"),                               // a boolean is not a number
            (#"{"id": 1.5, "type": "signal"}"#, "TypeError"),
            (#"{"id": -1, "type": "signal"}"#, "TypeError"),
            (#"[1, 2]"#, "TypeError"),
            (#"{"id": 1, "type": "delete"}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "forget", "options": {"rpId": "example.com"}}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "unknownCredential", "options": {"rpId": "example.com", "credentialId": "AA=="}}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "unknownCredential", "options": {"rpId": "example.com", "credentialId": "A+/A"}}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "unknownCredential", "options": {"rpId": "example.com", "credentialId": 5}}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "unknownCredential", "options": {"credentialId": "AAAA"}}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "allAcceptedCredentials", "options": {"rpId": "example.com", "userId": "AAAA", "allAcceptedCredentialIds": "AAAA"}}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "allAcceptedCredentials", "options": {"rpId": "example.com", "userId": "AAAA", "allAcceptedCredentialIds": ["AAAA", "!"]}}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "currentUserDetails", "options": {"rpId": "example.com", "userId": "AAAA", "name": "a"}}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": 7, "method": "unknownCredential", "options": {"rpId": "example.com", "credentialId": "AAAA"}}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com/", "method": "unknownCredential", "options": {"rpId": "example.com", "credentialId": "AAAA"}}"#, "SecurityError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "currentUserDetails", "options": {"rpId": "example.com", "userId": "\#(b64(Array(repeating: 1, count: 65)))", "name": "a", "displayName": "b"}}"#, "TypeError"),
            // Names shown later in the presence prompt: no control characters, no bidi overrides.
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "currentUserDetails", "options": {"rpId": "example.com", "userId": "AAAA", "name": "a\rApprove? [y]", "displayName": "b"}}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "currentUserDetails", "options": {"rpId": "example.com", "userId": "AAAA", "name": "a", "displayName": "\u001b[2J"}}"#, "TypeError"),
            (#"{"id": 1, "type": "signal", "origin": "https://example.com", "method": "currentUserDetails", "options": {"rpId": "example.com", "userId": "AAAA", "name": "\u202egnp.exe", "displayName": "b"}}"#, "TypeError"),
        ]
        for (text, expected) in cases {
            let (replyText, understood) = host.handle(Array(text.utf8))
            XCTAssertTrue(understood, text)
            XCTAssertEqual(try reply(replyText)["error"] as? String, expected, text)
            XCTAssertEqual(try reply(replyText)["ok"] as? Bool, false, text)
        }
        XCTAssertEqual(try reply(host.handle(Array(#"{"id": 9}"#.utf8)).reply)["id"] as? Int, 9, "the id is echoed when it was read")
        let notJSON = host.handle(Array("{\"id\": 1, ".utf8))
        XCTAssertFalse(notJSON.understood, "a message that is not JSON ends the conversation")
        XCTAssertEqual(try reply(notJSON.reply)["error"] as? String, "TypeError")
        XCTAssertTrue(try reply(notJSON.reply)["id"] is NSNull)
        XCTAssertEqual(try store.signalJournal(), [])
    }

    func testAPageLoopingOnSignalsIsRefusedAtOnce() throws {
        let host = session(limiter: SignalRateLimiter(capacity: 4, refillPerSecond: 1))
        let unknown = message(1, method: "unknownCredential", #"{"rpId": "example.com", "credentialId": "AAAA"}"#)
        var errors: [String] = []
        for _ in 0..<1000 {
            errors.append(try reply(host.handle(unknown).reply)["error"] as? String ?? "ok")
        }
        XCTAssertEqual(errors.prefix(4), ["NotFoundError", "NotFoundError", "NotFoundError", "NotFoundError"])
        XCTAssertEqual(Set(errors.dropFirst(4)), ["QuotaExceededError"])
        // Another site is not held up by that one.
        let other = message(2, origin: "https://www.example.com", method: "unknownCredential",
                            #"{"rpId": "example.com", "credentialId": "AAAA"}"#)
        XCTAssertEqual(try reply(host.handle(other).reply)["error"] as? String, "NotFoundError")
        now += 2
        XCTAssertEqual(try reply(host.handle(unknown).reply)["error"] as? String, "NotFoundError", "tokens come back with time")
    }

    func testThePublicSuffixRulesForTheExtension() throws {
        let answer = try reply(session().handle(Array(#"{"id": 3, "type": "publicSuffixes"}"#.utf8)).reply)
        XCTAssertEqual(answer["rules"] as? [String], ["com", "example"])
        let failing = NativeHostSession(openStore: { () throws(SignalFailure) -> SQLiteCredentialStore in throw .internal("no store") },
                                        loadSuffixes: { () throws(SignalFailure) -> PublicSuffixList in throw .internal("no list") },
                                        now: { 0 })
        XCTAssertEqual(try reply(failing.handle(Array(#"{"id": 3, "type": "publicSuffixes"}"#.utf8)).reply)["error"] as? String,
                       "InternalError")
    }

    func testRateLimiterForgetsTheOldestOrigin() {
        var limiter = SignalRateLimiter(capacity: 1, refillPerSecond: 0, maximumOrigins: 2)
        XCTAssertTrue(limiter.admit("a", now: 0))
        XCTAssertTrue(limiter.admit("b", now: 1))
        XCTAssertFalse(limiter.admit("a", now: 2))
        XCTAssertTrue(limiter.admit("c", now: 3), "b, the least recently seen, is forgotten")
        XCTAssertFalse(limiter.admit("a", now: 4), "a is still remembered")
    }

    // MARK: - Framing and the host process's loop

    func testFramingAcrossReadsAndItsFailures() throws {
        var reader = NativeMessageReader()
        let two = NativeMessageFraming.frame("{\"a\":1}") + NativeMessageFraming.frame("")
        for byte in two.prefix(6) { reader.append([byte]); XCTAssertNil(try reader.next()) }
        reader.append(Array(two.dropFirst(6)))
        XCTAssertEqual(try reader.next(), Array("{\"a\":1}".utf8))
        XCTAssertEqual(try reader.next(), [], "an empty message is a message")
        XCTAssertNil(try reader.next())
        XCTAssertNoThrow(try reader.finish())

        var large = NativeMessageReader()
        large.append(withUnsafeBytes(of: UInt32(NativeMessageFraming.maximumMessageSize + 1)) { Array($0) })
        XCTAssertThrowsError(try large.next()) { XCTAssertEqual($0 as? NativeMessageReader.Failure, .tooLarge(1_048_577)) }

        var short = NativeMessageReader()
        short.append(NativeMessageFraming.frame("{}{}").dropLast(1))
        XCTAssertNil(try short.next())
        XCTAssertThrowsError(try short.finish()) { XCTAssertEqual($0 as? NativeMessageReader.Failure, .truncated(received: 3, expected: 4)) }
    }

    /// Runs the host loop over pipes with `input`; returns its status and the replies.
    private func runHost(_ input: [UInt8]) throws -> (status: Int32, replies: [[String: Any]]) {
        let (inRead, inWrite) = try pipe()
        let (outRead, outWrite) = try pipe()
        try inWrite.writeAll(input)
        inWrite.close()
        let status = NativeHost.run(session: session(), input: inRead, output: outWrite, log: { _ in })
        inRead.close()
        outWrite.close()
        var reader = NativeMessageReader()
        reader.append(try outRead.readAll(limit: 1 << 22))
        outRead.close()
        var replies: [[String: Any]] = []
        while let message = try reader.next() { replies.append(try reply(String(decoding: message, as: UTF8.self))) }
        return (status, replies)
    }

    private func pipe() throws -> (FileDescriptor, FileDescriptor) {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(Glibc.pipe(&fds), 0)
        return (FileDescriptor(owning: fds[0]), FileDescriptor(owning: fds[1]))
    }

    func testTheHostAnswersInOrderAndExitsZeroAtEndOfInput() throws {
        let hide = message(1, method: "unknownCredential", #"{"rpId": "example.com", "credentialId": "\#(b64(aliceLaptop.credentialID))"}"#)
        let suffixes = Array(#"{"id": 2, "type": "publicSuffixes"}"#.utf8)
        let run = try runHost(NativeMessageFraming.frame(hide) + NativeMessageFraming.frame(suffixes))
        XCTAssertEqual(run.status, 0)
        XCTAssertEqual(run.replies.map { $0["id"] as? Int }, [1, 2])
        XCTAssertNotNil(try store.residentCredential(id: aliceLaptop.credentialID)?.hiddenSince)
    }

    func testAGarbageFrameChangesNothingAndEndsTheHost() throws {
        let hide = message(1, method: "unknownCredential", #"{"rpId": "example.com", "credentialId": "\#(b64(aliceLaptop.credentialID))"}"#)
        for garbage in [NativeMessageFraming.frame(Array("\u{1}garbage".utf8)) + NativeMessageFraming.frame(hide),   // not JSON
                        withUnsafeBytes(of: UInt32(0x7FFF_FFFF)) { Array($0) } + hide,                              // over 1 MiB
                        Array(NativeMessageFraming.frame(hide).dropLast(3))] {                                        // truncated
            let run = try runHost(garbage)
            XCTAssertEqual(run.status, 1)
            XCTAssertEqual(run.replies.count, 1)
            XCTAssertEqual(run.replies.first?["ok"] as? Bool, false)
            XCTAssertNil(try store.residentCredential(id: aliceLaptop.credentialID)?.hiddenSince)
        }
        XCTAssertEqual(try store.signalJournal(), [])
    }
}
