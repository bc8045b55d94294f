@testable import FIDOCrypto
import XCTest

/// PKCS#8 as WebDriver's addCredential / getCredentials carry keys. The vectors were written by
/// Python's `cryptography` (OpenSSL underneath), the way a test author would make them.
final class PKCS8PrivateKeyTests: XCTestCase {
    static let p256Scalar = [UInt8](hex: "1f2e3d4c5b6a79880102030405060708090a0b0c0d0e0f101112131415161718")
    static let p256 = [UInt8](hex: "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420"
        + "1f2e3d4c5b6a79880102030405060708090a0b0c0d0e0f101112131415161718a14403420004945bafbfe49bbffe5c33d49cd083da75"
        + "ce805aaf1f2a82cfb010e0968163582a40f7f692a325069e22cc0fe04c0e68322f4459e45106d54325ee23b8c66bd184")
    static let p384 = [UInt8](hex: "3081b6020100301006072a8648ce3d020106052b8104002204819e30819b0201010430"
        + String(repeating: "00", count: 47) + "05a1640362000411de24a2c251c777573cac5ea025e467f208e51dbff98fc54f6661cbe565"
        + "83b037882f4a1ca297e60abcdbc3836d84bc8fa696c77440f92d0f5837e90a00e7c5284b447754d5dee88c986533b6901aeb3177686d0ae8"
        + "fb33184414abe6c1713a")
    static let ed25519 = [UInt8](hex: "302e020100300506032b657004220420000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")

    func testDecodesP256AndEd25519FromOpenSSL() throws {
        let (algorithm, scalar) = try PKCS8PrivateKey.decode(Self.p256)
        XCTAssertEqual(algorithm, .p256)
        XCTAssertEqual(scalar.copyBytes(), Self.p256Scalar)
        let (edAlgorithm, seed) = try PKCS8PrivateKey.decode(Self.ed25519)
        XCTAssertEqual(edAlgorithm, .ed25519)
        XCTAssertEqual(seed.copyBytes(), Array(0..<32))
    }

    func testEncodesExactlyWhatOpenSSLWrites() throws {
        XCTAssertEqual(try PKCS8PrivateKey.encode(.p256, SecretBytes(Self.p256Scalar)).copyBytes(), Self.p256)
        XCTAssertEqual(try PKCS8PrivateKey.encode(.ed25519, SecretBytes(Array(0..<32))).copyBytes(), Self.ed25519)
        XCTAssertTrue(try PKCS8PrivateKey.encode(.p256, SecretBytes(Self.p256Scalar)).isInSecureHeap || !SecureHeap.isStarted)
    }

    func testRoundTripOfGeneratedKeys() throws {
        for _ in 0..<8 {
            let key = try P256.Signing.PrivateKey()
            let (algorithm, scalar) = try PKCS8PrivateKey.decode(try PKCS8PrivateKey.encode(.p256, key.rawRepresentation).copyBytes())
            XCTAssertEqual(algorithm, .p256)
            XCTAssertTrue(constantTimeEquals(scalar, key.rawRepresentation))
        }
        let ed = try Ed25519.PrivateKey()
        let (algorithm, seed) = try PKCS8PrivateKey.decode(try PKCS8PrivateKey.encode(.ed25519, ed.rawRepresentation).copyBytes())
        XCTAssertEqual(algorithm, .ed25519)
        XCTAssertTrue(constantTimeEquals(seed, ed.rawRepresentation))
    }

    func testRefusesWhatIsNotACredentialKey() {
        // An X25519 key (RFC 8410, id-X25519): a key-agreement key, no credential's.
        let x25519 = [UInt8](hex: "302e020100300506032b656e04220420" + String(repeating: "07", count: 32))
        XCTAssertThrowsError(try PKCS8PrivateKey.decode(x25519)) { error in
            XCTAssertEqual(error as? PKCS8PrivateKey.Failure, .unsupportedKeyType("X25519"))
        }
        for bad in [[], [0x30, 0x00], Array(Self.p256.dropLast()), Self.p256 + [0x00], Array(Self.p256[27...])] as [[UInt8]] {
            XCTAssertThrowsError(try PKCS8PrivateKey.decode(bad)) { error in
                XCTAssertEqual(error as? PKCS8PrivateKey.Failure, .notPKCS8)
            }
        }
        // A scalar of 0 in an otherwise valid PrivateKeyInfo: OpenSSL takes it, a credential may not.
        var zero = Self.p256
        zero.replaceSubrange(36..<68, with: [UInt8](repeating: 0, count: 32))
        XCTAssertThrowsError(try PKCS8PrivateKey.decode(zero))
        XCTAssertThrowsError(try PKCS8PrivateKey.encode(.p256, SecretBytes([UInt8](repeating: 0, count: 32))))
        XCTAssertThrowsError(try PKCS8PrivateKey.encode(.ed25519, SecretBytes([1, 2, 3])))
    }
}

extension PKCS8PrivateKeyTests {
    /// ML-DSA keys (RFC 9881), which OpenSSL 3.0 cannot read: the `seed` form byte for byte as the
    /// `cryptography` package writes it (`private_bytes(DER, PKCS8, NoEncryption())`), the `both`
    /// form read when its expanded key is the seed's, the expanded form alone refused by name.
    func testMLDSASeedFormAsTheCryptographyPackageWritesIt() throws {
        let seed = Array<UInt8>(0..<32)
        for (parameterSet, lastArc) in [(MLDSA.ParameterSet.mlDSA44, "11"), (.mlDSA65, "12"), (.mlDSA87, "13")] {
            let expected = "3034020100300b06096086480165030403" + lastArc + "04228020" + seed.hex
            let der = try PKCS8PrivateKey.encode(.mlDSA(parameterSet), SecretBytes(seed))
            XCTAssertEqual(der.copyBytes().hex, expected)
            let (algorithm, raw) = try PKCS8PrivateKey.decode([UInt8](hex: expected))
            XCTAssertEqual(algorithm, PKCS8PrivateKey.Algorithm.mlDSA(parameterSet))
            XCTAssertEqual(raw.copyBytes(), seed)
        }
    }

    func testMLDSABothFormIsCheckedAndExpandedFormAloneIsRefused() throws {
        let seed = SecretBytes(Array<UInt8>(repeating: 7, count: 32))
        let expanded = try XCTUnwrap(MLDSAExpandedKey(seed: seed, .mlDSA44, encodingPrivateKey: true).encodedPrivateKey)
        XCTAssertEqual(expanded.count, 2560)
        func der(_ privateKey: [UInt8]) -> [UInt8] {
            func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
                let length = content.count
                let header: [UInt8] = length < 0x80 ? [UInt8(length)] : [0x82, UInt8(length >> 8), UInt8(length & 0xFF)]
                return [tag] + header + content
            }
            return tlv(0x30, [0x02, 0x01, 0x00] + [UInt8](hex: "300b0609608648016503040311") + tlv(0x04, privateKey))
        }
        func both(_ expandedKey: [UInt8]) -> [UInt8] {
            let inner = [0x04, 0x20] + seed.copyBytes() + [0x04, 0x82, UInt8(expandedKey.count >> 8), UInt8(expandedKey.count & 0xFF)]
                + expandedKey
            return [0x30, 0x82, UInt8(inner.count >> 8), UInt8(inner.count & 0xFF)] + inner
        }
        let (algorithm, raw) = try PKCS8PrivateKey.decode(der(both(expanded)))
        XCTAssertEqual(algorithm, PKCS8PrivateKey.Algorithm.mlDSA(.mlDSA44))
        XCTAssertEqual(raw.copyBytes(), seed.copyBytes())
        var altered = expanded
        altered[100] ^= 1
        XCTAssertThrowsError(try PKCS8PrivateKey.decode(der(both(altered)))) {
            XCTAssertEqual($0 as? PKCS8PrivateKey.Failure, .notPKCS8)
        }
        XCTAssertThrowsError(try PKCS8PrivateKey.decode(der([0x04, 0x82, 0x0A, 0x00] + expanded))) {
            XCTAssertEqual($0 as? PKCS8PrivateKey.Failure, .mlDSAWithoutSeed)
        }
    }
}
