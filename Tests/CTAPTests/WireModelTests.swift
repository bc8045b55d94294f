import CBOR
import CTAP
import XCTest

final class WireModelTests: XCTestCase {
    func testAuthenticatorDataRoundTripAndDerivedFlags() throws {
        let key = COSEKey.ec2P256(algorithm: .es256, x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32))
        let data = AuthenticatorData(rpIDHash: [UInt8](repeating: 9, count: 32), flags: [.userPresent, .extensionData],
                                     signCount: 0x0102_0304,
                                     attestedCredentialData: .init(aaguid: [UInt8](repeating: 7, count: 16),
                                                                   credentialID: [0xAA, 0xBB], publicKey: key.cborValue))
        let bytes = data.encoded()
        // WebAuthn §6.1: rpIdHash(32) flags(1) counter(4, big-endian), then AAGUID, L(2), credentialId, key.
        XCTAssertEqual(bytes[32], 0x41, "UP and AT; ED cleared because no extensions are present")
        XCTAssertEqual(Array(bytes[33..<37]), [1, 2, 3, 4])
        XCTAssertEqual(Array(bytes[53..<55]), [0, 2])
        let decoded = try AuthenticatorData(decoding: bytes)
        XCTAssertEqual(decoded, data)
        XCTAssertEqual(COSEKey(decoded.attestedCredentialData!.publicKey), key)
        XCTAssertThrowsError(try AuthenticatorData(decoding: Array(bytes.dropLast())))
        XCTAssertThrowsError(try AuthenticatorData(decoding: bytes + [0]))
    }

    func testCOSEKeyEncodingIsCanonical() {
        let key = COSEKey.okpEd25519(x: [UInt8](repeating: 3, count: 32))
        // {1: 1, 3: -8, -1: 6, -2: h'03…'}: positive keys first, then negatives, by encoded bytes.
        XCTAssertEqual(Array(key.cborValue.encoded().prefix(8)), [0xA4, 0x01, 0x01, 0x03, 0x27, 0x20, 0x06, 0x21])
    }

    func testAPDUParsingForms() throws {
        XCTAssertEqual(try U2FAPDU(parsing: [0, 3, 0, 0]).data, [])
        XCTAssertEqual(try U2FAPDU(parsing: [0, 3, 0, 0, 0]).data, [])
        XCTAssertEqual(try U2FAPDU(parsing: [0, 1, 3, 0, 2, 0xAA, 0xBB]).data, [0xAA, 0xBB])
        XCTAssertEqual(try U2FAPDU(parsing: [0, 1, 3, 0, 2, 0xAA, 0xBB, 0]).data, [0xAA, 0xBB])
        XCTAssertEqual(try U2FAPDU(parsing: [0, 1, 3, 0, 0, 0, 2, 0xAA, 0xBB, 0, 0]).data, [0xAA, 0xBB])
        XCTAssertEqual(try U2FAPDU(parsing: [0, 3, 0, 0, 0, 0, 0, 0, 0]).data, [])
        let apdu = U2FAPDU(ins: 2, p1: 7, data: [1, 2, 3])
        XCTAssertEqual(try U2FAPDU(parsing: apdu.encoded()), apdu)
        for bad: [UInt8] in [[0, 1], [0, 1, 0, 0, 5, 1], [0, 1, 0, 0, 0, 0, 5, 1, 2]] {
            XCTAssertThrowsError(try U2FAPDU(parsing: bad)) { XCTAssertEqual($0 as? U2FStatusWord, .wrongLength) }
        }
    }

    func testRequestParsingIgnoresUnknownKeys() throws {
        let request = GetAssertionRequest(rpID: "a.example", clientDataHash: [UInt8](repeating: 1, count: 32))
        var map = request.cborValue.mapValue!
        map[99] = "unknown"
        map["x"] = 1
        XCTAssertEqual(try GetAssertionRequest(cbor: .map(map)), request)
    }

    func testStatusCodesHaveSpecNames() {
        XCTAssertEqual(CTAP2StatusCode.keepaliveCancel.rawValue, 0x2D)
        XCTAssertEqual(CTAP2StatusCode.keepaliveCancel.specName, "CTAP2_ERR_KEEPALIVE_CANCEL")
        XCTAssertEqual(CTAP2StatusCode(CBORDecodingError.truncated), .invalidCBOR)
    }

    /// CTAP 2.1 §12.1: the three credProtect levels and their bytes, nothing else.
    func testCredProtectLevelsAreTheirWireBytes() {
        XCTAssertEqual(CredentialProtectionPolicy.allCases.map(\.rawValue), [0x01, 0x02, 0x03])
        XCTAssertEqual(CredentialProtectionPolicy(rawValue: 0x01), .userVerificationOptional)
        XCTAssertEqual(CredentialProtectionPolicy(rawValue: 0x02), .userVerificationOptionalWithCredentialIDList)
        XCTAssertEqual(CredentialProtectionPolicy(rawValue: 0x03), .userVerificationRequired)
        XCTAssertNil(CredentialProtectionPolicy(rawValue: 0x00))
        XCTAssertNil(CredentialProtectionPolicy(rawValue: 0x04))
        XCTAssertEqual(CredentialManagementResponse(credProtect: .userVerificationOptionalWithCredentialIDList).cborValue,
                       .map([0x0A: 2]))
    }

    /// CTAP 2.2 attestationFormatsPreference: the first supported format wins; packed otherwise.
    func testAttestationFormatChoice() {
        XCTAssertEqual(AttestationStatementFormat.chosen(from: nil), .packed)
        XCTAssertEqual(AttestationStatementFormat.chosen(from: []), .packed)
        XCTAssertEqual(AttestationStatementFormat.chosen(from: ["tpm", "none", "packed"]), .none)
        XCTAssertEqual(AttestationStatementFormat.chosen(from: ["fido-u2f", "packed", "none"]), .packed)
        XCTAssertEqual(AttestationStatementFormat.chosen(from: ["apple"]), .packed)
    }

    /// clientDataHash is a SHA-256: 32 bytes, else CTAP1_ERR_INVALID_LENGTH (issue 16, item 9).
    func testClientDataHashMustBe32Bytes() throws {
        let good = MakeCredentialRequest(clientDataHash: [UInt8](repeating: 7, count: 32), rp: RelyingPartyEntity(id: "a.example"),
                                         user: UserEntity(id: [1]), pubKeyCredParams: [CredentialParameters(algorithm: -7)])
        XCTAssertNoThrow(try MakeCredentialRequest(cbor: good.cborValue))
        for count in [0, 1, 31, 33, 64] {
            var map = try XCTUnwrap(good.cborValue.mapValue)
            map[1] = .byteString([UInt8](repeating: 7, count: count))
            XCTAssertThrowsError(try MakeCredentialRequest(cbor: .map(map))) { XCTAssertEqual($0 as? CTAP2StatusCode, .invalidLength) }
            let assertion = CBORValue.map([1: "a.example", 2: .byteString([UInt8](repeating: 7, count: count))])
            XCTAssertThrowsError(try GetAssertionRequest(cbor: assertion)) { XCTAssertEqual($0 as? CTAP2StatusCode, .invalidLength) }
        }
    }
}
