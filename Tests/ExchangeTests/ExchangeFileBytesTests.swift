@testable import Exchange
import FIDOCrypto
import Foundation
import XCTest
import Encoding

/// The files Latchkey writes for other programs and for itself (a CXF document, an encrypted
/// export, a backup's header line) byte for byte: whatever writes them, these bytes stay.
final class ExchangeFileBytesTests: XCTestCase {
    func testACXFDocument() throws {
        var full = CXFDocument.Passkey(credentialId: [1, 2, 3], rpId: "example.com", username: "a/b \"q\" \\ é\t\u{1}",
                                       userDisplayName: "Ünïcödé 🔑", userHandle: [4, 5], key: SecretBytes([6, 7, 8]))
        full.hmacCredentials = .init(withUV: SecretBytes([9]), withoutUV: SecretBytes([10]))
        full.credBlob = [11]
        full.largeBlob = .init(uncompressedSize: 12, data: [13, 14])
        full.credProtect = 3
        let plain = CXFDocument.Passkey(credentialId: [15], rpId: "other.example", username: "", userDisplayName: "",
                                        userHandle: [16], key: SecretBytes([17]))
        let document = CXFDocument(exporterRpId: "latchkey.example", exporterDisplayName: "Latchkey", timestamp: 1_796_620_000, accounts: [
            .init(id: [18], username: "", email: "e@example.com", items: [
                .init(id: [19], creationAt: 1_700_000_000, modifiedAt: nil, title: "example.com",
                      urls: ["https://example.com/login"], passkeys: [full]),
                .init(id: [20], creationAt: nil, modifiedAt: 1_700_000_001, title: "other", urls: [], passkeys: [plain]),
            ]),
        ])
        let expected = #"{"accounts":[{"collections":[],"email":"e@example.com","id":"Eg","items":[{"creationAt":1700000000,"credentials":[{"credentialId":"AQID","fido2Extensions":{"credBlob":"Cw","hmacCredentials":{"algorithm":"hmac-sha256","credWithoutUV":"Cg","credWithUV":"CQ"},"largeBlob":{"data":"DQ4","uncompressedSize":12},"latchkeyCredProtect":3},"key":"BgcI","rpId":"example.com","type":"passkey","userDisplayName":"Ünïcödé 🔑","userHandle":"BAU","username":"a/b \"q\" \\ é\t\u0001"}],"id":"Ew","scope":{"androidApps":[],"urls":["https://example.com/login"]},"title":"example.com"},{"credentials":[{"credentialId":"Dw","key":"EQ","rpId":"other.example","type":"passkey","userDisplayName":"","userHandle":"EA","username":""}],"id":"FA","modifiedAt":1700000001,"title":"other"}],"username":""}],"exporterDisplayName":"Latchkey","exporterRpId":"latchkey.example","timestamp":1796620000,"version":{"major":1,"minor":0}}"#
        XCTAssertEqual(String(decoding: try document.json(), as: UTF8.self), expected)
    }

    func testAnEncryptedExportAndABackupHeader() throws {
        let parameters = Scrypt.Parameters(logN: 15, r: 8, p: 1)
        let byPassphrase = EncryptedExport(contents: .cxf, method: .passphrase(parameters: parameters, salt: [1, 2], nonce: [3]),
                                           ciphertext: [4, 5, 6])
        XCTAssertEqual(String(decoding: byPassphrase.json(), as: UTF8.self),
                       #"{"ciphertext":"BAUG","contents":"cxf","kdf":{"logN":15,"name":"scrypt","p":1,"r":8,"salt":"AQI"},"latchkeyEncryptedExport":1,"method":"passphrase","nonce":"Aw"}"# + "\n")
        let recipient = try X25519.PublicKey(rawRepresentation: Array(repeating: 9, count: 32))
        let byKey = EncryptedExport(contents: .backup, method: .hpke(recipient: recipient, enc: [7]), ciphertext: [8])
        XCTAssertEqual(String(decoding: byKey.json(), as: UTF8.self),
                       #"{"ciphertext":"CA","contents":"backup","enc":"Bw","latchkeyEncryptedExport":1,"method":"hpke","recipient":"CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk","suite":"\#(EncryptedExport.hpkeSuite)"}"# + "\n")
        let header = BackupStream.headerLine(.passphrase(parameters: parameters, salt: [1], nonce: [2], sealedKey: [3]))
        XCTAssertEqual(String(decoding: header, as: UTF8.self),
                       #"{"chunkSize":\#(BackupStream.chunkSize),"contents":"backup","kdf":{"logN":15,"name":"scrypt","p":1,"r":8,"salt":"AQ"},"latchkeyEncryptedExport":2,"method":"passphrase","nonce":"Ag","sealedKey":"Aw"}"# + "\n")
    }
}
