import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// authenticatorClientPIN (CTAP 2.1 §6.5.5), driven by the test's own platform implementation of
/// both PIN/UV auth protocols.
final class ClientPINTests: XCTestCase {
    // MARK: getKeyAgreement, getPINRetries

    func testGetKeyAgreementIsAnECDHP256COSEKeyPerProtocol() throws {
        let harness = try AuthenticatorHarness()
        var keys: [[UInt8]] = []
        for pinProtocol in PlatformPinProtocol.both {
            let (status, body) = harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: pinProtocol.version, subCommand: .getKeyAgreement))
            XCTAssertEqual(status, .success)
            XCTAssertEqual(body?.mapValue?.count, 1, "keyAgreement only")
            let key = try XCTUnwrap(body?[1])
            // {1: 2 (EC2), 3: -25 (ECDH-ES+HKDF-256), -1: 1 (P-256), -2: x, -3: y} and nothing else.
            XCTAssertEqual(key.mapValue?.count, 5)
            XCTAssertEqual(key[1], 2)
            XCTAssertEqual(key[3], -25)
            XCTAssertEqual(key[-1], 1)
            let x = try XCTUnwrap(key[-2]?.bytesValue), y = try XCTUnwrap(key[-3]?.bytesValue)
            XCTAssertNoThrow(try P256.KeyAgreement.PublicKey(x: x, y: y), "a point on the curve")
            keys.append(x)
            // The same key until something regenerates it.
            XCTAssertEqual(harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: pinProtocol.version, subCommand: .getKeyAgreement)).body?[1], key)
        }
        XCTAssertNotEqual(keys[0], keys[1], "each protocol has its own key")
    }

    func testGetKeyAgreementNeedsASupportedProtocol() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.clientPIN(ClientPINRequest(subCommand: .getKeyAgreement)).status, .missingParameter)
        XCTAssertEqual(harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: 3, subCommand: .getKeyAgreement)).status, .invalidParameter)
    }

    func testGetPINRetriesIsPINNotSetUntilAPINIsSetThenEight() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(harness.clientPIN(ClientPINRequest(subCommand: .getPINRetries)).status, .pinNotSet)
        XCTAssertEqual(try harness.setPIN("1234"), .success)
        XCTAssertEqual(harness.pinRetries().powerCycleState, false)
        XCTAssertEqual(harness.pinRetries().retries, 8)
    }

    func testUVSubcommandsAndUnknownSubcommandsAreInvalidSubcommand() throws {
        let harness = try AuthenticatorHarness()
        for subCommand: UInt64 in [6, 7, 8, 0x0A, 0xFF] {
            XCTAssertEqual(harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: 2, subCommand: subCommand)).status,
                           .invalidSubcommand, "subCommand \(subCommand)")
        }
    }

    // MARK: setPIN

    func testSetPINStoresLeftSHA256OfThePINWithEightRetries() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(harness.info()?[4]?["clientPin"], false)
            XCTAssertEqual(try harness.setPIN("1234é", pinProtocol), .success)
            let state = try XCTUnwrap(try harness.store.loadPINState())
            XCTAssertEqual(state.pinHash?.copyBytes(), AuthenticatorHarness.pinHash("1234é"))
            XCTAssertEqual(state.pinCodePoints, 5)
            XCTAssertEqual(state.retries, 8)
            XCTAssertFalse(state.forcePINChange)
            XCTAssertEqual(harness.info()?[4]?["clientPin"], true)
        }
    }

    func testSetPINShorterThanMinPINLengthCodePointsIsPinPolicyViolation() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(try harness.setPIN("123", pinProtocol), .pinPolicyViolation)
            // Code points, not bytes: three two-byte characters are still three.
            XCTAssertEqual(try harness.setPIN("ééé", pinProtocol), .pinPolicyViolation)
            XCTAssertNil(try harness.store.loadPINState())
            XCTAssertEqual(try harness.setPIN("éééé", pinProtocol), .success)
        }
    }

    func testMinPINLengthSettingRaisesTheMinimum() throws {
        let harness = try AuthenticatorHarness()
        try harness.store.saveSetting("minPINLength", value: [6])
        XCTAssertEqual(harness.info()?[0x0D]?.intValue, 6)
        XCTAssertEqual(try harness.setPIN("12345"), .pinPolicyViolation)
        XCTAssertEqual(try harness.setPIN("123456"), .success)
        // Never below the default of 4.
        try harness.store.saveSetting("minPINLength", value: [2])
        XCTAssertEqual(harness.info()?[0x0D]?.intValue, 4)
    }

    func testSetPINOfMoreThan63BytesIsPinPolicyViolation() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            // 64 bytes without any 0x00: no padding, no PIN.
            XCTAssertEqual(try harness.setPIN(padded: [UInt8](repeating: 0x37, count: 64), pinProtocol), .pinPolicyViolation)
            XCTAssertEqual(try harness.setPIN(String(repeating: "7", count: 63), pinProtocol), .success)
            XCTAssertEqual(try harness.store.loadPINState()?.pinCodePoints, 63)
        }
    }

    func testSetPINNotPaddedTo64BytesIsInvalidParameter() throws {
        // CTAP 2.1 §6.5.5.5 step 7: "If paddedNewPin is NOT 64 bytes long, it returns
        // CTAP1_ERR_INVALID_PARAMETER."
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            for length in [16, 32, 48, 80, 128] {
                XCTAssertEqual(try harness.setPIN(padded: AuthenticatorHarness.padded("1234", to: length), pinProtocol),
                               .invalidParameter, "\(length) bytes")
            }
            XCTAssertNil(try harness.store.loadPINState())
        }
    }

    func testSetPINWithInvalidUTF8IsPinPolicyViolation() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(try harness.setPIN(padded: [0xFF, 0xFE, 0xFD, 0xFC] + [UInt8](repeating: 0, count: 60), .two),
                       .pinPolicyViolation)
    }

    func testSetPINWhenAPINIsSetIsPinAuthInvalid() throws {
        // CTAP 2.1 §6.5.5.5 step 3: "If a PIN has already been set, authenticator returns
        // CTAP2_ERR_PIN_AUTH_INVALID error."
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(try harness.setPIN("1234", pinProtocol), .success)
            XCTAssertEqual(try harness.setPIN("5678", pinProtocol), .pinAuthInvalid)
            XCTAssertEqual(try harness.store.loadPINState()?.pinHash?.copyBytes(), AuthenticatorHarness.pinHash("1234"))
        }
    }

    func testSetPINWithAWrongPinUvAuthParamIsPinAuthInvalid() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            let session = try harness.session(pinProtocol)
            let newPinEnc = session.encrypt(AuthenticatorHarness.padded("1234"))
            var mac = session.authenticate(newPinEnc)
            mac[0] ^= 1
            let other = PlatformPinProtocol(version: pinProtocol.version == 1 ? 2 : 1)
            // A flipped bit; the other protocol's MAC length (16 vs 32 bytes); a MAC over
            // something else; a key the authenticator never saw.
            let otherSession = try harness.session(pinProtocol)
            for param in [mac, other.authenticate(key: session.hmacKey, newPinEnc), session.authenticate(newPinEnc + [0]),
                          otherSession.authenticate(newPinEnc)] {
                XCTAssertEqual(harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: pinProtocol.version, subCommand: .setPIN,
                                                                  keyAgreement: session.platformKey, pinUvAuthParam: param,
                                                                  newPinEnc: newPinEnc)).status, .pinAuthInvalid)
            }
            XCTAssertNil(try harness.store.loadPINState())
        }
    }

    func testSetPINMissingParametersOrUnsupportedProtocolOrBadKey() throws {
        let harness = try AuthenticatorHarness()
        let session = try harness.session(.two)
        let newPinEnc = session.encrypt(AuthenticatorHarness.padded("1234"))
        let full = ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .setPIN, keyAgreement: session.platformKey,
                                    pinUvAuthParam: session.authenticate(newPinEnc), newPinEnc: newPinEnc)
        for drop in 0..<4 {
            var request = full
            switch drop {
            case 0: request.pinUvAuthProtocol = nil
            case 1: request.keyAgreement = nil
            case 2: request.pinUvAuthParam = nil
            default: request.newPinEnc = nil
            }
            XCTAssertEqual(harness.clientPIN(request).status, .missingParameter, "without parameter \(drop)")
        }
        var request = full
        request.pinUvAuthProtocol = 7
        XCTAssertEqual(harness.clientPIN(request).status, .invalidParameter)
        // decapsulate fails on a point off the curve or a key of another type: INVALID_PARAMETER.
        var offCurve = session.platformKey.mapValue!
        var y = offCurve[-3]!.bytesValue!
        y[31] ^= 1
        offCurve[-3] = .byteString(y)
        request = full
        request.keyAgreement = .map(offCurve)
        XCTAssertEqual(harness.clientPIN(request).status, .invalidParameter)
        request.keyAgreement = .map([1: 1, 3: -8, -1: 6, -2: .byteString([UInt8](repeating: 1, count: 32))])
        XCTAssertEqual(harness.clientPIN(request).status, .invalidParameter)
        request.keyAgreement = .byteString([1])
        XCTAssertEqual(harness.clientPIN(request).status, .cborUnexpectedType)
        XCTAssertEqual(harness.clientPIN(full).status, .success)
    }

    // MARK: changePIN

    func testChangePINReplacesThePINAndInvalidatesTokens() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(try harness.setPIN("1234", pinProtocol), .success)
            let token = try harness.grantedToken("1234", pinProtocol, permissions: [.makeCredential], rpID: "example.com")
            XCTAssertEqual(try harness.changePIN(from: "1234", to: "98765", pinProtocol), .success)
            XCTAssertEqual(try harness.store.loadPINState()?.pinHash?.copyBytes(), AuthenticatorHarness.pinHash("98765"))
            XCTAssertEqual(try harness.store.loadPINState()?.pinCodePoints, 5)
            // resetPinUvAuthToken(): the token from before the change is dead.
            let request = AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: token, pinProtocol)
            XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .pinAuthInvalid)
            XCTAssertEqual(try harness.pinToken("1234", pinProtocol).status, .pinInvalid)
            XCTAssertEqual(try harness.pinToken("98765", pinProtocol).status, .success)
        }
    }

    func testChangePINChecksTheCurrentPINAndTheNewPINsPolicy() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(try harness.changePIN(from: "1234", to: "5678"), .pinNotSet)
        XCTAssertEqual(try harness.setPIN("1234"), .success)
        XCTAssertEqual(try harness.changePIN(from: "0000", to: "5678"), .pinInvalid)
        XCTAssertEqual(try harness.store.loadPINState()?.retries, 7)
        XCTAssertEqual(try harness.changePIN(from: "1234", to: "56"), .pinPolicyViolation)
        // The current PIN was right: retries are back at the maximum even though the new one failed.
        XCTAssertEqual(try harness.store.loadPINState()?.retries, 8)
        XCTAssertEqual(try harness.store.loadPINState()?.pinHash?.copyBytes(), AuthenticatorHarness.pinHash("1234"))
        // The pinUvAuthParam covers newPinEnc ‖ pinHashEnc.
        let session = try harness.session(.two)
        let newPinEnc = session.encrypt(AuthenticatorHarness.padded("5678"))
        let pinHashEnc = session.encrypt(AuthenticatorHarness.pinHash("1234"))
        XCTAssertEqual(harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .changePIN, keyAgreement: session.platformKey,
                                                          pinUvAuthParam: session.authenticate(newPinEnc), newPinEnc: newPinEnc,
                                                          pinHashEnc: pinHashEnc)).status, .pinAuthInvalid)
        XCTAssertEqual(try harness.store.loadPINState()?.retries, 8, "a bad pinUvAuthParam costs no retry")
    }

    // MARK: getPinToken / getPinUvAuthTokenUsingPinWithPermissions

    func testGetPinTokenAndWithPermissionsReturnA32ByteTokenEncryptedToThePlatform() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(try harness.setPIN("1234", pinProtocol), .success)
            let legacy = try harness.grantedToken("1234", pinProtocol)
            let scoped = try harness.grantedToken("1234", pinProtocol, permissions: [.getAssertion], rpID: "example.com")
            XCTAssertEqual(legacy.count, 32)
            XCTAssertEqual(scoped.count, 32)
            XCTAssertNotEqual(legacy, scoped, "each token is fresh")
        }
    }

    func testTokenSubcommandsWithoutAPINArePinNotSet() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(try harness.pinToken("1234").status, .pinNotSet)
        XCTAssertEqual(try harness.pinToken("1234", permissions: [.getAssertion], rpID: "example.com").status, .pinNotSet)
    }

    func testWrongPINIsPinInvalidAndRetriesAreDecrementedAndPersisted() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(try harness.setPIN("1234", pinProtocol), .success)
            XCTAssertEqual(try harness.pinToken("4321", pinProtocol).status, .pinInvalid)
            XCTAssertEqual(try harness.store.loadPINState()?.retries, 7)
            XCTAssertEqual(try harness.pinToken("4321", pinProtocol, permissions: [.makeCredential], rpID: "a.example").status, .pinInvalid)
            XCTAssertEqual(try harness.store.loadPINState()?.retries, 6)
            XCTAssertEqual(harness.pinRetries().retries, 6)
            // A correct PIN restores the maximum.
            XCTAssertEqual(try harness.pinToken("1234", pinProtocol).status, .success)
            XCTAssertEqual(try harness.store.loadPINState()?.retries, 8)
        }
    }

    func testRetriesAreDecrementedAndPersistedBeforeTheComparison() throws {
        // CTAP 2.1 §6.5.5.7.2 step 8 precedes step 9: the decrement is durable before the PIN is
        // compared, so pulling the plug mid-attempt gives no free guess.
        let store = PINStateRecordingStore()
        let harness = try AuthenticatorHarness(store: store.inner, port: store)
        XCTAssertEqual(try harness.setPIN("1234"), .success)
        XCTAssertEqual(try harness.pinToken("1234", permissions: [.getAssertion], rpID: "example.com").status, .success)
        XCTAssertEqual(try harness.pinToken("0000", permissions: [.getAssertion], rpID: "example.com").status, .pinInvalid)
        // setPIN; correct PIN: decrement, then back to the maximum; wrong PIN: decrement only.
        XCTAssertEqual(store.savedRetries, [8, 7, 8, 7])
        // If the decrement cannot be made durable, the PIN is not compared at all: no token for
        // the right PIN, no mismatch counted for wrong ones.
        store.failPINStateWrites = true
        XCTAssertEqual(try harness.pinToken("1234", permissions: [.getAssertion], rpID: "example.com").status, .other)
        for _ in 0..<3 {
            XCTAssertEqual(try harness.pinToken("0000", permissions: [.getAssertion], rpID: "example.com").status, .other)
        }
        XCTAssertEqual(harness.pinRetries().powerCycleState, false)
        store.failPINStateWrites = false
        XCTAssertEqual(try harness.store.loadPINState()?.retries, 7)
        XCTAssertEqual(try harness.pinToken("1234", permissions: [.getAssertion], rpID: "example.com").status, .success)
    }

    func testThreeConsecutiveMismatchesArePinAuthBlockedUntilPowerCycle() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(try harness.setPIN("1234", pinProtocol), .success)
            XCTAssertEqual(try harness.pinToken("0000", pinProtocol).status, .pinInvalid)
            XCTAssertEqual(try harness.pinToken("0000", pinProtocol).status, .pinInvalid)
            XCTAssertEqual(try harness.pinToken("0000", pinProtocol).status, .pinAuthBlocked)
            XCTAssertEqual(harness.pinRetries().powerCycleState, true)
            // Blocked even for the right PIN, and without spending retries.
            XCTAssertEqual(try harness.pinToken("1234", pinProtocol).status, .pinAuthBlocked)
            XCTAssertEqual(try harness.changePIN(from: "1234", to: "5678", pinProtocol), .pinAuthBlocked)
            XCTAssertEqual(try harness.store.loadPINState()?.retries, 5)
            harness.authenticator.powerCycle()
            XCTAssertEqual(harness.pinRetries().powerCycleState, false)
            XCTAssertEqual(try harness.pinToken("1234", pinProtocol).status, .success)
            XCTAssertEqual(try harness.store.loadPINState()?.retries, 8)
        }
    }

    func testAMatchResetsTheConsecutiveMismatchCount() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(try harness.setPIN("1234"), .success)
        for _ in 0..<3 {
            XCTAssertEqual(try harness.pinToken("0000").status, .pinInvalid)
            XCTAssertEqual(try harness.pinToken("0000").status, .pinInvalid)
            XCTAssertEqual(try harness.pinToken("1234").status, .success)
        }
    }

    func testRetriesExhaustedArePinBlockedEvenAfterPowerCycle() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(try harness.setPIN("1234", pinProtocol), .success)
            var answers: [CTAP2StatusCode] = []
            for attempt in 1...8 {
                answers.append(try harness.pinToken("0000", pinProtocol).status)
                if attempt % 3 == 0 { harness.authenticator.powerCycle() }
            }
            XCTAssertEqual(answers, [.pinInvalid, .pinInvalid, .pinAuthBlocked, .pinInvalid, .pinInvalid, .pinAuthBlocked,
                                     .pinInvalid, .pinBlocked])
            XCTAssertEqual(try harness.store.loadPINState()?.retries, 0)
            harness.authenticator.powerCycle()
            XCTAssertEqual(try harness.pinToken("1234", pinProtocol).status, .pinBlocked)
            XCTAssertEqual(try harness.changePIN(from: "1234", to: "5678", pinProtocol), .pinBlocked)
            XCTAssertEqual(harness.pinRetries().retries, 0)
            // Only reset helps.
            XCTAssertEqual(harness.send(.reset).status, .success)
            XCTAssertEqual(harness.clientPIN(ClientPINRequest(subCommand: .getPINRetries)).status, .pinNotSet)
            XCTAssertEqual(try harness.setPIN("5678", pinProtocol), .success)
            XCTAssertEqual(harness.pinRetries().retries, 8)
        }
    }

    func testKeyAgreementKeyIsRegeneratedAfterAMismatchAndAtPowerUp() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            func currentKey() -> CBORValue? {
                harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: pinProtocol.version, subCommand: .getKeyAgreement)).body?[1]
            }
            XCTAssertEqual(try harness.setPIN("1234", pinProtocol), .success)
            let first = currentKey()
            XCTAssertEqual(try harness.pinToken("1234", pinProtocol).status, .success)
            XCTAssertEqual(currentKey(), first, "a match keeps the key")
            // A mismatch regenerates the key: a session made before it no longer works.
            let stale = try harness.session(pinProtocol)
            XCTAssertEqual(try harness.pinToken("0000", pinProtocol).status, .pinInvalid)
            let afterMismatch = currentKey()
            XCTAssertNotEqual(afterMismatch, first)
            let pinHashEnc = stale.encrypt(AuthenticatorHarness.pinHash("1234"))
            XCTAssertEqual(harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: pinProtocol.version, subCommand: .getPinToken,
                                                              keyAgreement: stale.platformKey, pinHashEnc: pinHashEnc)).status,
                           .pinInvalid, "the old shared secret decrypts to garbage")
            harness.authenticator.powerCycle()
            let afterPowerCycle = currentKey()
            XCTAssertNotEqual(afterPowerCycle, afterMismatch)
            XCTAssertNotEqual(afterPowerCycle, first)
        }
    }

    func testPermissionsZeroIsInvalidParameter() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(try harness.setPIN("1234"), .success)
        XCTAssertEqual(try harness.pinToken("1234", permissions: [], rpID: "example.com").status, .invalidParameter)
        XCTAssertEqual(try harness.pinToken("1234", permissions: [], rpID: nil).status, .invalidParameter)
        XCTAssertEqual(try harness.store.loadPINState()?.retries, 8, "refused before the PIN is looked at")
    }

    func testMakeCredentialOrGetAssertionPermissionWithoutRPIDIsMissingParameter() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(try harness.setPIN("1234"), .success)
        XCTAssertEqual(try harness.pinToken("1234", permissions: [.makeCredential]).status, .missingParameter)
        XCTAssertEqual(try harness.pinToken("1234", permissions: [.getAssertion]).status, .missingParameter)
        XCTAssertEqual(try harness.pinToken("1234", permissions: [.makeCredential, .getAssertion]).status, .missingParameter)
    }

    func testPermissionsForFeaturesGetInfoDoesNotOfferAreUnauthorized() throws {
        // §6.5.5.7.2 step 4: cm needs credMgmt, be bioEnroll, lbw largeBlobs, acfg authnrCfg.
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(try harness.setPIN("1234"), .success)
        for permissions: PinUvAuthPermissions in [.bioEnrollment, [.getAssertion, .bioEnrollment],
                                                  [.credentialManagement, .bioEnrollment]] {
            XCTAssertEqual(try harness.pinToken("1234", permissions: permissions, rpID: "example.com").status,
                           .unauthorizedPermission, "permissions \(permissions.rawValue)")
        }
        XCTAssertEqual(try harness.store.loadPINState()?.retries, 8)
        // getInfo offers credMgmt, largeBlobs and authnrCfg: cm, lbw and acfg are granted.
        for permissions: PinUvAuthPermissions in [.credentialManagement, .largeBlobWrite, .authenticatorConfiguration,
                                                  [.credentialManagement, .largeBlobWrite, .authenticatorConfiguration]] {
            XCTAssertEqual(try harness.pinToken("1234", permissions: permissions).status, .success,
                           "permissions \(permissions.rawValue)")
        }
        // Undefined permission bits are ignored.
        XCTAssertEqual(try harness.pinToken("1234", permissions: [.getAssertion, PinUvAuthPermissions(rawValue: 0x80)],
                                            rpID: "example.com").status, .success)
    }

    func testGetPinTokenRejectsPermissionsAndRPID() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(try harness.setPIN("1234"), .success)
        let session = try harness.session(.two)
        let pinHashEnc = session.encrypt(AuthenticatorHarness.pinHash("1234"))
        XCTAssertEqual(harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .getPinToken, keyAgreement: session.platformKey,
                                                          pinHashEnc: pinHashEnc, permissions: 3)).status, .invalidParameter)
        XCTAssertEqual(harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .getPinToken, keyAgreement: session.platformKey,
                                                          pinHashEnc: pinHashEnc, rpID: "example.com")).status, .invalidParameter)
        XCTAssertEqual(harness.clientPIN(ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .getPinToken,
                                                          keyAgreement: session.platformKey)).status, .missingParameter)
    }

    func testForcePINChangeRefusesTokensUntilChangePIN() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(try harness.setPIN("1234"), .success)
        var state = try XCTUnwrap(try harness.store.loadPINState())
        state.forcePINChange = true
        try harness.store.savePINState(state)
        XCTAssertEqual(harness.info()?[0x0C], true)
        // §6.5.5.7.2 step 11: PIN_POLICY_VIOLATION; §6.5.5.7.1 step 11 (getPinToken): PIN_INVALID.
        XCTAssertEqual(try harness.pinToken("1234", permissions: [.getAssertion], rpID: "example.com").status, .pinPolicyViolation)
        XCTAssertEqual(try harness.pinToken("1234").status, .pinInvalid)
        XCTAssertEqual(try harness.store.loadPINState()?.retries, 8, "the PIN itself was right")
        // §6.5.5.6 step 13: the forced change must change the PIN.
        XCTAssertEqual(try harness.changePIN(from: "1234", to: "1234"), .pinPolicyViolation)
        XCTAssertEqual(try harness.changePIN(from: "1234", to: "4321"), .success)
        XCTAssertEqual(harness.info()?[0x0C], false)
        XCTAssertEqual(try harness.pinToken("4321", permissions: [.getAssertion], rpID: "example.com").status, .success)
    }

    func testANewTokenInvalidatesTheOldOne() throws {
        for pinProtocol in PlatformPinProtocol.both {
            let harness = try AuthenticatorHarness()
            XCTAssertEqual(try harness.setPIN("1234", pinProtocol), .success)
            let old = try harness.grantedToken("1234", pinProtocol, permissions: [.makeCredential], rpID: "example.com")
            let new = try harness.grantedToken("1234", pinProtocol, permissions: [.makeCredential], rpID: "example.com")
            let request = harness.makeCredentialRequest()
            XCTAssertEqual(harness.send(.makeCredential, AuthenticatorHarness.authorized(request, token: old, pinProtocol).cborValue).status,
                           .pinAuthInvalid)
            XCTAssertEqual(harness.send(.makeCredential, AuthenticatorHarness.authorized(request, token: new, pinProtocol).cborValue).status,
                           .success)
        }
    }

    func testResetForgetsThePINAndTokens() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(try harness.setPIN("1234"), .success)
        let token = try harness.grantedToken("1234", permissions: [.makeCredential], rpID: "example.com")
        XCTAssertEqual(harness.send(.reset).status, .success)
        XCTAssertNil(try harness.store.loadPINState())
        XCTAssertEqual(harness.info()?[4]?["clientPin"], false)
        XCTAssertEqual(try harness.setPIN("5678"), .success, "the old token is not a PIN")
        let request = AuthenticatorHarness.authorized(harness.makeCredentialRequest(), token: token, .two)
        XCTAssertEqual(harness.send(.makeCredential, request.cborValue).status, .pinAuthInvalid)
    }
}
