import Authenticator
import CBOR
import CLI
import CredentialStore
import FIDOClient
import FIDOCrypto
import Foundation
import KeyService
import LatchkeyTestSupport
import XCTest
import Encoding

/// `latchkey signal …` on a real store: the W3C Signal API semantics — hide, un-hide, rename,
/// nothing deleted.
final class SignalCommandTests: XCTestCase {
    var store: TestStore!
    let output = CapturedOutput()

    override func setUpWithError() throws {
        store = try TestStore()
    }

    func signal(_ arguments: [String]) -> CommandOutcome {
        output.clear()
        let io = output.io()
        return runCommand(SignalCommand.group(io: { io }), arguments)
    }

    func hidden(_ credential: ResidentCredential) throws -> Bool {
        try XCTUnwrap(try store.all().first { $0.credentialID == credential.credentialID }).hiddenSince != nil
    }

    func testAllAcceptedHidesTheUnlistedAndUnhidesTheListed() throws {
        let handle = Array("alice".utf8)
        let alice = try store.add(rpID: "example.com", userHandle: handle, name: "alice", displayName: nil)
        let other = try store.add(rpID: "example.com", userHandle: Array("bob".utf8), name: "bob", displayName: nil)
        let unrelatedID = Base64URL.encode([9, 9, 9])

        // An ID typed as an argument must name one of alice's credentials: one that names none
        // is an error, and nothing is hidden (it used to accept nothing and hide hers).
        XCTAssertEqual(signal(["all-accepted", "--store", store.directory, "--rp", "example.com", "--user-handle", "YWxpY2U",
                               "--json", "--", Base64URL.encode([9, 9, 9, 9, 9, 9, 9, 9])]), .status(1))
        XCTAssertTrue(output.err.contains("names none of the 1 credential of user handle YWxpY2U at example.com"), output.err)
        XCTAssertFalse(try hidden(alice))
        // bob's credential is not alice's: naming it is the same error.
        XCTAssertEqual(signal(["all-accepted", "--store", store.directory, "--rp", "example.com", "--user-handle", "YWxpY2U",
                               Base64URL.encode(other.credentialID)]), .status(1))
        XCTAssertFalse(try hidden(alice))
        // A unique prefix of 6 characters names her credential, as `credentials show` takes it: kept.
        XCTAssertEqual(signal(["all-accepted", "--store", store.directory, "--rp", "example.com", "--user-handle", "YWxpY2U",
                               String(Base64URL.encode(alice.credentialID).prefix(6))]), .status(0))
        XCTAssertEqual(output.out, "all-accepted at example.com for user handle YWxpY2U (1 accepted ID): 0 credentials hidden, 0 un-hidden.")
        XCTAssertFalse(try hidden(alice))

        // The site's own list (--ids-file) names credentials on other authenticators: alice's is
        // not in it, so it is hidden; bob's (another user) untouched.
        let list = try writeFile(store.scratch.path, "site.txt", unrelatedID + "\n")
        XCTAssertEqual(signal(["all-accepted", "--store", store.directory, "--rp", "example.com", "--user-handle", "YWxpY2U",
                               "--json", "--ids-file", list]), .status(0))
        let result = try parseJSON(output.out)
        XCTAssertEqual(result["signal"] as? String, "all-accepted")
        XCTAssertEqual(result["hidden"] as? Int, 1)
        XCTAssertEqual(result["unhidden"] as? Int, 0)
        XCTAssertEqual(result["deleted"] as? Int, 0)
        XCTAssertEqual(result["accepted"] as? Int, 1)
        XCTAssertTrue(try hidden(alice))
        XCTAssertFalse(try hidden(other))
        XCTAssertEqual(try store.all().count, 2, "nothing is deleted")
        _ = handle

        // Listed again: un-hidden.
        XCTAssertEqual(signal(["all-accepted", "--store", store.directory, "--rp", "example.com", "--user-handle", "YWxpY2U",
                               Base64URL.encode(alice.credentialID)]), .status(0))
        XCTAssertEqual(output.out, "all-accepted at example.com for user handle YWxpY2U (1 accepted ID): 0 credentials hidden, 1 un-hidden.")
        XCTAssertFalse(try hidden(alice))
    }

    func testAllAcceptedReadsAnIDsFileOfTenThousandIDs() throws {
        let alice = try store.add(rpID: "example.com", userHandle: [7], name: "alice", displayName: nil,
                                  credentialID: [0x01] + SecureRandom.bytes(count: 31))
        var lines = ["# accepted credential IDs", ""]
        lines += (0..<9_999).map { Base64URL.encode(Array(withUnsafeBytes(of: UInt32($0).bigEndian) { Array($0) }) + [0xEE]) }
        lines.append(Base64URL.encode(alice.credentialID) + "=")   // 32 bytes: 43 characters, padded to 44
        let file = try writeFile(store.scratch.path, "ids.txt", lines.joined(separator: "\n") + "\n")
        XCTAssertEqual(signal(["all-accepted", "--store", store.directory, "--rp", "example.com", "--user-handle", "Bw",
                               "--ids-file", file, "--json"]), .status(0))
        let result = try parseJSON(output.out)
        XCTAssertEqual(result["accepted"] as? Int, 10_000)
        XCTAssertEqual(result["hidden"] as? Int, 0)
        XCTAssertFalse(try hidden(alice))

        // An empty file accepts none: the user's credential is hidden.
        let empty = try writeFile(store.scratch.path, "empty.txt", "")
        XCTAssertEqual(signal(["all-accepted", "--store", store.directory, "--rp", "example.com", "--user-handle", "Bw",
                               "--ids-file", empty]), .status(0))
        XCTAssertTrue(try hidden(alice))

        let bad = try writeFile(store.scratch.path, "bad.txt", "AAAA\nnot base64!\n")
        XCTAssertEqual(signal(["all-accepted", "--store", store.directory, "--rp", "example.com", "--user-handle", "Bw",
                               "--ids-file", bad]),
                       .usage("--ids-file \(bad) line 2: 'not base64!' is not a base64url credential ID"))
    }

    func testUnknownHidesOnlyAtItsRP() throws {
        let alice = try store.add(rpID: "example.com", userHandle: [1], name: "alice", displayName: nil)
        let id = Base64URL.encode(alice.credentialID)
        // A credential of another RP is not there for this one: an error (exit 1), as for a missing one.
        XCTAssertEqual(signal(["unknown", "--store", store.directory, "--rp", "other.org", id]), .status(1))
        XCTAssertEqual(output.err, "Error: credential \(id) is example.com's, not other.org's; nothing changed")
        XCTAssertEqual(signal(["unknown", "--store", store.directory, "--rp", "other.org", "ZZZZZZZZ"]), .status(1))
        XCTAssertTrue(output.err.hasPrefix("Error: no credential ZZZZZZZZ in the store"), output.err)
        XCTAssertFalse(try hidden(alice))

        XCTAssertEqual(signal(["unknown", "--store", store.directory, "--rp", "example.com", "--json", id]), .status(0))
        let result = try parseJSON(output.out)
        XCTAssertEqual(result["hidden"] as? Bool, true)
        XCTAssertEqual(result["deleted"] as? Bool, false)
        XCTAssertTrue(try hidden(alice))
        // The prefix `credentials list` shows names a credential, as in `credentials show`.
        let bob = try store.add(rpID: "example.com", userHandle: [2], name: "bob", displayName: nil)
        let bobID = Base64URL.encode(bob.credentialID)
        XCTAssertEqual(signal(["unknown", "--store", store.directory, "--rp", "example.com", String(bobID.prefix(8))]), .status(0))
        XCTAssertTrue(try hidden(bob))
        XCTAssertEqual(try store.all().count, 2)
    }

    func testCurrentUserRenamesHiddenOnesTooAndKeepsWhatIsNotGiven() throws {
        let alice = try store.add(rpID: "example.com", userHandle: [1], name: "alice", displayName: "Alice")
        let opened = try store.open()
        _ = try opened.signalUnknownCredential(rpID: "example.com", credentialID: alice.credentialID)
        opened.close()
        XCTAssertEqual(signal(["current-user", "--store", store.directory, "--rp", "example.com", "--user-handle", "AQ",
                               "--display-name", "Alice Liddell"]), .status(0))
        XCTAssertEqual(output.out, "current-user at example.com: 1 credential of user handle AQ renamed: display name 'Alice Liddell'.")
        let stored = try XCTUnwrap(try store.all().first)
        XCTAssertEqual(stored.userName, "alice")
        XCTAssertEqual(stored.userDisplayName, "Alice Liddell")
        XCTAssertEqual(signal(["current-user", "--store", store.directory, "--rp", "example.com", "--user-handle", "AQ",
                               "--display-name", "Alice Liddell"]), .status(0))
        XCTAssertEqual(output.out, "current-user at example.com: the 1 credential of user handle AQ already had "
            + "display name 'Alice Liddell'; nothing changed.")

        XCTAssertEqual(signal(["current-user", "--store", store.directory, "--rp", "example.com", "--user-handle", "Ag",
                               "--user-name", "x", "--json"]), .status(0))
        XCTAssertEqual(try parseJSON(output.out)["renamed"] as? Int, 0)
    }

    func testUsageErrors() {
        XCTAssertEqual(signal(["all-accepted", "--store", "/s", "--user-handle", "AQ", "AAAA"]), .usage("--rp is required"))
        XCTAssertEqual(signal(["all-accepted", "--store", "/s", "--rp", "a"]), .usage("--user-handle is required"))
        XCTAssertEqual(signal(["all-accepted", "--store", "/s", "--rp", "a", "--user-handle", "A"]),
                       .usage("--user-handle 'A' is not base64url"))
        XCTAssertEqual(signal(["all-accepted", "--store", "/s", "--rp", "a", "--user-handle", "AQ"]),
                       .usage("list the accepted credential IDs (or give --ids-file FILE; an empty file accepts none)"))
        XCTAssertEqual(signal(["all-accepted", "--store", "/s", "--rp", "a", "--user-handle", "AQ", "--", "-bad+"]),
                       .usage("'-bad+' is not a base64url credential ID"))
        XCTAssertEqual(signal(["unknown", "--store", "/s", "--rp", "a"]), .usage("missing <credential-id>"))
        XCTAssertEqual(signal(["unknown", "--store", "/s", "--rp", "a", "AAAA…"]),
                       .usage("'AAAA…' is too short to name a credential: give at least 6 characters of its ID, "
                              + "as `latchkey credentials list` shows it (or the whole ID)"))
        XCTAssertEqual(signal(["current-user", "--store", "/s", "--rp", "a", "--user-handle", "AQ"]),
                       .usage("give --user-name and/or --display-name"))
        XCTAssertEqual(signal(["current-user", "--store", "/s", "--ids-file", "f"]),
                       .usage("unknown option '--ids-file' for 'signal current-user'"))
        XCTAssertEqual(signal(["unknown", "--rp", "a", "--user-handle", "AQ", "AAAA"]),
                       .usage("unknown option '--user-handle' for 'signal unknown'"))
    }
}
