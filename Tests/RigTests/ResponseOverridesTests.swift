import Authenticator
import CBOR
import CTAP
import CTAPHID
import Encoding
import FIDOCrypto
import KeyService
import Presence
@testable import Rig
import Synchronization
import SystemIO
import XCTest

/// The rig's response override bits reach the relying party as exactly the fault they name:
/// flags cleared under a valid signature (signed again by the key), or a well-formed signature
/// that does not verify. The key's own Authenticator knows nothing of them.
final class ResponseOverridesTests: XCTestCase {
    /// The events the handler reports, in order.
    final class EventLog: Sendable {
        let events = Mutex<[RigWireEvents.Event]>([])
        var all: [RigWireEvents.Event] { events.withLock { $0 } }
    }

    struct Key {
        let overrides = ResponseOverrides()
        let handler: RigKeyHandler
        let log = EventLog()

        init(userVerification: Bool = false) throws {
            let logger = Logger(level: .error)
            let authenticator = try Authenticator(store: InMemoryCredentialStore(), presence: AutoPresence(logger: logger),
                                                  userVerification: userVerification ? AutoVerification(logger: logger) : nil,
                                                  clock: SystemClock(), accountChooser: AccountChooser(policy: .client))
            let log = self.log
            handler = RigKeyHandler(authenticator, overrides: overrides, logger: logger,
                                    report: { events in log.events.withLock { $0 += events } })
        }

        func send(_ command: CTAPCommand, _ parameters: CBORValue?, channel: UInt32 = 1) -> (CTAP2StatusCode?, CBORValue?) {
            let payload = [command.rawValue] + (parameters?.encoded() ?? [])
            let response = handler.handle(command: CTAPHIDCommand.cbor.rawValue, payload: payload,
                                          context: RequestContext(channel: channel))
            let body = response.count > 1 ? try? CBORDecoder.decode(Array(response.dropFirst())) : nil
            return (response.first.flatMap(CTAP2StatusCode.init(rawValue:)), body)
        }
    }

    struct Registration {
        var credentialID: [UInt8]
        var publicKey: COSEKey
    }

    static func clientDataHash(_ label: String) -> [UInt8] { SHA256.hash(Array(label.utf8)) }

    func makeCredentialRequest(userID: [UInt8] = [1, 2, 3], algorithm: Int = -7, resident: Bool = false) -> MakeCredentialRequest {
        MakeCredentialRequest(clientDataHash: Self.clientDataHash("mc-\(userID)"), rp: RelyingPartyEntity(id: "example.com", name: "Example"),
                              user: UserEntity(id: userID, name: "alice", displayName: "Alice"),
                              pubKeyCredParams: [CredentialParameters(algorithm: algorithm)], excludeList: [], extensions: .init(),
                              options: resident ? RequestOptions(["rk": true]) : RequestOptions())
    }

    func register(_ key: Key, _ request: MakeCredentialRequest) throws -> Registration {
        let (status, body) = key.send(.makeCredential, request.cborValue)
        XCTAssertEqual(status, .success)
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(body?[2]?.bytesValue))
        let attested = try XCTUnwrap(authData.attestedCredentialData)
        return Registration(credentialID: attested.credentialID, publicKey: try XCTUnwrap(COSEKey(attested.publicKey)))
    }

    static func verifies(_ signature: [UInt8], _ message: [UInt8], _ publicKey: COSEKey) -> Bool {
        switch publicKey {
        case let .ec2P256(_, x, y):
            return (try? ECDSA.PublicKey(x: x, y: y))?.isValidSignature(signature, for: message) ?? false
        case let .okpEd25519(x):
            return (try? Ed25519.PublicKey(rawRepresentation: x))?.isValidSignature(signature, for: message) ?? false
        default:
            return false
        }
    }

    /// flags, whether the signature verifies, the signature.
    func assertionParts(_ key: Key, _ registration: Registration, allow: Bool = true)
        throws -> (flags: AuthenticatorData.Flags, verifies: Bool, signature: [UInt8]) {
        let request = GetAssertionRequest(rpID: "example.com", clientDataHash: Self.clientDataHash("ga"),
                                          allowList: allow ? [CredentialDescriptor(id: registration.credentialID)] : [])
        let (status, body) = key.send(.getAssertion, request.cborValue)
        XCTAssertEqual(status, .success)
        let response = try XCTUnwrap(body)
        let authData = try XCTUnwrap(response[2]?.bytesValue)
        let signature = try XCTUnwrap(response[3]?.bytesValue)
        return (try AuthenticatorData(decoding: authData).flags,
                Self.verifies(signature, authData + request.clientDataHash, registration.publicKey), signature)
    }

    func testEachBitIsTheFaultItNames() throws {
        for algorithm in [-7, -8] {
            let key = try Key()
            let overrides = key.overrides
            let registration = try register(key, makeCredentialRequest(algorithm: algorithm))
            let normal = try assertionParts(key, registration)
            XCTAssertTrue(normal.flags.contains(.userPresent))
            XCTAssertTrue(normal.verifies)

            overrides.badUP.store(true, ordering: .releasing)
            let noUP = try assertionParts(key, registration)
            XCTAssertFalse(noUP.flags.contains(.userPresent))
            XCTAssertTrue(noUP.verifies, "the flags are cleared before signing")
            overrides.badUP.store(false, ordering: .releasing)

            overrides.bogusSignature.store(true, ordering: .releasing)
            let bogus = try assertionParts(key, registration)
            XCTAssertTrue(bogus.flags.contains(.userPresent))
            XCTAssertFalse(bogus.verifies)
            XCTAssertEqual(bogus.signature.count, algorithm == -8 ? 64 : Int(bogus.signature[1]) + 2, "still well-formed")
            // The packed attestation signature is bogus too.
            let request = makeCredentialRequest(userID: [8], algorithm: algorithm)
            let made = key.send(.makeCredential, request.cborValue)
            XCTAssertEqual(made.0, .success)
            let body = try XCTUnwrap(made.1)
            let statement = try XCTUnwrap(body[3])
            let authData = try XCTUnwrap(body[2]?.bytesValue)
            let certificate = try X509Certificate(derEncoded: try XCTUnwrap(statement["x5c"]?.arrayValue?.first?.bytesValue))
            let attestationKey = try ECDSA.PublicKey(x963Representation: try XCTUnwrap(certificate.publicKeyX963))
            XCTAssertFalse(attestationKey.isValidSignature(try XCTUnwrap(statement["sig"]?.bytesValue),
                                                           for: authData + request.clientDataHash))
            overrides.bogusSignature.store(false, ordering: .releasing)
            XCTAssertTrue(try assertionParts(key, registration).verifies)
        }
    }

    func testBadUVClearsTheFlagOfAVerifiedRequestAndTheAttestationStillVerifies() throws {
        let key = try Key(userVerification: true)
        key.overrides.badUV.store(true, ordering: .releasing)
        var request = makeCredentialRequest(resident: true)
        request.options = RequestOptions(["rk": true, "uv": true])
        let (status, body) = key.send(.makeCredential, request.cborValue)
        XCTAssertEqual(status, .success)
        let authDataBytes = try XCTUnwrap(body?[2]?.bytesValue)
        let authData = try AuthenticatorData(decoding: authDataBytes)
        XCTAssertFalse(authData.flags.contains(.userVerified))
        XCTAssertTrue(authData.flags.contains(.userPresent))
        let statement = try XCTUnwrap(body?[3])
        let certificate = try X509Certificate(derEncoded: try XCTUnwrap(statement["x5c"]?.arrayValue?.first?.bytesValue))
        let attestationKey = try ECDSA.PublicKey(x963Representation: try XCTUnwrap(certificate.publicKeyX963))
        XCTAssertTrue(attestationKey.isValidSignature(try XCTUnwrap(statement["sig"]?.bytesValue),
                                                      for: authDataBytes + request.clientDataHash),
                      "the attestation is signed again over the cleared flags")
    }

    /// A discoverable credential's assertions, getNextAssertion's included (which sign over the
    /// getAssertion's clientDataHash), are signed again with the stored key.
    func testDiscoverableAssertionsAndGetNextAssertionAreSignedAgain() throws {
        let key = try Key()
        let first = try register(key, makeCredentialRequest(userID: [1], resident: true))
        let second = try register(key, makeCredentialRequest(userID: [2], resident: true))
        key.overrides.badUP.store(true, ordering: .releasing)
        let request = GetAssertionRequest(rpID: "example.com", clientDataHash: Self.clientDataHash("discoverable"))
        let (status, body) = key.send(.getAssertion, request.cborValue)
        XCTAssertEqual(status, .success)
        let next = key.send(.getNextAssertion, nil)
        XCTAssertEqual(next.0, .success)
        for response in [try XCTUnwrap(body), try XCTUnwrap(next.1)] {
            let authData = try XCTUnwrap(response[2]?.bytesValue)
            XCTAssertFalse(try AuthenticatorData(decoding: authData).flags.contains(.userPresent))
            let id = try XCTUnwrap(response[1]?["id"]?.bytesValue)
            let publicKey = id == first.credentialID ? first.publicKey : second.publicKey
            XCTAssertTrue(Self.verifies(try XCTUnwrap(response[3]?.bytesValue), authData + request.clientDataHash, publicKey))
        }
    }

    /// A getNextAssertion's event names the RP of the getAssertion on its own channel, also when
    /// another channel signed in at another RP in between; its overrides sign over that request's
    /// clientDataHash.
    func testGetNextAssertionContinuesItsOwnChannelsSequence() throws {
        let key = try Key()
        _ = try register(key, makeCredentialRequest(userID: [1], resident: true))
        _ = try register(key, makeCredentialRequest(userID: [2], resident: true))
        var elsewhere = makeCredentialRequest(userID: [3], resident: true)
        elsewhere.rp = RelyingPartyEntity(id: "other.example", name: nil)
        _ = try register(key, elsewhere)
        let asked = GetAssertionRequest(rpID: "example.com", clientDataHash: Self.clientDataHash("first channel"))
        XCTAssertEqual(key.send(.getAssertion, asked.cborValue, channel: 1).0, .success)
        let other = GetAssertionRequest(rpID: "other.example", clientDataHash: Self.clientDataHash("second channel"))
        XCTAssertEqual(key.send(.getAssertion, other.cborValue, channel: 2).0, .success)
        key.overrides.badUP.store(true, ordering: .releasing)
        let (status, body) = key.send(.getNextAssertion, nil, channel: 1)
        XCTAssertEqual(status, .success)
        let asserted = key.log.all.filter { $0.name == "credentialAsserted" }.map(\.params.rpId)
        XCTAssertEqual(asserted, ["example.com", "other.example", "example.com"])
        let authData = try XCTUnwrap(body?[2]?.bytesValue)
        XCTAssertFalse(try AuthenticatorData(decoding: authData).flags.contains(.userPresent), "the override applied")
        XCTAssertEqual(key.send(.getNextAssertion, nil, channel: 2).0, .notAllowed, "channel 2 began no sequence")
    }

    /// U2F register and authenticate are events too, read from their APDUs.
    func testU2FExchangesAreEvents() throws {
        let key = try Key()
        let application = SHA256.hash(Array("u2f.example".utf8))
        let register = U2FAPDU(ins: U2FAPDU.Instruction.register.rawValue, data: Self.clientDataHash("u2f") + application)
        let response = key.handler.handle(command: CTAPHIDCommand.msg.rawValue, payload: register.encoded(),
                                          context: RequestContext(channel: 1))
        XCTAssertEqual(Array(response.suffix(2)), [0x90, 0x00])
        let keyHandle = Array(response[67..<(67 + Int(response[66]))])
        let authenticate = U2FAPDU(ins: U2FAPDU.Instruction.authenticate.rawValue, p1: 0x03,
                                   data: Self.clientDataHash("u2f sign") + application + [UInt8(keyHandle.count)] + keyHandle)
        _ = key.handler.handle(command: CTAPHIDCommand.msg.rawValue, payload: authenticate.encoded(), context: RequestContext(channel: 1))
        XCTAssertEqual(key.log.all.map(\.name), ["credentialAdded", "credentialAsserted"])
        XCTAssertEqual(key.log.all.map(\.params.credentialId), [Base64URL.encode(keyHandle), Base64URL.encode(keyHandle)])
        XCTAssertEqual(key.log.all.first?.params.isResidentCredential, false)
    }
}
