import CBOR
import CTAP
import Encoding
import FIDOClient
import FIDOCrypto
import Foundation
import LinuxHID
import LatchkeyTestSupport
@testable import Rig
import SystemIO
@testable import WebDriver
import XCTest

/// The WebAuthn extension's commands answered by a real rig (keys on the socket transport, real
/// stores): the spec's defaults, values and error codes, and a key's life bound to its session.
final class VirtualAuthenticatorsTests: XCTestCase {
    var scratch: ScratchDirectory!
    var rig: Rig!
    var authenticators: VirtualAuthenticators!

    /// A P-256 key in PKCS#8, base64url.
    static let p256 = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgGIWYUzvk6Xy7J6zQcRbXpFS4FOa82dFK7e8QIVbWLsGhRANCAARPhgBngfs_GYC8BaXB2KG5RriHhlJl-iVGOh3UQ8hoRdjIQ41N3IUBw_6XPcWWfimu1-xTWGkS8zsh165aR8Zm"

    override func setUpWithError() throws {
        scratch = try ScratchDirectory()
        try FileManager.default.createDirectory(atPath: scratch.path + "/root", withIntermediateDirectories: true)
        let rig = Rig(root: scratch.path + "/root", uhidPath: "/nonexistent/uhid", logger: Logger(level: .error, sink: { _ in }))
        self.rig = rig
        authenticators = VirtualAuthenticators(transport: .socket(directory: scratch.path)) { rig.respond(to: $0) }
        authenticators.sessionStarted("s1")
    }

    override func tearDown() {
        rig.stop()
        scratch.remove()
    }

    /// The command's status and its value (or error object).
    func run(_ command: VirtualAuthenticatorCommand, session: String = "s1", _ body: String = "") throws -> (Int, JSONDocument) {
        let response = authenticators.answer(command, session: session, body: Array(body.utf8))
        let document = try XCTUnwrap(JSONDocument.parse(response.body), String(decoding: response.body, as: UTF8.self))
        XCTAssertEqual(response.headers["Content-Type"], "application/json; charset=utf-8")
        return (response.status, try XCTUnwrap(document["value"]))
    }

    func errorCode(_ result: (Int, JSONDocument)) -> String? { result.1["error"]?.stringValue }

    func addAuthenticator(_ body: String = #"{"protocol":"ctap2_1","transport":"usb"}"#) throws -> String {
        let (status, value) = try run(.addAuthenticator, body)
        XCTAssertEqual(status, 200, "\(value)")
        return try XCTUnwrap(value.stringValue, "Add Virtual Authenticator's value is the authenticatorId string")
    }

    func rigInfo(_ id: String) throws -> JSONDocument {
        let line = rig.respond(to: Array(#"{"v":1,"method":"listAuthenticators"}"#.utf8))
        guard case .array(let keys)? = JSONDocument.parse(line)?["result"]?["authenticators"] else { throw XCTSkip("no list") }
        return try XCTUnwrap(keys.first { $0["authenticatorId"]?.stringValue == id })
    }

    func testTheSpecsDefaultsNotTheRigs() throws {
        let id = try addAuthenticator()
        let info = try rigInfo(id)
        XCTAssertEqual(info["hasResidentKey"], .bool(false), "WebDriver's hasResidentKey defaults to false")
        XCTAssertEqual(info["hasUserVerification"], .bool(false))
        XCTAssertEqual(info["isUserConsenting"], .bool(true))
        XCTAssertEqual(info["extensions"], .array([.string("credProtect")]), "no extension but credProtect unless named")
        XCTAssertEqual(info["protocol"], .string("ctap2_1"))

        let named = try addAuthenticator(#"{"protocol":"ctap2_1","transport":"usb","hasResidentKey":true,"hasUserVerification":true,"#
                                         + #""isUserVerified":true,"extensions":["largeBlob","prf","credBlob","minPinLength"]}"#)
        guard case .array(let extensions)? = try rigInfo(named)["extensions"] else { return XCTFail("no extensions") }
        XCTAssertEqual(Set(extensions.compactMap { $0.stringValue }),
                       ["credProtect", "largeBlobKey", "hmac-secret", "hmac-secret-mc", "credBlob", "minPinLength"])
        let u2f = try addAuthenticator(#"{"protocol":"ctap1/u2f","transport":"usb","hasResidentKey":true}"#)
        XCTAssertEqual(try rigInfo(u2f)["protocol"], .string("u2f"), "hasResidentKey is ignored on a CTAP1 key, as Chromium does")
        let ctap2 = try addAuthenticator(#"{"protocol":"ctap2","transport":"usb"}"#)
        XCTAssertEqual(try rigInfo(ctap2)["protocol"], .string("ctap2_1"),
                       "ctap2 is a CTAP 2.1 key: a 2.0 key cannot say its user chose an account (userSelected)")
        XCTAssertEqual(authenticators.keys(of: "s1"), [id, named, u2f, ctap2])
    }

    func testAddAuthenticatorErrorsAreTheSpecs() throws {
        let cases: [(String, Int, String)] = [
            ("[1]", 400, "invalid argument"),
            (#"{"transport":"usb"}"#, 400, "invalid argument"),                                   // protocol has no default
            (#"{"protocol":"ctap2"}"#, 400, "invalid argument"),                                   // nor transport
            (#"{"protocol":"ctap3","transport":"usb"}"#, 400, "invalid argument"),
            (#"{"protocol":"ctap2","transport":"pigeon"}"#, 400, "invalid argument"),
            (#"{"protocol":"ctap2","transport":"nfc"}"#, 500, "unsupported operation"),           // valid, not a HID key
            (#"{"protocol":"ctap2","transport":"usb","hasResidentKey":"yes"}"#, 400, "invalid argument"),
            (#"{"protocol":"ctap2","transport":"usb","colour":"red"}"#, 400, "invalid argument"),    // not in the table
            (#"{"protocol":"ctap2_1","transport":"usb","extensions":["uvm"]}"#, 500, "unsupported operation"),
            (#"{"protocol":"ctap2_1","transport":"usb","extensions":"prf"}"#, 400, "invalid argument"),
            (#"{"protocol":"ctap2_1","transport":"usb","extensions":["largeBlob"]}"#, 400, "invalid argument"),  // without rk
            (#"{"protocol":"ctap2","transport":"usb","hasResidentKey":true,"extensions":["credBlob"]}"#, 400, "invalid argument"),
        ]
        for (body, status, code) in cases {
            let result = try run(.addAuthenticator, body)
            XCTAssertEqual(result.0, status, body)
            XCTAssertEqual(errorCode(result), code, body)
            XCTAssertFalse(result.1["message"]?.stringValue?.isEmpty ?? true, "a message says what is wrong: \(body)")
        }
        XCTAssertEqual(authenticators.keys(of: "s1"), [], "no key was added for a refused command")
    }

    func testCredentialsThroughTheirLife() throws {
        let id = try addAuthenticator(#"{"protocol":"ctap2_1","transport":"usb","hasResidentKey":true}"#)
        let credential = #"{"credentialId":"AQIDBA","isResidentCredential":true,"rpId":"localhost","privateKey":"\#(Self.p256)","#
            + #""userHandle":"dXNlcg==","signCount":41,"userName":"alice"}"#
        XCTAssertEqual(try run(.addCredential(id), credential).0, 200)
        let (status, listed) = try run(.getCredentials(id))
        XCTAssertEqual(status, 200)
        guard case .array(let credentials) = listed else { return XCTFail("\(listed)") }
        XCTAssertEqual(credentials.count, 1)
        let first = try XCTUnwrap(credentials.first)
        XCTAssertEqual(first["credentialId"], .string("AQIDBA"))
        XCTAssertEqual(first["isResidentCredential"], .bool(true))
        XCTAssertEqual(first["rpId"], .string("localhost"))
        XCTAssertEqual(first["userHandle"], .string("dXNlcg"), "base64url without padding, whatever came in")
        XCTAssertEqual(first["userName"], .string("alice"))
        XCTAssertNotNil(first["privateKey"]?.stringValue)
        XCTAssertEqual(first["backupEligibility"], .bool(false))
        XCTAssertNil(first["authenticatorId"], "only the spec's members")

        XCTAssertEqual(errorCode(try run(.addCredential(id), #"{"credentialId":"AQIDBQ","rpId":"localhost","privateKey":"x","signCount":0}"#)),
                       "invalid argument", "isResidentCredential is required")
        XCTAssertEqual(errorCode(try run(.addCredential(id), #"{"credentialId":"AQIDBQ","isResidentCredential":false,"rpId":"localhost","#
                                         + #""privateKey":"\#(Self.p256)","signCount":-1}"#)), "invalid argument")
        XCTAssertEqual(errorCode(try run(.addCredential(id), #"{"credentialId":"AQIDBQ","isResidentCredential":false,"rpId":"localhost","#
                                         + #""privateKey":"bm90IGEga2V5","signCount":0}"#)), "invalid argument", "not PKCS#8")
        XCTAssertEqual(try run(.setCredentialProperties(id, credentialID: "AQIDBA"), #"{"backupEligibility":true,"backupState":true}"#).0, 200)
        XCTAssertEqual(errorCode(try run(.setCredentialProperties(id, credentialID: "AQIDBA"), #"{"backupState":1}"#)), "invalid argument")
        guard case .array(let after) = try run(.getCredentials(id)).1 else { return XCTFail() }
        XCTAssertEqual(after.first?["backupState"], .bool(true))

        XCTAssertEqual(errorCode(try run(.removeCredential(id, credentialID: "BBBB"))), "invalid argument", "an unknown credential")
        XCTAssertEqual(try run(.removeCredential(id, credentialID: "AQIDBA")).0, 200)
        XCTAssertEqual(try run(.getCredentials(id)).1, .array([]))
        XCTAssertEqual(try run(.addCredential(id), credential).0, 200)
        XCTAssertEqual(try run(.removeAllCredentials(id)).0, 200)
        XCTAssertEqual(try run(.getCredentials(id)).1, .array([]))
    }

    func testUserVerifiedAndAKeysSession() throws {
        let id = try addAuthenticator(#"{"protocol":"ctap2","transport":"usb","hasUserVerification":true}"#)
        XCTAssertEqual(try run(.setUserVerified(id), #"{"isUserVerified":true}"#).0, 200)
        XCTAssertEqual(errorCode(try run(.setUserVerified(id), #"{"isUserVerified":"yes"}"#)), "invalid argument")
        XCTAssertEqual(errorCode(try run(.setUserVerified(id), "")), "invalid argument", "parameters are required")

        authenticators.sessionStarted("s2")
        XCTAssertEqual(errorCode(try run(.getCredentials(id), session: "s2")), "invalid argument", "another session's key is not there")
        XCTAssertEqual(errorCode(try run(.getCredentials(id), session: "nobody")), "invalid session id")
        XCTAssertEqual(try run(.getCredentials(id), session: "nobody").0, 404)

        authenticators.sessionEnded("s1")
        XCTAssertFalse(authenticators.isKnown(session: "s1"))
        let line = rig.respond(to: Array(#"{"v":1,"method":"listAuthenticators"}"#.utf8))
        XCTAssertEqual(JSONDocument.parse(line)?["result"]?["authenticators"], .array([]), "the session's keys went with it")
    }

    /// A virtual authenticator keeps every credential it makes: Get Credentials lists a
    /// non-resident one a client made, with its key and counter, as WebDriver's do.
    func testNonResidentCredentialsAKeyMakesAreListed() throws {
        let id = try addAuthenticator(#"{"protocol":"ctap2","transport":"usb"}"#)
        let path = try XCTUnwrap(try rigInfo(id)["socketPath"]?.stringValue)
        let client = CTAPHIDClient(link: try SocketClient(path: path), replyTimeoutMilliseconds: 5_000)
        _ = try client.initialize()
        let request = MakeCredentialRequest(
            clientDataHash: SHA256.hash([1]), rp: RelyingPartyEntity(id: "localhost", name: nil),
            user: UserEntity(id: [4, 2], name: "dana", displayName: nil), pubKeyCredParams: [CredentialParameters(algorithm: -7)],
            excludeList: [], extensions: .init(), options: RequestOptions())
        let response = try client.cbor([CTAPCommand.makeCredential.rawValue] + request.cborValue.encoded())
        XCTAssertEqual(response.first, CTAP2StatusCode.success.rawValue)
        let authData = try XCTUnwrap(try CBORDecoder.decode(Array(response.dropFirst()))[2]?.bytesValue)
        let idLength = Int(authData[53]) << 8 | Int(authData[54])
        let credentialID = Array(authData[55..<55 + idLength])
        guard case .array(let listed) = try run(.getCredentials(id)).1 else { return XCTFail("no list") }
        XCTAssertEqual(listed.count, 1)
        XCTAssertEqual(listed.first?["credentialId"], .string(Base64URL.encode(credentialID)))
        XCTAssertEqual(listed.first?["isResidentCredential"], .bool(false))
        XCTAssertEqual(listed.first?["rpId"], .string("localhost"))
        XCTAssertNil(listed.first?["userHandle"], "a non-resident credential names no user")
        XCTAssertNotNil(listed.first?["privateKey"]?.stringValue)
    }

    /// Latchkey's vendor command: a rig request on one of the session's own keys only.
    func testRigRequestsReachOnlyTheSessionsKeys() throws {
        let id = try addAuthenticator(#"{"protocol":"ctap2_1","transport":"usb","hasResidentKey":true}"#)
        XCTAssertEqual(try run(.addCredential(id), #"{"credentialId":"AQIDBA","isResidentCredential":true,"rpId":"localhost","#
                               + #""privateKey":"\#(Self.p256)","userHandle":"dXNlcg","signCount":0}"#).0, 200)
        func rig(_ body: String, session: String = "s1") throws -> (Int, JSONDocument) {
            let response = authenticators.rigRequest(session: session, body: Array(body.utf8))
            return (response.status, try XCTUnwrap(JSONDocument.parse(response.body)?["value"]))
        }
        let selected = try rig(#"{"method":"selectCredential","params":{"authenticatorId":"\#(id)","rpId":"localhost","credentialId":"AQIDBA"}}"#)
        XCTAssertEqual(selected.0, 200)
        XCTAssertEqual(selected.1, .object([:]))
        let fault = try rig(#"{"method":"injectFault","params":{"authenticatorId":"\#(id)","command":"getAssertion","fault":"status","status":46}}"#)
        XCTAssertEqual(fault.1["faultId"], .number(1))
        XCTAssertEqual(try rig(#"{"method":"getCredential","params":{"authenticatorId":"\#(id)","credentialId":"AQIDBA"}}"#).1["rpId"],
                       .string("localhost"))
        XCTAssertEqual(try rig(#"{"method":"removeAuthenticator","params":{"authenticatorId":"\#(id)"}}"#).1["error"],
                       .string("invalid argument"), "keys go with the WebAuthn commands")
        XCTAssertEqual(try rig(#"{"method":"powerCycle","params":{"authenticatorId":"k999"}}"#).1["error"], .string("invalid argument"))
        authenticators.sessionStarted("s2")
        XCTAssertEqual(try rig(#"{"method":"powerCycle","params":{"authenticatorId":"\#(id)"}}"#, session: "s2").1["error"],
                       .string("invalid argument"), "another session's key")
        XCTAssertEqual(try rig(#"{"method":"powerCycle"}"#, session: "nobody").0, 404)
        XCTAssertEqual(try rig(#"{"method":"injectFault","params":{"authenticatorId":"\#(id)","command":"frob","fault":"status"}}"#).1["error"],
                       .string("invalid argument"), "the rig's invalidParams")
    }

    func testRemovedAuthenticatorIsGone() throws {
        let id = try addAuthenticator()
        XCTAssertEqual(try run(.removeAuthenticator(id)).0, 200)
        XCTAssertEqual(errorCode(try run(.removeAuthenticator(id))), "invalid argument")
        XCTAssertEqual(authenticators.keys(of: "s1"), [])
    }

    func testRoutes() {
        func route(_ method: String, _ path: String) -> WebDriverRoute {
            WebDriverRoute(method: method, segments: HTTPRequest(method: method, target: path).pathSegments!)
        }
        XCTAssertEqual(route("POST", "/session"), .newSession)
        XCTAssertEqual(route("DELETE", "/session/s"), .deleteSession("s"))
        XCTAssertEqual(route("GET", "/session/s/url"), .forward)
        XCTAssertEqual(route("GET", "/status"), .forward)
        XCTAssertEqual(route("POST", "/session/s/webauthn/authenticator"), .virtualAuthenticator(session: "s", .addAuthenticator))
        XCTAssertEqual(route("DELETE", "/session/s/webauthn/authenticator/k1"), .virtualAuthenticator(session: "s", .removeAuthenticator("k1")))
        XCTAssertEqual(route("POST", "/session/s/webauthn/authenticator/k1/credential"), .virtualAuthenticator(session: "s", .addCredential("k1")))
        XCTAssertEqual(route("GET", "/session/s/webauthn/authenticator/k1/credentials"), .virtualAuthenticator(session: "s", .getCredentials("k1")))
        XCTAssertEqual(route("DELETE", "/session/s/webauthn/authenticator/k1/credentials"),
                       .virtualAuthenticator(session: "s", .removeAllCredentials("k1")))
        XCTAssertEqual(route("DELETE", "/session/s/webauthn/authenticator/k1/credentials/AQID%3D"),
                       .virtualAuthenticator(session: "s", .removeCredential("k1", credentialID: "AQID=")))
        XCTAssertEqual(route("POST", "/session/s/webauthn/authenticator/k1/uv"), .virtualAuthenticator(session: "s", .setUserVerified("k1")))
        XCTAssertEqual(route("POST", "/session/s/webauthn/authenticator/k1/credentials/AQID/props"),
                       .virtualAuthenticator(session: "s", .setCredentialProperties("k1", credentialID: "AQID")))
        XCTAssertEqual(route("GET", "/session/s/webauthn/authenticator"), .unknownWebAuthn(session: "s", methodAllowed: true))
        XCTAssertEqual(route("PUT", "/session/s/webauthn/authenticator/k1/credentials"), .unknownWebAuthn(session: "s", methodAllowed: true))
        XCTAssertEqual(route("POST", "/session/s/webauthn/frobnicate"), .unknownWebAuthn(session: "s", methodAllowed: false))
        XCTAssertEqual(route("POST", "/session/s/latchkey/rig"), .rigRequest(session: "s"))
        XCTAssertEqual(route("GET", "/session/s/latchkey/rig"), .unknownWebAuthn(session: "s", methodAllowed: true))
    }
}
