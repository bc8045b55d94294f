import CBOR
import CTAP
@testable import FIDOClient
import FIDOCrypto
import LatchkeyTestSupport
import XCTest

/// The platform side of PIN/UV auth protocols one and two: known answers computed with
/// python-fido2 2.x (`PinProtocolV1/V2.kdf`, `.authenticate`) and `cryptography`'s ECDH and
/// AES-CBC from fixed keys, then interoperation with Latchkey's authenticator.
final class PlatformPinUvAuthTests: XCTestCase {
    // The platform's scalar is RFC 6979 A.2.5's P-256 private key; the authenticator's another fixed scalar
    // (0f56db78ca460b055c500064824bed999a25aaf48ebb519ac201537b85479813).
    let platformScalar = hexBytes("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721")
    let platformX = hexBytes("60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6")
    let platformY = hexBytes("7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299")
    let authenticatorKey: CBORValue = .map([1: 2, 3: -25, -1: 1,
                                            -2: .byteString(hexBytes("e266ddfdc12668db30d4ca3e8f7749432c416044f2d2b8c10bf3d4012aeffa8a")),
                                            -3: .byteString(hexBytes("bfa86404a2e9ffe67d47c587ef7a97a7f456b863b4d02cfc6928973ab5b1cb39"))])
    let paddedPIN = Array("1234".utf8) + [UInt8](repeating: 0, count: 60)

    func session(_ pinUvAuthProtocol: PlatformPinUvAuthProtocol) throws -> PlatformPinUvAuthSession {
        try pinUvAuthProtocol.encapsulate(authenticatorKey, ephemeral: try P256.KeyAgreement.PrivateKey(rawRepresentation: platformScalar))
    }

    func testProtocolOneKnownAnswers() throws {
        let one = try session(.one)
        XCTAssertEqual(one.platformKey, .map([1: 2, 3: -25, -1: 1, -2: .byteString(platformX), -3: .byteString(platformY)]))
        // kdf(Z) = SHA-256(Z) = 63258107…; authenticate = LEFT(HMAC-SHA-256(key, "hello"), 16).
        XCTAssertEqual(one.authenticate(Array("hello".utf8)), hexBytes("583ef25a671cec92d41fb717815ee1d3"))
        let encrypted = try one.encrypt(paddedPIN)
        XCTAssertEqual(encrypted, hexBytes("5dec7e7a30531c2237497fe8cb93b6b9327f6cb21216ecd38b8957a65b61b393"
                                           + "f79e4eb4dd37386bb1b5d35eced58f940dfd54599d43116b4e5cc75bc288df73"), "zero IV, not sent")
        XCTAssertEqual(try one.decrypt(encrypted), paddedPIN)
    }

    func testProtocolTwoKnownAnswers() throws {
        let two = try session(.two)
        XCTAssertEqual(two.authenticate(Array("hello".utf8)),
                       hexBytes("9bb91672f61ef54ddc5af0ab4706e3405e53a6750e862a5a8d014fc795bf73bf"), "HKDF HMAC key, full 32-byte MAC")
        let iv = Array(UInt8(0)..<16)
        let encrypted = try two.encrypt(paddedPIN, iv: iv)
        XCTAssertEqual(encrypted, hexBytes("000102030405060708090a0b0c0d0e0f"
                                           + "e40e140d40caec1b802459f345484a9ce05dfe0e4410939bd692ca775b9ff4b0"
                                           + "b24f814ca7c36c4a8c978b0766497172ef4628a2ee338f19a6e8a373d088e3e3"), "HKDF AES key, IV prepended")
        XCTAssertEqual(try two.decrypt(encrypted), paddedPIN)
        XCTAssertEqual(try two.encrypt(paddedPIN).count, 80, "a random IV is prepended")
        XCTAssertThrowsError(try two.decrypt([1, 2, 3]))
    }

    func testPINEncodings() throws {
        var bytes = Array("1234".utf8)
        let pin = try PIN(consuming: &bytes)
        XCTAssertEqual(bytes, [0, 0, 0, 0], "the caller's copy is wiped")
        XCTAssertEqual(pin.leftHash(), hexBytes("03ac674216f3e15c761ee1a5e255f067"), "LEFT(SHA-256(\"1234\"), 16)")
        XCTAssertEqual(pin.paddedBytes(), paddedPIN)
        XCTAssertNoThrow(try pin.check(minimumLength: 4))
        XCTAssertThrowsError(try pin.check(minimumLength: 5)) {
            XCTAssertEqual($0 as? PIN.Problem, .tooShort(minimum: 5, length: 4))
        }
        var accented = Array("ééé".utf8)
        XCTAssertEqual(try PIN(consuming: &accented).length, 3, "length counts code points, not bytes")
        var long = [UInt8](repeating: 0x61, count: 64)
        XCTAssertThrowsError(try PIN(consuming: &long).check(minimumLength: 4)) {
            XCTAssertEqual($0 as? PIN.Problem, .tooLong(bytes: 64))
        }
        var zero: [UInt8] = [0x31, 0, 0x32, 0x33]
        XCTAssertThrowsError(try PIN(consuming: &zero)) { XCTAssertEqual($0 as? PIN.Problem, .containsZeroByte) }
        var invalid: [UInt8] = [0xFF, 0xFE, 0x31, 0x32]
        XCTAssertThrowsError(try PIN(consuming: &invalid)) { XCTAssertEqual($0 as? PIN.Problem, .notUTF8) }
    }

    func testNegotiationTakesTheKeysFirstKnownProtocol() {
        XCTAssertEqual(PlatformPinUvAuthProtocol.negotiate([2, 1]), .two)
        XCTAssertEqual(PlatformPinUvAuthProtocol.negotiate([1, 2]), .one)
        XCTAssertEqual(PlatformPinUvAuthProtocol.negotiate([7, 1]), .one)
        XCTAssertEqual(PlatformPinUvAuthProtocol.negotiate(nil), .one, "CTAP 2.0 keys without the field speak protocol one")
        XCTAssertNil(PlatformPinUvAuthProtocol.negotiate([3]))
    }

    func testMalformedKeyAgreementIsRefused() {
        XCTAssertThrowsError(try PlatformPinUvAuthProtocol.two.encapsulate(.map([1: 2, 3: -25, -1: 1,
                                                                                -2: .byteString([UInt8](repeating: 1, count: 32)),
                                                                                -3: .byteString([UInt8](repeating: 1, count: 32))]))) {
            XCTAssertEqual($0 as? PlatformPinUvAuthError, .malformedKeyAgreement, "a point not on the curve")
        }
        XCTAssertThrowsError(try PlatformPinUvAuthProtocol.one.encapsulate(.map([1: 1, -1: 6]))) {
            XCTAssertEqual($0 as? PlatformPinUvAuthError, .malformedKeyAgreement)
        }
    }

    /// A token by built-in UV (clientPIN 0x06), with both protocols; a key without UV says so.
    func testUVTokenFromAKeyWithBuiltInUV() throws {
        for version in PlatformPinUvAuthProtocol.allCases {
            let key = try InProcessKey(builtInUV: true)
            let remote = RemoteAuthenticator(link: key.link())
            remote.pinUvAuthProtocolOverride = version
            let token = try remote.uvAuthToken(permissions: .credentialManagement)
            XCTAssertEqual(token.pinUvAuthProtocol, version)
            let manager = RemoteCredentialManager(authenticator: remote, command: .credentialManagement, token: token)
            XCTAssertEqual(try manager.metadata().existing, 0, "the token works for credential management")
        }
        let plain = RemoteAuthenticator(link: try InProcessKey().link())
        XCTAssertThrowsError(try plain.uvAuthToken(permissions: .credentialManagement)) {
            XCTAssertEqual(($0 as? DeviceError)?.message.contains("no built-in user verification"), true, "\($0)")
        }
    }

    /// setPIN, changePIN and tokens with both protocols against Latchkey's authenticator (its
    /// protocol code was checked against the same published vectors in AuthenticatorTests).
    func testBothProtocolsInteroperateWithTheAuthenticator() throws {
        for version in PlatformPinUvAuthProtocol.allCases {
            let key = try InProcessKey()
            let remote = RemoteAuthenticator(link: key.link())
            remote.pinUvAuthProtocolOverride = version
            try remote.setPIN(try pin("1234"))
            XCTAssertEqual(try remote.info().options["clientPin"], true, "\(version)")
            XCTAssertEqual(try key.store.loadPINState()?.pinHash?.copyBytes(), hexBytes("03ac674216f3e15c761ee1a5e255f067"))
            try remote.changePIN(current: try pin("1234"), new: try pin("ünïcödé"))
            XCTAssertEqual(try key.store.loadPINState()?.pinHash?.copyBytes(), Array(FIDOCrypto.SHA256.hash(Array("ünïcödé".utf8)).prefix(16)))
            let token = try remote.pinUvAuthToken(pin: try pin("ünïcödé"), permissions: .credentialManagement)
            XCTAssertEqual(token.pinUvAuthProtocol, version)
            let manager = try remote.credentialManagement(pin: try pin("ünïcödé"))
            XCTAssertEqual(try manager.metadata().existing, 0, "the token authenticates credential management (\(version))")
        }
    }

    func pin(_ text: String) throws -> PIN {
        var bytes = Array(text.utf8)
        return try PIN(consuming: &bytes)
    }
}
