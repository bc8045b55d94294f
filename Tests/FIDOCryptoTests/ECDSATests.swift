import XCTest
@testable import FIDOCrypto

/// ECDSA beyond P-256: ES384 (P-384, SHA-384), ES512 (P-521, SHA-512), ES256K (secp256k1,
/// SHA-256). The vectors (keys, points, PKCS#8, signatures over "latchkey") were written by
/// Python's `cryptography` (`ec.derive_private_key`, `private_bytes(PKCS8)`, `sign`).
final class ECDSATests: XCTestCase {
    struct Vector {
        var suite: ECDSA.Suite
        var scalar: [UInt8]
        var x: [UInt8]
        var y: [UInt8]
        var pkcs8: [UInt8]
        var signature: [UInt8]?
    }

    static let vectors: [Vector] = [
        Vector(suite: .es512,
               scalar: [UInt8](hex: String(repeating: "00", count: 62) + "01ff1234"),
               x: [UInt8](hex: "01f7c05739a867b81e607cfad58ee118f635b27f8b464d4da30093ce2f37e833f648df568a686846b45a318abaa2582e1e421cade1eb4f3a3a50f255f8c4e0212554"),
               y: [UInt8](hex: "00b6a490989087df1171fe20abaa43e137dd9d16d0d10254e66fecfa9fc33d23ebbc41623c77e2978402ecda24286c6d69f9c99e1672259d9d6f96088e83f356c72f"),
               pkcs8: [UInt8](hex: "3081ee020100301006072a8648ce3d020106052b810400230481d63081d30201010442" + String(repeating: "00", count: 62)
                   + "01ff1234a18189038186000401f7c05739a867b81e607cfad58ee118f635b27f8b464d4da30093ce2f37e833f648df568a686846b45a318abaa2582e1e421cade1eb4f3a3a50f255f8c4e021255400b6a490989087df1171fe20abaa43e137dd9d16d0d10254e66fecfa9fc33d23ebbc41623c77e2978402ecda24286c6d69f9c99e1672259d9d6f96088e83f356c72f"),
               signature: [UInt8](hex: "308188024201b6542a52df9bc6628048a5701cb101f0a90393cdc9bc1e304ae20e0b7a739ee9b8e3555bffc798fc4e725d80dad2c73d98b0c148af2b45cf2bdccce69951856ac6024200de5e8da306d8d5adad061a9f883cb94cd34ed597587d56b9deb0a62180ffee518353579d92c46d09f44ce4f38c8025630fa6cbc2cf70e58d1276212321cf8f2b18")),
        Vector(suite: .es256K,
               scalar: [UInt8](hex: String(repeating: "00", count: 24) + "abcdef0123456789"),
               x: [UInt8](hex: "08b2a8c29506cdf27fe61b47f6f0852e0ad0abc1fcb50ebce19d2fd9eed93ed7"),
               y: [UInt8](hex: "7db78a3eb8405f1c59949dcc2fec62b3b951ee67f689e10a25dd10903ed4c1cb"),
               pkcs8: [UInt8](hex: "308184020100301006072a8648ce3d020106052b8104000a046d306b0201010420" + String(repeating: "00", count: 24)
                   + "abcdef0123456789a1440342000408b2a8c29506cdf27fe61b47f6f0852e0ad0abc1fcb50ebce19d2fd9eed93ed77db78a3eb8405f1c59949dcc2fec62b3b951ee67f689e10a25dd10903ed4c1cb"),
               signature: [UInt8](hex: "3046022100ffee5fa3fe409f804bad465eff4a4ae3337c605cdc9ca49e062a42625fc13b78022100ec4ec05eafdde5d0f1f8a18d3bf20c2a9b659a3cdd0e9ce04e7893a6c566b57e")),
        // The P-384 key of PKCS8PrivateKeyTests (d = 5).
        Vector(suite: .es384,
               scalar: [UInt8](hex: String(repeating: "00", count: 47) + "05"),
               x: [UInt8](hex: "11de24a2c251c777573cac5ea025e467f208e51dbff98fc54f6661cbe56583b037882f4a1ca297e60abcdbc3836d84bc"),
               y: [UInt8](hex: "8fa696c77440f92d0f5837e90a00e7c5284b447754d5dee88c986533b6901aeb3177686d0ae8fb33184414abe6c1713a"),
               pkcs8: PKCS8PrivateKeyTests.p384, signature: nil),
    ]

    func testKnownKeysDeriveTheirPointsAndVerifyTheirSignatures() throws {
        let message = Array("latchkey".utf8)
        for vector in Self.vectors {
            let key = try ECDSA.PrivateKey(rawRepresentation: vector.scalar, suite: vector.suite)
            XCTAssertEqual(key.publicKey.x, vector.x, "\(vector.suite)")
            XCTAssertEqual(key.publicKey.y, vector.y, "\(vector.suite)")
            let publicKey = try ECDSA.PublicKey(x: vector.x, y: vector.y, suite: vector.suite)
            if let signature = vector.signature {
                XCTAssertTrue(publicKey.isValidSignature(signature, for: message), "\(vector.suite)")
                XCTAssertFalse(publicKey.isValidSignature(signature, for: message + [0]), "\(vector.suite)")
            }
            let ours = try key.signature(for: message)
            XCTAssertTrue(publicKey.isValidSignature(ours, for: message), "\(vector.suite)")
            // The same key's signature under another suite's hash does not verify.
            let otherHash = ECDSA.Suite(curve: vector.suite.curve, digest: vector.suite.digest == .sha512 ? .sha256 : .sha512)
            XCTAssertFalse(try ECDSA.PublicKey(x: vector.x, y: vector.y, suite: otherHash).isValidSignature(ours, for: message))
        }
    }

    func testPKCS8MatchesWhatOpenSSLWritesOnEveryCurve() throws {
        for vector in Self.vectors {
            let (algorithm, scalar) = try PKCS8PrivateKey.decode(vector.pkcs8)
            XCTAssertEqual(algorithm, .ec(vector.suite.curve))
            XCTAssertEqual(scalar.copyBytes(), vector.scalar)
            XCTAssertEqual(try PKCS8PrivateKey.encode(.ec(vector.suite.curve), SecretBytes(vector.scalar)).copyBytes(), vector.pkcs8,
                           "\(vector.suite.curve)")
        }
    }

    func testGeneratedKeysSignAndRoundTrip() throws {
        for suite in [ECDSA.Suite.es384, .es512, .es256K] {
            let key = try ECDSA.PrivateKey(suite: suite)
            XCTAssertEqual(key.rawRepresentation.count, suite.curve.scalarByteCount)
            XCTAssertEqual(key.publicKey.x963Representation.count, 1 + 2 * suite.curve.scalarByteCount)
            let again = try ECDSA.PrivateKey(secret: key.rawRepresentation, suite: suite)
            XCTAssertEqual(again.publicKey, key.publicKey)
            for _ in 0..<4 {
                let message = Array(SecureRandom.bytes(count: 40))
                XCTAssertTrue(key.publicKey.isValidSignature(try again.signature(for: message), for: message))
            }
            let (algorithm, scalar) = try PKCS8PrivateKey.decode(try PKCS8PrivateKey.encode(.ec(suite.curve), key.rawRepresentation).copyBytes())
            XCTAssertEqual(algorithm, .ec(suite.curve))
            XCTAssertTrue(constantTimeEquals(scalar, key.rawRepresentation))
        }
    }

    func testScalarsOutsideTheRangeAndPointsOffTheCurveAreRefused() {
        for suite in [ECDSA.Suite.es384, .es512, .es256K] {
            let size = suite.curve.scalarByteCount
            XCTAssertThrowsError(try ECDSA.PrivateKey(rawRepresentation: [UInt8](repeating: 0, count: size), suite: suite))
            XCTAssertThrowsError(try ECDSA.PrivateKey(rawRepresentation: [UInt8](repeating: 0xFF, count: size), suite: suite), "≥ n")
            XCTAssertThrowsError(try ECDSA.PrivateKey(rawRepresentation: [UInt8](repeating: 1, count: 32 + (size == 32 ? 1 : 0)), suite: suite),
                                 "another curve's length")
            XCTAssertThrowsError(try ECDSA.PublicKey(x: [UInt8](repeating: 1, count: size), y: [UInt8](repeating: 2, count: size), suite: suite))
        }
    }

    /// The range check at P-521's edge: n − 1 is a key, n and the 66-byte value with a top byte
    /// of 0x01 and every other bit set (> n) are not.
    func testP521ScalarRangeAtTheOrder() throws {
        let order = ECCurve.p521.order
        var belowOrder = order
        belowOrder[belowOrder.count - 1] -= 1
        XCTAssertNoThrow(try ECDSA.PrivateKey(rawRepresentation: belowOrder, suite: .es512))
        XCTAssertThrowsError(try ECDSA.PrivateKey(rawRepresentation: order, suite: .es512))
        XCTAssertThrowsError(try ECDSA.PrivateKey(rawRepresentation: [0x01] + [UInt8](repeating: 0xFF, count: 65), suite: .es512))
        XCTAssertThrowsError(try ECDSA.PrivateKey(rawRepresentation: [0x02] + [UInt8](repeating: 0, count: 65), suite: .es512))
    }

    /// A reproducible key draws its scalar: P-521's top byte is masked to the order's one bit,
    /// so almost every draw is a key (unmasked, 127 of 128 would be ≥ n).
    func testDerivedP521KeysMaskTheirTopByte() throws {
        var draws = 0
        let key = try ECDSA.PrivateKey.derived(suite: .es512) { count in
            draws += 1
            return SecretBytes([UInt8](repeating: 0xA5, count: count))
        }
        XCTAssertEqual(draws, 1)
        XCTAssertEqual(key.rawRepresentation.copyBytes(), [0x01] + [UInt8](repeating: 0xA5, count: 65))
        // P-256's mask keeps every bit: the bytes drawn are the scalar (rig fixtures stay as they were).
        let p256 = try ECDSA.PrivateKey.derived(suite: .es256) { SecretBytes([UInt8](repeating: 0x42, count: $0)) }
        XCTAssertEqual(p256.rawRepresentation.copyBytes(), [UInt8](repeating: 0x42, count: 32))
    }

    /// A libcrypto without a curve is asked about before the curve is touched (touching a missing
    /// one stops the process); Debian's OpenSSL 3.0 has all four.
    func testCurveAvailabilityIsAskedWithoutTouchingTheCurve() {
        for groupName in ["prime256v1", "secp384r1", "secp521r1", "secp256k1"] {
            XCTAssertTrue(ECCurve.isAvailable(groupName: groupName), groupName)
        }
        for groupName in ["", "secp999r1", "P-256 "] {
            XCTAssertFalse(ECCurve.isAvailable(groupName: groupName), groupName)
        }
    }
}
