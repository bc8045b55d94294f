import CBOR
import CTAP
import XCTest

/// The wire model of authenticatorCredentialManagement (CTAP 2.1 §6.8), authenticatorConfig
/// (§6.11) and authenticatorLargeBlobs (§6.10).
final class CTAP21RequestTests: XCTestCase {
    func status(_ parse: () throws -> Void) -> CTAP2StatusCode? {
        do { try parse(); return nil } catch { return error as? CTAP2StatusCode ?? .other }
    }

    // MARK: credentialManagement

    func testCredentialManagementRequestRoundTripUsesTheSpecKeys() throws {
        let request = CredentialManagementRequest(subCommand: .updateUserInformation,
                                                  credentialID: CredentialDescriptor(id: [1, 2]),
                                                  user: UserEntity(id: [3], name: "n", displayName: "d"),
                                                  pinUvAuthProtocol: 2, pinUvAuthParam: [9])
        let map = try XCTUnwrap(request.cborValue.mapValue)
        // subCommand 0x01, subCommandParams 0x02, pinUvAuthProtocol 0x03, pinUvAuthParam 0x04.
        XCTAssertEqual(Set(map.keys), [1, 2, 3, 4])
        // subCommandParams: rpIDHash 0x01, credentialID 0x02, user 0x03.
        XCTAssertEqual(map[2], .map([2: .map(["id": .byteString([1, 2]), "type": "public-key"]),
                                     3: .map(["id": .byteString([3]), "name": "n", "displayName": "d"])]))
        let decoded = try CredentialManagementRequest(cbor: try CBORDecoder.decode(request.cborValue.encoded()))
        XCTAssertEqual(decoded, request)
        XCTAssertEqual(decoded.subcommand, .updateUserInformation)
        XCTAssertEqual(decoded.user?.name, "n")
    }

    func testCredentialManagementAuthenticatedMessage() throws {
        // §6.8.2, §6.8.3: the subcommand byte alone; otherwise subCommand ‖ CBOR(subCommandParams).
        XCTAssertEqual(CredentialManagementRequest(subCommand: .getCredsMetadata).authenticatedMessage, [0x01])
        XCTAssertEqual(CredentialManagementRequest(subCommand: .enumerateRPsBegin).authenticatedMessage, [0x02])
        let hash = [UInt8](repeating: 0xAB, count: 32)
        XCTAssertEqual(CredentialManagementRequest(subCommand: .enumerateCredentialsBegin, rpIDHash: hash).authenticatedMessage,
                       [0x04, 0xA1, 0x01, 0x58, 0x20] + hash)
        // The parameters as sent (here with an unknown member), re-encoded canonically.
        let parsed = try CredentialManagementRequest(cbor: .map([1: 6, 2: .map([2: .map(["id": .byteString([7]), "type": "public-key"]),
                                                                             0x7F: 0])]))
        XCTAssertEqual(parsed.authenticatedMessage,
                       [0x06] + CBORValue.map([2: .map(["id": .byteString([7]), "type": "public-key"]), 0x7F: 0]).encoded())
    }

    func testCredentialManagementParsingErrors() {
        XCTAssertEqual(status { _ = try CredentialManagementRequest(cbor: .map([2: .map([:])])) }, .missingParameter)
        XCTAssertEqual(status { _ = try CredentialManagementRequest(cbor: .array([])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try CredentialManagementRequest(cbor: .map([1: -1])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try CredentialManagementRequest(cbor: .map([1: 4, 2: .byteString([])])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try CredentialManagementRequest(cbor: .map([1: 4, 2: .map([1: "x"])])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try CredentialManagementRequest(cbor: .map([1: 6, 2: .map([2: .map(["id": .byteString([1])])])])) },
                       .missingParameter)
        XCTAssertEqual(status { _ = try CredentialManagementRequest(cbor: .map([1: 7, 2: .map([3: .map(["name": "x"])])])) },
                       .missingParameter)
        XCTAssertEqual(status { _ = try CredentialManagementRequest(cbor: .map([1: 1, 3: "two"])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try CredentialManagementRequest(cbor: .map([1: 1, 4: 5])) }, .cborUnexpectedType)
        XCTAssertNil(status { _ = try CredentialManagementRequest(cbor: .map([1: 0x42])) }, "unknown subcommands parse")
        XCTAssertNil(try? CredentialManagementRequest(cbor: .map([1: 0x42])).subcommand)
    }

    func testCredentialManagementResponseKeys() throws {
        let response = CredentialManagementResponse(existingResidentCredentialsCount: 1, maxPossibleRemainingResidentCredentialsCount: 2,
                                                    rp: RelyingPartyEntity(id: "a"), rpIDHash: [4], totalRPs: 5,
                                                    user: UserEntity(id: [6]), credentialID: CredentialDescriptor(id: [7]),
                                                    publicKey: .map([1: 2]), totalCredentials: 9, credProtect: .userVerificationRequired,
                                                    largeBlobKey: [11])
        XCTAssertEqual(Set(try XCTUnwrap(response.cborValue.mapValue).keys), Set((1...11).map { CBORValue($0) }))
        XCTAssertEqual(CredentialManagementResponse().cborValue, .map([:]))
    }

    // MARK: config

    func testConfigRequestRoundTripAndAuthenticatedMessage() throws {
        let params = SetMinPINLengthParameters(newMinPINLength: 6, minPinLengthRPIDs: ["example.com"], forceChangePin: true)
        XCTAssertEqual(params.cborValue, .map([1: 6, 2: ["example.com"], 3: true]))
        XCTAssertEqual(try SetMinPINLengthParameters(cbor: params.cborValue), params)
        XCTAssertEqual(try SetMinPINLengthParameters(cbor: nil), SetMinPINLengthParameters())
        let request = AuthenticatorConfigRequest(subCommand: .setMinPINLength, subCommandParams: params.cborValue,
                                                 pinUvAuthProtocol: 1, pinUvAuthParam: [1])
        XCTAssertEqual(Set(try XCTUnwrap(request.cborValue.mapValue).keys), [1, 2, 3, 4])
        XCTAssertEqual(try AuthenticatorConfigRequest(cbor: request.cborValue), request)
        // §6.11: 32×0xff ‖ 0x0d ‖ uint8(subCommand) ‖ subCommandParams.
        XCTAssertEqual(request.authenticatedMessage, [UInt8](repeating: 0xFF, count: 32) + [0x0D, 0x03] + params.cborValue.encoded())
        XCTAssertEqual(AuthenticatorConfigRequest(subCommand: .toggleAlwaysUv).authenticatedMessage,
                       [UInt8](repeating: 0xFF, count: 32) + [0x0D, 0x02])
        XCTAssertEqual(AuthenticatorConfigSubcommand.vendorPrototype.rawValue, 0xFF)
    }

    func testConfigParsingErrors() {
        XCTAssertEqual(status { _ = try AuthenticatorConfigRequest(cbor: .map([2: .map([:])])) }, .missingParameter)
        XCTAssertEqual(status { _ = try AuthenticatorConfigRequest(cbor: .map([1: "x"])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try AuthenticatorConfigRequest(cbor: .map([1: 3, 2: [1]])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try SetMinPINLengthParameters(cbor: .map([1: -6])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try SetMinPINLengthParameters(cbor: .map([2: "example.com"])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try SetMinPINLengthParameters(cbor: .map([2: [.byteString([1])]])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try SetMinPINLengthParameters(cbor: .map([3: "yes"])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try SetMinPINLengthParameters(cbor: .array([])) }, .cborUnexpectedType)
    }

    // MARK: largeBlobs

    func testLargeBlobsRequestRoundTripAndAuthenticatedMessage() throws {
        let request = LargeBlobsRequest(set: [1, 2], offset: 0x0102_0304, length: 17, pinUvAuthParam: [5], pinUvAuthProtocol: 2)
        let map = try XCTUnwrap(request.cborValue.mapValue)
        // get 0x01, set 0x02, offset 0x03, length 0x04, pinUvAuthParam 0x05, pinUvAuthProtocol 0x06.
        XCTAssertEqual(Set(map.keys), [2, 3, 4, 5, 6])
        XCTAssertEqual(try LargeBlobsRequest(cbor: request.cborValue), request)
        XCTAssertEqual(try LargeBlobsRequest(cbor: .map([1: 10, 3: 0])), LargeBlobsRequest(get: 10, offset: 0))
        // §6.10.2: 32×0xff ‖ h'0c00' ‖ uint32LittleEndian(offset) ‖ SHA-256(set).
        let hash = [UInt8](repeating: 0xEE, count: 32)
        XCTAssertEqual(LargeBlobsRequest.authenticatedMessage(offset: 0x0102_0304, setHash: hash),
                       [UInt8](repeating: 0xFF, count: 32) + [0x0C, 0x00, 0x04, 0x03, 0x02, 0x01] + hash)
        XCTAssertEqual(LargeBlobsResponse(config: [1]).cborValue, .map([1: .byteString([1])]))
    }

    func testLargeBlobsParsingErrors() {
        XCTAssertEqual(status { _ = try LargeBlobsRequest(cbor: .array([])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try LargeBlobsRequest(cbor: .map([1: -1])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try LargeBlobsRequest(cbor: .map([2: "x"])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try LargeBlobsRequest(cbor: .map([3: .byteString([])])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try LargeBlobsRequest(cbor: .map([4: true])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try LargeBlobsRequest(cbor: .map([5: 1])) }, .cborUnexpectedType)
        XCTAssertEqual(status { _ = try LargeBlobsRequest(cbor: .map([6: "2"])) }, .cborUnexpectedType)
    }
}
