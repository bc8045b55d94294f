import Authenticator
import CBOR
import CTAP
import CTAPHID
import FIDOClient
import FIDOCrypto
import Foundation
@testable import KeyService
@testable import Rig
import LatchkeyTestSupport
import LinuxHID
import SystemIO
import XCTest
import Presence
import Encoding

/// The rig control API in-process: request lines through `RigRequests.respond`, keys on the
/// socket transport driven by the platform client, events through a subscriber's queue.
final class RigTests: XCTestCase {
    var scratch: ScratchDirectory!
    var rig: Rig!

    override func setUpWithError() throws {
        scratch = try ScratchDirectory()
        rig = Rig(root: scratch.path + "/root", uhidPath: "/nonexistent/uhid", logger: Logger(level: .error, sink: { _ in }))
        try FileManager.default.createDirectory(atPath: scratch.path + "/root", withIntermediateDirectories: true)
    }

    override func tearDown() {
        rig.stop()
        scratch.remove()
    }

    /// One request; the response as a dictionary.
    func call(_ method: String, _ params: [String: Any] = [:], id: Int = 1) throws -> [String: Any] {
        let line = try JSONSerialization.data(withJSONObject: ["v": 1, "id": id, "method": method, "params": params])
        return try decode(RigRequests.respond(to: Array(line), rig: rig).response)
    }

    func decode(_ line: [UInt8]) throws -> [String: Any] {
        XCTAssertEqual(line.last, 0x0A, "a line ends in a newline")
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.dropLast())) as? [String: Any])
    }

    func errorCode(_ response: [String: Any]) -> String? { (response["error"] as? [String: Any])?["code"] as? String }
    func errorMessage(_ response: [String: Any]) -> String { (response["error"] as? [String: Any])?["message"] as? String ?? "" }

    func addSocketKey(_ extra: [String: Any] = [:]) throws -> (id: String, path: String) {
        let path = scratch.path + "/\(UUID().uuidString.prefix(8)).sock"
        let response = try call("addAuthenticator", ["transport": "socket", "socketPath": path].merging(extra) { $1 })
        let result = try XCTUnwrap(response["result"] as? [String: Any], "\(response)")
        return (try XCTUnwrap(result["authenticatorId"] as? String), path)
    }

    func testMalformedRequestsGetPreciseErrorsAndIDsAreEchoed() throws {
        XCTAssertEqual(errorCode(try decode(RigRequests.respond(to: Array("not json".utf8), rig: rig).response)), "parseError")
        let v2 = try decode(RigRequests.respond(to: Array(#"{"v":2,"id":9,"method":"listAuthenticators"}"#.utf8), rig: rig).response)
        XCTAssertEqual(errorCode(v2), "parseError")
        XCTAssertEqual(v2["id"] as? Int, 9)
        XCTAssertEqual(errorCode(try call("frobnicate")), "unknownMethod")
        let typed = try call("addAuthenticator", ["hasUserVerification": "yes"])
        XCTAssertEqual(errorCode(typed), "invalidParams")
        XCTAssertTrue(errorMessage(typed).contains("hasUserVerification is not a boolean"), errorMessage(typed))
        let missing = try call("getCredentials")
        XCTAssertEqual(errorCode(missing), "invalidParams")
        XCTAssertTrue(errorMessage(missing).contains("authenticatorId is missing"), errorMessage(missing))
        XCTAssertEqual(errorCode(try call("getCredentials", ["authenticatorId": "k7"])), "noSuchAuthenticator")
        let unknownExtension = try call("addAuthenticator", ["extensions": ["credBlob", "teleport"]])
        XCTAssertEqual(errorCode(unknownExtension), "invalidParams")
        XCTAssertTrue(errorMessage(unknownExtension).contains("teleport"), errorMessage(unknownExtension))
        XCTAssertEqual(errorCode(try call("addAuthenticator", ["protocol": "u2f", "extensions": ["prf"]])), "invalidParams")
        XCTAssertEqual(errorCode(try call("addAuthenticator", ["transport": "socket"])), "invalidParams")
        XCTAssertEqual(errorCode(try call("addAuthenticator", ["protocol": "u2f", "defaultBackupEligibility": true])), "invalidParams",
                       "U2F signs no BE/BS flags")
        XCTAssertEqual(errorCode(try call("addAuthenticator", ["authenticatorId": "../x", "transport": "socket",
                                                              "socketPath": scratch.path + "/x.sock"])), "invalidParams")
        // uhid that is not there: the key fails to start, and says why.
        let noUHID = try call("addAuthenticator")
        XCTAssertEqual(errorCode(noUHID), "failed")
        XCTAssertTrue(errorMessage(noUHID).contains("uhid"), errorMessage(noUHID))
        XCTAssertTrue(errorMessage(noUHID).contains("\"transport\": \"socket\""), errorMessage(noUHID))
        XCTAssertFalse(errorMessage(noUHID).contains("latchkey serve"), "a rig user is told the rig's way, not serve's")
        XCTAssertEqual(try XCTUnwrap(try call("listAuthenticators")["result"] as? [String: Any])["authenticators"] as? [String], [])
        // The failed key used up no id and left no store behind: the next key is k1.
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.path + "/root/k1"))
        XCTAssertEqual(try addSocketKey().id, "k1")
        // A bad accountChoice is refused before an id is taken.
        XCTAssertEqual(errorCode(try call("addAuthenticator", ["accountChoice": "any", "transport": "socket",
                                                              "socketPath": scratch.path + "/ac.sock"])), "invalidParams")
        XCTAssertEqual(try addSocketKey().id, "k2")
    }

    func testKeysComeAndGoWithTheirSocketsAndStores() throws {
        let first = try addSocketKey()
        let second = try addSocketKey(["authenticatorId": "named"])
        XCTAssertEqual(first.id, "k1")
        XCTAssertEqual(second.id, "named")
        XCTAssertEqual(errorCode(try call("addAuthenticator", ["authenticatorId": "named", "transport": "socket",
                                                              "socketPath": scratch.path + "/dup.sock"])), "invalidParams")
        let listed = try XCTUnwrap(try call("listAuthenticators")["result"] as? [String: Any])["authenticators"] as? [[String: Any]]
        XCTAssertEqual(listed?.compactMap { $0["authenticatorId"] as? String }, ["k1", "named"])
        XCTAssertTrue(FileManager.default.fileExists(atPath: first.path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: scratch.path + "/root/k1"))
        XCTAssertNotNil(try call("removeAuthenticator", ["authenticatorId": "k1"])["result"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: first.path), "the socket is gone")
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.path + "/root/k1"), "the store is gone")
        XCTAssertEqual(errorCode(try call("removeAuthenticator", ["authenticatorId": "k1"])), "noSuchAuthenticator")
        // The next default id does not reuse one in use.
        XCTAssertEqual(try addSocketKey().id, "k2")
    }

    /// A credential added through the API signs on the wire with its own key and counter, is
    /// listed back with the same PKCS#8 key, and every step is an event, in order.
    func testAddedCredentialSignsAndEventsArriveInOrder() throws {
        let wakeup = try WakeupEvent()
        let subscriber = RigSubscriber(authenticatorID: nil, wakeup: wakeup)
        rig.events.subscribe(subscriber)
        let key = try addSocketKey()
        let privateKey = try P256.Signing.PrivateKey()
        let der = try PKCS8PrivateKey.encode(.p256, privateKey.rawRepresentation).copyBytes()
        let credentialID = [UInt8](repeating: 0xC1, count: 16)
        let added = try call("addCredential", ["authenticatorId": key.id, "credential": [
            "credentialId": Base64URL.encode(credentialID), "isResidentCredential": true, "rpId": "rig.example",
            "privateKey": Base64URL.encode(der), "userHandle": Base64URL.encode([7]), "signCount": 41, "userName": "carol",
        ]])
        XCTAssertNotNil(added["result"], "\(added)")

        let client = CTAPHIDClient(link: try SocketClient(path: key.path), replyTimeoutMilliseconds: 5_000)
        _ = try client.initialize()
        let clientDataHash = SHA256.hash(Array("rig".utf8))
        let request = GetAssertionRequest(rpID: "rig.example", clientDataHash: clientDataHash,
                                          allowList: [CredentialDescriptor(id: credentialID)], extensions: .init(),
                                          options: RequestOptions())
        let response = try client.cbor([CTAPCommand.getAssertion.rawValue] + request.cborValue.encoded())
        XCTAssertEqual(response.first, CTAP2StatusCode.success.rawValue)
        let body = try CBORDecoder.decode(Array(response.dropFirst()))
        let authData = try XCTUnwrap(body[2]?.bytesValue)
        XCTAssertEqual(try AuthenticatorData(decoding: authData).signCount, 42)
        XCTAssertTrue(privateKey.publicKey.isValidSignature(try XCTUnwrap(body[3]?.bytesValue), for: authData + clientDataHash))

        let listed = try XCTUnwrap(try call("getCredential", ["authenticatorId": key.id,
                                                               "credentialId": Base64URL.encode(credentialID)])["result"] as? [String: Any])
        XCTAssertEqual(listed["signCount"] as? Int, 42)
        XCTAssertEqual(listed["userName"] as? String, "carol")
        XCTAssertEqual(listed["privateKey"] as? String, Base64URL.encode(der))
        XCTAssertEqual(try XCTUnwrap(try call("removeAllCredentials", ["authenticatorId": key.id])["result"] as? [String: Any])["removed"] as? Int, 1)
        XCTAssertEqual(errorCode(try call("getCredential", ["authenticatorId": key.id,
                                                              "credentialId": Base64URL.encode(credentialID)])), "noSuchCredential")

        let events = try subscriber.take().lines.map(decode)
        XCTAssertEqual(events.map { $0["event"] as? String }, ["credentialAdded", "presenceRequested", "credentialAsserted", "credentialDeleted"])
        XCTAssertEqual(events.map { $0["seq"] as? Int }, [1, 2, 3, 4])
        XCTAssertEqual((events[2]["params"] as? [String: Any])?["signCount"] as? Int, 42)
        XCTAssertEqual((events[2]["params"] as? [String: Any])?["rpId"] as? String, "rig.example")
    }

    /// BE/BS: the key's defaults mark what it makes and what is added without flags of its own;
    /// setCredentialProperties changes one credential's, which its next assertion carries.
    func testBackupFlagsFromDefaultsAddCredentialAndSetCredentialProperties() throws {
        let wakeup = try WakeupEvent()
        let subscriber = RigSubscriber(authenticatorID: nil, wakeup: wakeup)
        rig.events.subscribe(subscriber)
        let key = try addSocketKey(["defaultBackupEligibility": true])
        let info = try XCTUnwrap(try call("listAuthenticators")["result"] as? [String: Any])["authenticators"] as? [[String: Any]]
        XCTAssertEqual(info?.first?["defaultBackupEligibility"] as? Bool, true)
        XCTAssertEqual(info?.first?["defaultBackupState"] as? Bool, false)
        let privateKey = try P256.Signing.PrivateKey()
        let der = try PKCS8PrivateKey.encode(.p256, privateKey.rawRepresentation).copyBytes()
        let credentialID = [UInt8](repeating: 0xB1, count: 16)
        let id = Base64URL.encode(credentialID)
        XCTAssertNotNil(try call("addCredential", ["authenticatorId": key.id, "credential": [
            "credentialId": id, "rpId": "rig.example", "privateKey": Base64URL.encode(der), "userHandle": "Bw",
        ]])["result"])
        func stored() throws -> [String: Any] {
            try XCTUnwrap(try call("getCredential", ["authenticatorId": key.id, "credentialId": id])["result"] as? [String: Any])
        }
        XCTAssertEqual(try stored()["backupEligibility"] as? Bool, true, "the key's default")
        XCTAssertEqual(try stored()["backupState"] as? Bool, false)

        let client = CTAPHIDClient(link: try SocketClient(path: key.path), replyTimeoutMilliseconds: 5_000)
        _ = try client.initialize()
        func assertionFlags() throws -> UInt8 {
            let request = GetAssertionRequest(rpID: "rig.example", clientDataHash: SHA256.hash([1]),
                                              allowList: [CredentialDescriptor(id: credentialID)], extensions: .init(),
                                              options: RequestOptions())
            let response = try client.cbor([CTAPCommand.getAssertion.rawValue] + request.cborValue.encoded())
            XCTAssertEqual(response.first, CTAP2StatusCode.success.rawValue)
            return try XCTUnwrap(try CBORDecoder.decode(Array(response.dropFirst()))[2]?.bytesValue)[32]
        }
        XCTAssertEqual(try assertionFlags() & 0x18, 0x08, "BE, not BS")

        XCTAssertNotNil(try call("setCredentialProperties", ["authenticatorId": key.id, "credentialId": id,
                                                            "backupState": true])["result"])
        XCTAssertEqual(try stored()["backupEligibility"] as? Bool, true, "left out: kept")
        XCTAssertEqual(try stored()["backupState"] as? Bool, true)
        XCTAssertEqual(try assertionFlags() & 0x18, 0x18, "BE and BS")
        XCTAssertNotNil(try call("setCredentialProperties", ["authenticatorId": key.id, "credentialId": id,
                                                            "backupEligibility": false, "backupState": false])["result"])
        XCTAssertEqual(try assertionFlags() & 0x18, 0)
        XCTAssertEqual(errorCode(try call("setCredentialProperties", ["authenticatorId": key.id, "credentialId": "AAAA"])),
                       "noSuchCredential")
        XCTAssertEqual(errorCode(try call("setCredentialProperties", ["authenticatorId": key.id, "credentialId": id,
                                                                     "backupState": "yes"])), "invalidParams")

        let events = try subscriber.take().lines.map(decode).filter { $0["event"] as? String == "credentialUpdated" }
        XCTAssertEqual(events.map { ($0["params"] as? [String: Any])?["backupState"] as? Bool }, [true, false])
        XCTAssertEqual(events.map { ($0["params"] as? [String: Any])?["credentialId"] as? String }, [id, id])
    }

    /// `extensions` (WebDriver's, WebAuthn's names): the key's getInfo lists only those, and the
    /// Authenticator says so.
    func testExtensionsNarrowWhatTheKeyOffers() throws {
        let key = try addSocketKey(["extensions": ["prf", "credProps"]])
        let listed = try XCTUnwrap(try call("listAuthenticators")["result"] as? [String: Any])["authenticators"] as? [[String: Any]]
        XCTAssertEqual(listed?.first?["extensions"] as? [String], ["hmac-secret", "hmac-secret-mc"])
        let client = CTAPHIDClient(link: try SocketClient(path: key.path), replyTimeoutMilliseconds: 5_000)
        _ = try client.initialize()
        let response = try client.cbor([CTAPCommand.getInfo.rawValue])
        XCTAssertEqual(response.first, CTAP2StatusCode.success.rawValue)
        let info = try CBORDecoder.decode(Array(response.dropFirst()))
        XCTAssertEqual(info[2]?.arrayValue?.compactMap(\.stringValue), ["hmac-secret", "hmac-secret-mc"])
        XCTAssertNil(info[4]?["largeBlobs"])
        let all = try addSocketKey()
        let everything = try XCTUnwrap(try call("listAuthenticators")["result"] as? [String: Any])["authenticators"] as? [[String: Any]]
        XCTAssertEqual((everything?.first { $0["authenticatorId"] as? String == all.id })?["extensions"] as? [String],
                       ["credProtect", "credBlob", "hmac-secret", "hmac-secret-mc", "largeBlobKey", "minPinLength",
                        "thirdPartyPayment", "previewSign"])
    }

    /// `algorithms` limits what a key makes and what can be planted on it, as on a key that has only those.
    func testAlgorithmsLimitWhatTheKeyMakesAndTakes() throws {
        let key = try addSocketKey(["algorithms": ["ES384", "-7"]])
        let client = CTAPHIDClient(link: try SocketClient(path: key.path), replyTimeoutMilliseconds: 5_000)
        _ = try client.initialize()
        let response = try client.cbor([CTAPCommand.getInfo.rawValue])
        let info = try CBORDecoder.decode(Array(response.dropFirst()))
        XCTAssertEqual(info[10]?.arrayValue?.compactMap { $0["alg"]?.intValue }, [-35, -7])
        let ed = try PKCS8PrivateKey.encode(.ed25519, try Ed25519.PrivateKey().rawRepresentation).copyBytes()
        let refused = try call("addCredential", ["authenticatorId": key.id, "credential": [
            "credentialId": "AAEC", "rpId": "rig.example", "privateKey": Base64URL.encode(ed), "userHandle": "AQ",
            "isResidentCredential": true] as [String: Any]])
        XCTAssertEqual(errorCode(refused), "invalidParams")
        XCTAssertTrue(errorMessage(refused).contains("an EdDSA key, and \(key.id) makes only ES384, ES256"), errorMessage(refused))
        let p384 = try PKCS8PrivateKey.encode(.ec(.p384), try ECDSA.PrivateKey(suite: .es384).rawRepresentation).copyBytes()
        XCTAssertNotNil(try call("addCredential", ["authenticatorId": key.id, "credential": [
            "credentialId": "AAED", "rpId": "rig.example", "privateKey": Base64URL.encode(p384), "userHandle": "AQ",
            "isResidentCredential": true] as [String: Any]])["result"])
        let listed = try call("getCredentials", ["authenticatorId": key.id])
        let credentials = try XCTUnwrap((listed["result"] as? [String: Any])?["credentials"] as? [[String: Any]])
        XCTAssertEqual(credentials.count, 1)
        let der = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(credentials.first?["privateKey"] as? String)))
        XCTAssertEqual(try PKCS8PrivateKey.decode(der).0, .ec(.p384), "reported as it was planted")
        XCTAssertEqual(errorCode(try call("addAuthenticator", ["transport": "socket", "socketPath": key.path + "2",
                                                               "algorithms": ["ES256", "RS1"]])), "invalidParams")
    }

    /// A seeded key cannot derive RSA primes from its seed: it refuses to be asked for RSA. A key
    /// offers RSA only when its algorithms name it; an RSA key planted through PKCS#8 is then a
    /// credential of the key's first RSA algorithm (RS256, as in Chromium's virtual
    /// authenticator, unless the key makes only PS256).
    func testRSAIsPlantedOnlyOnKeysThatMakeIt() throws {
        let seeded = try addSocketKey(["seed": "fixture"])
        let client = CTAPHIDClient(link: try SocketClient(path: seeded.path), replyTimeoutMilliseconds: 5_000)
        _ = try client.initialize()
        let info = try CBORDecoder.decode(Array(try client.cbor([CTAPCommand.getInfo.rawValue]).dropFirst()))
        XCTAssertEqual(info[10]?.arrayValue?.compactMap { $0["alg"]?.intValue }, [-7, -8, -35, -36, -47])
        let refused = try call("addAuthenticator", ["transport": "socket", "socketPath": seeded.path + "2", "seed": "x",
                                                    "algorithms": ["ES256", "PS256"]])
        XCTAssertEqual(errorCode(refused), "invalidParams")
        XCTAssertTrue(errorMessage(refused).contains("PS256 keys cannot be derived from params.seed"), errorMessage(refused))

        let rsa = try RSA.PrivateKey()
        let der = try PKCS8PrivateKey.encode(.rsa, rsa.rawRepresentation).copyBytes()
        func plant(on key: (id: String, path: String)) throws -> [String: Any] {
            try call("addCredential", ["authenticatorId": key.id, "credential": [
                "credentialId": "AAEE", "rpId": "rig.example", "privateKey": Base64URL.encode(der), "userHandle": "AQ",
                "isResidentCredential": true] as [String: Any]])
        }
        let plain = try addSocketKey()
        XCTAssertEqual(errorCode(try plant(on: plain)), "invalidParams", "a default key makes no RSA")
        let pss = try addSocketKey(["algorithms": ["ES256", "PS256"]])
        XCTAssertNotNil(try plant(on: pss)["result"])
        let listed = try call("getCredentials", ["authenticatorId": pss.id])
        let credentials = try XCTUnwrap((listed["result"] as? [String: Any])?["credentials"] as? [[String: Any]])
        XCTAssertEqual(credentials.first?["privateKey"] as? String, Base64URL.encode(der), "the same PKCS#8 back")
        // It signs with PSS: getAssertion over the key's socket, verified with the RSA public key.
        let pssClient = CTAPHIDClient(link: try SocketClient(path: pss.path), replyTimeoutMilliseconds: 5_000)
        _ = try pssClient.initialize()
        let request = GetAssertionRequest(rpID: "rig.example", clientDataHash: SHA256.hash([7]),
                                          allowList: [CredentialDescriptor(id: [0x00, 0x01, 0x04])])
        let response = try pssClient.cbor([CTAPCommand.getAssertion.rawValue] + request.cborValue.encoded())
        XCTAssertEqual(response.first, 0)
        let body = try CBORDecoder.decode(Array(response.dropFirst()))
        let message = try XCTUnwrap(body[2]?.bytesValue) + SHA256.hash([7])
        let signature = try XCTUnwrap(body[3]?.bytesValue)
        XCTAssertTrue(rsa.publicKey.isValidSignature(signature, for: message, padding: .pss))
        XCTAssertFalse(rsa.publicKey.isValidSignature(signature, for: message, padding: .pkcs1v15))
    }

    func testBadCredentialsAreRefusedByName() throws {
        let key = try addSocketKey()
        func add(_ credential: [String: Any]) throws -> [String: Any] {
            try call("addCredential", ["authenticatorId": key.id, "credential": credential])
        }
        let good = try PKCS8PrivateKey.encode(.ed25519, try Ed25519.PrivateKey().rawRepresentation).copyBytes()
        let base: [String: Any] = ["credentialId": "AAEC", "rpId": "rig.example", "privateKey": Base64URL.encode(good),
                                   "userHandle": "AQ"]
        let nonResident = try add(base.merging(["isResidentCredential": false]) { $1 })
        XCTAssertEqual(errorCode(nonResident), "invalidParams", "a userHandle for a non-resident credential")
        XCTAssertTrue(errorMessage(nonResident).contains("credential.userHandle"), errorMessage(nonResident))
        let badKey = try add(base.merging(["privateKey": "AAAA"]) { $1 })
        XCTAssertEqual(errorCode(badKey), "invalidParams")
        XCTAssertTrue(errorMessage(badKey).contains("credential.privateKey"), errorMessage(badKey))
        XCTAssertEqual(errorCode(try add(base.merging(["credentialId": "a+b/"]) { $1 })), "invalidParams")
        XCTAssertEqual(errorCode(try add(base.filter { $0.key != "userHandle" })), "invalidParams")
        XCTAssertNotNil(try add(base)["result"])
        XCTAssertEqual(errorCode(try add(base)), "invalidParams", "the same ID twice")
        XCTAssertEqual(errorCode(try call("setUserVerified", ["authenticatorId": key.id, "isUserVerified": true])), "unsupported",
                       "no UV on this key")
    }

    /// The events are read from the typed request and the typed answer of real exchanges.
    func testWireEventsFromARealRegistration() throws {
        let authenticator = try Authenticator(store: InMemoryCredentialStore(), presence: AutoPresence(logger: Logger(level: .error)),
                                              clock: SystemClock())
        let request = MakeCredentialRequest(
            clientDataHash: SHA256.hash([1]), rp: RelyingPartyEntity(id: "wire.example", name: nil),
            user: UserEntity(id: [4, 2], name: "dana", displayName: nil), pubKeyCredParams: [CredentialParameters(algorithm: -7)],
            excludeList: [], extensions: .init(), options: RequestOptions(["rk": true]))
        let bytes = [CTAPCommand.makeCredential.rawValue] + request.cborValue.encoded()
        let (decoded, outcome) = authenticator.exchangeCTAP2(bytes, context: RequestContext(channel: 1))
        XCTAssertEqual(outcome.encoded().first, CTAP2StatusCode.success.rawValue)
        let wire = RigWireEvents.self
        let events = wire.events(request: decoded, outcome: outcome)
        XCTAssertEqual(events.map(\.name), ["credentialAdded"])
        XCTAssertEqual(events.first?.params.rpId, "wire.example")
        XCTAssertEqual(events.first?.params.userName, "dana")
        XCTAssertEqual(events.first?.params.userHandle, Base64URL.encode([4, 2]))
        XCTAssertEqual(events.first?.params.isResidentCredential, true)
        XCTAssertEqual(events.first?.credentialID?.count, 64, "a sealed credential ID")
        // A failed request is no event, nor is a request the key could not read.
        XCTAssertEqual(wire.events(request: decoded, outcome: .failure(.operationDenied)).count, 0)
        XCTAssertEqual(wire.events(request: nil, outcome: .failure(.invalidCommand)).count, 0)

        // The assertion that follows: its credential, the RP its getAssertion named, its counter.
        let credentialID = try XCTUnwrap(events.first?.credentialID)
        let asked = GetAssertionRequest(rpID: "wire.example", clientDataHash: SHA256.hash([2]),
                                        allowList: [CredentialDescriptor(id: credentialID)], extensions: .init(), options: RequestOptions())
        let (assertion, asserted) = authenticator.exchangeCTAP2([CTAPCommand.getAssertion.rawValue] + asked.cborValue.encoded(),
                                                                context: RequestContext(channel: 1))
        let assertedEvents = wire.events(request: assertion, outcome: asserted)
        XCTAssertEqual(assertedEvents.map(\.name), ["credentialAsserted"])
        XCTAssertEqual(assertedEvents.first?.params.rpId, "wire.example")
        XCTAssertEqual(assertedEvents.first?.params.credentialId, Base64URL.encode(credentialID))
        XCTAssertEqual(assertedEvents.first?.params.signCount, try XCTUnwrap(events.first?.params.signCount) + 1, "the next counter")

        // credentialManagement's deleteCredential and updateUserInformation answer success with
        // no body: their events come from the request.
        let descriptor: CBORValue = .map(["type": "public-key", "id": .byteString([9, 9])])
        for (subcommand, name) in [(0x06, "credentialDeleted"), (0x07, "credentialUpdated")] {
            var parameters: [CBORValue: CBORValue] = [2: descriptor]
            if subcommand == 0x07 { parameters[3] = .map(["id": .byteString([4, 2]), "name": "dana2", "displayName": "Dana"]) }
            let management = try CTAP2Request(command: .credentialManagement,
                                              parameters: .map([1: .unsignedInt(UInt64(subcommand)), 2: .map(parameters)]))
            let managed = wire.events(request: management, outcome: .success(.empty))
            XCTAssertEqual(managed.map(\.name), [name])
            XCTAssertEqual(managed.first?.params.credentialId, Base64URL.encode([9, 9]))
            if subcommand == 0x07 {
                XCTAssertEqual(managed.first?.params.userName, "dana2")
                XCTAssertEqual(managed.first?.params.userDisplayName, "Dana")
            }
        }
    }

    /// injectFault reaches the client as the fault it names, is used up as many times as asked,
    /// and clearFaults ends it.
    func testInjectedFaultsReachTheClient() throws {
        let key = try addSocketKey()
        let getInfo = [CTAPCommand.getInfo.rawValue]
        func client(timeout: Int32 = 5_000) throws -> CTAPHIDClient {
            let client = CTAPHIDClient(link: try SocketClient(path: key.path), replyTimeoutMilliseconds: timeout)
            _ = try client.initialize()
            return client
        }
        func inject(_ params: [String: Any]) throws -> [String: Any] {
            try call("injectFault", ["authenticatorId": key.id].merging(params) { $1 })
        }
        XCTAssertNotNil(try inject(["command": "getInfo", "fault": "status", "status": 0x28])["result"])
        XCTAssertEqual(try client().cbor(getInfo), [0x28], "answered with the status")
        XCTAssertEqual(try client().cbor(getInfo).first, 0x00, "used up after once")

        XCTAssertNotNil(try inject(["command": "getInfo", "fault": "drop"])["result"])
        XCTAssertThrowsError(try client(timeout: 700).cbor(getInfo), "no response at all")
        XCTAssertEqual(try client().cbor(getInfo).first, 0x00, "the key serves on")

        XCTAssertNotNil(try inject(["command": "getInfo", "fault": "delay", "delayMs": 400])["result"])
        let started = Date()
        XCTAssertEqual(try client().cbor(getInfo).first, 0x00)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.4)

        XCTAssertNotNil(try inject(["command": "getInfo", "fault": "keepaliveFlood", "keepalives": 50])["result"])
        XCTAssertEqual(try client().cbor(getInfo).first, 0x00, "the client reads past the keepalives")

        XCTAssertNotNil(try inject(["command": "getInfo", "fault": "truncate"])["result"])
        XCTAssertThrowsError(try client(timeout: 700).cbor(getInfo), "only the first packet of a multi-packet getInfo")

        XCTAssertNotNil(try inject(["command": "any", "fault": "drop", "times": 0])["result"])
        XCTAssertThrowsError(try client(timeout: 500).cbor(getInfo))
        XCTAssertThrowsError(try client(timeout: 500).cbor(getInfo), "times 0: until cleared")
        XCTAssertEqual(try XCTUnwrap(try call("clearFaults", ["authenticatorId": key.id])["result"] as? [String: Any])["cleared"] as? Int, 1)
        XCTAssertEqual(try client().cbor(getInfo).first, 0x00)

        for params in [["command": "frob", "fault": "drop"], ["command": "getInfo", "fault": "explode"],
                       ["command": "any", "fault": "status", "status": 1], ["command": "getInfo", "fault": "delay"],
                       ["command": "getInfo", "fault": "status", "status": 300]] as [[String: Any]] {
            XCTAssertEqual(errorCode(try inject(params)), "invalidParams", "\(params)")
        }
    }

    /// protocol u2f: INIT without the CBOR capability, CBOR unknown, U2F VERSION answered.
    func testU2FAndCTAP20Personas() throws {
        let key = try addSocketKey(["protocol": "u2f"])
        let client = CTAPHIDClient(link: try SocketClient(path: key.path), replyTimeoutMilliseconds: 5_000)
        let initResponse = try client.initialize()
        XCTAssertFalse(initResponse.supportsCBOR)
        XCTAssertTrue(initResponse.supportsMSG)
        XCTAssertThrowsError(try client.cbor([CTAPCommand.getInfo.rawValue]))
        XCTAssertEqual(try client.transact(.msg, payload: [0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00]),
                       Array("U2F_V2".utf8) + [0x90, 0x00])
        let ctap20 = try addSocketKey(["protocol": "ctap2"])
        let ctap20Client = CTAPHIDClient(link: try SocketClient(path: ctap20.path), replyTimeoutMilliseconds: 5_000)
        XCTAssertTrue(try ctap20Client.initialize().supportsCBOR)
        let versions = try CBORDecoder.decode(Array(try ctap20Client.cbor([CTAPCommand.getInfo.rawValue]).dropFirst()))[1]
        XCTAssertEqual(versions?.arrayValue?.compactMap(\.stringValue), ["U2F_V2", "FIDO_2_0"])
        let info = try XCTUnwrap(try call("listAuthenticators")["result"] as? [String: Any])["authenticators"] as? [[String: Any]]
        XCTAssertEqual(info?.map { $0["protocol"] as? String }, ["u2f", "ctap2"])
        XCTAssertEqual(errorCode(try call("addAuthenticator", ["protocol": "u2f", "hasUserVerification": true])), "invalidParams")
    }
}
