import CBOR
import CTAP
@testable import FIDOClient
import Foundation
import LatchkeyTestSupport
import XCTest

final class GetInfoFormatterTests: XCTestCase {
    /// A getInfo with every member Latchkey's AuthenticatorInfo can carry.
    static let fullInfo = SampleAuthenticatorInfo.full

    func testDecodeChecksStatusAndShape() throws {
        let value = try GetInfoFormatter.decode(response: [0x00] + Self.fullInfo.cborValue.encoded())
        XCTAssertEqual(value, Self.fullInfo.cborValue)
        XCTAssertThrowsError(try GetInfoFormatter.decode(response: [])) {
            XCTAssertEqual($0 as? GetInfoFormatter.ResponseError, .empty)
        }
        XCTAssertThrowsError(try GetInfoFormatter.decode(response: [0x32])) {
            XCTAssertEqual("\($0)", "getInfo failed: the device answered CTAP2_ERR_PIN_BLOCKED (0x32)")
        }
        XCTAssertThrowsError(try GetInfoFormatter.decode(response: [0x00, 0xA1])) {
            XCTAssertEqual($0 as? GetInfoFormatter.ResponseError, .invalidCBOR(.truncated))
        }
        XCTAssertThrowsError(try GetInfoFormatter.decode(response: [0x00, 0x80])) {
            XCTAssertEqual($0 as? GetInfoFormatter.ResponseError, .notAMap)
        }
    }

    func testEveryKnownMemberIsReadable() {
        let fields = GetInfoFormatter.fields(Self.fullInfo.cborValue)
        let byName = Dictionary(uniqueKeysWithValues: fields.map { ($0.name, $0.text) })
        XCTAssertEqual(fields.map(\.key), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20])
        XCTAssertFalse(fields.contains { $0.isRaw })
        XCTAssertEqual(byName["versions"], "U2F_V2, FIDO_2_0, FIDO_2_1")
        XCTAssertEqual(byName["extensions"], "credProtect, hmac-secret")
        XCTAssertEqual(byName["aaguid"], "d4a016d1-783d-4c7e-a521-dd2196f32a99")
        XCTAssertEqual(byName["options"], "rk=true, up=true, credMgmt=true, clientPin=false", "canonical key order")
        XCTAssertEqual(byName["maxMsgSize"], "7609")
        XCTAssertEqual(byName["pinUvAuthProtocols"], "2, 1", "preference order kept")
        XCTAssertEqual(byName["maxCredentialCountInList"], "64")
        XCTAssertEqual(byName["maxCredentialIdLength"], "128")
        XCTAssertEqual(byName["transports"], "usb")
        XCTAssertEqual(byName["algorithms"], "ES256 (-7), EdDSA (-8), -65535")
        XCTAssertEqual(byName["maxSerializedLargeBlobArray"], "1024")
        XCTAssertEqual(byName["forcePINChange"], "false")
        XCTAssertEqual(byName["minPINLength"], "4")
        XCTAssertEqual(byName["firmwareVersion"], "66051 (0x10203)")
        XCTAssertEqual(byName["maxCredBlobLength"], "32")
        XCTAssertEqual(byName["maxRPIDsForSetMinPINLength"], "1")
        XCTAssertEqual(byName["remainingDiscoverableCredentials"], "999")
    }

    /// Unknown keys and members of an unexpected type are shown raw, never dropped.
    func testUnknownKeysAndOddTypesAreShownRaw() {
        var map = Self.fullInfo.cborValue.mapValue!
        map[0x05] = "big"                         // maxMsgSize as text
        map[0x30] = .array([1, .byteString([0xAB])])
        map["vendor"] = true
        let info = CBORValue.map(map)
        let fields = GetInfoFormatter.fields(info)
        XCTAssertEqual(fields.first { $0.key == 0x05 }?.text, "\"big\"  (unexpected type)")
        XCTAssertEqual(fields.first { $0.key == 0x30 }?.name, "0x30")
        XCTAssertEqual(fields.first { $0.key == 0x30 }?.text, "[1, h'ab']")
        XCTAssertEqual(fields.last?.name, "\"vendor\"", "non-integer keys last")

        let text = GetInfoFormatter.text(info)
        XCTAssertTrue(text.contains("  0x30 (unknown)"), text)
        XCTAssertTrue(text.contains("[1, h'ab']"), text)

        let json = GetInfoFormatter.json(info)
        guard case .object(let members) = json else { return XCTFail("not an object") }
        XCTAssertEqual(members.last?.0, "unknownKeys")
        XCTAssertEqual(members.last?.1, .object([("0x30", .string("[1, h'ab']")), ("\"vendor\"", .string("true"))]))
        XCTAssertEqual(members.first { $0.0 == "maxMsgSize" }?.1, .string("\"big\""))
    }

    func testTextLayout() {
        let info = CBORValue.map([0x01: .array(["FIDO_2_0"]), 0x05: 1200, 0x14: 7])
        XCTAssertEqual(GetInfoFormatter.text(info), """
              versions                          FIDO_2_0
              maxMsgSize                        1200
              remainingDiscoverableCredentials  7
            """)
    }

    func testJSONIsValidAndTyped() throws {
        let parsed = try parseJSON(GetInfoFormatter.json(Self.fullInfo.cborValue).rendered)
        XCTAssertEqual(parsed["versions"] as? [String], ["U2F_V2", "FIDO_2_0", "FIDO_2_1"])
        XCTAssertEqual(parsed["aaguid"] as? String, "d4a016d1-783d-4c7e-a521-dd2196f32a99")
        XCTAssertEqual(parsed["maxMsgSize"] as? Int, 7609)
        XCTAssertEqual(parsed["forcePINChange"] as? Bool, false)
        let options = try XCTUnwrap(parsed["options"] as? [String: Bool])
        XCTAssertEqual(options, ["rk": true, "up": true, "clientPin": false, "credMgmt": true])
        let algorithms = try XCTUnwrap(parsed["algorithms"] as? [[String: Any]])
        XCTAssertEqual(algorithms.first?["name"] as? String, "ES256")
        XCTAssertEqual(algorithms.first?["alg"] as? Int, -7)
        XCTAssertTrue(algorithms.last?["name"] is NSNull)
        XCTAssertNil(parsed["unknownKeys"])
    }
}
