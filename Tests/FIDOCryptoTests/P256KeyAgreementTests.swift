import XCTest
import COpenSSL
import FIDOCrypto

final class P256KeyAgreementTests: XCTestCase {
    func testTwoPartiesAgree() throws {
        let alice = try P256.KeyAgreement.PrivateKey()
        let bob = try P256.KeyAgreement.PrivateKey()
        let aliceSecret = try alice.sharedSecretX(with: bob.publicKey)
        let bobSecret = try bob.sharedSecretX(with: alice.publicKey)
        XCTAssertEqual(aliceSecret.count, 32)
        XCTAssertEqual(aliceSecret.copyBytes(), bobSecret.copyBytes())
        XCTAssertNotEqual(alice.publicKey, bob.publicKey)
        // Peer keys arrive as COSE x/y coordinates.
        let bobFromCOSE = try P256.KeyAgreement.PublicKey(x: bob.publicKey.x, y: bob.publicKey.y)
        XCTAssertEqual(try alice.sharedSecretX(with: bobFromCOSE).copyBytes(), aliceSecret.copyBytes())
    }

    // NIST CAVS 14.1, KAS ECC CDH primitive (SP 800-56A), P-256 COUNT = 0.
    func testNISTCAVSVector() throws {
        let ours = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: [UInt8](hex: "7d7dc5f71eb29ddaf80d6214632eeae03d9058af1fb6d22ed80badb62bc1a534"))
        XCTAssertEqual(ours.publicKey.x.hex, "ead218590119e8876b29146ff89ca61770c4edbbf97d38ce385ed281d8a6b230")
        XCTAssertEqual(ours.publicKey.y.hex, "28af61281fd35e2fa7002523acc85a429cb06ee6648325389f59edfce1405141")
        let peer = try P256.KeyAgreement.PublicKey(
            x: [UInt8](hex: "700c48f77f56584c5cc632ca65640db91b6bacce3a4df6b42ce7cc838833d287"),
            y: [UInt8](hex: "db71e509e3fd9b060ddb20ba5c51dcc5948d46fbf640dfe0441782cab85fa4ac"))
        XCTAssertEqual(try ours.sharedSecretX(with: peer).copyBytes().hex,
                       "46fc62106420ff012e54a434fbdd2d25ccc5852060561e68040dd7778997bd7b")
    }

    func testInvalidPeerPointsAreRejected() throws {
        let x = [UInt8](hex: "700c48f77f56584c5cc632ca65640db91b6bacce3a4df6b42ce7cc838833d287")
        var y = [UInt8](hex: "db71e509e3fd9b060ddb20ba5c51dcc5948d46fbf640dfe0441782cab85fa4ac")
        y[31] ^= 1   // no longer on the curve (invalid-curve attack input)
        XCTAssertThrowsCryptoError(.exactly(.invalidKey)) { try P256.KeyAgreement.PublicKey(x: x, y: y) }
        XCTAssertThrowsCryptoError(.exactly(.invalidKey)) {
            try P256.KeyAgreement.PublicKey(x: [UInt8](repeating: 0, count: 32), y: [UInt8](repeating: 0, count: 32))
        }
        // Coordinates ≥ p.
        XCTAssertThrowsCryptoError(.exactly(.invalidKey)) {
            try P256.KeyAgreement.PublicKey(x: [UInt8](repeating: 0xff, count: 32), y: y)
        }
        XCTAssertThrowsCryptoError(.exactly(.invalidKey)) {
            try P256.KeyAgreement.PublicKey(x963Representation: [0x04] + x)
        }
        XCTAssertThrowsCryptoError(.exactly(.invalidKey)) { try P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0, count: 32)) }
        XCTAssertEqual(ERR_peek_error(), 0)
    }
}
