import CBOR
import CTAP
import XCTest

/// The authenticatorClientPIN wire model (CTAP 2.1 §6.5.5) and the hmac-secret input (§12.5).
final class ClientPINRequestTests: XCTestCase {
    let key: CBORValue = .map([1: 2, 3: -25, -1: 1, -2: .byteString([UInt8](repeating: 1, count: 32)),
                               -3: .byteString([UInt8](repeating: 2, count: 32))])

    func testRequestRoundTripUsesTheSpecKeys() throws {
        let request = ClientPINRequest(pinUvAuthProtocol: 2, subCommand: .getPinUvAuthTokenUsingPinWithPermissions,
                                       keyAgreement: key, pinUvAuthParam: [1], newPinEnc: [2], pinHashEnc: [3],
                                       permissions: 0x43, rpID: "example.com")
        let map = try XCTUnwrap(request.cborValue.mapValue)
        // pinUvAuthProtocol 0x01, subCommand 0x02, keyAgreement 0x03, pinUvAuthParam 0x04,
        // newPinEnc 0x05, pinHashEnc 0x06, permissions 0x09, rpId 0x0A.
        XCTAssertEqual(Set(map.keys), [1, 2, 3, 4, 5, 6, 9, 10])
        XCTAssertEqual(map[2], 9)
        XCTAssertEqual(map[10], "example.com")
        let decoded = try ClientPINRequest(cbor: try CBORDecoder.decode(request.cborValue.encoded()))
        XCTAssertEqual(decoded, request)
        XCTAssertEqual(decoded.subcommand, .getPinUvAuthTokenUsingPinWithPermissions)
        XCTAssertEqual(decoded.permissions, 0x43, "undefined permission bits survive parsing")
    }

    func testUnknownSubcommandParsesButHasNoName() throws {
        let request = try ClientPINRequest(cbor: .map([2: 0x42, 0x7F: "ignored"]))
        XCTAssertEqual(request.subCommand, 0x42)
        XCTAssertNil(request.subcommand)
    }

    func testMissingSubcommandAndWrongTypes() {
        func status(_ value: CBORValue) -> CTAP2StatusCode? {
            do { _ = try ClientPINRequest(cbor: value); return nil } catch { return error }
        }
        XCTAssertEqual(status(.map([1: 1])), .missingParameter)
        XCTAssertEqual(status(.array([])), .cborUnexpectedType)
        XCTAssertEqual(status(.map([2: "one"])), .cborUnexpectedType)
        XCTAssertEqual(status(.map([2: -1])), .cborUnexpectedType)
        XCTAssertEqual(status(.map([1: "two", 2: 1])), .cborUnexpectedType)
        XCTAssertEqual(status(.map([2: 2, 3: .byteString([1])])), .cborUnexpectedType)
        XCTAssertEqual(status(.map([2: 3, 4: "mac"])), .cborUnexpectedType)
        XCTAssertEqual(status(.map([2: 9, 9: -1])), .cborUnexpectedType)
        XCTAssertEqual(status(.map([2: 9, 10: .byteString([1])])), .cborUnexpectedType)
    }

    func testResponseRoundTrip() throws {
        let response = ClientPINResponse(keyAgreement: .ec2P256(algorithm: .ecdhESHKDF256, x: [UInt8](repeating: 1, count: 32),
                                                                y: [UInt8](repeating: 2, count: 32)),
                                         pinUvAuthToken: [9, 9], pinRetries: 8, powerCycleState: false)
        let value = response.cborValue
        XCTAssertEqual(value[1], key)
        XCTAssertEqual(value[3], 8)
        XCTAssertEqual(value[4], false)
        XCTAssertNil(value[5])
        XCTAssertEqual(try ClientPINResponse(cbor: value), response)
        XCTAssertEqual(ClientPINResponse().cborValue, .map([:]))
    }

    func testSubcommandNumbers() {
        XCTAssertEqual(ClientPINSubcommand.allCases.map(\.rawValue), [1, 2, 3, 4, 5, 6, 7, 9])
        XCTAssertEqual(PinUvAuthPermissions.defined.rawValue, 0x7F)
        XCTAssertEqual([PinUvAuthPermissions.makeCredential, .getAssertion, .credentialManagement, .bioEnrollment,
                        .largeBlobWrite, .authenticatorConfiguration].map(\.rawValue), [0x01, 0x02, 0x04, 0x08, 0x10, 0x20])
    }

    func testHMACSecretInputParsing() throws {
        let input = HMACSecretInput(keyAgreement: key, saltEnc: [UInt8](repeating: 3, count: 32),
                                    saltAuth: [UInt8](repeating: 4, count: 16))
        XCTAssertEqual(Set(input.cborValue.mapValue!.keys), [1, 2, 3], "pinUvAuthProtocol omitted when absent")
        XCTAssertEqual(try HMACSecretInput(cbor: input.cborValue), input)
        var withProtocol = input
        withProtocol.pinUvAuthProtocol = 2
        XCTAssertEqual(try HMACSecretInput(cbor: withProtocol.cborValue).pinUvAuthProtocol, 2)
        func status(_ value: CBORValue) -> CTAP2StatusCode? {
            do { _ = try HMACSecretInput(cbor: value); return nil } catch { return error }
        }
        var map = input.cborValue.mapValue!
        map[2] = nil
        XCTAssertEqual(status(.map(map)), .missingParameter)
        map = input.cborValue.mapValue!
        map[1] = .byteString([1])
        XCTAssertEqual(status(.map(map)), .cborUnexpectedType)
        map = input.cborValue.mapValue!
        map[3] = "auth"
        XCTAssertEqual(status(.map(map)), .cborUnexpectedType)
        XCTAssertEqual(status(true), .cborUnexpectedType)
    }
}
