import CBOR
import CTAP
import XCTest

/// The typed extension inputs of makeCredential and getAssertion (CTAP 2.1 §12, hmac-secret-mc
/// CTAP 2.2 §12.7), decoded once with the request.
final class ExtensionInputsTests: XCTestCase {
    let hmacSecretInput = HMACSecretInput(
        keyAgreement: .map([1: 2, 3: -25, -1: 1, -2: .byteString([UInt8](repeating: 1, count: 32)),
                            -3: .byteString([UInt8](repeating: 2, count: 32))]),
        saltEnc: [UInt8](repeating: 3, count: 32), saltAuth: [UInt8](repeating: 4, count: 16), pinUvAuthProtocol: 2)

    func makeCredentialStatus(_ map: [CBORValue: CBORValue]) -> CTAP2StatusCode? {
        do { _ = try MakeCredentialExtensions(cbor: .map(map)); return nil } catch { return error }
    }

    func getAssertionStatus(_ map: [CBORValue: CBORValue]) -> CTAP2StatusCode? {
        do { _ = try GetAssertionExtensions(cbor: .map(map)); return nil } catch { return error }
    }

    // MARK: makeCredential

    func testMakeCredentialExtensionsRoundTripUnderTheirIdentifiers() throws {
        let extensions = MakeCredentialExtensions(credProtect: .userVerificationRequired, credBlob: [9, 8], hmacSecret: true,
                                                  hmacSecretMC: hmacSecretInput, largeBlobKey: true, minPinLength: false)
        XCTAssertEqual(extensions.cborValue, .map([
            "credProtect": 3, "credBlob": .byteString([9, 8]), "hmac-secret": true,
            "hmac-secret-mc": hmacSecretInput.cborValue, "largeBlobKey": true, "minPinLength": false,
        ]))
        XCTAssertEqual(try MakeCredentialExtensions(cbor: try CBORDecoder.decode(extensions.cborValue.encoded())), extensions)
        XCTAssertFalse(extensions.isEmpty)
        XCTAssertTrue(try MakeCredentialExtensions(cbor: .map([:])).isEmpty)
        XCTAssertEqual(MakeCredentialExtensions().cborValue, .map([:]))
    }

    func testMakeCredentialIgnoresUnknownExtensions() throws {
        let decoded = try MakeCredentialExtensions(cbor: .map(["credBlob": .byteString([1]), "txAuthSimple": "pay",
                                                               "hmac-secret-foo": 1, 7: true]))
        XCTAssertEqual(decoded, MakeCredentialExtensions(credBlob: [1]))
    }

    /// §12.1: the three levels; any other unsigned number is CTAP2_ERR_INVALID_OPTION, any other
    /// type CTAP2_ERR_CBOR_UNEXPECTED_TYPE.
    func testCredProtectIsOneOfTheThreeLevels() throws {
        for level in CredentialProtectionPolicy.allCases {
            XCTAssertEqual(try MakeCredentialExtensions(cbor: .map(["credProtect": .unsignedInt(UInt64(level.rawValue))])).credProtect,
                           level)
        }
        for invalid: CBORValue in [0, 4, 257, .unsignedInt(.max)] {
            XCTAssertEqual(makeCredentialStatus(["credProtect": invalid]), .invalidOption, "\(invalid)")
        }
        for wrongType: CBORValue in [-1, "2", true, .byteString([2])] {
            XCTAssertEqual(makeCredentialStatus(["credProtect": wrongType]), .cborUnexpectedType, "\(wrongType)")
        }
    }

    func testMakeCredentialFlagsAndBlobMustHaveTheirTypes() {
        XCTAssertEqual(makeCredentialStatus(["credBlob": "blob"]), .cborUnexpectedType)
        XCTAssertEqual(makeCredentialStatus(["credBlob": true]), .cborUnexpectedType)
        XCTAssertEqual(makeCredentialStatus(["hmac-secret": 1]), .cborUnexpectedType)
        XCTAssertEqual(makeCredentialStatus(["largeBlobKey": 1]), .cborUnexpectedType)
        XCTAssertEqual(makeCredentialStatus(["minPinLength": 1]), .cborUnexpectedType)
        XCTAssertNil(makeCredentialStatus(["credBlob": .byteString([]), "hmac-secret": false, "largeBlobKey": false,
                                           "minPinLength": true]))
    }

    /// CTAP 2.2 §12.7: hmac-secret-mc only next to hmac-secret: true, checked before its input.
    func testHmacSecretMCNeedsHmacSecretTrueBeforeItsInputIsRead() throws {
        XCTAssertEqual(makeCredentialStatus(["hmac-secret-mc": hmacSecretInput.cborValue]), .invalidOption)
        XCTAssertEqual(makeCredentialStatus(["hmac-secret": false, "hmac-secret-mc": hmacSecretInput.cborValue]), .invalidOption)
        XCTAssertEqual(makeCredentialStatus(["hmac-secret-mc": true]), .invalidOption, "the rule before the input's type")
        XCTAssertEqual(makeCredentialStatus(["hmac-secret": true, "hmac-secret-mc": true]), .cborUnexpectedType)
        var missing = try XCTUnwrap(hmacSecretInput.cborValue.mapValue)
        missing[2] = nil
        XCTAssertEqual(makeCredentialStatus(["hmac-secret": true, "hmac-secret-mc": .map(missing)]), .missingParameter)
        XCTAssertEqual(try MakeCredentialExtensions(cbor: .map(["hmac-secret": true, "hmac-secret-mc": hmacSecretInput.cborValue])),
                       MakeCredentialExtensions(hmacSecret: true, hmacSecretMC: hmacSecretInput))
    }

    /// The first failing extension, in the order credProtect, credBlob, hmac-secret,
    /// hmac-secret-mc, largeBlobKey, minPinLength, names the error (as the handler's order did).
    func testMakeCredentialExtensionErrorsComeInTheHandlersOrder() {
        XCTAssertEqual(makeCredentialStatus(["credProtect": 4, "credBlob": "x"]), .invalidOption)
        XCTAssertEqual(makeCredentialStatus(["credBlob": "x", "hmac-secret-mc": true]), .cborUnexpectedType)
        XCTAssertEqual(makeCredentialStatus(["hmac-secret-mc": true, "largeBlobKey": 1, "minPinLength": 1]), .invalidOption)
        XCTAssertEqual(makeCredentialStatus(["credProtect": 9, "minPinLength": 1]), .invalidOption)
        XCTAssertEqual(makeCredentialStatus(["minPinLength": 1, "credProtect": 2]), .cborUnexpectedType)
    }

    // MARK: getAssertion

    func testGetAssertionExtensionsRoundTripUnderTheirIdentifiers() throws {
        let extensions = GetAssertionExtensions(credBlob: true, largeBlobKey: false, hmacSecret: hmacSecretInput)
        XCTAssertEqual(extensions.cborValue, .map(["credBlob": true, "largeBlobKey": false, "hmac-secret": hmacSecretInput.cborValue]))
        XCTAssertEqual(try GetAssertionExtensions(cbor: try CBORDecoder.decode(extensions.cborValue.encoded())), extensions)
        XCTAssertTrue(try GetAssertionExtensions(cbor: .map([:])).isEmpty)
        XCTAssertEqual(try GetAssertionExtensions(cbor: .map(["largeBlobKey": true, "credProtect": 2, "devicePubKey": true])),
                       GetAssertionExtensions(largeBlobKey: true), "unknown ones (and makeCredential-only ones) are ignored")
        let payment = GetAssertionExtensions(thirdPartyPayment: true)
        XCTAssertEqual(payment.cborValue, .map(["thirdPartyPayment": true]))
        XCTAssertEqual(try GetAssertionExtensions(cbor: payment.cborValue), payment)
        XCTAssertThrowsError(try GetAssertionExtensions(cbor: .map(["thirdPartyPayment": 1])))
    }

    func testGetAssertionExtensionsMustHaveTheirTypes() throws {
        XCTAssertEqual(getAssertionStatus(["credBlob": .byteString([1])]), .cborUnexpectedType)
        XCTAssertEqual(getAssertionStatus(["largeBlobKey": "yes"]), .cborUnexpectedType)
        XCTAssertEqual(getAssertionStatus(["hmac-secret": true]), .cborUnexpectedType)
        var missing = try XCTUnwrap(hmacSecretInput.cborValue.mapValue)
        missing[3] = nil
        XCTAssertEqual(getAssertionStatus(["hmac-secret": .map(missing)]), .missingParameter)
        // credBlob, then largeBlobKey, then hmac-secret.
        XCTAssertEqual(getAssertionStatus(["hmac-secret": .map(missing), "largeBlobKey": 1]), .cborUnexpectedType)
    }

    // MARK: in the requests

    /// The requests decode their extensions once, after every other member; a malformed input
    /// is kept as `extensionsError` for the handler to report at the extensions step.
    func testRequestsDecodeTheirExtensionsAfterEveryOtherMember() throws {
        var makeCredential = MakeCredentialRequest(clientDataHash: [UInt8](repeating: 1, count: 32), rp: RelyingPartyEntity(id: "rp.example"),
                                                   user: UserEntity(id: [2]), pubKeyCredParams: [CredentialParameters(algorithm: -7)],
                                                   extensions: MakeCredentialExtensions(credProtect: .userVerificationOptional,
                                                                                        minPinLength: true))
        XCTAssertEqual(try MakeCredentialRequest(cbor: makeCredential.cborValue), makeCredential)
        var map = try XCTUnwrap(makeCredential.cborValue.mapValue)
        XCTAssertEqual(map[6], .map(["credProtect": 1, "minPinLength": true]))
        map[6] = .map(["credProtect": 4])
        XCTAssertEqual(try MakeCredentialRequest(cbor: .map(map)).extensionsError, .invalidOption)
        XCTAssertEqual(try MakeCredentialRequest(cbor: .map(map)).extensions, MakeCredentialExtensions())
        map[7] = "options"
        XCTAssertThrowsError(try MakeCredentialRequest(cbor: .map(map))) {
            XCTAssertEqual($0 as? CTAP2StatusCode, .cborUnexpectedType, "the options' error comes first")
        }
        map[6] = true
        map[7] = nil
        XCTAssertThrowsError(try MakeCredentialRequest(cbor: .map(map))) { XCTAssertEqual($0 as? CTAP2StatusCode, .cborUnexpectedType) }
        makeCredential.extensions = MakeCredentialExtensions()
        XCTAssertNil(makeCredential.cborValue[6], "no extensions, no map")

        var getAssertion = GetAssertionRequest(rpID: "rp.example", clientDataHash: [UInt8](repeating: 1, count: 32),
                                               extensions: GetAssertionExtensions(credBlob: true))
        XCTAssertEqual(try GetAssertionRequest(cbor: getAssertion.cborValue), getAssertion)
        map = try XCTUnwrap(getAssertion.cborValue.mapValue)
        XCTAssertEqual(map[4], .map(["credBlob": true]))
        var missing = try XCTUnwrap(hmacSecretInput.cborValue.mapValue)
        missing[1] = nil
        map[4] = .map(["hmac-secret": .map(missing)])
        XCTAssertEqual(try GetAssertionRequest(cbor: .map(map)).extensionsError, .missingParameter)
        map[7] = "protocol"
        XCTAssertThrowsError(try GetAssertionRequest(cbor: .map(map))) {
            XCTAssertEqual($0 as? CTAP2StatusCode, .cborUnexpectedType, "the pinUvAuthProtocol's error comes first")
        }
        map[4] = .array([])
        map[7] = nil
        XCTAssertThrowsError(try GetAssertionRequest(cbor: .map(map))) { XCTAssertEqual($0 as? CTAP2StatusCode, .cborUnexpectedType) }
        getAssertion.extensions = GetAssertionExtensions()
        XCTAssertNil(getAssertion.cborValue[4], "no extensions, no map")
    }
}
