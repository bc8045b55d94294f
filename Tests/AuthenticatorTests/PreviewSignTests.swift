import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// previewSign (the WebAuthn signing extension, v4) in the sans-IO core; python-fido2's device
/// suite drives every algorithm of it over the socket, ARKG included (socket_fido2_suite.py).
final class PreviewSignTests: XCTestCase {
    func generate(_ harness: AuthenticatorHarness, algorithms: [Int], flags: UInt64 = 0b001, resident: Bool = false)
        throws -> (registration: AuthenticatorHarness.Registration, attestationObject: CBORValue) {
        let request = harness.makeCredentialRequest(resident: resident, extensions: MakeCredentialExtensions(
            previewSign: PreviewSign.GenerateKey(algorithms: algorithms, flags: flags)))
        let registration = try harness.register(request)
        let unsigned = try XCTUnwrap(registration.response[6]?["previewSign"]?[7]?.bytesValue)
        return (registration, try CBORDecoder.decode(unsigned))
    }

    /// The generated key: {3: alg} signed; an attestation object whose authData copies the
    /// credential's RP ID hash and flags, counts 0, names the key by its handle and carries
    /// {4: flags}, packed-attested over that authData and the same clientDataHash.
    func testGeneratedKeyIsAttestedLikeTheCredential() throws {
        let harness = try AuthenticatorHarness()
        let (registration, object) = try generate(harness, algorithms: [-18, -9, -7])
        XCTAssertEqual(registration.authenticatorData.extensions, .map(["previewSign": .map([3: -9])]),
                       "the first algorithm the key has (−18 is none)")
        XCTAssertEqual(object[1]?.stringValue, "packed")
        let innerBytes = try XCTUnwrap(object[2]?.bytesValue)
        let inner = try AuthenticatorData(decoding: innerBytes)
        XCTAssertEqual(inner.rpIDHash, registration.authenticatorData.rpIDHash)
        XCTAssertEqual(inner.flags, registration.authenticatorData.flags)
        XCTAssertEqual(inner.signCount, 0)
        XCTAssertEqual(inner.extensions, .map(["previewSign": .map([4: 1])]))
        let attested = try XCTUnwrap(inner.attestedCredentialData)
        XCTAssertEqual(attested.publicKey[3]?.intValue, -9)
        let statement = try XCTUnwrap(object[3])
        XCTAssertEqual(statement["alg"]?.intValue, -7)
        XCTAssertTrue(IndependentVerifier.verifyWithCertificate(try XCTUnwrap(statement["x5c"]?.arrayValue?.first?.bytesValue),
                                                                signature: try XCTUnwrap(statement["sig"]?.bytesValue),
                                                                message: innerBytes + registration.clientDataHash))
    }

    /// The key signs the RP's data (ESP256: hashed by the key; ESP256-split: the client's digest),
    /// under the credential it was made in only.
    func testTheKeySignsForItsCredentialOnly() throws {
        let harness = try AuthenticatorHarness()
        for algorithm in [-9, -300] {
            let (registration, object) = try generate(harness, algorithms: [algorithm])
            let attested = try XCTUnwrap(try AuthenticatorData(decoding: try XCTUnwrap(object[2]?.bytesValue)).attestedCredentialData)
            let key = try ECDSA.PublicKey(x: try XCTUnwrap(attested.publicKey[-2]?.bytesValue),
                                          y: try XCTUnwrap(attested.publicKey[-3]?.bytesValue))
            let data = Array("a wallet transaction".utf8)
            let sent = algorithm == -300 ? SHA256.hash(data) : data
            let input = GetAssertionExtensions(previewSign: PreviewSign.Sign(keyHandle: attested.credentialID, toBeSigned: sent))
            let (status, body) = harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID],
                                                                                     extensions: input).cborValue)
            XCTAssertEqual(status, .success)
            let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue))
            let signature = try XCTUnwrap(authData.extensions?["previewSign"]?[6]?.bytesValue)
            XCTAssertTrue(key.isValidSignature(signature, for: data), "\(algorithm)")

            let other = try harness.register(harness.makeCredentialRequest(userID: [9]))
            XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [other.credentialID], extensions: input)
                .cborValue).status, .invalidCredential, "another credential's handle")
        }
    }

    func testRefusalsInTheExtensionsOrder() throws {
        let harness = try AuthenticatorHarness()
        func status(_ request: MakeCredentialRequest) -> CTAP2StatusCode { harness.send(.makeCredential, request.cborValue).status }
        func generateKey(_ algorithms: [Int], _ flags: UInt64) -> MakeCredentialRequest {
            harness.makeCredentialRequest(extensions: MakeCredentialExtensions(previewSign: .init(algorithms: algorithms, flags: flags)))
        }
        XCTAssertEqual(status(generateKey([-18], 0b011)), .unsupportedAlgorithm, "the algorithm first")
        XCTAssertEqual(status(generateKey([-7], 0b011)), .invalidOption)
        for flags: UInt64 in [0b000, 0b001, 0b101] { XCTAssertEqual(status(generateKey([-7], flags)), .success) }

        let (registration, object) = try generate(harness, algorithms: [-7], flags: 0b101)
        let handle = try XCTUnwrap(try AuthenticatorData(decoding: try XCTUnwrap(object[2]?.bytesValue)).attestedCredentialData?.credentialID)
        let input = GetAssertionExtensions(previewSign: PreviewSign.Sign(keyHandle: handle, toBeSigned: [1]))
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(extensions: input).cborValue).status, .invalidOption,
                       "no allowList")
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID], up: false,
                                                                            extensions: input).cborValue).status,
                       .upRequired)
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID],
                                                                            extensions: input).cborValue).status,
                       .puatRequired, "flags 0b101 ask for verification")
        var altered = handle
        altered[0] ^= 1
        XCTAssertEqual(harness.send(.getAssertion, harness.assertionRequest(allow: [registration.credentialID], extensions:
            GetAssertionExtensions(previewSign: .init(keyHandle: altered, toBeSigned: [1]))).cborValue).status, .invalidCredential)
    }
}
