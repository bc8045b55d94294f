import XCTest
@testable import FIDOCrypto

/// RS256 and PS256 (RFC 8812 §2, RFC 8230). The vector (a 2048-bit key in PKCS#8 and PKCS#1,
/// its modulus, and its PKCS#1 v1.5 signature over "latchkey") was written by Python's
/// `cryptography`; PKCS#1 v1.5 signatures are deterministic, so ours must be the same bytes.
final class RSATests: XCTestCase {
    static let pkcs8 = [UInt8](hex: "308204be020100300d06092a864886f70d0101010500048204a8308204a40201000282010100aa6ae255ad177da2160b426d5cd0db1e3ee5"
        + "902600e3d2f296eb100629fc6efb10a6cc725a38c6f841f8c3809805e171bc833bb95583b264e2497a61e7f10089ad906361d2f6ca92b4d5"
        + "774d4388c608c61756b0bae8312bd6e3f97dffd0a2e1377de0726ebbb8b6542af1f26b11f08b13a2b143c8bf54c5a0f91e961af808948838"
        + "e489dadc424d2cc0fa62ac63647bd14af5a34f61ec67725846a2747db7416fab3dc423f320e866a08697332391d4c76e4b8cec17896d180e"
        + "9e276470509c04a6bb1b0f669d74b048e073a236342319d9db56bf4650862e421f3300271980a6da67e3dd79e6045131df26295d5255ada3"
        + "ca2da40ff20340516bcbfc36b35f02030100010282010019dde25fe5c78082c73ccb46e54530552d6fd3cae8ecabbab5ac95409243e62686"
        + "9702c642aa868ced1a90b6269d11e49d1c004737d327134803a6275138d3ff91d02e3d8d7377390068bc5486712eb9eb3364adab990dc99d"
        + "32fa4e2533aa5d6bfa57c496c93896b83cd27f9cbfdad68952f2fc1a6eec339924e6ff1ab5d63b51587e3f7f922dbdf015055eaa3d84150a"
        + "5aae1b16621a2530aeeb7aa106194dbc399011cc016a6a634e252d9b54cc7535d83c7c203f32c80de937211e7f4f42b43269f9034c62734e"
        + "a9b456f6a76c1f54e0805d19c0228d62d36bad47628a78fae1b3127de5fc301583a02f3e2a91ba808d79271174ceaedcd634ecc46cc26502"
        + "818100ef613fa75a604ef8dd232f1f17c14b6d897e8c57ac97364bab6cb32b279b6d3a25ec5253d7e8fc7e5a5f0fba4be0faaa1e9130a93f"
        + "9407320598262da447ffef5cd4085d13bf9343b43dd9d6fd8dd2998abbb3f4e9d9568f97fdfcf01932fd42f8d0259579daf0a8991257b2a0"
        + "d155223356ab3d804c0858d9c829bf2ac87a7b02818100b63fe504528e29b4627b350e656adff94ed81f2f2f9f523c6348ae75fcde1c95a4"
        + "1eac2592bdc9c7be64aee8510f411efe6be34781dcbe96008e9b6e11eec07e3e4e59de286547bb5f47005de6b26c67654d72e2e7baeb96f2"
        + "117965314e92a916cd96f4f927c6e44a4e5959a91b48ecc01bbe25b1112dc836d24ce5e914976d02818100ea308609c00d40b59002fff2b7"
        + "56cfe855ff8c65a9e035aa4a078a31ca09f10e5653a1278dafce75ff0bc9634520d19ae554bdfa96ccc74d54d3c96615b6aad90e4411fa9d"
        + "7b6b236d8ea53403d36019fef42bd68b81a981c9fd1e1bf74b3f22ea3118d3e7e71e52938eb2657b97d066293bbd43e9e478b6143a133d87"
        + "29a3490281810080fab52c9af46b8572d0f95a87e1dc42c74ee2baf53c0eea17e5bf3a574c25f4ad62dbb7f7a30363ae55f907071f019a5a"
        + "baa5eddc750a1884aa684bbcbb3855dfe879676535504fc5fd2cc047dd6c24bca7d42fcb8a18e309cbde1b048b33f620e23cfc803c6b60f3"
        + "4981a897aa6cb0c8c099907940cc22ced184848db0f9fd02818000cb6e4829cceab84fdf42171e587b424e3ad7d021b607b624ece53d4045"
        + "da23a29c7dfbefef1f0b5b395b94160b44c15f97091122965505c740ba241987ef4c38f08851d23d9b9b586999656db97fe7196e57556795"
        + "60b80f5903d0e80fbccd46513ad1a267b8c327b60abb85cab5afec60d25e4473b3894f63c9e54a285ee3")
    static let pkcs1 = [UInt8](hex: "308204a40201000282010100aa6ae255ad177da2160b426d5cd0db1e3ee5902600e3d2f296eb100629fc6efb10a6cc725a38c6f841f8c380"
        + "9805e171bc833bb95583b264e2497a61e7f10089ad906361d2f6ca92b4d5774d4388c608c61756b0bae8312bd6e3f97dffd0a2e1377de072"
        + "6ebbb8b6542af1f26b11f08b13a2b143c8bf54c5a0f91e961af808948838e489dadc424d2cc0fa62ac63647bd14af5a34f61ec67725846a2"
        + "747db7416fab3dc423f320e866a08697332391d4c76e4b8cec17896d180e9e276470509c04a6bb1b0f669d74b048e073a236342319d9db56"
        + "bf4650862e421f3300271980a6da67e3dd79e6045131df26295d5255ada3ca2da40ff20340516bcbfc36b35f02030100010282010019dde2"
        + "5fe5c78082c73ccb46e54530552d6fd3cae8ecabbab5ac95409243e626869702c642aa868ced1a90b6269d11e49d1c004737d327134803a6"
        + "275138d3ff91d02e3d8d7377390068bc5486712eb9eb3364adab990dc99d32fa4e2533aa5d6bfa57c496c93896b83cd27f9cbfdad68952f2"
        + "fc1a6eec339924e6ff1ab5d63b51587e3f7f922dbdf015055eaa3d84150a5aae1b16621a2530aeeb7aa106194dbc399011cc016a6a634e25"
        + "2d9b54cc7535d83c7c203f32c80de937211e7f4f42b43269f9034c62734ea9b456f6a76c1f54e0805d19c0228d62d36bad47628a78fae1b3"
        + "127de5fc301583a02f3e2a91ba808d79271174ceaedcd634ecc46cc26502818100ef613fa75a604ef8dd232f1f17c14b6d897e8c57ac9736"
        + "4bab6cb32b279b6d3a25ec5253d7e8fc7e5a5f0fba4be0faaa1e9130a93f9407320598262da447ffef5cd4085d13bf9343b43dd9d6fd8dd2"
        + "998abbb3f4e9d9568f97fdfcf01932fd42f8d0259579daf0a8991257b2a0d155223356ab3d804c0858d9c829bf2ac87a7b02818100b63fe5"
        + "04528e29b4627b350e656adff94ed81f2f2f9f523c6348ae75fcde1c95a41eac2592bdc9c7be64aee8510f411efe6be34781dcbe96008e9b"
        + "6e11eec07e3e4e59de286547bb5f47005de6b26c67654d72e2e7baeb96f2117965314e92a916cd96f4f927c6e44a4e5959a91b48ecc01bbe"
        + "25b1112dc836d24ce5e914976d02818100ea308609c00d40b59002fff2b756cfe855ff8c65a9e035aa4a078a31ca09f10e5653a1278dafce"
        + "75ff0bc9634520d19ae554bdfa96ccc74d54d3c96615b6aad90e4411fa9d7b6b236d8ea53403d36019fef42bd68b81a981c9fd1e1bf74b3f"
        + "22ea3118d3e7e71e52938eb2657b97d066293bbd43e9e478b6143a133d8729a3490281810080fab52c9af46b8572d0f95a87e1dc42c74ee2"
        + "baf53c0eea17e5bf3a574c25f4ad62dbb7f7a30363ae55f907071f019a5abaa5eddc750a1884aa684bbcbb3855dfe879676535504fc5fd2c"
        + "c047dd6c24bca7d42fcb8a18e309cbde1b048b33f620e23cfc803c6b60f34981a897aa6cb0c8c099907940cc22ced184848db0f9fd028180"
        + "00cb6e4829cceab84fdf42171e587b424e3ad7d021b607b624ece53d4045da23a29c7dfbefef1f0b5b395b94160b44c15f97091122965505"
        + "c740ba241987ef4c38f08851d23d9b9b586999656db97fe7196e5755679560b80f5903d0e80fbccd46513ad1a267b8c327b60abb85cab5af"
        + "ec60d25e4473b3894f63c9e54a285ee3")
    static let modulus = [UInt8](hex: "aa6ae255ad177da2160b426d5cd0db1e3ee5902600e3d2f296eb100629fc6efb10a6cc725a38c6f841f8c3809805e171bc833bb95583b264"
        + "e2497a61e7f10089ad906361d2f6ca92b4d5774d4388c608c61756b0bae8312bd6e3f97dffd0a2e1377de0726ebbb8b6542af1f26b11f08b"
        + "13a2b143c8bf54c5a0f91e961af808948838e489dadc424d2cc0fa62ac63647bd14af5a34f61ec67725846a2747db7416fab3dc423f320e8"
        + "66a08697332391d4c76e4b8cec17896d180e9e276470509c04a6bb1b0f669d74b048e073a236342319d9db56bf4650862e421f3300271980"
        + "a6da67e3dd79e6045131df26295d5255ada3ca2da40ff20340516bcbfc36b35f")
    static let signature = [UInt8](hex: "7c51c2a498e34dab6ae22ea03eb81b6ef5314c05659335613c87bd8ba7e2b6b8e5bf0659e093585c4749adcca41a2079f6d6be19d720689d"
        + "f75ba01cfc4048b09731c3b42cb4f1e9323775ce0b123862c6687cf99c972ef2dc6ec46ece22a3771f0af1c341a8eb4f6ff56c818b0aa5c1"
        + "7181c8075584cc3c3329c3928c4c4054fd512868c12b97182ac433b2b0898ce8770d339f483df08fe97af775d1877d23204099d3447c71aa"
        + "71f93d1228f30a09a1cf5d64b82e8e926cba0c867d2d96b26bd52cb5cbf787836b3a079f5586f08b73d07cd1edbd33de21f63f9666b2fabd"
        + "50fd34220ed12871c33f4bfda77a964c5dc4741c150d978be5685bd2b6cf252f")
    let message = Array("latchkey".utf8)

    func testKnownKeySignsAsCryptographyDoes() throws {
        let key = try RSA.PrivateKey(secret: SecretBytes(Self.pkcs1))
        XCTAssertEqual(key.publicKey.modulus, Self.modulus)
        XCTAssertEqual(key.publicKey.exponent, [0x01, 0x00, 0x01])
        XCTAssertEqual(try key.signature(for: message, padding: .pkcs1v15), Self.signature)
        XCTAssertTrue(key.publicKey.isValidSignature(Self.signature, for: message, padding: .pkcs1v15))
        XCTAssertFalse(key.publicKey.isValidSignature(Self.signature, for: message, padding: .pss), "PKCS#1 v1.5 is not PSS")
        XCTAssertFalse(key.publicKey.isValidSignature(Self.signature, for: message + [0], padding: .pkcs1v15))
        // PSS is randomized: two signatures differ, both verify, neither as PKCS#1 v1.5.
        let first = try key.signature(for: message, padding: .pss)
        let second = try key.signature(for: message, padding: .pss)
        XCTAssertNotEqual(first, second)
        for signature in [first, second] {
            XCTAssertEqual(signature.count, 256)
            XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message, padding: .pss))
            XCTAssertFalse(key.publicKey.isValidSignature(signature, for: message, padding: .pkcs1v15))
        }
    }

    func testPKCS8CarriesThePKCS1Key() throws {
        let (algorithm, der) = try PKCS8PrivateKey.decode(Self.pkcs8)
        XCTAssertEqual(algorithm, .rsa)
        XCTAssertEqual(der.copyBytes(), Self.pkcs1)
        XCTAssertEqual(try PKCS8PrivateKey.encode(.rsa, SecretBytes(Self.pkcs1)).copyBytes(), Self.pkcs8)
    }

    func testGeneratedKeysAre2048BitsAndRoundTrip() throws {
        let key = try RSA.PrivateKey()
        XCTAssertEqual(key.publicKey.modulus.count, 256)
        XCTAssertGreaterThanOrEqual(key.publicKey.modulus[0], 0x80)
        XCTAssertTrue(key.rawRepresentation.isInSecureHeap || !SecureHeap.isStarted)
        let again = try RSA.PrivateKey(secret: key.rawRepresentation)
        XCTAssertEqual(again.publicKey, key.publicKey)
        XCTAssertTrue(key.publicKey.isValidSignature(try again.signature(for: message, padding: .pss), for: message, padding: .pss))
        let (algorithm, der) = try PKCS8PrivateKey.decode(try PKCS8PrivateKey.encode(.rsa, key.rawRepresentation).copyBytes())
        XCTAssertEqual(algorithm, .rsa)
        XCTAssertTrue(constantTimeEquals(der, key.rawRepresentation))
    }

    func testMalformedKeysAndPublicKeysAreRefused() {
        XCTAssertThrowsError(try RSA.PrivateKey(secret: SecretBytes(Array(Self.pkcs1.dropLast()))))
        XCTAssertThrowsError(try RSA.PrivateKey(secret: SecretBytes(Self.pkcs1 + [0])), "trailing bytes")
        XCTAssertThrowsError(try RSA.PrivateKey(secret: SecretBytes([UInt8](repeating: 0x30, count: 40))))
        XCTAssertThrowsError(try RSA.PublicKey(modulus: Array(Self.modulus.prefix(128)), exponent: [1, 0, 1]), "1024 bits")
        XCTAssertThrowsError(try RSA.PublicKey(modulus: Self.modulus, exponent: [1, 0, 0]), "even exponent")
        XCTAssertThrowsError(try RSA.PublicKey(modulus: [0] + Self.modulus, exponent: [1, 0, 1]), "leading zero")
        XCTAssertFalse(try RSA.PublicKey(modulus: Self.modulus, exponent: [1, 0, 1])
            .isValidSignature(Array(Self.signature.dropFirst()), for: message, padding: .pkcs1v15))
    }
}
