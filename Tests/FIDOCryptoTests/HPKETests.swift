@testable import FIDOCrypto
import XCTest

/// RFC 9180 Appendix A.1 (DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, mode_base):
/// the KEM and the key schedule are the suite's; only the AEAD's key length differs from ours.
final class HPKETests: XCTestCase {
    let info = [UInt8](hex: "4f6465206f6e2061204772656369616e2055726e")
    let skEm = [UInt8](hex: "52c4a758a802cd8b936eceea314432798d5baf2d7e9235dc084ab1b9cfa2f736")
    let pkEm = [UInt8](hex: "37fda3567bdbd628e88668c3c8d7e97d1d1253b6d4ea6d44c150f741f1bf4431")
    let skRm = [UInt8](hex: "4612c550263fc8ad58375df3f557aac531d26850903e55a9f23f21d8534e8ac8")
    let pkRm = [UInt8](hex: "3948cfe0ad1ddb695d780e59077195da6c56506b027329794ab02bca80815c4d")
    let sharedSecret = [UInt8](hex: "fe0e18c9f024ce43799ae393c7e8fe8fce9d218875e8227b0187c04e7d2ea1fc")

    func testX25519PublicKeysOfTheVector() throws {
        XCTAssertEqual(try X25519.PrivateKey(secret: SecretBytes(skEm)).publicKey.rawRepresentation, pkEm)
        XCTAssertEqual(try X25519.PrivateKey(secret: SecretBytes(skRm)).publicKey.rawRepresentation, pkRm)
    }

    func testEncapsulationGivesTheVectorsSharedSecret() throws {
        let ephemeral = try X25519.PrivateKey(secret: SecretBytes(skEm))
        let recipient = try X25519.PublicKey(rawRepresentation: pkRm)
        let shared = HPKE.sharedSecret(dh: try ephemeral.sharedSecret(with: recipient), enc: pkEm, recipient: pkRm)
        XCTAssertEqual(shared, sharedSecret)
        // The recipient's side (Decap) reaches the same.
        let receiver = try X25519.PrivateKey(secret: SecretBytes(skRm))
        XCTAssertEqual(HPKE.sharedSecret(dh: try receiver.sharedSecret(with: X25519.PublicKey(rawRepresentation: pkEm)),
                                         enc: pkEm, recipient: pkRm), sharedSecret)
    }

    func testKeyScheduleGivesTheVectorsKeyAndNonce() {
        // A.1's suite ID names aead 0x0001; ours 0x0002. The labels carry the suite ID, so the
        // schedule is checked with the vector's own suite ID.
        let savedSuite = HPKE.suiteID
        let vectorSuite = Array("HPKE".utf8) + [0x00, 0x20, 0x00, 0x01, 0x00, 0x01]
        let pskIDHash = HPKE.labeledExtract(salt: [], label: "psk_id_hash", ikm: [], suiteID: vectorSuite)
        let infoHash = HPKE.labeledExtract(salt: [], label: "info_hash", ikm: info, suiteID: vectorSuite)
        XCTAssertEqual(([0x00] + pskIDHash + infoHash).hex,
                       "00725611c9d98c07c03f60095cd32d400d8347d45ed67097bbad50fc56da742d07cb6cffde367bb0565ba28bb02c90744a20f5ef37f30523526106f637abb05449")
        let secret = HPKE.labeledExtract(salt: sharedSecret, label: "secret", ikm: [], suiteID: vectorSuite)
        XCTAssertEqual(secret.hex, "12fff91991e93b48de37e7daddb52981084bd8aa64289c3788471d9a9712f397")
        let context = [0x00] + pskIDHash + infoHash
        XCTAssertEqual(HPKE.labeledExpand(prk: secret, label: "key", info: context, length: 16, suiteID: vectorSuite).hex,
                       "4531685d41d65f03dc48f6b8302c05b0")
        XCTAssertEqual(HPKE.labeledExpand(prk: secret, label: "base_nonce", info: context, length: 12, suiteID: vectorSuite).hex,
                       "56d890e5accaaf011cff4b7d")
        XCTAssertEqual(savedSuite, Array("HPKE".utf8) + [0x00, 0x20, 0x00, 0x01, 0x00, 0x02], "ours: AES-256-GCM")
    }

    func testSealOpenRoundTripAndRefusals() throws {
        let recipient = try X25519.PrivateKey()
        let message = Array("passkeys".utf8)
        let (enc, ciphertext) = try HPKE.seal(message, to: recipient.publicKey, info: [1], aad: [2])
        XCTAssertEqual(enc.count, 32)
        XCTAssertEqual(ciphertext.count, message.count + 16)
        let opened = try HPKE.open(ciphertext, enc: enc, recipient: recipient, info: [1], aad: [2])
        XCTAssertEqual(opened.withUnsafeBytes { Array($0) }, message)

        XCTAssertThrowsError(try HPKE.open(ciphertext, enc: enc, recipient: X25519.PrivateKey(), info: [1], aad: [2])) {
            XCTAssertEqual($0 as? HPKE.Failure, .openFailed)
        }
        XCTAssertThrowsError(try HPKE.open(ciphertext, enc: enc, recipient: recipient, info: [9], aad: [2]))
        XCTAssertThrowsError(try HPKE.open(ciphertext, enc: enc, recipient: recipient, info: [1], aad: [9]))
        var altered = ciphertext
        altered[0] ^= 1
        XCTAssertThrowsError(try HPKE.open(altered, enc: enc, recipient: recipient, info: [1], aad: [2]))
        // A small-order point (u = 0) as enc: refused, not a zero shared secret.
        XCTAssertThrowsError(try HPKE.open(ciphertext, enc: [UInt8](repeating: 0, count: 32), recipient: recipient,
                                           info: [1], aad: [2])) {
            XCTAssertEqual($0 as? HPKE.Failure, .invalidEncapsulatedKey)
        }
    }

    func testKeyEncodingsMatchOpenSSLs() throws {
        // `openssl genpkey -algorithm X25519 -outform DER` and `openssl pkey -pubout -outform DER`
        // of the vector's recipient key (RFC 8410 layouts).
        let key = try X25519.PrivateKey(secret: SecretBytes(skRm))
        XCTAssertEqual(key.pkcs8.withUnsafeBytes { Array($0) }.hex, "302e020100300506032b656e04220420" + skRm.hex)
        XCTAssertEqual(key.publicKey.subjectPublicKeyInfo.hex, "302a300506032b656e032100" + pkRm.hex)
        XCTAssertEqual(try X25519.PrivateKey(pkcs8: key.pkcs8.withUnsafeBytes { Array($0) }).publicKey, key.publicKey)
        XCTAssertEqual(try X25519.PublicKey(subjectPublicKeyInfo: key.publicKey.subjectPublicKeyInfo), key.publicKey)
        XCTAssertThrowsError(try X25519.PublicKey(subjectPublicKeyInfo: [0x30, 0x00]))
    }
}
