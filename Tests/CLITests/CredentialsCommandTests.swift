import Authenticator
import CBOR
import CLI
import CredentialStore
import FIDOClient
import Foundation
import KeyService
import LatchkeyTestSupport
import XCTest
import Encoding

/// `latchkey credentials …` against a real SQLite store in a temporary directory.
final class CredentialsCommandTests: XCTestCase {
    var store: TestStore!
    let output = CapturedOutput()

    override func setUpWithError() throws {
        store = try TestStore()
    }

    func credentials(_ arguments: [String], terminal: (any UserTerminal)? = nil) -> CommandOutcome {
        output.clear()
        let io = output.io(terminal: terminal)
        return runCommand(CredentialsCommand.group(io: { io }), arguments)
    }

    /// A credential kept for allowLists only (a rig's non-resident one) is listed as such, without
    /// the store's own user handle.
    func testAStoredOnlyCredentialIsListedWithoutAUserHandle() throws {
        var credential = try makeResidentCredential(rpID: "rig.example", userHandle: [], name: nil, displayName: nil)
        credential.discoverable = false
        credential.userHandle = ResidentCredential.storedOnlyUserHandle(credentialID: credential.credentialID)
        let opened = try store.open()
        try opened.saveResidentCredential(credential)
        opened.close()
        XCTAssertEqual(credentials(["list", "--store", store.directory, "--json"]), .status(0))
        let entry = try XCTUnwrap((try parseJSON(output.out)["credentials"] as? [[String: Any]])?.first)
        XCTAssertEqual(entry["discoverable"] as? Bool, false)
        XCTAssertTrue(entry["userHandle"] is NSNull, "\(entry)")
        XCTAssertEqual(credentials(["show", Base64URL.encode(credential.credentialID), "--store", store.directory]), .status(0))
        XCTAssertTrue(output.out.contains("allowList only"), output.out)
    }

    func testListShowsEveryCredentialAndJSONHasFullIDs() throws {
        let alice = try store.add(rpID: "example.com", userHandle: Array("alice".utf8), name: "alice", displayName: "Alice A",
                                  createdAt: 1_800_000_000)
        try store.add(rpID: "example.com", userHandle: Array("bob".utf8), name: "bob", displayName: nil, createdAt: 1_800_000_100)
        try store.add(rpID: "other.org", userHandle: [1, 2, 3], name: nil, displayName: "Carol", createdAt: 1_700_000_000)

        XCTAssertEqual(credentials(["list", "--store", store.directory]), .status(0))
        let lines = output.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines[0], "3 credentials in the store \(store.directory):")
        XCTAssertTrue(lines[1].hasPrefix("RP ID        USER"), lines[1])
        XCTAssertTrue(lines[2].hasPrefix("example.com  bob "), "newest first within an RP: \(lines[2])")
        XCTAssertTrue(lines[3].contains("alice (Alice A)") && lines[3].contains("YWxpY2U") && lines[3].contains("2027-01-15T08:00:00Z"),
                      lines[3])
        let shortID = String(Base64URL.encode(alice.credentialID).prefix(12)) + "…"
        XCTAssertTrue(lines[3].contains(shortID), "IDs are shortened in text: \(lines[3])")
        XCTAssertTrue(lines[4].hasPrefix("other.org    (Carol)"), lines[4])

        XCTAssertEqual(credentials(["list", "--store", store.directory, "--rp", "example.com", "--json"]), .status(0))
        let json = try parseJSON(output.out)
        XCTAssertEqual(json["store"] as? String, store.directory)
        let entries = try XCTUnwrap(json["credentials"] as? [[String: Any]])
        XCTAssertEqual(entries.count, 2)
        let entry = try XCTUnwrap(entries.first { $0["userName"] as? String == "alice" })
        XCTAssertEqual(Set(entry.keys), ["rpId", "rpName", "userHandle", "userName", "userDisplayName", "credentialId",
                                         "algorithm", "coseAlgorithm", "created", "credProtect", "hidden", "hiddenSince",
                                         "extensions", "discoverable", "signatureCounter", "prfUsed", "exportable", "autofill", "keyStorage"])
        XCTAssertEqual(entry["signatureCounter"] as? String, "counting", "a key's own credentials count unless made counterless")
        XCTAssertEqual(entry["keyStorage"] as? String, "software", "made without --keys tpm")
        XCTAssertEqual(entry["exportable"] as? Bool, false, "a counting credential cannot leave in an export")
        XCTAssertEqual(entry["autofill"] as? Bool, true, "a visible passkey is offered in the provider's sign-in menu")
        XCTAssertEqual(entry["credentialId"] as? String, Base64URL.encode(alice.credentialID))
        XCTAssertEqual(entry["userHandle"] as? String, "YWxpY2U")
        XCTAssertEqual(entry["userDisplayName"] as? String, "Alice A")
        XCTAssertEqual(entry["algorithm"] as? String, "ES256")
        XCTAssertEqual(entry["coseAlgorithm"] as? Int, -7)
        XCTAssertEqual(entry["created"] as? String, "2027-01-15T08:00:00Z")
        XCTAssertEqual(entry["credProtect"] as? Int, 1)
        XCTAssertEqual(entry["hidden"] as? Bool, false)
        XCTAssertTrue(entry["hiddenSince"] is NSNull)
        XCTAssertEqual(entry["discoverable"] as? Bool, true)
    }

    /// A name a site set with terminal escapes is shown escaped in text (the raw bytes stay in JSON,
    /// whose encoder escapes them).
    func testNamesWithEscapesAreShownEscaped() throws {
        let credential = try store.add(rpID: "evil.example\u{202E}moc", userHandle: [7], name: "\u{1B}]52;c;ZXZpbA==\u{07}mallory",
                                       displayName: "M\u{1B}[2J")
        XCTAssertEqual(credentials(["list", "--store", store.directory]), .status(0))
        XCTAssertFalse(output.out.contains("\u{1B}") || output.out.contains("\u{07}") || output.out.contains("\u{202E}"), output.out)
        XCTAssertTrue(output.out.contains("\\x1B]52;c;ZXZpbA==\\x07mallory (M\\x1B[2J)"), output.out)
        XCTAssertTrue(output.out.contains("evil.example\\u{202E}moc"), output.out)
        XCTAssertEqual(credentials(["show", Base64URL.encode(credential.credentialID), "--store", store.directory]), .status(0))
        XCTAssertFalse(output.out.contains("\u{1B}"), output.out)
        XCTAssertTrue(output.out.contains("User name:     \\x1B]52;c;ZXZpbA==\\x07mallory"), output.out)
        XCTAssertEqual(credentials(["list", "--store", store.directory, "--json"]), .status(0))
        let entry = try XCTUnwrap((try parseJSON(output.out)["credentials"] as? [[String: Any]])?.first)
        XCTAssertEqual(entry["userName"] as? String, "\u{1B}]52;c;ZXZpbA==\u{07}mallory", "JSON keeps the value as it is")
    }

    func testListHidesHiddenCredentialsUnlessAll() throws {
        let alice = try store.add(rpID: "example.com", userHandle: [1], name: "alice", displayName: nil)
        try store.add(rpID: "example.com", userHandle: [2], name: "bob", displayName: nil)
        let opened = try store.open()
        XCTAssertEqual(try opened.signalUnknownCredential(rpID: "example.com", credentialID: alice.credentialID).matched, 1)
        opened.close()

        XCTAssertEqual(credentials(["list", "--store", store.directory, "--json"]), .status(0))
        XCTAssertEqual((try parseJSON(output.out)["credentials"] as? [[String: Any]])?.count, 1)
        XCTAssertEqual(try parseJSON(output.out)["hiddenNotListed"] as? Int, 1)
        // Without --all the hidden one is not listed, but the list says it is there.
        XCTAssertEqual(credentials(["list", "--store", store.directory]), .status(0))
        XCTAssertTrue(output.out.hasPrefix("1 credential in the store \(store.directory):"), output.out)
        XCTAssertTrue(output.out.hasSuffix("\n1 hidden credential not listed (`--all` lists it; `credentials unhide ID` brings one back)."),
                      output.out)
        XCTAssertFalse(output.out.contains("alice"), output.out)
        XCTAssertEqual(credentials(["list", "--store", store.directory, "--all"]), .status(0))
        XCTAssertFalse(output.out.contains("not listed"), output.out)
        XCTAssertTrue(output.out.hasPrefix("2 credentials in the store \(store.directory) (1 hidden):"), output.out)
        XCTAssertTrue(output.out.contains("HIDDEN SINCE"))
        // The hidden passkey is not offered in the provider's sign-in menu; the visible one is.
        XCTAssertEqual(credentials(["list", "--store", store.directory, "--all", "--json"]), .status(0))
        let entries = try XCTUnwrap(try parseJSON(output.out)["credentials"] as? [[String: Any]])
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: entries.map { ($0["userName"] as? String ?? "", $0["autofill"] as? Bool) }),
                       ["alice": false, "bob": true])
    }

    /// --name only says where a store is: with --store as well, one would be ignored silently.
    func testNameAndStoreTogetherAreAUsageError() throws {
        guard case .usage(let message) = credentials(["list", "--name", "default", "--store", store.directory]) else {
            return XCTFail("\(output.out) \(output.err)")
        }
        XCTAssertTrue(message.hasPrefix("give --name or --store, not both: --name default means the store "), message)
        XCTAssertTrue(message.hasSuffix("not \(store.directory)"), message)
    }

    func testEmptyAndMissingStores() throws {
        XCTAssertEqual(credentials(["list", "--store", store.directory]), .status(0))
        XCTAssertEqual(output.out, "0 credentials in the store \(store.directory).")
        let missing = store.scratch.path + "/nothing-here"
        XCTAssertEqual(credentials(["list", "--store", missing]), .status(1))
        XCTAssertTrue(output.err.hasPrefix("Error: no key store at \(missing)"), output.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing), "listing does not create a store")
    }

    func testShowByFullIDPaddedIDOrPrefix() throws {
        let alice = try store.add(rpID: "example.com", userHandle: Array("alice".utf8), name: "alice", displayName: "Alice")
        let id = Base64URL.encode(alice.credentialID)
        for argument in [id, id + String(repeating: "=", count: (4 - id.count % 4) % 4), String(id.prefix(12)) + "…", String(id.prefix(8))] {
            XCTAssertEqual(credentials(["show", "--store", store.directory, argument]), .status(0), argument)
            XCTAssertTrue(output.out.hasPrefix("Credential \(id)\n  RP ID:         example.com (EXAMPLE.COM)"), output.out)
            XCTAssertTrue(output.out.contains("  Hidden:        no"), output.out)
        }
        XCTAssertEqual(credentials(["show", "--store", store.directory, "--json", id]), .status(0))
        XCTAssertEqual(try parseJSON(output.out)["credentialId"] as? String, id)

        XCTAssertEqual(credentials(["show", "--store", store.directory, "AAAAAAAAAAAA"]), .status(1))
        XCTAssertTrue(output.err.contains("no credential AAAAAAAAAAAA in the store"), output.err)
        XCTAssertEqual(credentials(["show", "--store", store.directory, "not/base64"]),
                       .usage("'not/base64' is not a base64url credential ID"))
        XCTAssertEqual(credentials(["show", "--store", store.directory]), .usage("missing <credential-id>"))
    }

    func testAmbiguousPrefixIsAFailure() throws {
        let shared = [UInt8](repeating: 0xAA, count: 6)   // "qqqqqqqq" in base64url
        try store.add(rpID: "a.example", userHandle: [1], name: "a", displayName: nil, credentialID: shared + Array(repeating: 1, count: 26))
        try store.add(rpID: "a.example", userHandle: [2], name: "b", displayName: nil, credentialID: shared + Array(repeating: 2, count: 26))
        XCTAssertEqual(credentials(["show", "--store", store.directory, "qqqqqqqqAQEB"]), .status(0))
        XCTAssertTrue(output.out.contains("User name:     a"), output.out)
        XCTAssertEqual(credentials(["show", "--store", store.directory, "qqqqqqqq"]), .status(1))
        XCTAssertEqual(output.err, "Error: 'qqqqqqqq' is the start of 2 credential IDs; give more of it (`--json` shows them in full)")
        XCTAssertEqual(credentials(["show", "--store", store.directory, "qqqq"]),
                       .usage("'qqqq' is too short to name a credential: give at least 6 characters of its ID, "
                              + "as `latchkey credentials list` shows it (or the whole ID)"), "prefixes shorter than 6 are not guessed")
    }

    func testDeleteAsksOnTheTerminalAndNeedsYesWithoutOne() throws {
        let alice = try store.add(rpID: "example.com", userHandle: [1], name: "alice", displayName: nil)
        let id = Base64URL.encode(alice.credentialID)

        // No terminal, no --yes: a usage error, nothing deleted.
        XCTAssertEqual(credentials(["delete", "--store", store.directory, id]),
                       .usage("no terminal to ask for confirmation on; pass --yes to go ahead without asking"))
        XCTAssertEqual(try store.all().count, 1)

        // The user says no.
        let declining = ScriptedTerminal(["n"])
        XCTAssertEqual(credentials(["delete", "--store", store.directory, id], terminal: declining), .status(1))
        XCTAssertEqual(declining.prompts, ["Delete credential \(id) of alice at example.com from the store \(store.directory)? "
                                           + "It cannot be undone. [y/N] "])
        XCTAssertEqual(output.err, "Not deleted.")
        XCTAssertEqual(try store.all().count, 1)

        // The user says yes.
        XCTAssertEqual(credentials(["delete", "--store", store.directory, id], terminal: ScriptedTerminal(["y"])), .status(0))
        XCTAssertEqual(output.out, "Deleted credential \(id) of alice at example.com.")
        XCTAssertEqual(try store.all().count, 0)
    }

    func testDeleteWithYesAndJSON() throws {
        let alice = try store.add(rpID: "example.com", userHandle: [1], name: "alice", displayName: nil)
        let id = Base64URL.encode(alice.credentialID)
        XCTAssertEqual(credentials(["delete", "--store", store.directory, "--yes", "--json", id]), .status(0))
        let deleted = try XCTUnwrap(try parseJSON(output.out)["deleted"] as? [String: Any])
        XCTAssertEqual(deleted["credentialId"] as? String, id)
        XCTAssertTrue(try store.all().isEmpty)
        XCTAssertEqual(credentials(["delete", "--store", store.directory, "--yes", id]), .status(1))
    }

    func testRenameKeepsTheFieldNotGivenAndEmptyRemoves() throws {
        let alice = try store.add(rpID: "example.com", userHandle: [1], name: "alice", displayName: "Alice")
        let id = Base64URL.encode(alice.credentialID)
        XCTAssertEqual(credentials(["rename", "--store", store.directory, id, "--user-name", "alicia"]), .status(0))
        XCTAssertEqual(output.out, "Renamed credential \(id.prefix(12))… at example.com: user name 'alice' → 'alicia'; "
                       + "display name unchanged ('Alice').")
        var stored = try XCTUnwrap(try store.all().first)
        XCTAssertEqual(stored.userName, "alicia")
        XCTAssertEqual(stored.userDisplayName, "Alice")

        XCTAssertEqual(credentials(["rename", "--store", store.directory, id, "--display-name", "", "--json"]), .status(0))
        stored = try XCTUnwrap(try store.all().first)
        XCTAssertNil(stored.userDisplayName)
        XCTAssertTrue((try parseJSON(output.out)["renamed"] as? [String: Any])?["userDisplayName"] is NSNull)

        XCTAssertEqual(credentials(["rename", "--store", store.directory, id]), .usage("give --user-name and/or --display-name"))
    }

    func testUsageErrors() {
        XCTAssertEqual(credentials([]), .usage("missing <list|show|delete|rename|unhide>"))
        XCTAssertEqual(credentials(["frob"]), .usage("unknown subcommand 'credentials frob': use list, show, delete, rename, unhide"))
        XCTAssertEqual(credentials(["list", "--yes"]), .usage("unknown option '--yes' for 'credentials list'"))
        XCTAssertEqual(credentials(["list", "extra"]), .usage("unexpected argument 'extra'"))
        XCTAssertEqual(credentials(["list", "--name", "../x"]), .usage("invalid --name '../x': use letters, digits, '-', '_' or '.'"))
        XCTAssertEqual(credentials(["list", "--store", "/s", "--socket", "/k.sock"]),
                       .usage("give a store (--name/--store) or a device (--device/--socket), not both"))
        XCTAssertEqual(credentials(["list", "--device", "/dev/hidraw9", "--socket", "/k.sock"]),
                       .usage("give either --device or --socket, not both"))
        XCTAssertEqual(credentials(["list", "--store", "/s", "--pin-file", "/p"]),
                       .usage("--pin-file is for a device (--device/--socket); a store needs no PIN"))
        XCTAssertEqual(credentials(["rename", "--bogus", "x"]), .usage("unknown option '--bogus'"))
    }

    func testGroupHelpAndSpec() throws {
        let group = CredentialsCommand.group(io: { CapturedOutput().io() })
        XCTAssertEqual(group.spec.usage, "Usage: latchkey credentials [options] <list|show|delete|rename|unhide> [<credential-id>]")
        XCTAssertTrue(group.spec.help.contains("--yes <") == false && group.spec.help.contains("(delete) Do not ask"), group.spec.help)
        let parsed = try CommandLineParser.parse(["delete", "--help"], spec: group.spec)
        XCTAssertTrue(group.help(for: parsed).hasPrefix("Delete one credential"), group.help(for: parsed))
        let groupHelp = group.help(for: try CommandLineParser.parse(["-h"], spec: group.spec))
        XCTAssertTrue(groupHelp.contains("Subcommands:\n  list    List discoverable credentials"), groupHelp)
    }
}
