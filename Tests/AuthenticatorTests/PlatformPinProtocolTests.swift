import CBOR
import FIDOCrypto
import XCTest

/// The test-side PIN protocol implementation is anchored to published vectors before it is
/// trusted to judge the authenticator.
final class PlatformPinProtocolTests: XCTestCase {
    func testHMACSHA256RFC4231TestCase2() {
        XCTAssertEqual(PlatformCrypto.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)),
                       hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
    }

    func testHKDFSHA256RFC5869TestCase1() {
        let okm = PlatformCrypto.hkdfSHA256(ikm: [UInt8](repeating: 0x0b, count: 22), salt: hex("000102030405060708090a0b0c"),
                                            info: hex("f0f1f2f3f4f5f6f7f8f9"), length: 42)
        XCTAssertEqual(okm, hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
    }

    func testAES256CBCNISTSP800_38A_F_2_5() {
        let key = hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
        let iv = hex("000102030405060708090a0b0c0d0e0f")
        let plaintext = hex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                            + "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
        let ciphertext = hex("f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
                             + "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b")
        XCTAssertEqual(PlatformCrypto.aes256CBC(encrypting: true, key: key, iv: iv, plaintext), ciphertext)
        XCTAssertEqual(PlatformCrypto.aes256CBC(encrypting: false, key: key, iv: iv, ciphertext), plaintext)
    }

    func testSHA256OfABC() {
        XCTAssertEqual(PlatformCrypto.sha256(Array("abc".utf8)),
                       hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    /// Both sides of an exchange agree, and the protocols differ where the spec says.
    func testEncapsulateAgreesWithTheKeyHolderAndProtocolsDiffer() throws {
        let authenticatorKey = try P256.KeyAgreement.PrivateKey()
        let cose: CBORValue = .map([1: 2, 3: -25, -1: 1, -2: .byteString(authenticatorKey.publicKey.x),
                                    -3: .byteString(authenticatorKey.publicKey.y)])
        for version: UInt64 in [1, 2] {
            let session = try PlatformPinProtocol(version: version).encapsulate(cose)
            let platformPublic = try P256.KeyAgreement.PublicKey(x: session.platformKey[-2]!.bytesValue!, y: session.platformKey[-3]!.bytesValue!)
            let z = try authenticatorKey.sharedSecretX(with: platformPublic).copyBytes()
            if version == 1 {
                XCTAssertEqual(session.sharedSecret, PlatformCrypto.sha256(z))
                XCTAssertEqual(session.authenticate([1, 2, 3]).count, 16)
                XCTAssertEqual(session.encrypt([UInt8](repeating: 0, count: 32)).count, 32, "zero IV, not sent")
            } else {
                XCTAssertEqual(session.sharedSecret.count, 64)
                XCTAssertEqual(session.authenticate([1, 2, 3]).count, 32)
                XCTAssertEqual(session.encrypt([UInt8](repeating: 0, count: 32)).count, 48, "random IV prepended")
            }
            let message = [UInt8](repeating: 7, count: 64)
            XCTAssertEqual(session.decrypt(session.encrypt(message)), message)
        }
    }

    private func hex(_ string: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = string.startIndex
        while index < string.endIndex {
            let next = string.index(index, offsetBy: 2)
            bytes.append(UInt8(string[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}
