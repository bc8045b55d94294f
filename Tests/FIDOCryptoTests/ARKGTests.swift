import XCTest
@testable import FIDOCrypto

/// ARKG-P256 (draft-bradleylundberg-cfrg-arkg-10): the draft's test vectors (as python-fido2
/// 2.2.1's tests/test_arkg.py carries them: sk_bl, sk_kem, ctx and the derived sk′), with the key
/// handle python-fido2's `ARKG_P256_PLACEHOLDER.derive_public_key(ikm, ctx)` makes from each
/// vector's ikm — an independent implementation of the other half.
final class ARKGTests: XCTestCase {
    struct Vector { let context, blinding, kem, keyHandle, derived, derivedPublic: String }
    let vectors = [
        Vector(context: "ARKG-P256.test vectors",
               blinding: "d959500a78ccf850ce46c80a8c5043c9a2e33844232b3829df37d05b3069f455",
               kem: "74e0a4cd81ca2d24246ff75bfd6d4fb7f9dfc938372627feb2c2348f8b1493b5",
               keyHandle: "27987995f184a44cfa548d104b0a461d0487fc739dbcdabc293ac5469221da91b220e04c681074ec4692a76ffacb9043dec2847ea9060fd42da267f66852e63589f0c00dc88f290d660c65a65a50c86361",
               derived: "775d7fe9a6dfba43ce671cb38afca3d272c4d14aff97bd67559eb500a092e5e7",
               derivedPublic: "04572a111ce5cfd2a67d56a0f7c684184b16ccd212490dc9c5b579df749647d107dac2a1b197cc10d2376559ad6df6bc107318d5cfb90def9f4a1f5347e086c2cd"),
        Vector(context: "ARKG-P256.test vectors",
               blinding: "d959500a78ccf850ce46c80a8c5043c9a2e33844232b3829df37d05b3069f455",
               kem: "74e0a4cd81ca2d24246ff75bfd6d4fb7f9dfc938372627feb2c2348f8b1493b5",
               keyHandle: "b7507a82771776fbac41a18d94e19a7e0457fd1e438280c127dd55a6138d1baf0a35e3e9671f7e42d8345f47374afa83247a078fa2196cd69497aed59ef92c05cb6b03d306ec24f2f4ff2db09cd95d1b11",
               derived: "6228e470290e9d7cc0feff32a74caafa14c608c956337eba23997f5904cff226",
               derivedPublic: "04ea7d962c9f44ffe8b18f1058a471f394ef81b674948eefc1865b5c021cf858f577f9632b84220e4a1444a20b9430b86731c37e4dcb285eda38d76bf758918d86"),
        Vector(context: "ARKG-P256.test vectors.0",
               blinding: "d959500a78ccf850ce46c80a8c5043c9a2e33844232b3829df37d05b3069f455",
               kem: "74e0a4cd81ca2d24246ff75bfd6d4fb7f9dfc938372627feb2c2348f8b1493b5",
               keyHandle: "81c4e65b552e52350b49864b98b87d510487fc739dbcdabc293ac5469221da91b220e04c681074ec4692a76ffacb9043dec2847ea9060fd42da267f66852e63589f0c00dc88f290d660c65a65a50c86361",
               derived: "2a97f4232f9abba32fbfc28c6686f8afd2d851c2a95a3ed2f0a384b9ad55068d",
               derivedPublic: "04b79b65d6bbb419ff97006a1bd52e3f4ad53042173992423e06e52987a037cb61dd82b126b162e4e7e8dc5c9fd86e82769d402a1968c7c547ef53ae4f96e10b0e"),
    ]

    func testDerivedSecretKeysMatchTheDraftsVectors() throws {
        for vector in vectors {
            let derived = try ARKGP256.deriveSecretKey(blinding: SecretBytes([UInt8](hex: vector.blinding)),
                                                       kem: SecretBytes([UInt8](hex: vector.kem)),
                                                       keyHandle: [UInt8](hex: vector.keyHandle), context: vector.context.bytes)
            XCTAssertEqual(derived.copyBytes().hex, vector.derived)
            let key = try ECDSA.PrivateKey(secret: derived, suite: .es256)
            XCTAssertEqual(key.publicKey.x963Representation.hex, vector.derivedPublic)
        }
    }

    /// A handle for another context, an altered handle or tag, or another seed's KEM key: the
    /// tag check fails (no key is derived); wrong sizes are refused before any work.
    func testHandlesOfAnotherSeedOrContextAreRefused() throws {
        let vector = vectors[0]
        let blinding = SecretBytes([UInt8](hex: vector.blinding)), kem = SecretBytes([UInt8](hex: vector.kem))
        let handle = [UInt8](hex: vector.keyHandle)
        func derive(_ handle: [UInt8], _ context: [UInt8], kem: SecretBytes) -> CryptoError? {
            do { _ = try ARKGP256.deriveSecretKey(blinding: blinding, kem: kem, keyHandle: handle, context: context); return nil }
            catch { return error }
        }
        XCTAssertEqual(derive(handle, "ARKG-P256.test vectors.0".bytes, kem: kem), .authenticationFailure)
        var tag = handle
        tag[3] ^= 1
        XCTAssertEqual(derive(tag, vector.context.bytes, kem: kem), .authenticationFailure)
        XCTAssertEqual(derive(handle, vector.context.bytes, kem: blinding), .authenticationFailure)
        var point = handle
        point[40] ^= 1
        XCTAssertNotNil(derive(point, vector.context.bytes, kem: kem), "a point off the curve or another tag")
        XCTAssertEqual(derive(Array(handle.dropLast()), vector.context.bytes, kem: kem), .invalidLength)
        XCTAssertEqual(derive(handle, [UInt8](repeating: 0, count: 65), kem: kem), .invalidLength)
    }

    /// expand_message_xmd(SHA-256): RFC 9380 Appendix K.1's vectors (DST
    /// "QUUX-V01-CS02-with-expander-SHA256-128", len_in_bytes 0x20, msg "" and "abc").
    func testExpandMessageXMDMatchesRFC9380() {
        let domain = "QUUX-V01-CS02-with-expander-SHA256-128".bytes
        XCTAssertEqual(ARKGP256.expandMessageXMD([], domain: domain, count: 32).hex,
                       "68a985b87eb6b46952128911f2a4412bbc302a9d759667f87f7a21d803f07235")
        XCTAssertEqual(ARKGP256.expandMessageXMD("abc".bytes, domain: domain, count: 32).hex,
                       "d8ccab23b5985ccea865c6c97b6e5b8350e794e603b4b97902f53a8a0d605615")
    }
}
