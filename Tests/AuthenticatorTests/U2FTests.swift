import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

final class U2FTests: XCTestCase {
    let challenge = SHA256.hash(Array("challenge".utf8))
    let application = SHA256.hash(Array("https://u2f.example".utf8))

    func u2f(_ harness: AuthenticatorHarness, _ apdu: U2FAPDU) -> (data: [UInt8], status: UInt16) {
        u2fRaw(harness, apdu.encoded())
    }

    func u2fRaw(_ harness: AuthenticatorHarness, _ bytes: [UInt8]) -> (data: [UInt8], status: UInt16) {
        let response = harness.authenticator.handleU2F(bytes, context: RequestContext(channel: harness.channel))
        XCTAssertGreaterThanOrEqual(response.count, 2)
        let status = UInt16(response[response.count - 2]) << 8 | UInt16(response[response.count - 1])
        return (Array(response.dropLast(2)), status)
    }

    /// Register and return (public key x963, key handle) after checking the attestation signature.
    func register(_ harness: AuthenticatorHarness, application: [UInt8]? = nil) throws -> (publicKey: [UInt8], keyHandle: [UInt8]) {
        let app = application ?? self.application
        let (data, status) = u2f(harness, U2FAPDU(ins: 0x01, p1: 0x03, data: challenge + app))
        XCTAssertEqual(status, 0x9000)
        XCTAssertEqual(data.first, 0x05, "reserved byte")
        let publicKey = Array(data[1..<66])
        let handleLength = Int(data[66])
        let keyHandle = Array(data[67..<(67 + handleLength)])
        let rest = Array(data[(67 + handleLength)...])
        // The certificate is a DER SEQUENCE with a two-byte length; the signature follows it.
        XCTAssertEqual(rest[0], 0x30); XCTAssertEqual(rest[1], 0x82)
        let certLength = 4 + (Int(rest[2]) << 8 | Int(rest[3]))
        let certificate = Array(rest[0..<certLength])
        let signature = Array(rest[certLength...])
        let signed: [UInt8] = [0x00] + app + challenge + keyHandle + publicKey
        XCTAssertTrue(IndependentVerifier.verifyWithCertificate(certificate, signature: signature, message: signed))
        return (publicKey, keyHandle)
    }

    func testVersion() throws {
        let harness = try AuthenticatorHarness()
        let (data, status) = u2f(harness, U2FAPDU(ins: 0x03))
        XCTAssertEqual(status, 0x9000)
        XCTAssertEqual(String(decoding: data, as: UTF8.self), "U2F_V2")
        // Short encoding with Le only.
        XCTAssertEqual(u2fRaw(harness, [0x00, 0x03, 0x00, 0x00, 0x00]).status, 0x9000)
        // Extended form with an explicit zero Lc, as python-fido2 sends it.
        XCTAssertEqual(u2fRaw(harness, [0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]).status, 0x9000)
        XCTAssertEqual(u2f(harness, U2FAPDU(ins: 0x03, data: [1])).status, 0x6700)
    }

    func testRegisterThenAuthenticateEnforceAndDontEnforce() throws {
        let harness = try AuthenticatorHarness()
        let (publicKey, keyHandle) = try register(harness)
        let body = challenge + application + [UInt8(keyHandle.count)] + keyHandle
        var lastCounter: UInt32 = 0
        for (control, expectedPresence) in [(UInt8(0x03), UInt8(0x01)), (0x08, 0x00)] {
            let (data, status) = u2f(harness, U2FAPDU(ins: 0x02, p1: control, data: body))
            XCTAssertEqual(status, 0x9000)
            XCTAssertEqual(data[0], expectedPresence)
            let counter = UInt32(data[1]) << 24 | UInt32(data[2]) << 16 | UInt32(data[3]) << 8 | UInt32(data[4])
            XCTAssertGreaterThan(counter, lastCounter)
            lastCounter = counter
            let signature = Array(data[5...])
            let signed = application + [data[0]] + Array(data[1..<5]) + challenge
            XCTAssertTrue(IndependentVerifier.verifyES256(x: Array(publicKey[1..<33]), y: Array(publicKey[33..<65]),
                                                          signature: signature, message: signed))
        }
    }

    func testCheckOnlyAndWrongApplication() throws {
        let harness = try AuthenticatorHarness()
        let (_, keyHandle) = try register(harness)
        let body = challenge + application + [UInt8(keyHandle.count)] + keyHandle
        XCTAssertEqual(u2f(harness, U2FAPDU(ins: 0x02, p1: 0x07, data: body)).status, 0x6985)
        let otherApp = challenge + SHA256.hash(Array("other".utf8)) + [UInt8(keyHandle.count)] + keyHandle
        XCTAssertEqual(u2f(harness, U2FAPDU(ins: 0x02, p1: 0x07, data: otherApp)).status, 0x6A80)
        XCTAssertEqual(u2f(harness, U2FAPDU(ins: 0x02, p1: 0x03, data: otherApp)).status, 0x6A80)
    }

    func testNoTouchIsConditionsNotSatisfied() throws {
        let presence = ScriptedPresence(.timedOut)
        let harness = try AuthenticatorHarness(presence: presence)
        XCTAssertEqual(u2f(harness, U2FAPDU(ins: 0x01, data: challenge + application)).status, 0x6985)
        XCTAssertEqual(presence.asked.first?.operation, .u2fRegister)
    }

    /// What `latchkey approve` binds an answer to: a U2F request names its application (as its
    /// RP ID hash) and its APDU data (as its fingerprint), so a repeat of the same APDU is the
    /// same request and another app's is not.
    func testPresenceRequestsNameTheApplicationAndTheAPDU() throws {
        let presence = ScriptedPresence(.timedOut)
        let harness = try AuthenticatorHarness(presence: presence)
        _ = u2f(harness, U2FAPDU(ins: 0x01, data: challenge + application))
        _ = u2f(harness, U2FAPDU(ins: 0x01, data: challenge + application))
        let other = SHA256.hash(Array("https://other.example".utf8))
        _ = u2f(harness, U2FAPDU(ins: 0x01, data: challenge + other))
        let asked = presence.asked
        XCTAssertEqual(asked.count, 3)
        XCTAssertEqual(asked[0].rpIDHash, application)
        XCTAssertEqual(asked[0].fingerprint, SHA256.hash(challenge + application))
        XCTAssertTrue(asked[0].isRepeated(by: asked[1]), "the client's next poll")
        XCTAssertFalse(asked[0].isRepeated(by: asked[2]), "another application")
    }

    func testBadClassInstructionAndLength() throws {
        let harness = try AuthenticatorHarness()
        XCTAssertEqual(u2f(harness, U2FAPDU(cla: 0x80, ins: 0x03)).status, 0x6E00)
        XCTAssertEqual(u2f(harness, U2FAPDU(ins: 0x44)).status, 0x6D00)
        XCTAssertEqual(u2f(harness, U2FAPDU(ins: 0x01, data: [1, 2, 3])).status, 0x6700)
        XCTAssertEqual(u2fRaw(harness, [0x00, 0x01]).status, 0x6700)
        XCTAssertEqual(u2fRaw(harness, [0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x40, 0x01]).status, 0x6700)
    }

    func testU2FKeyHandleWorksInCTAP2WithTheAppIDAsRPID() throws {
        let harness = try AuthenticatorHarness()
        let appID = "https://u2f.example"
        let (publicKey, keyHandle) = try register(harness, application: SHA256.hash(Array(appID.utf8)))
        let request = harness.assertionRequest(rpID: appID, allow: [keyHandle])
        let (status, body) = harness.send(.getAssertion, request.cborValue)
        XCTAssertEqual(status, .success)
        let key = COSEKey.ec2P256(algorithm: .es256, x: Array(publicKey[1..<33]), y: Array(publicKey[33..<65]))
        XCTAssertTrue(AuthenticatorHarness.verifyAssertion(try XCTUnwrap(body), publicKey: key, clientDataHash: request.clientDataHash))
    }
}
