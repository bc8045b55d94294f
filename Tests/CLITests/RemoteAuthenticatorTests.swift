import Authenticator
import CBOR
@testable import CLI
import CTAP
import FIDOClient
import FIDOCrypto
import KeyService
import LatchkeyTestSupport
import XCTest
import Encoding

/// The device path — clientPIN and credential management over CTAP2 — against Latchkey's
/// authenticator in this process, reached through the real CTAPHID state machine and client.
final class RemoteAuthenticatorTests: XCTestCase {
    var key: InProcessKey!
    let output = CapturedOutput()
    var scratch: ScratchDirectory!
    var pinFile: String!

    override func setUpWithError() throws {
        key = try InProcessKey()
        scratch = try ScratchDirectory()
        pinFile = try writeFile(scratch.path, "pin", "4321\n")
    }

    override func tearDown() {
        scratch.remove()
    }

    func pin(_ text: String) throws -> PIN {
        var bytes = Array(text.utf8)
        return try PIN(consuming: &bytes)
    }

    /// The key with a PIN and three accounts at two RPs.
    func populate() throws -> [ResidentCredential] {
        try RemoteAuthenticator(link: try key.hidLink()).setPIN(try pin("4321"))
        let credentials = [
            try makeResidentCredential(rpID: "example.com", userHandle: Array("alice".utf8), name: "alice", displayName: "Alice"),
            try makeResidentCredential(rpID: "example.com", userHandle: Array("bob".utf8), name: "bob", displayName: "Bob"),
            try makeResidentCredential(rpID: "other.org", userHandle: Array("carol".utf8), name: "carol", displayName: nil),
        ]
        for credential in credentials { try key.store.saveResidentCredential(credential) }
        return credentials
    }

    func command(_ group: (@escaping @Sendable () -> CommandIO) -> CommandGroup, _ arguments: [String],
                 environment: [String: String] = [:], terminal: (any UserTerminal)? = nil) -> CommandOutcome {
        output.clear()
        let io = output.io(environment: environment, terminal: terminal, openDevice: key.opener)
        return runCommand(group({ io }), arguments)
    }

    func testEnumerationDeleteAndUpdateThroughCTAPHID() throws {
        let stored = try populate()
        let manager = try RemoteAuthenticator(link: try key.hidLink()).credentialManagement(pin: try pin("4321"))
        XCTAssertEqual(manager.command, .credentialManagement)
        XCTAssertEqual(try manager.metadata().existing, 3)
        XCTAssertEqual(try manager.relyingParties().map(\.id), ["example.com", "other.org"])
        XCTAssertEqual(try manager.relyingParties().first?.name, "EXAMPLE.COM")
        let example = try manager.credentials(rpID: "example.com")
        XCTAssertEqual(Set(example.map(\.userName)), ["alice", "bob"])
        XCTAssertEqual(example.first?.algorithm, -7)
        XCTAssertEqual(try manager.credentials(rpID: "nobody.example"), [], "NO_CREDENTIALS is an empty list")

        try manager.delete(credentialID: stored[1].credentialID)
        try manager.updateUser(credentialID: stored[0].credentialID, userHandle: stored[0].userHandle,
                               name: "alicia", displayName: "Alice")
        let after = try manager.credentials(rpID: "example.com")
        XCTAssertEqual(after.map(\.userName), ["alicia"])
        XCTAssertEqual(after.first?.userDisplayName, "Alice")
        XCTAssertEqual(try manager.allCredentials().count, 2)
    }

    /// An error names the subcommand as the spec does (the CLI prints it).
    func testErrorsNameTheSubcommand() throws {
        _ = try populate()
        let manager = try RemoteAuthenticator(link: try key.hidLink()).credentialManagement(pin: try pin("4321"))
        XCTAssertThrowsError(try manager.delete(credentialID: [1, 2, 3])) { error in
            guard case let DeviceError.status(_, _, command) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(command, "credentialManagement deleteCredential")
        }
    }

    func testPreviewCommandWhenTheKeyOffersOnlyCredentialMgmtPreview() throws {
        _ = try populate()
        let link = RewritingLink(try key.hidLink()) { options in options["credMgmt"] = nil }
        let manager = try RemoteAuthenticator(link: link).credentialManagement(pin: try pin("4321"))
        XCTAssertEqual(manager.command, .credentialManagementPreview)
        XCTAssertEqual(try manager.allCredentials().count, 3)
        XCTAssertTrue(link.commands.contains(0x41) && !link.commands.contains(0x0A), "\(link.commands)")
    }

    /// CTAP 2.0 keys have no pinUvAuthToken option: getPinToken (0x05). Its token (mc, ga) must
    /// authenticate a makeCredential with user verification.
    func testGetPinTokenFallbackForCTAP20Keys() throws {
        _ = try populate()
        let link = RewritingLink(key.link()) { options in options["pinUvAuthToken"] = nil }
        let remote = RemoteAuthenticator(link: link)
        let token = try remote.pinUvAuthToken(pin: try pin("4321"), permissions: .credentialManagement)
        XCTAssertEqual(link.clientPINSubcommands, [2, 5], "getKeyAgreement, then getPinToken")
        let clientDataHash = FIDOCrypto.SHA256.hash(Array("challenge".utf8))
        let request = MakeCredentialRequest(clientDataHash: clientDataHash, rp: RelyingPartyEntity(id: "legacy.example"),
                                            user: UserEntity(id: [1], name: "u"), pubKeyCredParams: [CredentialParameters(algorithm: -7)],
                                            pinUvAuthParam: token.authenticate(clientDataHash),
                                            pinUvAuthProtocol: token.pinUvAuthProtocol.rawValue)
        let response = try link.exchange([CTAPCommand.makeCredential.rawValue] + request.cborValue.encoded())
        XCTAssertEqual(response.first, 0, "makeCredential with the getPinToken token")
    }

    func testWrongPINSaysHowManyAttemptsAreLeftAndBlocksAfterThree() throws {
        _ = try populate()
        let remote = RemoteAuthenticator(link: try key.hidLink())
        for left in [7, 6] {
            XCTAssertThrowsError(try remote.credentialManagement(pin: try pin("0000"))) {
                XCTAssertEqual(($0 as? DeviceError)?.message,
                               "wrong PIN for test key (CTAPHID) (\(left) attempts left before the key blocks its PIN)")
            }
        }
        XCTAssertThrowsError(try remote.credentialManagement(pin: try pin("0000"))) {
            XCTAssertTrue(($0 as? DeviceError)?.message.contains("no more PIN attempts until it is power-cycled") == true, "\($0)")
        }
    }

    func testPINPolicyIsCheckedBeforeSending() throws {
        let link = RewritingLink(key.link()) { _ in }
        XCTAssertThrowsError(try RemoteAuthenticator(link: link).setPIN(try pin("123"))) {
            XCTAssertEqual(($0 as? DeviceError)?.message,
                           "the PIN is too short: the key needs at least 4 characters, this one has 3")
        }
        XCTAssertEqual(link.clientPINSubcommands, [], "nothing was sent")
        try RemoteAuthenticator(link: link).setPIN(try pin("1234"))
        XCTAssertThrowsError(try RemoteAuthenticator(link: link).setPIN(try pin("5678"))) {
            XCTAssertEqual(($0 as? DeviceError)?.message, "test key already has a PIN; change it with `latchkey pin change`")
        }
    }

    // MARK: - The commands with --socket

    func testCredentialsCommandsOnADevice() throws {
        let stored = try populate()
        XCTAssertEqual(command(CredentialsCommand.group, ["list", "--socket", "/k", "--pin-file", pinFile, "--json"]), .status(0))
        let listed = try XCTUnwrap(try parseJSON(output.out)["credentials"] as? [[String: Any]])
        XCTAssertEqual(listed.count, 3)
        XCTAssertEqual(try parseJSON(output.out)["device"] as? String, "test key (CTAPHID)")
        XCTAssertEqual(Set(listed.compactMap { $0["credentialId"] as? String }), Set(stored.map { Base64URL.encode($0.credentialID) }))
        XCTAssertTrue(listed.allSatisfy { $0["created"] is NSNull })

        XCTAssertEqual(command(CredentialsCommand.group, ["list", "--socket", "/k", "--rp", "other.org"],
                               environment: ["LATCHKEY_PIN": "4321"]), .status(0))
        XCTAssertTrue(output.out.hasPrefix("1 credential of other.org on test key (CTAPHID):\nRP ID      USER   USER HANDLE  CREDENTIAL ID"),
                      output.out)
        XCTAssertFalse(output.out.contains("CREATED"), "a device does not say when")

        // The PIN from the terminal.
        let terminal = ScriptedTerminal(["4321", "y"])
        let bob = Base64URL.encode(stored[1].credentialID)
        XCTAssertEqual(command(CredentialsCommand.group, ["delete", "--socket", "/k", bob], terminal: terminal), .status(0))
        XCTAssertEqual(terminal.prompts.first, "PIN for test key (CTAPHID): ")
        XCTAssertTrue(terminal.prompts.last?.hasPrefix("Delete credential \(bob) of bob (Bob) at example.com from test key") == true)
        XCTAssertNil(try key.store.residentCredential(id: stored[1].credentialID))

        XCTAssertEqual(command(CredentialsCommand.group, ["rename", "--socket", "/k", "--pin-file", pinFile,
                                                          String(Base64URL.encode(stored[0].credentialID).prefix(10)), "--user-name", "al"]),
                       .status(0))
        let renamed = try XCTUnwrap(try key.store.residentCredential(id: stored[0].credentialID))
        XCTAssertEqual(renamed.userName, "al")
        XCTAssertEqual(renamed.userDisplayName, "Alice", "the display name is sent back, not removed")

        XCTAssertEqual(command(CredentialsCommand.group, ["list", "--socket", "/k"]),
                       .usage("no terminal to read the PIN from: give --pin-file FILE or set LATCHKEY_PIN"))
    }

    func testSignalsOnADeviceDeleteAndRename() throws {
        let stored = try populate()
        let alice = Base64URL.encode(stored[0].credentialID)
        // alice's ID typed as bob's accepted one names none of bob's: an error, nothing deleted.
        XCTAssertEqual(command(SignalCommand.group, ["all-accepted", "--socket", "/k", "--pin-file", pinFile, "--rp", "example.com",
                                                     "--user-handle", "Ym9i", "--yes", alice]), .status(1))
        XCTAssertNotNil(try key.store.residentCredential(id: stored[1].credentialID))
        // The site's list (--ids-file) holds only alice's ID: bob's credential is deleted (a device cannot hide).
        let list = try writeFile(scratch.path, "accepted", alice + "\n")
        XCTAssertEqual(command(SignalCommand.group, ["all-accepted", "--socket", "/k", "--pin-file", pinFile, "--rp", "example.com",
                                                     "--user-handle", "Ym9i", "--ids-file", list]),
                       .usage("no terminal to ask for confirmation on; pass --yes to go ahead without asking"))
        XCTAssertNotNil(try key.store.residentCredential(id: stored[1].credentialID))
        XCTAssertEqual(command(SignalCommand.group, ["all-accepted", "--socket", "/k", "--pin-file", pinFile, "--rp", "example.com",
                                                     "--user-handle", "Ym9i", "--yes", "--json", "--ids-file", list]), .status(0))
        let result = try parseJSON(output.out)
        XCTAssertEqual(result["deleted"] as? Int, 1)
        XCTAssertEqual(result["kept"] as? Int, 0)
        XCTAssertEqual(result["hidden"] as? Int, 0)
        XCTAssertTrue((result["note"] as? String)?.contains("cannot hide") == true)
        XCTAssertNil(try key.store.residentCredential(id: stored[1].credentialID))
        XCTAssertNotNil(try key.store.residentCredential(id: stored[0].credentialID), "another user's credential is untouched")

        // current-user: updateUserInformation, keeping the name not signalled.
        XCTAssertEqual(command(SignalCommand.group, ["current-user", "--socket", "/k", "--pin-file", pinFile, "--rp", "example.com",
                                                     "--user-handle", "YWxpY2U", "--display-name", "Alice L."]), .status(0))
        let renamed = try XCTUnwrap(try key.store.residentCredential(id: stored[0].credentialID))
        XCTAssertEqual(renamed.userName, "alice")
        XCTAssertEqual(renamed.userDisplayName, "Alice L.")

        // unknown: deleted, with a terminal's yes.
        XCTAssertEqual(command(SignalCommand.group, ["unknown", "--socket", "/k", "--pin-file", pinFile, "--rp", "example.com", alice],
                               terminal: ScriptedTerminal(["yes"])), .status(0))
        XCTAssertTrue(output.out.hasPrefix("unknown at example.com: credential \(alice) deleted from test key"), output.out)
        XCTAssertNil(try key.store.residentCredential(id: stored[0].credentialID))
    }

    func testPinCommandsOnADevice() throws {
        XCTAssertEqual(command(PinCommand.group, ["status", "--socket", "/k", "--json"]), .status(0))
        var status = try parseJSON(output.out)
        XCTAssertEqual(status["pinSet"] as? Bool, false)
        XCTAssertEqual(status["minPINLength"] as? Int, 4)

        let terminal = ScriptedTerminal(["1234", "1234"])
        XCTAssertEqual(command(PinCommand.group, ["set", "--socket", "/k"], terminal: terminal), .status(0))
        XCTAssertEqual(terminal.prompts, ["New PIN for test key (CTAPHID): ", "Repeat the new PIN: "])
        XCTAssertEqual(output.out, "PIN set on test key (CTAPHID).")

        XCTAssertEqual(command(PinCommand.group, ["change", "--socket", "/k"], terminal: ScriptedTerminal(["1234", "9999", "9998"])),
                       .status(1))
        XCTAssertEqual(output.err, "Error: the two new PINs differ")
        XCTAssertEqual(command(PinCommand.group, ["change", "--socket", "/k"],
                               environment: ["LATCHKEY_PIN": "1234", "LATCHKEY_NEW_PIN": "98765"]), .status(0))
        XCTAssertEqual(try key.store.loadPINState()?.pinHash?.copyBytes(), Array(FIDOCrypto.SHA256.hash(Array("98765".utf8)).prefix(16)))

        XCTAssertEqual(command(PinCommand.group, ["change", "--socket", "/k", "--pin-file", pinFile],
                               environment: ["LATCHKEY_NEW_PIN": "11111"]), .status(1))
        XCTAssertEqual(output.err, "Error: wrong PIN for test key (CTAPHID) (7 attempts left before the key blocks its PIN)")
        XCTAssertEqual(command(PinCommand.group, ["status", "--socket", "/k"]), .status(0))
        XCTAssertTrue(output.out.hasPrefix("PIN of test key (CTAPHID): set, 7 attempts left\n"), output.out)
        status = [:]
    }
}

/// A link that records what goes through it and edits getInfo's options on the way back (to
/// play an older key).
final class RewritingLink: CTAP2Link {
    let inner: CTAP2Link
    let editOptions: (inout [String: Bool]) -> Void
    var commands: [UInt8] = []
    var clientPINSubcommands: [UInt64] = []
    var label: String { inner.label }

    init(_ inner: CTAP2Link, editOptions: @escaping (inout [String: Bool]) -> Void) {
        self.inner = inner
        self.editOptions = editOptions
    }

    func exchange(_ request: [UInt8]) throws(DeviceError) -> [UInt8] {
        commands.append(request[0])
        if request[0] == CTAPCommand.clientPIN.rawValue, let map = try? CBORDecoder.decode(Array(request.dropFirst())),
           let subcommand = map[2]?.uint64Value {
            clientPINSubcommands.append(subcommand)
        }
        let response = try inner.exchange(request)
        guard request[0] == CTAPCommand.getInfo.rawValue, response.first == 0,
              case var .map(info)? = try? CBORDecoder.decode(Array(response.dropFirst())),
              let optionMap = info[4]?.mapValue else { return response }
        var options: [String: Bool] = [:]
        for (name, value) in optionMap { options[name.stringValue!] = value.boolValue! }
        editOptions(&options)
        info[4] = .map(Dictionary(uniqueKeysWithValues: options.map { (CBORValue.textString($0.key), CBORValue.boolean($0.value)) }))
        return [0] + CBORValue.map(info).encoded()
    }
}
