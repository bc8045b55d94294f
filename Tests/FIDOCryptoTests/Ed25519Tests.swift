import XCTest
import FIDOCrypto

final class Ed25519Tests: XCTestCase {
    // RFC 8032 §7.1.
    struct Vector { let seed, publicKey, message, signature: String }
    let vectors: [String: Vector] = [
        "TEST 1": Vector(
            seed: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            publicKey: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
            message: "",
            signature: "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
                + "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
        "TEST 2": Vector(
            seed: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            publicKey: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
            message: "72",
            signature: "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
                + "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
        "TEST 3": Vector(
            seed: "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            publicKey: "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
            message: "af82",
            signature: "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac"
                + "18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
        "TEST SHA(abc)": Vector(
            seed: "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
            publicKey: "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
            message: "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
            signature: "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b589"
                + "09351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704"),
    ]

    func testRFC8032Vectors() throws {
        for (name, vector) in vectors.sorted(by: { $0.key < $1.key }) {
            let key = try Ed25519.PrivateKey(rawRepresentation: [UInt8](hex: vector.seed))
            XCTAssertEqual(key.publicKey.rawRepresentation.hex, vector.publicKey, name)
            XCTAssertEqual(key.rawRepresentation.copyBytes().hex, vector.seed, name)
            let message = [UInt8](hex: vector.message)
            XCTAssertEqual(try key.signature(for: message).hex, vector.signature, name)
            let publicKey = try Ed25519.PublicKey(rawRepresentation: [UInt8](hex: vector.publicKey))
            XCTAssertEqual(publicKey, key.publicKey)
            XCTAssertTrue(publicKey.isValidSignature([UInt8](hex: vector.signature), for: message), name)
        }
    }

    func testSHAabcMessageIsSHA512OfAbc() {
        // The RFC's message for TEST SHA(abc) is SHA-512("abc"); keep the vector honest.
        XCTAssertTrue(vectors["TEST SHA(abc)"]!.message.hasPrefix("ddaf35a193617aba"))
    }

    func testRejections() throws {
        let vector = vectors["TEST 2"]!
        let publicKey = try Ed25519.PublicKey(rawRepresentation: [UInt8](hex: vector.publicKey))
        let signature = [UInt8](hex: vector.signature)
        XCTAssertFalse(publicKey.isValidSignature(signature, for: [0x73]))
        for index in [0, 31, 32, 63] {
            var modified = signature
            modified[index] ^= 0x01
            XCTAssertFalse(publicKey.isValidSignature(modified, for: [0x72]), "signature byte \(index)")
        }
        XCTAssertFalse(publicKey.isValidSignature(Array(signature.dropLast()), for: [0x72]))
        XCTAssertFalse(publicKey.isValidSignature([], for: [0x72]))
        XCTAssertThrowsCryptoError(.exactly(.invalidKey)) { try Ed25519.PublicKey(rawRepresentation: [1, 2, 3]) }
        XCTAssertThrowsCryptoError(.exactly(.invalidKey)) { try Ed25519.PrivateKey(rawRepresentation: [UInt8](repeating: 1, count: 31)) }
    }

    func testGeneratedKeyRoundTrip() throws {
        let key = try Ed25519.PrivateKey()
        XCTAssertEqual(key.rawRepresentation.count, 32)
        let message = SecureRandom.bytes(count: 100)
        let signature = try key.signature(for: message)
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message))
        let reimported = try Ed25519.PrivateKey(rawRepresentation: key.rawRepresentation.copyBytes())
        XCTAssertEqual(reimported.publicKey, key.publicKey)
        XCTAssertEqual(try reimported.signature(for: message), signature)   // deterministic
    }
}
