import FIDOCrypto
import XCTest

/// PIN/UV auth protocols one and two, the one implementation both sides use: known answers
/// computed with python-fido2 2.x (`PinProtocolV1/V2.kdf`, `.authenticate`) and `cryptography`'s
/// ECDH and AES-CBC from two fixed P-256 scalars (the platform's is RFC 6979 A.2.5's key).
final class PinUvAuthProtocolTests: XCTestCase {
    let paddedPIN = Array("1234".utf8) + [UInt8](repeating: 0, count: 60)

    func secret(_ pinUvAuthProtocol: PinUvAuthProtocol) throws -> PinUvAuthSharedSecret {
        let platform = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: [UInt8](hex: "c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721"))
        let authenticator = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: [UInt8](hex: "0f56db78ca460b055c500064824bed999a25aaf48ebb519ac201537b85479813"))
        let z = try platform.sharedSecretX(with: authenticator.publicKey)
        XCTAssertEqual(z.copyBytes(), try authenticator.sharedSecretX(with: platform.publicKey).copyBytes(), "ECDH agrees")
        return PinUvAuthSharedSecret(protocol: pinUvAuthProtocol, z: z)
    }

    func testProtocolOneKnownAnswers() throws {
        let one = try secret(.one)
        // kdf(Z) = SHA-256(Z); authenticate = LEFT(HMAC-SHA-256(key, "hello"), 16).
        XCTAssertEqual(one.authenticate(Array("hello".utf8)), [UInt8](hex: "583ef25a671cec92d41fb717815ee1d3"))
        var drewIV = false
        let encrypted = try one.encrypt(paddedPIN, iv: { drewIV = true; return [] }())
        XCTAssertFalse(drewIV, "protocol one draws no IV")
        XCTAssertEqual(encrypted, [UInt8](hex: "5dec7e7a30531c2237497fe8cb93b6b9327f6cb21216ecd38b8957a65b61b393"
                                               + "f79e4eb4dd37386bb1b5d35eced58f940dfd54599d43116b4e5cc75bc288df73"), "zero IV, not sent")
        XCTAssertEqual(one.decrypt(encrypted), paddedPIN)
        XCTAssertNil(one.decrypt([1, 2, 3]), "not whole AES blocks")
        XCTAssertTrue(one.verify(Array("hello".utf8), signature: [UInt8](hex: "583ef25a671cec92d41fb717815ee1d3")))
        XCTAssertFalse(one.verify(Array("hello".utf8), signature: [UInt8](hex: "583ef25a671cec92d41fb717815ee1d2")))
    }

    func testProtocolTwoKnownAnswers() throws {
        let two = try secret(.two)
        let mac = [UInt8](hex: "9bb91672f61ef54ddc5af0ab4706e3405e53a6750e862a5a8d014fc795bf73bf")
        XCTAssertEqual(two.authenticate(Array("hello".utf8)), mac, "HKDF HMAC key, full 32-byte MAC")
        let iv = Array(UInt8(0)..<16)
        let encrypted = try two.encrypt(paddedPIN, iv: iv)
        XCTAssertEqual(encrypted, [UInt8](hex: "000102030405060708090a0b0c0d0e0f"
                                               + "e40e140d40caec1b802459f345484a9ce05dfe0e4410939bd692ca775b9ff4b0"
                                               + "b24f814ca7c36c4a8c978b0766497172ef4628a2ee338f19a6e8a373d088e3e3"),
                       "HKDF AES key, IV prepended")
        XCTAssertEqual(two.decrypt(encrypted), paddedPIN)
        XCTAssertNil(two.decrypt(Array(encrypted.prefix(15))), "shorter than its IV")
        XCTAssertTrue(two.verify(Array("hello".utf8), signature: mac))
        XCTAssertFalse(two.verify(Array("hello".utf8), signature: Array(mac.prefix(16))), "protocol two's MAC is 32 bytes")
    }

    /// pinUvAuthParam with a token: LEFT(HMAC, 16) for protocol one, the whole HMAC for two;
    /// verify checks the length before the MAC.
    func testTokenMACLengths() {
        let token = SecretBytes(Array(repeating: 0x11, count: 32))
        let one = PinUvAuthProtocol.one.authenticate(key: token, message: [1, 2, 3])
        let two = PinUvAuthProtocol.two.authenticate(key: token, message: [1, 2, 3])
        XCTAssertEqual(one.count, 16)
        XCTAssertEqual(two.count, 32)
        XCTAssertEqual(Array(two.prefix(16)), one)
        XCTAssertTrue(PinUvAuthProtocol.one.verify(key: token, message: [1, 2, 3], signature: one))
        XCTAssertFalse(PinUvAuthProtocol.one.verify(key: token, message: [1, 2, 3], signature: two))
        XCTAssertFalse(PinUvAuthProtocol.two.verify(key: token, message: [1, 2, 3], signature: one))
    }
}
