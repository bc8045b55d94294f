import Authenticator
import CBOR
import CredentialStore
import CTAP
import Encoding
import FIDOClient
import FIDOCrypto
import Foundation
import LatchkeyTestSupport
import Presence
import SignalBridge
import SystemIO
import XCTest

/// The passkey provider's WebAuthn client in the native host: `clientDataJSON`, the client rules
/// (origin, RP ID, user handle, UV, excludeCredentials, allowCredentials) and the credentials it
/// returns, against a real Authenticator on a real SQLite store (the session reads the same
/// store for its account menu).
final class PasskeyProviderTests: XCTestCase {
    private var directory: ShortTempDirectory!
    private var store: SQLiteCredentialStore!
    private var keyOpened = 0
    private var timeouts: [UInt64] = []

    override func setUpWithError() throws {
        directory = try ShortTempDirectory()
        store = try SQLiteCredentialStore.open(directory: directory.path + "/store")
    }

    override func tearDown() {
        store?.close()
    }

    /// A session whose key is an Authenticator on the test's store (`builtInUV`: `serve --uv auto`).
    private func session(builtInUV: Bool = true, pin: String? = nil) throws -> NativeHostSession {
        let logger = Logger(level: .error)
        let authenticator = try Authenticator(store: store, presence: AutoPresence(logger: logger),
                                              userVerification: builtInUV ? AutoVerification(logger: logger) : nil,
                                              clock: TickingClock())
        if let pin {   // set as `latchkey pin set` sets it, over CTAP
            var bytes = Array(pin.utf8)
            try RemoteAuthenticator(link: InProcessLink(label: "test key") { authenticator.handleCTAP2($0, context: RequestContext(channel: 1)) })
                .setPIN(PIN(consuming: &bytes))
        }
        return NativeHostSession(openStore: NativeHostTests.reopening(store.directory),
                                 loadSuffixes: { PublicSuffixList(rules: "com\nexample\n") },
                                 openKey: { [unowned self] (timeout: UInt64) throws(SignalFailure) -> CTAP2Link in
            timeouts.append(timeout)
            keyOpened += 1
            return InProcessLink(label: "test key") { authenticator.handleCTAP2($0, context: RequestContext(channel: 1)) }
        }, now: { 0 })
    }

    private func send(_ session: NativeHostSession, _ json: String) throws -> [String: Any] {
        let (reply, understood) = session.handle(Array(json.utf8))
        XCTAssertTrue(understood)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any])
    }

    private func creation(rpID: String? = "example.com", userID: [UInt8] = Array("alice-id".utf8),
                          residentKey: String = "required", uv: String = "preferred", exclude: [[UInt8]] = [],
                          extra: String = "") -> String {
        let rp = rpID.map { #"{"id": "\#($0)", "name": "Example"}"# } ?? #"{"name": "Example"}"#
        let excludes = exclude.map { #"{"type": "public-key", "id": "\#(Base64URL.encode($0))"}"# }.joined(separator: ",")
        return #"{"rp": \#(rp), "user": {"id": "\#(Base64URL.encode(userID))", "name": "alice@example.com", "displayName": "Alice"}, "challenge": "\#(Base64URL.encode(Array(repeating: 7, count: 32)))", "pubKeyCredParams": [{"type": "public-key", "alg": -7}], "excludeCredentials": [\#(excludes)], "authenticatorSelection": {"residentKey": "\#(residentKey)", "userVerification": "\#(uv)"}, "extensions": {"credProps": true}\#(extra)}"#
    }

    private func create(_ session: NativeHostSession, origin: String = "https://login.example.com",
                        _ options: String) throws -> [String: Any] {
        try send(session, #"{"id": 1, "type": "create", "origin": "\#(origin)", "options": \#(options)}"#)
    }

    private func bytes(_ value: Any?) throws -> [UInt8] {
        try XCTUnwrap(Base64URL.decode(XCTUnwrap(value as? String)))
    }

    // MARK: - clientDataJSON

    func testClientDataJSONIsTheSpecificationsSerialization() {
        // WebAuthn L3 §5.8.1.1: type, challenge, origin, crossOrigin, in that order, no spaces.
        let text = String(decoding: ClientDataJSON.serialize(.get, challenge: [0xFB, 0xFF, 0x01], origin: "https://example.com"),
                          as: UTF8.self)
        XCTAssertEqual(text, #"{"type":"webauthn.get","challenge":"-_8B","origin":"https://example.com","crossOrigin":false}"#)
        let created = String(decoding: ClientDataJSON.serialize(.create, challenge: [], origin: "http://localhost:8765"), as: UTF8.self)
        XCTAssertEqual(created, #"{"type":"webauthn.create","challenge":"","origin":"http://localhost:8765","crossOrigin":false}"#)
        let framed = String(decoding: ClientDataJSON.serialize(.get, challenge: [1], origin: "https://a.example", crossOrigin: true,
                                                               topOrigin: "https://top.example"), as: UTF8.self)
        XCTAssertTrue(framed.hasSuffix(#","crossOrigin":true,"topOrigin":"https://top.example"}"#), framed)
    }

    func testCCDToStringEscapesOnlyWhatTheSpecificationEscapes() throws {
        XCTAssertEqual(ClientDataJSON.ccdToString("a\"b\\c"), #""a\"b\\c""#)
        XCTAssertEqual(ClientDataJSON.ccdToString("\u{0}\u{1F}\n"), #""\u0000\u001f\u000a""#)
        // U+007F and non-ASCII stay as themselves (a JSON encoder might escape them).
        XCTAssertEqual(ClientDataJSON.ccdToString("\u{7F}é🔑"), "\"\u{7F}é🔑\"")
        // Whatever it writes is JSON that reads back as the same string (Foundation's parser).
        for sample in ["", "plain", "tab\there", "quote\"back\\slash", "\u{1}\u{2}\u{7F}\u{80}", "emoji 🔑 ü"] {
            let parsed = try JSONSerialization.jsonObject(with: Data(ClientDataJSON.ccdToString(sample).utf8),
                                                          options: .fragmentsAllowed) as? String
            XCTAssertEqual(parsed, sample)
        }
    }

    // MARK: - create()

    func testCreateMakesAPasskeyOnTheKeyAndAnswersAsABrowserWould() throws {
        let session = try session()
        let reply = try create(session, creation())
        XCTAssertEqual(reply["ok"] as? Bool, true, "\(reply)")
        let credential = try XCTUnwrap(reply["credential"] as? [String: Any])
        let id = try bytes(credential["id"])
        XCTAssertEqual(credential["rawId"] as? String, credential["id"] as? String)
        XCTAssertEqual(credential["type"] as? String, "public-key")
        XCTAssertEqual(credential["authenticatorAttachment"] as? String, "cross-platform")
        XCTAssertEqual((credential["clientExtensionResults"] as? [String: Any])?["credProps"] as? [String: Bool], ["rk": true])
        let response = try XCTUnwrap(credential["response"] as? [String: Any])
        let clientData = try bytes(response["clientDataJSON"])
        XCTAssertEqual(String(decoding: clientData, as: UTF8.self),
                       #"{"type":"webauthn.create","challenge":"\#(Base64URL.encode(Array(repeating: 7, count: 32)))","origin":"https://login.example.com","crossOrigin":false}"#)
        XCTAssertEqual(response["transports"] as? [String], ["usb"])
        XCTAssertEqual(response["publicKeyAlgorithm"] as? Int, -7)
        // attestation "none": the statement is dropped, authData kept byte for byte.
        let attestation = try CBORDecoder.decode(bytes(response["attestationObject"]))
        XCTAssertEqual(attestation["fmt"]?.stringValue, "none")
        XCTAssertEqual(attestation["attStmt"], .map([:]))
        let authDataBytes = try XCTUnwrap(attestation["authData"]?.bytesValue)
        XCTAssertEqual(try bytes(response["authenticatorData"]), authDataBytes)
        let authData = try AuthenticatorData(decoding: authDataBytes)
        XCTAssertEqual(authData.rpIDHash, FIDOCrypto.SHA256.hash(Array("example.com".utf8)))
        XCTAssertTrue(authData.flags.contains([.userPresent, .userVerified]))
        XCTAssertEqual(authData.attestedCredentialData?.credentialID, id)
        // getPublicKey(): SubjectPublicKeyInfo of the same P-256 point as the COSE key.
        guard case let .ec2P256(_, x, y)? = COSEKey(try XCTUnwrap(authData.attestedCredentialData?.publicKey)) else {
            return XCTFail("not a P-256 key")
        }
        XCTAssertEqual(try bytes(response["publicKey"]),
                       hexBytes("3059301306072a8648ce3d020106082a8648ce3d030107034200") + [0x04] + x + y)
        // The key keeps it as a discoverable credential of example.com for alice.
        let stored = try XCTUnwrap(store.residentCredential(id: id))
        XCTAssertEqual(stored.userName, "alice@example.com")
        XCTAssertEqual(stored.rpID, "example.com")
    }

    /// The reply's text as the extension receives it: compact, its members in toJSON()'s order.
    func testTheRepliesCredentialJSONIsCompactAndInToJSONsOrder() throws {
        let session = try session()
        let made = session.handle(Array(#"{"id": 1, "type": "create", "origin": "https://login.example.com", "options": \#(creation())}"#.utf8)).reply
        let b64 = "[A-Za-z0-9_-]+"
        let created = #"^\{"id":1,"ok":true,"credential":\{"id":"(B)","rawId":"\1","response":\{"clientDataJSON":"B","authenticatorData":"B","transports":\["usb"\],"publicKey":"B","publicKeyAlgorithm":-7,"attestationObject":"B"\},"authenticatorAttachment":"cross-platform","clientExtensionResults":\{"credProps":\{"rk":true\}\},"type":"public-key"\}\}$"#
            .replacingOccurrences(of: "B", with: b64)
        XCTAssertNotNil(made.range(of: created, options: .regularExpression), made)
        let challenge = Base64URL.encode(Array(repeating: 9, count: 32))
        let got = session.handle(Array(#"{"id": 2, "type": "get", "origin": "https://login.example.com", "options": {"challenge": "\#(challenge)", "rpId": "example.com"}}"#.utf8)).reply
        let asserted = #"^\{"id":2,"ok":true,"credential":\{"id":"(B)","rawId":"\1","response":\{"clientDataJSON":"B","authenticatorData":"B","signature":"B","userHandle":"B"\},"authenticatorAttachment":"cross-platform","clientExtensionResults":\{\},"type":"public-key"\}\}$"#
            .replacingOccurrences(of: "B", with: b64)
        XCTAssertNotNil(got.range(of: asserted, options: .regularExpression), got)
    }

    func testCreateRefusesWhatABrowserRefusesAndLeavesTheStoreAlone() throws {
        let session = try session()
        let cases: [(origin: String, options: String, error: String)] = [
            ("https://login.example.com", creation(rpID: "com"), "SecurityError"),            // a public suffix
            ("https://login.example.com", creation(rpID: "other.example"), "SecurityError"),  // not a suffix of the host
            ("https://example.com", creation(rpID: "login.example.com"), "SecurityError"),    // below the host
            ("http://example.com", creation(rpID: "example.com"), "SecurityError"),           // not a secure origin
            ("https://127.0.0.1", creation(rpID: nil), "SecurityError"),                      // an IP address
            ("https://login.example.com", creation(userID: Array(repeating: 1, count: 65)), "TypeError"),
            ("https://login.example.com", creation(userID: []), "TypeError"),
            ("https://login.example.com", #"{"rp": {"name": "x"}}"#, "TypeError"),
        ]
        for (origin, options, error) in cases {
            let reply = try create(session, origin: origin, options)
            XCTAssertEqual(reply["ok"] as? Bool, false, "\(origin) \(options)")
            XCTAssertEqual(reply["error"] as? String, error, "\(origin) \(options): \(reply)")
        }
        XCTAssertEqual(try store.residentCredentialCount(), 0)
        XCTAssertEqual(keyOpened, 0, "no refused request reached the key")
    }

    func testRPIDDefaultsToTheOriginsHostAndMayBeARegistrableSuffix() throws {
        let session = try session()
        for (origin, rpID, expected) in [("https://login.example.com", nil, "login.example.com"),
                                         ("https://login.example.com", "example.com", "example.com"),
                                         ("http://localhost:8765", nil, "localhost")] {
            let reply = try create(session, origin: origin, creation(rpID: rpID, userID: Array((origin + (rpID ?? "")).utf8.prefix(64))))
            XCTAssertEqual(reply["ok"] as? Bool, true, "\(origin) \(rpID ?? "-"): \(reply)")
            let id = try bytes((reply["credential"] as? [String: Any])?["id"])
            XCTAssertEqual(try store.residentCredential(id: id)?.rpID, expected)
        }
    }

    func testExcludedCredentialIsInvalidStateAndNothingIsReplaced() throws {
        let session = try session()
        let first = try bytes((try create(session, creation())["credential"] as? [String: Any])?["id"])
        let reply = try create(session, creation(userID: Array("bob-id".utf8), exclude: [first]))
        XCTAssertEqual(reply["error"] as? String, "InvalidStateError", "\(reply)")
        XCTAssertEqual(try store.residentCredentialCount(), 1)
    }

    func testAnExcludeListLongerThanTheKeysIsProbedInBatches() throws {
        let session = try session()
        let alice = try bytes((try create(session, creation())["credential"] as? [String: Any])?["id"])
        // 20 IDs (the key takes 8 a list), alice's last, plus one too long to be any key's.
        let strangers = (0..<19).map { [UInt8](repeating: UInt8($0), count: 48) } + [[UInt8](repeating: 9, count: 200)]
        let excluded = try create(session, creation(userID: Array("bob-id".utf8), exclude: strangers + [alice]))
        XCTAssertEqual(excluded["error"] as? String, "InvalidStateError", "\(excluded)")
        let made = try create(session, creation(userID: Array("bob-id".utf8), exclude: strangers))
        XCTAssertEqual(made["ok"] as? Bool, true, "none of 20 strangers is the key's: \(made)")
        XCTAssertEqual(try store.residentCredentialCount(), 2)
    }

    func testAccountsListProtectedPasskeysByTheVerificationPerformedNotTheKeysAbility() throws {
        // Three passkeys at one RP, credProtect 1, 2 and 3, on a key that verifies users itself:
        // before any verification the list is what the key would answer without UV.
        let maker = try session()
        var ids: [[UInt8]] = []
        for (user, level) in [("alice", CredentialProtectionPolicy.userVerificationOptional),
                              ("bob", .userVerificationOptionalWithCredentialIDList), ("carol", .userVerificationRequired)] {
            let id = try bytes((try create(maker, creation(userID: Array("\(user)-id".utf8)))["credential"]
                                as? [String: Any])?["id"])
            var credential = try XCTUnwrap(store.residentCredential(id: id))
            credential.credProtect = level
            try store.saveResidentCredential(credential)
            ids.append(id)
        }
        func listed(_ uv: String, allow: [[UInt8]]) throws -> [String] {
            let descriptors = allow.map { #"{"type": "public-key", "id": "\#(Base64URL.encode($0))"}"# }.joined(separator: ",")
            let ask = #"{"id": 9, "type": "accounts", "origin": "https://login.example.com", "rpId": "example.com", "#
                + #""userVerification": "\#(uv)", "allowCredentials": [\#(descriptors)]}"#
            let reply = try send(try session(builtInUV: true), ask)
            return try XCTUnwrap(reply["accounts"] as? [[String: String]], "\(reply)").compactMap { $0["credentialId"] }
        }
        let (alice, bob, carol) = (Base64URL.encode(ids[0]), Base64URL.encode(ids[1]), Base64URL.encode(ids[2]))
        for uv in ["required", "preferred", "discouraged"] {
            XCTAssertEqual(try listed(uv, allow: []), [alice], "no list, \(uv): level 1 only, whatever the key could verify")
            XCTAssertEqual(try listed(uv, allow: ids), [alice, bob], "a list naming all three, \(uv): level 3 never before UV")
            XCTAssertEqual(try listed(uv, allow: [ids[1]]), [bob], "a list naming bob: bob only")
            XCTAssertEqual(try listed(uv, allow: [ids[2]]), [], "a list naming carol (level 3): nothing")
        }
        XCTAssertFalse(try listed("required", allow: ids + [[9, 9, 9]]).contains(carol), "carol is never listed before UV")
        // After the key verified the person in this ceremony (`verify`), all three are.
        let verified = try send(try session(builtInUV: true), #"{"id": 9, "type": "accounts", "origin": "https://login.example.com", "rpId": "example.com", "verify": true}"#)
        XCTAssertEqual((verified["accounts"] as? [[String: String]])?.compactMap { $0["credentialId"] }, [alice, bob, carol], "\(verified)")
        XCTAssertEqual(verified["verified"] as? Bool, true)
        // A key that verifies by its PIN: verify asks for it first, and lists only with the right one.
        store.close()
        store = try SQLiteCredentialStore.open(directory: directory.path + "/store")
        let pinKey = try session(builtInUV: false, pin: "2468")
        let asked = try send(pinKey, #"{"id": 9, "type": "accounts", "origin": "https://login.example.com", "rpId": "example.com", "verify": true}"#)
        XCTAssertEqual((asked["pin"] as? [String: Any])?["state"] as? String, "required", "\(asked)")
        XCTAssertNil(asked["accounts"])
        let withPIN = try send(pinKey, #"{"id": 9, "type": "accounts", "origin": "https://login.example.com", "rpId": "example.com", "verify": true, "pin": "2468"}"#)
        XCTAssertEqual((withPIN["accounts"] as? [[String: String]])?.count, 3, "\(withPIN)")
    }

    func testUVRequiredOnAKeyWithoutBuiltInUVIsRefusedBeforeTheKeyActs() throws {
        let session = try session(builtInUV: false)
        let reply = try create(session, creation(uv: "required"))
        XCTAssertEqual(reply["error"] as? String, "NotAllowedError", "\(reply)")
        XCTAssertEqual(try store.residentCredentialCount(), 0)
        // Preferred is served without UV: the flag says so.
        let made = try create(session, creation(uv: "preferred"))
        let response = try XCTUnwrap((made["credential"] as? [String: Any])?["response"] as? [String: Any])
        let authData = try AuthenticatorData(decoding: bytes(response["authenticatorData"]))
        XCTAssertFalse(authData.flags.contains(.userVerified))
    }

    func testAKeyWithAPINGetsItFromTheWindowAndSaysHowManyTriesAreLeft() throws {
        // The desktop key's default: a PIN, no built-in UV. A browser asks for the PIN for
        // "required" and "preferred" alike; the host asks the extension's window for it.
        let session = try session(builtInUV: false, pin: "2468")
        func made(_ pin: String?, uv: String = "preferred", user: String = "alice-id") throws -> [String: Any] {
            let member = pin.map { #", "pin": "\#($0)""# } ?? ""
            return try send(session, #"{"id": 1, "type": "create", "origin": "https://login.example.com"\#(member), "options": \#(creation(userID: Array(user.utf8), uv: uv))}"#)
        }
        func need(_ reply: [String: Any]) -> [String: Int?]? {
            guard let pin = reply["pin"] as? [String: Any], let state = pin["state"] as? String else { return nil }
            return [state: pin["retries"] as? Int]
        }
        let asked = try made(nil)
        XCTAssertEqual(asked["error"] as? String, "NotAllowedError", "a page that never gets a PIN sees NotAllowedError")
        XCTAssertEqual(need(asked), ["required": 8])
        XCTAssertEqual((asked["pin"] as? [String: Any])?["minLength"] as? Int, 4)
        XCTAssertEqual(need(try made(nil, uv: "required")), ["required": 8])
        XCTAssertEqual(need(try made("1357")), ["wrong": 7], "a wrong PIN uses one try")
        XCTAssertEqual(need(try made("12")), ["tooShort": 7], "a PIN under the key's minimum is not sent: no try used")
        XCTAssertEqual(try store.residentCredentialCount(), 0)
        let reply = try made("2468")
        let response = try XCTUnwrap((reply["credential"] as? [String: Any])?["response"] as? [String: Any], "\(reply)")
        XCTAssertTrue(try AuthenticatorData(decoding: bytes(response["authenticatorData"])).flags.contains(.userVerified))
        XCTAssertNil(reply["pin"])
        // The right PIN restored the tries; a sign-in with it is verified too.
        let id = try bytes((reply["credential"] as? [String: Any])?["id"])
        let challenge = Base64URL.encode(Array(repeating: 5, count: 32))
        let signedIn = try send(session, #"{"id": 2, "type": "get", "origin": "https://login.example.com", "pin": "2468", "credentialId": "\#(Base64URL.encode(id))", "options": {"challenge": "\#(challenge)", "rpId": "example.com", "userVerification": "required"}}"#)
        let assertion = try XCTUnwrap((signedIn["credential"] as? [String: Any])?["response"] as? [String: Any], "\(signedIn)")
        XCTAssertTrue(try AuthenticatorData(decoding: bytes(assertion["authenticatorData"])).flags.contains(.userVerified))
        // "discouraged" asks for nothing where the key allows it (a non-discoverable credential:
        // makeCredUvNotRqd); a discoverable one on a key with a PIN is verified anyway, as
        // Chromium does (CTAP 2.1 §6.1.2).
        let options = creation(userID: Array("bob-id".utf8), residentKey: "discouraged", uv: "discouraged")
        XCTAssertEqual(try send(session, #"{"id": 3, "type": "create", "origin": "https://login.example.com", "options": \#(options)}"#)["ok"] as? Bool, true)
        XCTAssertEqual(need(try made(nil, uv: "discouraged", user: "dave-id")), ["required": 8])
        // Three wrong PINs in a row: the key wants a power cycle; no further PIN is taken.
        _ = try made("0000", user: "carol-id"); _ = try made("0000", user: "carol-id")
        XCTAssertEqual(need(try made("0000", user: "carol-id")).map { Array($0.keys) }, ["powerCycle"])
        XCTAssertEqual(try made("2468", user: "carol-id")["pin"].flatMap { ($0 as? [String: Any])?["state"] as? String }, "powerCycle")
    }

    func testPRFThroughTheKeysHMACSecretAndCredBlobAndCredProtect() throws {
        let session = try session()
        let first = Base64URL.encode(Array("salt one".utf8)), second = Base64URL.encode(Array("salt two".utf8))
        let extra = #", "extensions": {"credProps": true, "prf": {"eval": {"first": "\#(first)"}}, "credBlob": "AQID", "#
            + #""credentialProtectionPolicy": "userVerificationOptionalWithCredentialIDList"}"#
        let made = try create(session, creation().replacingOccurrences(of: #", "extensions": {"credProps": true}"#, with: extra))
        let credential = try XCTUnwrap(made["credential"] as? [String: Any], "\(made)")
        let outputs = try XCTUnwrap(credential["clientExtensionResults"] as? [String: Any])
        let prf = try XCTUnwrap(outputs["prf"] as? [String: Any])
        XCTAssertEqual(prf["enabled"] as? Bool, true)
        XCTAssertEqual(outputs["credBlob"] as? Bool, true)
        let id = try bytes(credential["id"])
        XCTAssertEqual(try store.residentCredential(id: id)?.credProtect, .userVerificationOptionalWithCredentialIDList)
        XCTAssertEqual(try store.residentCredential(id: id)?.credBlob, [1, 2, 3])

        func signIn(_ prf: String, credBlob: Bool = false) throws -> [String: Any] {
            let blob = credBlob ? #", "getCredBlob": true"# : ""
            let reply = try send(session, #"{"id": 2, "type": "get", "origin": "https://login.example.com", "credentialId": "\#(Base64URL.encode(id))", "options": {"challenge": "AAAA", "rpId": "example.com", "allowCredentials": [{"type": "public-key", "id": "\#(Base64URL.encode(id))"}], "extensions": {"prf": \#(prf)\#(blob)}}}"#)
            return try XCTUnwrap((reply["credential"] as? [String: Any])?["clientExtensionResults"] as? [String: Any], "\(reply)")
        }
        func results(_ outputs: [String: Any]) throws -> [String: String] {
            try XCTUnwrap((outputs["prf"] as? [String: Any])?["results"] as? [String: String], "\(outputs)")
        }
        let once = try results(signIn(#"{"eval": {"first": "\#(first)", "second": "\#(second)"}}"#))
        let again = try results(signIn(#"{"eval": {"first": "\#(first)"}}"#))
        XCTAssertEqual(once["first"], again["first"], "the same input gives the same output (a new shared secret each time)")
        XCTAssertNil(again["second"])
        XCTAssertNotEqual(once["first"], once["second"])
        XCTAssertEqual(try bytes(once["first"]).count, 32)
        // evalByCredential wins for the credential it names; eval for the others.
        let byCredential = try results(signIn(#"{"eval": {"first": "AAAA"}, "evalByCredential": {"\#(Base64URL.encode(id))": {"first": "\#(second)"}}}"#))
        XCTAssertEqual(byCredential["first"], once["second"])
        // evalByCredential naming a credential outside allowCredentials: the page's error, nothing signed.
        let stray = try send(session, #"{"id": 3, "type": "get", "origin": "https://login.example.com", "options": {"challenge": "AAAA", "rpId": "example.com", "allowCredentials": [{"type": "public-key", "id": "\#(Base64URL.encode(id))"}], "extensions": {"prf": {"evalByCredential": {"AAAA": {"first": "AA"}}}}}}"#)
        XCTAssertEqual(stray["error"] as? String, "TypeError", "\(stray)")
        XCTAssertEqual(try bytes(try signIn("{}", credBlob: true)["getCredBlob"]), [1, 2, 3])
        // evalByCredential in create() is NotSupportedError.
        let noCreate = #", "extensions": {"prf": {"evalByCredential": {"AAAA": {"first": "AA"}}}}"#
        let refused = try create(session, creation(userID: Array("bob-id".utf8)).replacingOccurrences(of: #", "extensions": {"credProps": true}"#, with: noCreate))
        XCTAssertEqual(refused["error"] as? String, "NotSupportedError", "\(refused)")
    }

    func testLargeBlobIsWrittenAndReadThroughTheKeysArray() throws {
        let session = try session()
        let made = try create(session, creation().replacingOccurrences(of: #""credProps": true}"#,
                                                                        with: #""credProps": true, "largeBlob": {"support": "required"}}"#))
        let credential = try XCTUnwrap(made["credential"] as? [String: Any], "\(made)")
        let outputs = try XCTUnwrap(credential["clientExtensionResults"] as? [String: Any])
        XCTAssertEqual((outputs["largeBlob"] as? [String: Any])?["supported"] as? Bool, true)
        let id = try bytes(credential["id"])
        let key = try XCTUnwrap(store.residentCredential(id: id)?.largeBlobKey, "the key gave the passkey a large-blob key")

        func signIn(_ largeBlob: String, allow: [[UInt8]]? = nil) throws -> [String: Any] {
            let list = (allow ?? [id]).map { #"{"type": "public-key", "id": "\#(Base64URL.encode($0))"}"# }.joined(separator: ",")
            return try send(session, #"{"id": 2, "type": "get", "origin": "https://login.example.com", "credentialId": "\#(Base64URL.encode(id))", "options": {"challenge": "AAAA", "rpId": "example.com", "allowCredentials": [\#(list)], "extensions": {"largeBlob": \#(largeBlob)}}}"#)
        }
        func results(_ reply: [String: Any]) throws -> [String: Any] {
            let outputs = try XCTUnwrap((reply["credential"] as? [String: Any])?["clientExtensionResults"] as? [String: Any], "\(reply)")
            return try XCTUnwrap(outputs["largeBlob"] as? [String: Any])
        }
        XCTAssertTrue(try results(signIn(#"{"read": true}"#)).isEmpty, "nothing written yet: no blob member")
        let blob = Array("the site's own data, compressed and sealed by the client".utf8)
        XCTAssertEqual(try results(signIn(#"{"write": "\#(Base64URL.encode(blob))"}"#))["written"] as? Bool, true)
        // Sealed in the key's array under the credential's key, as any CTAP client reads it.
        XCTAssertEqual(try LargeBlobStorage.blob(in: LargeBlobStorage.serializedArray(in: store), key: key), blob)
        XCTAssertEqual(try bytes(results(signIn(#"{"read": true}"#))["blob"]), blob)

        // WebAuthn L3 §10.1.5's NotSupportedErrors, before the key is asked anything.
        XCTAssertEqual(try signIn(#"{"support": "preferred"}"#)["error"] as? String, "NotSupportedError")
        XCTAssertEqual(try signIn(#"{"read": true, "write": "AQID"}"#)["error"] as? String, "NotSupportedError")
        XCTAssertEqual(try signIn(#"{"write": "AQID"}"#, allow: [])["error"] as? String, "NotSupportedError",
                       "a write names its one credential")
        let readOnCreate = try create(session, creation(userID: Array("bob-id".utf8))
            .replacingOccurrences(of: #""credProps": true}"#, with: #""credProps": true, "largeBlob": {"read": true}}"#))
        XCTAssertEqual(readOnCreate["error"] as? String, "NotSupportedError", "\(readOnCreate)")
        // "required" needs a discoverable credential; "preferred" without one says unsupported.
        let nonDiscoverable = creation(userID: Array("carol-id".utf8), residentKey: "discouraged")
        let required = try create(session, nonDiscoverable.replacingOccurrences(of: #""credProps": true}"#,
                                                                                 with: #""credProps": true, "largeBlob": {"support": "required"}}"#))
        XCTAssertEqual(required["error"] as? String, "NotSupportedError", "\(required)")
        let preferred = try create(session, nonDiscoverable.replacingOccurrences(of: #""credProps": true}"#,
                                                                                  with: #""credProps": true, "largeBlob": {}}"#))
        let preferredOutputs = (preferred["credential"] as? [String: Any])?["clientExtensionResults"] as? [String: Any]
        XCTAssertEqual((preferredOutputs?["largeBlob"] as? [String: Any])?["supported"] as? Bool, false, "\(preferred)")
    }

    func testALargeBlobWriteOnAPINKeyAsksForThePIN() throws {
        let session = try session(builtInUV: false, pin: "2468")
        let made = try send(session, #"{"id": 1, "type": "create", "origin": "https://login.example.com", "pin": "2468", "options": \#(creation().replacingOccurrences(of: #""credProps": true}"#, with: #""credProps": true, "largeBlob": {"support": "required"}}"#))}"#)
        let id = try bytes((made["credential"] as? [String: Any])?["id"])
        func write(pin: String?, uv: String) throws -> [String: Any] {
            let member = pin.map { #", "pin": "\#($0)""# } ?? ""
            return try send(session, #"{"id": 2, "type": "get", "origin": "https://login.example.com"\#(member), "credentialId": "\#(Base64URL.encode(id))", "options": {"challenge": "AAAA", "rpId": "example.com", "userVerification": "\#(uv)", "allowCredentials": [{"type": "public-key", "id": "\#(Base64URL.encode(id))"}], "extensions": {"largeBlob": {"write": "AQIDBA"}}}}"#)
        }
        // Even a site that discourages verification: the write needs the key's lbw token.
        XCTAssertEqual((try write(pin: nil, uv: "discouraged")["pin"] as? [String: Any])?["state"] as? String, "required")
        let written = try write(pin: "2468", uv: "discouraged")
        let outputs = (written["credential"] as? [String: Any])?["clientExtensionResults"] as? [String: Any]
        XCTAssertEqual((outputs?["largeBlob"] as? [String: Any])?["written"] as? Bool, true, "\(written)")
        let key = try XCTUnwrap(store.residentCredential(id: id)?.largeBlobKey)
        XCTAssertEqual(try LargeBlobStorage.blob(in: LargeBlobStorage.serializedArray(in: store), key: key), [1, 2, 3, 4])
    }

    func testAFrameOfAnotherOriginSignsWithCrossOriginAndTopOrigin() throws {
        let session = try session()
        let made = try create(session, creation())
        let id = try bytes((made["credential"] as? [String: Any])?["id"])
        func clientData(top: String?, type: String = "get", crossOrigin: Bool = false) throws -> String {
            let member = (top.map { #", "topOrigin": "\#($0)""# } ?? "") + (crossOrigin ? #", "crossOrigin": true"# : "")
            let options = type == "get"
                ? #"{"challenge": "AAAA", "rpId": "example.com", "allowCredentials": [{"type": "public-key", "id": "\#(Base64URL.encode(id))"}]}"#
                : creation(userID: Array("frame-user".utf8))
            let reply = try send(session, #"{"id": 2, "type": "\#(type)", "origin": "https://login.example.com"\#(member), "options": \#(options)}"#)
            let response = try XCTUnwrap((reply["credential"] as? [String: Any])?["response"] as? [String: Any], "\(reply)")
            return String(decoding: try bytes(response["clientDataJSON"]), as: UTF8.self)
        }
        XCTAssertEqual(try clientData(top: "https://news.example"),
                       #"{"type":"webauthn.get","challenge":"AAAA","origin":"https://login.example.com","crossOrigin":true,"topOrigin":"https://news.example"}"#)
        XCTAssertTrue(try clientData(top: "https://news.example", type: "create").hasSuffix(#""crossOrigin":true,"topOrigin":"https://news.example"}"#))
        // A frame of the page's own origin is not cross-origin; nor is a top-level page.
        XCTAssertTrue(try clientData(top: "https://login.example.com").hasSuffix(#""crossOrigin":false}"#))
        // ...unless another origin's frame is between them (sameOriginWithAncestors false).
        XCTAssertTrue(try clientData(top: "https://login.example.com", crossOrigin: true)
            .hasSuffix(#""crossOrigin":true,"topOrigin":"https://login.example.com"}"#))
        XCTAssertTrue(try clientData(top: nil).hasSuffix(#""crossOrigin":false}"#))
        let insecure = try send(session, #"{"id": 3, "type": "get", "origin": "https://login.example.com", "topOrigin": "http://news.example", "options": {"challenge": "AAAA"}}"#)
        XCTAssertEqual(insecure["error"] as? String, "SecurityError", "\(insecure)")
    }

    func testTheRequestsTimeoutBoundsTheWaitForTheKey() throws {
        XCTAssertEqual(PasskeyClient.timeoutMilliseconds(nil), 300_000)
        XCTAssertEqual(PasskeyClient.timeoutMilliseconds(60_000), 60_000)
        XCTAssertEqual(PasskeyClient.timeoutMilliseconds(1), 10_000)
        XCTAssertEqual(PasskeyClient.timeoutMilliseconds(86_400_000), 600_000)
        let session = try session()
        _ = try create(session, creation(extra: #", "timeout": 45000"#))
        _ = try create(session, creation(userID: Array("bob-id".utf8)))
        XCTAssertEqual(timeouts, [45_000, 300_000], "the link to the key gets the request's timeout")
        // A link that gave up once the time was over is a timeout (NotAllowedError); one that
        // failed before it, a key that cannot be reached (the extension leaves it to the browser).
        let options = try XCTUnwrap(PasskeyRequestOptionsForTests.challengeOnly)
        XCTAssertEqual(Result { try PasskeyClient(link: GivingUpLink(), timeoutMilliseconds: 0)
            .get(origin: "https://example.com", rpID: "example.com", options: options, allowList: []) }.failureName, "NotAllowedError")
        XCTAssertEqual(Result { try PasskeyClient(link: GivingUpLink(), timeoutMilliseconds: 60_000)
            .get(origin: "https://example.com", rpID: "example.com", options: options, allowList: []) }.failureName, "InternalError")
    }

    func testUnsupportedAlgorithmsAreNotSupportedError() throws {
        let session = try session()
        let options = creation().replacingOccurrences(of: #""alg": -7"#, with: #""alg": -65535"#)
        XCTAssertEqual(try create(session, options)["error"] as? String, "NotSupportedError")
    }

    // MARK: - accounts and get()

    func testAccountsListVisiblePasskeysAndGetSignsInWithTheChosenOne() throws {
        let session = try session()
        let alice = try bytes((try create(session, creation())["credential"] as? [String: Any])?["id"])
        let bobOptions = creation(userID: Array("bob-id".utf8)).replacingOccurrences(of: "alice@example.com", with: "bob@example.com")
        let bob = try bytes((try create(session, bobOptions)["credential"] as? [String: Any])?["id"])
        let listed = try send(session, #"{"id": 2, "type": "accounts", "origin": "https://login.example.com", "rpId": "example.com"}"#)
        let accounts = try XCTUnwrap(listed["accounts"] as? [[String: String]])
        XCTAssertEqual(accounts.map { $0["name"] }, ["alice@example.com", "bob@example.com"])
        XCTAssertEqual(accounts.map { $0["credentialId"] }, [alice, bob].map(Base64URL.encode))
        XCTAssertEqual(accounts[1]["userHandle"], Base64URL.encode(Array("bob-id".utf8)))
        // Another site's menu is empty; a hidden passkey is not offered.
        let other = try send(session, #"{"id": 3, "type": "accounts", "origin": "https://other.example"}"#)
        XCTAssertEqual((other["accounts"] as? [Any])?.count, 0)
        _ = try store.signalUnknownCredential(rpID: "example.com", credentialID: alice, source: "https://login.example.com")
        let afterHide = try send(session, #"{"id": 4, "type": "accounts", "origin": "https://login.example.com", "rpId": "example.com"}"#)
        XCTAssertEqual((afterHide["accounts"] as? [[String: String]])?.map { $0["name"] }, ["bob@example.com"])

        // The user chose bob in the menu: an assertion by bob's passkey over this clientDataJSON.
        let challenge = Base64URL.encode(Array(repeating: 9, count: 32))
        let reply = try send(session, #"{"id": 5, "type": "get", "origin": "https://login.example.com", "credentialId": "\#(Base64URL.encode(bob))", "options": {"challenge": "\#(challenge)", "rpId": "example.com", "allowCredentials": [], "userVerification": "required"}}"#)
        let credential = try XCTUnwrap(reply["credential"] as? [String: Any], "\(reply)")
        XCTAssertEqual(try bytes(credential["id"]), bob)
        let response = try XCTUnwrap(credential["response"] as? [String: Any])
        XCTAssertEqual(try bytes(response["userHandle"]), Array("bob-id".utf8))
        let clientData = try bytes(response["clientDataJSON"])
        XCTAssertEqual(String(decoding: clientData, as: UTF8.self),
                       #"{"type":"webauthn.get","challenge":"\#(challenge)","origin":"https://login.example.com","crossOrigin":false}"#)
        let authData = try bytes(response["authenticatorData"])
        XCTAssertTrue(try AuthenticatorData(decoding: authData).flags.contains([.userPresent, .userVerified]))
        // The signature verifies with bob's public key, from the store's private key.
        let stored = try XCTUnwrap(store.residentCredential(id: bob))
        let key = try ECDSA.PrivateKey(secret: stored.privateKey)
        XCTAssertTrue(key.publicKey.isValidSignature(try bytes(response["signature"]), for: authData + FIDOCrypto.SHA256.hash(clientData)))
    }

    func testGetRefusesAChoiceOutsideAllowCredentialsAndAnotherSitesRPID() throws {
        let session = try session()
        let alice = try bytes((try create(session, creation())["credential"] as? [String: Any])?["id"])
        let challenge = Base64URL.encode(Array(repeating: 9, count: 32))
        let outside = try send(session, #"{"id": 6, "type": "get", "origin": "https://login.example.com", "credentialId": "\#(Base64URL.encode(alice))", "options": {"challenge": "\#(challenge)", "rpId": "example.com", "allowCredentials": [{"type": "public-key", "id": "AAAA"}]}}"#)
        XCTAssertEqual(outside["error"] as? String, "NotAllowedError", "\(outside)")
        let opened = keyOpened
        let foreign = try send(session, #"{"id": 7, "type": "get", "origin": "https://attacker.example", "credentialId": "\#(Base64URL.encode(alice))", "options": {"challenge": "\#(challenge)", "rpId": "example.com"}}"#)
        XCTAssertEqual(foreign["error"] as? String, "SecurityError", "\(foreign)")
        XCTAssertEqual(keyOpened, opened, "the key was not asked")
        let none = try send(session, #"{"id": 8, "type": "get", "origin": "https://other.example", "options": {"challenge": "\#(challenge)"}}"#)
        XCTAssertEqual(none["error"] as? String, "NotAllowedError", "no passkey for other.example: \(none)")
    }
}

/// A clock whose seconds move on at each reading, so passkeys made one after another have
/// distinct creation times (the account menu lists them oldest first).
private final class TickingClock: AuthenticatorClock, @unchecked Sendable {
    private var seconds: Int64 = 1_700_000_000

    func monotonicNanoseconds() -> UInt64 { MonotonicClock.nanoseconds() }

    func unixSeconds() -> Int64 {
        seconds += 1
        return seconds
    }
}

/// A link whose every exchange fails as a transport error (a link that gave up).
private final class GivingUpLink: CTAP2Link {
    let label = "giving-up link"

    func exchange(_ request: [UInt8]) throws(DeviceError) -> [UInt8] {
        throw .transport("CTAPHID_CBOR still running after the limit of KEEPALIVEs")
    }
}

private enum PasskeyRequestOptionsForTests {
    /// `{"challenge": "AAAA"}`, parsed through the host's own message path.
    static var challengeOnly: PasskeyRequestOptions? {
        PasskeyRequestOptions.parse(Array(#"{"challenge": "AAAA"}"#.utf8))
    }
}

private extension Result where Failure == Error {
    /// The SignalFailure's DOMException name, or "success".
    var failureName: String {
        switch self {
        case .success: "success"
        case .failure(let error): (error as? SignalFailure)?.name ?? "\(error)"
        }
    }
}
