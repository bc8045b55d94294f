import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// authenticatorCredentialManagement (CTAP 2.1 §6.8) on 0x0A and on the preview command 0x41.
final class CredentialManagementTests: XCTestCase {
    /// Response map keys (§6.8).
    enum Key {
        static let existingCount: CBORValue = 0x01, remainingCount: CBORValue = 0x02, rp: CBORValue = 0x03
        static let rpIDHash: CBORValue = 0x04, totalRPs: CBORValue = 0x05, user: CBORValue = 0x06
        static let credentialID: CBORValue = 0x07, publicKey: CBORValue = 0x08, totalCredentials: CBORValue = 0x09
        static let credProtect: CBORValue = 0x0A, largeBlobKey: CBORValue = 0x0B
    }

    static let commands: [CTAPCommand] = [.credentialManagement, .credentialManagementPreview]

    /// A discoverable credential made before the PIN was set (no token needed then).
    @discardableResult
    func registerResident(_ harness: AuthenticatorHarness, rpID: String = "example.com", rpName: String? = "Example",
                          userID: [UInt8], name: String = "alice", algorithm: Int = -7,
                          extensions: MakeCredentialExtensions = .init()) throws -> AuthenticatorHarness.Registration {
        var request = harness.makeCredentialRequest(rpID: rpID, userID: userID, userName: name, algorithms: [algorithm],
                                                    resident: true, extensions: extensions)
        request.rp.name = rpName
        return try harness.register(request)
    }

    // MARK: - getCredsMetadata (0x01)

    func testGetCredsMetadataCountsStoredCredentialsAndRemainingSpace() throws {
        for command in Self.commands {
            let harness = try AuthenticatorHarness(store: InMemoryCredentialStore(maxResidentCredentials: 50))
            try registerResident(harness, userID: [1])
            try registerResident(harness, rpID: "b.example", userID: [2])
            XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
            let (status, body) = harness.credentialManagement(.getCredsMetadata, token: try harness.cmToken(), command: command)
            XCTAssertEqual(status, .success)
            XCTAssertEqual(body?[Key.existingCount], 2)
            XCTAssertEqual(body?[Key.remainingCount], 48)
        }
    }

    /// A credential stored for allowLists only (a rig's non-resident one) is no discoverable
    /// credential, so not existing, but its slot is not remaining either.
    func testGetCredsMetadataLeavesStoredOnlyCredentialsOutOfExisting() throws {
        let harness = try AuthenticatorHarness(store: InMemoryCredentialStore(maxResidentCredentials: 50))
        try registerResident(harness, userID: [1])
        let credentialID = [UInt8](repeating: 0x5A, count: 20)
        var storedOnly = ResidentCredential(
            credentialID: credentialID, rpID: "example.com", rpIDHash: AuthenticatorHarness.rpIDHash("example.com"),
            rpName: nil, userHandle: ResidentCredential.storedOnlyUserHandle(credentialID: credentialID), userName: nil,
            userDisplayName: nil, algorithm: -7, privateKey: try P256.Signing.PrivateKey().rawRepresentation, createdAt: 1)
        storedOnly.discoverable = false
        try harness.store.saveResidentCredential(storedOnly)
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        let (status, body) = harness.credentialManagement(.getCredsMetadata, token: try harness.cmToken())
        XCTAssertEqual(status, .success)
        XCTAssertEqual(body?[Key.existingCount], 1)
        XCTAssertEqual(body?[Key.remainingCount], 48)
    }

    func testEveryAuthenticatedSubcommandNeedsAPinUvAuthParam() throws {
        let harness = try AuthenticatorHarness.pinned()
        for command in Self.commands {
            for subcommand: UInt64 in [1, 2, 4, 6, 7] {
                XCTAssertEqual(harness.credentialManagement(subcommand, command: command).status, .puatRequired,
                               "subcommand \(subcommand) on \(command)")
            }
        }
        // Without a PIN there is no token to be had: still PUAT_REQUIRED.
        XCTAssertEqual(try AuthenticatorHarness().credentialManagement(.getCredsMetadata).status, .puatRequired)
    }

    func testPinUvAuthParamChecks() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness.pinned()
            let token = try harness.cmToken(pinProtocol)
            // The right MAC over the wrong message, a MAC from another key, the wrong length.
            var request: CBORValue = .map([1: 1, 3: .unsignedInt(pinProtocol.version),
                                           4: .byteString(pinProtocol.authenticate(key: token, [2]))])
            XCTAssertEqual(harness.send(.credentialManagement, request).status, .pinAuthInvalid)
            request = .map([1: 1, 3: .unsignedInt(pinProtocol.version),
                            4: .byteString(pinProtocol.authenticate(key: [UInt8](repeating: 1, count: 32), [1]))])
            XCTAssertEqual(harness.send(.credentialManagement, request).status, .pinAuthInvalid)
            request = .map([1: 1, 3: .unsignedInt(pinProtocol.version), 4: .byteString([1, 2, 3])])
            XCTAssertEqual(harness.send(.credentialManagement, request).status, .pinAuthInvalid)
            // Protocol missing → MISSING_PARAMETER; unsupported → INVALID_PARAMETER.
            XCTAssertEqual(harness.send(.credentialManagement, .map([1: 1, 4: .byteString([1])])).status, .missingParameter)
            XCTAssertEqual(harness.send(.credentialManagement, .map([1: 1, 3: 3, 4: .byteString([1])])).status, .invalidParameter)
            XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: token, pinProtocol).status, .success)
        }
    }

    func testATokenWithoutTheCmPermissionIsPinAuthInvalid() throws {
        let harness = try AuthenticatorHarness.pinned()
        let mcga = try harness.grantedToken(AuthenticatorHarness.pin, permissions: [.makeCredential, .getAssertion],
                                            rpID: "example.com")
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: mcga).status, .pinAuthInvalid)
        // getPinToken's legacy token carries mc and ga only.
        let legacy = try harness.grantedToken(AuthenticatorHarness.pin)
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: legacy).status, .pinAuthInvalid)
        let lbw = try harness.grantedToken(AuthenticatorHarness.pin, permissions: [.largeBlobWrite])
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsBegin, token: lbw).status, .pinAuthInvalid)
    }

    func testUnknownSubcommandIsInvalidSubcommand() throws {
        let harness = try AuthenticatorHarness.pinned()
        for command in Self.commands {
            XCTAssertEqual(harness.credentialManagement(8, token: try harness.cmToken(), command: command).status, .invalidSubcommand)
            XCTAssertEqual(harness.credentialManagement(0x42, command: command).status, .invalidSubcommand)
        }
        XCTAssertEqual(harness.send(.credentialManagement, .map([2: .map([:])])).status, .missingParameter)
        XCTAssertEqual(harness.send(.credentialManagement, .map([1: "one"])).status, .cborUnexpectedType)
        XCTAssertEqual(harness.sendRaw([CTAPCommand.credentialManagement.rawValue]).status, .missingParameter)
    }

    // MARK: - enumerateRPs (0x02, 0x03)

    func testEnumerateRPsListsEachRPOnceByRPIDWithTotal() throws {
        for command in Self.commands {
            let harness = try AuthenticatorHarness()
            try registerResident(harness, rpID: "c.example", rpName: "Charlie", userID: [1])
            try registerResident(harness, rpID: "a.example", rpName: "Alpha", userID: [2])
            try registerResident(harness, rpID: "a.example", rpName: "Alpha", userID: [3])
            try registerResident(harness, rpID: "b.example", rpName: nil, userID: [4])
            XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
            let (status, first) = harness.credentialManagement(.enumerateRPsBegin, token: try harness.cmToken(), command: command)
            XCTAssertEqual(status, .success)
            XCTAssertEqual(first?[Key.totalRPs], 3)
            var entries = [try XCTUnwrap(first)]
            for _ in 1..<3 {
                let (nextStatus, next) = harness.credentialManagement(.enumerateRPsGetNextRP, command: command)
                XCTAssertEqual(nextStatus, .success)
                XCTAssertNil(next?[Key.totalRPs], "totalRPs only in Begin")
                entries.append(try XCTUnwrap(next))
            }
            XCTAssertEqual(entries.map { $0[Key.rp]?["id"]?.stringValue }, ["a.example", "b.example", "c.example"])
            XCTAssertEqual(entries[0][Key.rp], .map(["id": "a.example", "name": "Alpha"]))
            XCTAssertEqual(entries[1][Key.rp], .map(["id": "b.example"]), "no name, no name member")
            XCTAssertEqual(entries.map { $0[Key.rpIDHash]?.bytesValue },
                           ["a.example", "b.example", "c.example"].map { AuthenticatorHarness.rpIDHash($0) })
            XCTAssertEqual(harness.credentialManagement(.enumerateRPsGetNextRP, command: command).status, .notAllowed,
                           "past the end")
        }
    }

    func testEnumerateRPsWithoutCredentialsIsNoCredentials() throws {
        let harness = try AuthenticatorHarness.pinned()
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsBegin, token: try harness.cmToken()).status, .noCredentials)
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsGetNextRP).status, .notAllowed)
    }

    // MARK: - enumerateCredentials (0x04, 0x05)

    func testEnumerateCredentialsNewestFirstWithUserKeyCredProtectAndLargeBlobKey() throws {
        for command in Self.commands {
            let harness = try AuthenticatorHarness()
            let es256 = try registerResident(harness, userID: [1], name: "alice")
            let edDSA = try registerResident(harness, userID: [2], name: "bob", algorithm: -8,
                                             extensions: .init(credProtect: .userVerificationOptionalWithCredentialIDList))
            let withBlobKey = try registerResident(harness, userID: [3], name: "carol",
                                                   extensions: .init(credProtect: .userVerificationRequired, largeBlobKey: true))
            try registerResident(harness, rpID: "other.example", userID: [4])
            XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)

            let params: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("example.com"))])
            let (status, first) = harness.credentialManagement(.enumerateCredentialsBegin, params: params,
                                                               token: try harness.cmToken(), command: command)
            XCTAssertEqual(status, .success)
            XCTAssertEqual(first?[Key.totalCredentials], 3)
            var listed = [try XCTUnwrap(first)]
            for _ in 1..<3 {
                let (nextStatus, next) = harness.credentialManagement(.enumerateCredentialsGetNextCredential, command: command)
                XCTAssertEqual(nextStatus, .success)
                XCTAssertNil(next?[Key.totalCredentials])
                listed.append(try XCTUnwrap(next))
            }
            XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsGetNextCredential, command: command).status,
                           .notAllowed)

            // Newest first, as getAssertion offers them.
            let expected = [withBlobKey, edDSA, es256]
            XCTAssertEqual(listed.map { $0[Key.credentialID]?["id"]?.bytesValue }, expected.map(\.credentialID))
            XCTAssertEqual(listed.map { $0[Key.credentialID]?["type"] }, ["public-key", "public-key", "public-key"])
            // The public key is the one makeCredential attested (COSE, alg -7 / -8).
            XCTAssertEqual(listed.map { $0[Key.publicKey].flatMap(COSEKey.init) }, expected.map(\.publicKey))
            XCTAssertEqual(listed[1][Key.publicKey]?[3], -8)
            XCTAssertEqual(listed.map { $0[Key.user] }, [
                .map(["id": .byteString([3]), "name": "carol", "displayName": "Carol"]),
                .map(["id": .byteString([2]), "name": "bob", "displayName": "Bob"]),
                .map(["id": .byteString([1]), "name": "alice", "displayName": "Alice"]),
            ])
            XCTAssertEqual(listed.map { $0[Key.credProtect] }, [3, 2, 1])
            XCTAssertEqual(listed[0][Key.largeBlobKey]?.bytesValue, withBlobKey.response[5]?.bytesValue)
            XCTAssertEqual(listed[0][Key.largeBlobKey]?.bytesValue?.count, 32)
            XCTAssertNil(listed[1][Key.largeBlobKey])
        }
    }

    func testEnumerateCredentialsNeedsAnRPIDHashAndCredentials() throws {
        let harness = try AuthenticatorHarness.pinned()
        let token = try harness.cmToken()
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsBegin, token: token).status, .missingParameter)
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsBegin, params: .map([:]), token: token).status,
                       .missingParameter)
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsBegin, params: .map([1: "hash"]), token: token).status,
                       .cborUnexpectedType)
        let params: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("nobody.example"))])
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsBegin, params: params, token: token).status,
                       .noCredentials)
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsGetNextCredential).status, .notAllowed)
        // The MAC covers the parameters: the same MAC with other parameters fails.
        let mac = PlatformPinProtocol.two.authenticate(key: token, [4] + params.encoded())
        let other: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("example.com"))])
        XCTAssertEqual(harness.send(.credentialManagement, .map([1: 4, 2: other, 3: 2, 4: .byteString(mac)])).status,
                       .pinAuthInvalid)
    }

    func testASingleCredentialOrRPLeavesNoEnumerationBehind() throws {
        let harness = try AuthenticatorHarness()
        try registerResident(harness, userID: [1])
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        let token = try harness.cmToken()
        let (status, body) = harness.credentialManagement(.enumerateRPsBegin, token: token)
        XCTAssertEqual(status, .success)
        XCTAssertEqual(body?[Key.totalRPs], 1)
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsGetNextRP).status, .notAllowed)
        let params: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("example.com"))])
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsBegin, params: params, token: token).body?[Key.totalCredentials], 1)
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsGetNextCredential).status, .notAllowed)
    }

    // MARK: - Enumeration state: channel-bound, one at a time

    func testGetNextFollowsOnlyOnTheChannelThatBegan() throws {
        let harness = try AuthenticatorHarness()
        for index in 0..<3 { try registerResident(harness, rpID: "rp\(index).example", userID: [UInt8(index)]) }
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        let token = try harness.cmToken()
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsBegin, token: token, channel: 1).status, .success)
        // Another channel may neither continue it…
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsGetNextRP, channel: 2).status, .notAllowed)
        // …nor end it by sending something else.
        XCTAssertEqual(harness.send(.getInfo, channel: 2).status, .success)
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsGetNextRP, channel: 1).body?[Key.rp]?["id"], "rp1.example")
        // The wrong kind of GetNext is not allowed and ends it.
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsGetNextCredential, channel: 1).status, .notAllowed)
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsGetNextRP, channel: 1).status, .notAllowed)

        // Any other command from the same channel ends it.
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsBegin, token: token, channel: 1).status, .success)
        XCTAssertEqual(harness.send(.getInfo, channel: 1).status, .success)
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsGetNextRP, channel: 1).status, .notAllowed)
        // So does another credentialManagement subcommand from it.
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsBegin, token: token, channel: 1).status, .success)
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: token, channel: 1).status, .success)
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsGetNextRP, channel: 1).status, .notAllowed)
        // A Begin on another channel takes over (one enumeration at a time).
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsBegin, token: token, channel: 1).status, .success)
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsBegin, token: token, channel: 2).status, .success)
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsGetNextRP, channel: 1).status, .notAllowed)
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsGetNextRP, channel: 2).status, .success)
    }

    func testEnumerationStateEndsAfterThirtySecondsAndAtPowerCycle() throws {
        let harness = try AuthenticatorHarness()
        for index in 0..<3 { try registerResident(harness, userID: [UInt8(index)]) }
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        let params: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("example.com"))])
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsBegin, params: params, token: try harness.cmToken()).status,
                       .success)
        harness.clock.advance(byMilliseconds: 30_000)
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsGetNextCredential).status, .success)
        harness.clock.advance(byMilliseconds: 30_001)
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsGetNextCredential).status, .notAllowed)

        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsBegin, params: params, token: try harness.cmToken()).status,
                       .success)
        harness.authenticator.powerCycle()
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsGetNextCredential).status, .notAllowed)
    }

    func testHiddenCredentialsAreNeverEnumeratedOrManaged() throws {
        let harness = try AuthenticatorHarness()
        let visible = try registerResident(harness, userID: [1])
        let hidden = try registerResident(harness, userID: [2])
        let onlyHidden = try registerResident(harness, rpID: "gone.example", userID: [3])
        harness.store.hide(credentialID: hidden.credentialID, at: 1)
        harness.store.hide(credentialID: onlyHidden.credentialID, at: 1)
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        let token = try harness.cmToken()
        let (_, rps) = harness.credentialManagement(.enumerateRPsBegin, token: token)
        XCTAssertEqual(rps?[Key.totalRPs], 1)
        XCTAssertEqual(rps?[Key.rp]?["id"], "example.com")
        let params: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("example.com"))])
        let (_, credentials) = harness.credentialManagement(.enumerateCredentialsBegin, params: params, token: token)
        XCTAssertEqual(credentials?[Key.totalCredentials], 1)
        XCTAssertEqual(credentials?[Key.credentialID]?["id"]?.bytesValue, visible.credentialID)
        let goneParams: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("gone.example"))])
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsBegin, params: goneParams, token: token).status,
                       .noCredentials)
        XCTAssertEqual(harness.credentialManagement(.deleteCredential, params: AuthenticatorHarness.credentialParams(hidden.credentialID),
                                                    token: token).status, .noCredentials)
        XCTAssertNotNil(try harness.store.residentCredential(id: hidden.credentialID), "kept for the retention period")
    }

    /// Credentials are read as GetNext reaches them: one deleted or hidden since Begin (the CLI,
    /// a signal) is skipped, and the walk ends with NOT_ALLOWED once nothing is left.
    func testCredentialsGoneSinceBeginAreSkipped() throws {
        let harness = try AuthenticatorHarness()
        let oldest = try registerResident(harness, userID: [1])
        let deleted = try registerResident(harness, userID: [2])
        let hidden = try registerResident(harness, userID: [3])
        let newest = try registerResident(harness, userID: [4])
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        let params: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("example.com"))])
        let (status, first) = harness.credentialManagement(.enumerateCredentialsBegin, params: params, token: try harness.cmToken())
        XCTAssertEqual(status, .success)
        XCTAssertEqual(first?[Key.totalCredentials], 4)
        XCTAssertEqual(first?[Key.credentialID]?["id"]?.bytesValue, newest.credentialID)
        XCTAssertTrue(try harness.store.deleteResidentCredential(id: deleted.credentialID))
        harness.store.hide(credentialID: hidden.credentialID, at: 1)
        let (nextStatus, next) = harness.credentialManagement(.enumerateCredentialsGetNextCredential)
        XCTAssertEqual(nextStatus, .success)
        XCTAssertEqual(next?[Key.credentialID]?["id"]?.bytesValue, oldest.credentialID)
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsGetNextCredential).status, .notAllowed)
    }

    // MARK: - deleteCredential (0x06)

    func testDeleteCredentialRemovesItDurably() throws {
        for command in Self.commands {
            let harness = try AuthenticatorHarness()
            let doomed = try registerResident(harness, userID: [1])
            let kept = try registerResident(harness, userID: [2])
            let plain = try harness.register(harness.makeCredentialRequest(userID: [9]))
            XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
            let token = try harness.cmToken()
            let (status, body) = harness.credentialManagement(.deleteCredential, params: AuthenticatorHarness.credentialParams(doomed.credentialID),
                                                              token: token, command: command)
            XCTAssertEqual(status, .success)
            XCTAssertNil(body, "status byte alone")
            XCTAssertNil(try harness.store.residentCredential(id: doomed.credentialID))
            XCTAssertNotNil(try harness.store.residentCredential(id: kept.credentialID))
            XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [doomed.credentialID]).cborValue).status,
                           .noCredentials)
            // Again: it is gone.
            XCTAssertEqual(harness.credentialManagement(.deleteCredential, params: AuthenticatorHarness.credentialParams(doomed.credentialID),
                                                        token: token, command: command).status, .noCredentials)
            // A non-resident ID is not a stored credential either.
            XCTAssertEqual(harness.credentialManagement(.deleteCredential, params: AuthenticatorHarness.credentialParams(plain.credentialID),
                                                        token: token, command: command).status, .noCredentials)
        }
    }

    func testDeleteCredentialNeedsACredentialID() throws {
        let harness = try AuthenticatorHarness.pinned()
        let token = try harness.cmToken()
        XCTAssertEqual(harness.credentialManagement(.deleteCredential, token: token).status, .missingParameter)
        XCTAssertEqual(harness.credentialManagement(.deleteCredential, params: .map([1: .byteString([1])]), token: token).status,
                       .missingParameter)
        XCTAssertEqual(harness.credentialManagement(.deleteCredential, params: .map([2: .map(["id": .byteString([1])])]),
                                                    token: token).status, .missingParameter)
        XCTAssertEqual(harness.credentialManagement(.deleteCredential, params: .map([2: .byteString([1])]), token: token).status,
                       .cborUnexpectedType)
    }

    // MARK: - updateUserInformation (0x07)

    func testUpdateUserInformationReplacesNamesAndRemovesAbsentOrEmptyOnes() throws {
        for command in Self.commands {
            let harness = try AuthenticatorHarness()
            let registration = try registerResident(harness, userID: [1, 2, 3], name: "alice")
            XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
            let token = try harness.cmToken()
            func update(_ user: CBORValue) -> CTAP2StatusCode {
                harness.credentialManagement(.updateUserInformation,
                                             params: .map([2: .map(["id": .byteString(registration.credentialID), "type": "public-key"]),
                                                           3: user]),
                                             token: token, command: command).status
            }
            func stored() throws -> ResidentCredential { try XCTUnwrap(try harness.store.residentCredential(id: registration.credentialID)) }

            XCTAssertEqual(update(.map(["id": .byteString([1, 2, 3]), "name": "alice@new", "displayName": "Alice New"])), .success)
            XCTAssertEqual(try stored().userName, "alice@new")
            XCTAssertEqual(try stored().userDisplayName, "Alice New")
            // Absent displayName is removed; so is an empty name.
            XCTAssertEqual(update(.map(["id": .byteString([1, 2, 3]), "name": "alice2"])), .success)
            XCTAssertEqual(try stored().userName, "alice2")
            XCTAssertNil(try stored().userDisplayName)
            XCTAssertEqual(update(.map(["id": .byteString([1, 2, 3]), "name": "", "displayName": "Only Display"])), .success)
            XCTAssertNil(try stored().userName)
            XCTAssertEqual(try stored().userDisplayName, "Only Display")
            // The user handle must be the stored one.
            XCTAssertEqual(update(.map(["id": .byteString([9]), "name": "mallory"])), .invalidParameter)
            XCTAssertEqual(try stored().userDisplayName, "Only Display")
            XCTAssertEqual(try stored().userHandle, [1, 2, 3])

            // Enumeration shows the update (name removed, display name kept).
            let params: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("example.com"))])
            XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsBegin, params: params, token: token, command: command).body?[Key.user],
                           .map(["id": .byteString([1, 2, 3]), "displayName": "Only Display"]))
        }
    }

    func testUpdateUserInformationNeedsCredentialAndUser() throws {
        let harness = try AuthenticatorHarness()
        let registration = try registerResident(harness, userID: [1])
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        let token = try harness.cmToken()
        let descriptor: CBORValue = .map(["id": .byteString(registration.credentialID), "type": "public-key"])
        XCTAssertEqual(harness.credentialManagement(.updateUserInformation, params: .map([2: descriptor]), token: token).status,
                       .missingParameter)
        XCTAssertEqual(harness.credentialManagement(.updateUserInformation, params: .map([3: .map(["id": .byteString([1])])]),
                                                    token: token).status, .missingParameter)
        XCTAssertEqual(harness.credentialManagement(.updateUserInformation,
                                                    params: .map([2: .map(["id": .byteString([7]), "type": "public-key"]),
                                                                  3: .map(["id": .byteString([1])])]),
                                                    token: token).status, .noCredentials)
        XCTAssertEqual(harness.credentialManagement(.updateUserInformation, params: .map([2: descriptor, 3: .map(["name": "x"])]),
                                                    token: token).status, .missingParameter, "user without id")
    }

    // MARK: - Tokens with a permissions RP ID (§6.8)

    func testATokenBoundToAnRPManagesOnlyThatRP() throws {
        let harness = try AuthenticatorHarness()
        let a = try registerResident(harness, rpID: "a.example", userID: [1])
        let b = try registerResident(harness, rpID: "b.example", userID: [2])
        XCTAssertEqual(try harness.setPIN(AuthenticatorHarness.pin), .success)
        let token = try harness.cmToken(rpID: "a.example")
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: token).status, .pinAuthInvalid)
        XCTAssertEqual(harness.credentialManagement(.enumerateRPsBegin, token: token).status, .pinAuthInvalid)
        let paramsB: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("b.example"))])
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsBegin, params: paramsB, token: token).status, .pinAuthInvalid)
        XCTAssertEqual(harness.credentialManagement(.deleteCredential, params: AuthenticatorHarness.credentialParams(b.credentialID),
                                                    token: token).status, .pinAuthInvalid)
        XCTAssertEqual(harness.credentialManagement(.updateUserInformation,
                                                    params: .map([2: .map(["id": .byteString(b.credentialID), "type": "public-key"]),
                                                                  3: .map(["id": .byteString([2]), "name": "x"])]),
                                                    token: token).status, .pinAuthInvalid)
        XCTAssertNotNil(try harness.store.residentCredential(id: b.credentialID))

        let paramsA: CBORValue = .map([1: .byteString(AuthenticatorHarness.rpIDHash("a.example"))])
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsBegin, params: paramsA, token: token).status, .success)
        XCTAssertEqual(harness.credentialManagement(.deleteCredential, params: AuthenticatorHarness.credentialParams(a.credentialID),
                                                    token: token).status, .success)
    }

    func testTokenChangesEndTheCmToken() throws {
        let harness = try AuthenticatorHarness.pinned()
        let token = try harness.cmToken()
        XCTAssertEqual(try harness.changePIN(from: AuthenticatorHarness.pin, to: "5678"), .success)
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: token).status, .pinAuthInvalid)
        // A cm token not used within 30 s stops; one in use lasts.
        let fresh = try harness.grantedToken("5678", permissions: [.credentialManagement])
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: fresh).status, .success)
        harness.clock.advance(byMilliseconds: 60_000)
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: fresh).status, .success)
        let idle = try harness.grantedToken("5678", permissions: [.credentialManagement])
        harness.clock.advance(byMilliseconds: 30_001)
        XCTAssertEqual(harness.credentialManagement(.getCredsMetadata, token: idle).status, .pinAuthInvalid)
    }

    // MARK: - Scale: enumeration is linear

    func testEnumeratingTenThousandCredentialsAsksTheStoreOncePerCredential() throws {
        let count = 10_000
        let store = CountingStore(InMemoryCredentialStore(maxResidentCredentials: 20_000))
        let harness = try AuthenticatorHarness.pinned(store: store.inner, port: store)
        // One key for all (enumeration only derives public keys from it).
        let key = try P256.Signing.PrivateKey()
        let rpIDHash = AuthenticatorHarness.rpIDHash("many.example")
        for index in 0..<count {
            let handle = withUnsafeBytes(of: UInt32(index).bigEndian) { Array($0) }
            try store.inner.saveResidentCredential(ResidentCredential(
                credentialID: [0xC0] + handle, rpID: "many.example", rpIDHash: rpIDHash, rpName: "Many",
                userHandle: handle, userName: "user\(index)", userDisplayName: nil, algorithm: -7,
                privateKey: key.rawRepresentation, createdAt: Int64(index)))
        }
        store.resetCounts()
        let started = ContinuousClock.now
        let params: CBORValue = .map([1: .byteString(rpIDHash)])
        let (status, first) = harness.credentialManagement(.enumerateCredentialsBegin, params: params, token: try harness.cmToken())
        XCTAssertEqual(status, .success)
        XCTAssertEqual(first?[Key.totalCredentials]?.intValue, count)
        var seen: Set<[UInt8]> = [try XCTUnwrap(first?[Key.credentialID]?["id"]?.bytesValue)]
        for _ in 1..<count {
            let (nextStatus, next) = harness.credentialManagement(.enumerateCredentialsGetNextCredential)
            guard nextStatus == .success, let id = next?[Key.credentialID]?["id"]?.bytesValue else {
                return XCTFail("GetNextCredential: \(nextStatus)")
            }
            seen.insert(id)
        }
        let elapsed = ContinuousClock.now - started
        XCTAssertEqual(seen.count, count, "every credential exactly once")
        XCTAssertEqual(harness.credentialManagement(.enumerateCredentialsGetNextCredential).status, .notAllowed)
        // The store counts the RP's credentials once, at Begin, then reads one credential per
        // GetNext from a position (nothing listed or decrypted up front or held between
        // requests): linear.
        XCTAssertEqual(store.count("discoverableCredentials"), 1)
        XCTAssertEqual(store.count("discoverableCredential(after:)"), count - 1)
        XCTAssertEqual(store.count("residentCredentials(rpIDHash:)"), 0)
        // Generous: a quadratic walk of 10,000 would be far slower than this even in debug builds.
        XCTAssertLessThan(elapsed, .seconds(120), "enumerated \(count) in \(elapsed)")
    }
}
