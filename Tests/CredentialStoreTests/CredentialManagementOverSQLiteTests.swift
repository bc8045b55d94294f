import Authenticator
import CBOR
import CTAP
@testable import CredentialStore
import FIDOCrypto
import Foundation
import XCTest

/// authenticatorCredentialManagement driven against the real SQLite store: enumeration of a few
/// thousand credentials stays linear, hidden credentials stay out, and delete / update are
/// durable when the response leaves (they survive closing and reopening the store).
final class CredentialManagementOverSQLiteTests: XCTestCase {
    struct FixedClock: AuthenticatorClock {
        func monotonicNanoseconds() -> UInt64 { 1_000_000_000 }
        func unixSeconds() -> Int64 { 1_800_000_000 }
    }

    struct Approve: UserPresence {
        func confirmPresence(_ request: PresenceRequest, cancellation: CancellationFlag) -> PresenceResult { .approved }
    }

    /// The platform side of PIN/UV auth protocol one (CTAP 2.1 §6.5.6), enough to obtain a token.
    struct Platform {
        let authenticator: Authenticator

        func send(_ command: CTAPCommand, _ parameters: CBORValue) -> (status: UInt8, body: CBORValue?) {
            let response = authenticator.handleCTAP2([command.rawValue] + parameters.encoded(), context: RequestContext(channel: 7))
            let body = response.count > 1 ? try? CBORDecoder.decode(Array(response.dropFirst())) : nil
            return (response[0], body)
        }

        /// getKeyAgreement, ECDH, then getPinUvAuthTokenUsingPinWithPermissions (0x09) with cm.
        func cmToken(pin: String) throws -> [UInt8] {
            let agreement = send(.clientPIN, .map([1: 1, 2: 2]))
            let x = try XCTUnwrap(agreement.body?[1]?[-2]?.bytesValue)
            let y = try XCTUnwrap(agreement.body?[1]?[-3]?.bytesValue)
            let ephemeral = try P256.KeyAgreement.PrivateKey()
            let shared = SHA256.hash(try ephemeral.sharedSecretX(with: P256.KeyAgreement.PublicKey(x: x, y: y)).copyBytes())
            let zeroIV = [UInt8](repeating: 0, count: 16)
            let pinHashEnc = try AES256CBC.encrypt(Array(SHA256.hash(Array(pin.utf8)).prefix(16)), key: shared, iv: zeroIV)
            let platformKey: CBORValue = .map([1: 2, 3: -25, -1: 1, -2: .byteString(ephemeral.publicKey.x),
                                               -3: .byteString(ephemeral.publicKey.y)])
            let (status, body) = send(.clientPIN, .map([1: 1, 2: 9, 3: platformKey, 6: .byteString(pinHashEnc), 9: 0x04]))
            XCTAssertEqual(status, 0)
            return try AES256CBC.decrypt(try XCTUnwrap(body?[2]?.bytesValue), key: shared, iv: zeroIV)
        }

        /// credentialManagement with pinUvAuthParam = LEFT(HMAC-SHA-256(token, subCommand ‖ CBOR(params)), 16).
        func credentialManagement(_ subCommand: UInt64, params: CBORValue? = nil, token: [UInt8]? = nil) -> (status: UInt8, body: CBORValue?) {
            var map: [CBORValue: CBORValue] = [1: .unsignedInt(subCommand)]
            if let params { map[2] = params }
            if let token {
                map[3] = 1
                map[4] = .byteString(Array(HMACSHA256.authenticationCode(key: token, data: [UInt8(subCommand)] + (params?.encoded() ?? []))
                    .prefix(16)))
            }
            return send(.credentialManagement, .map(map))
        }
    }

    func openWithPIN(_ temporary: TemporaryDirectory) throws -> (SQLiteCredentialStore, Platform) {
        let store = try SQLiteCredentialStore.open(directory: temporary.storePath)
        let authenticator = try Authenticator(store: store, presence: Approve(), clock: FixedClock())
        return (store, Platform(authenticator: authenticator))
    }

    func testEnumeratingThousandsOfCredentialsIsLinearAndSkipsHiddenOnes() throws {
        let temporary = TemporaryDirectory()
        let (store, platform) = try openWithPIN(temporary)
        try store.savePINState(PINState(pinHash: SecretBytes(Array(SHA256.hash(Array("1234".utf8)).prefix(16))), pinCodePoints: 4,
                                        retries: 8, forcePINChange: false))
        let count = 3_000
        let key = try P256.Signing.PrivateKey()
        var credentials = (0..<count).map { index in
            var credential = makeCredential(rpID: "bulk.example", userHandle: withUnsafeBytes(of: UInt32(index)) { Array($0) },
                                            createdAt: 1_700_000_000 + Int64(index), full: false)
            credential.privateKey = key.rawRepresentation
            return credential
        }
        // Ten hidden ones (signals) that must not be listed.
        for index in 0..<10 { credentials[index * 7].hiddenSince = 1_700_000_000 }
        try store.saveResidentCredentials(credentials)
        let visible = Set(credentials.filter { $0.hiddenSince == nil }.map(\.credentialID))

        let token = try platform.cmToken(pin: "1234")
        let started = ContinuousClock.now
        let params: CBORValue = .map([1: .byteString(rpIDHash("bulk.example"))])
        let (status, first) = platform.credentialManagement(4, params: params, token: token)
        XCTAssertEqual(status, 0)
        XCTAssertEqual(first?[9]?.intValue, visible.count)
        var listed: [[UInt8]] = [try XCTUnwrap(first?[7]?["id"]?.bytesValue)]
        var createdOrder: [Int] = []
        for _ in 1..<visible.count {
            let (nextStatus, next) = platform.credentialManagement(5)
            guard nextStatus == 0, let id = next?[7]?["id"]?.bytesValue else { return XCTFail("GetNextCredential: \(nextStatus)") }
            listed.append(id)
        }
        let elapsed = ContinuousClock.now - started
        XCTAssertEqual(platform.credentialManagement(5).status, CTAP2StatusCode.notAllowed.rawValue)
        XCTAssertEqual(Set(listed), visible, "each visible credential once, no hidden one")
        XCTAssertEqual(listed.count, visible.count)
        // Newest first.
        let index = Dictionary(uniqueKeysWithValues: credentials.enumerated().map { ($0.element.credentialID, $0.offset) })
        createdOrder = listed.compactMap { index[$0] }
        XCTAssertEqual(createdOrder, createdOrder.sorted(by: >))
        // Generous: a quadratic walk over the store would take far longer.
        XCTAssertLessThan(elapsed, .seconds(60), "enumerated \(visible.count) in \(elapsed)")
    }

    func testDeleteAndUpdateAreDurableWhenTheResponseLeaves() throws {
        let temporary = TemporaryDirectory()
        let doomed = makeCredential(rpID: "durable.example", userHandle: [1], userName: "old", displayName: "Old")
        let renamed = makeCredential(rpID: "durable.example", userHandle: [2], userName: "bob", displayName: "Bob")
        do {
            let (store, platform) = try openWithPIN(temporary)
            try store.savePINState(PINState(pinHash: SecretBytes(Array(SHA256.hash(Array("1234".utf8)).prefix(16))), pinCodePoints: 4,
                                            retries: 8, forcePINChange: false))
            try store.saveResidentCredentials([doomed, renamed])
            let token = try platform.cmToken(pin: "1234")
            let deleteParams: CBORValue = .map([2: .map(["id": .byteString(doomed.credentialID), "type": "public-key"])])
            XCTAssertEqual(platform.credentialManagement(6, params: deleteParams, token: token).status, 0)
            let updateParams: CBORValue = .map([2: .map(["id": .byteString(renamed.credentialID), "type": "public-key"]),
                                                3: .map(["id": .byteString([2]), "name": "robert"])])
            XCTAssertEqual(platform.credentialManagement(7, params: updateParams, token: token).status, 0)
            store.close()
        }
        let reopened = try SQLiteCredentialStore.open(directory: temporary.storePath)
        XCTAssertNil(try reopened.residentCredential(id: doomed.credentialID))
        let stored = try XCTUnwrap(try reopened.residentCredential(id: renamed.credentialID))
        XCTAssertEqual(stored.userName, "robert")
        XCTAssertNil(stored.userDisplayName, "absent displayName removed")
        XCTAssertEqual(try reopened.relyingParties().map(\.rpID), ["durable.example"])
    }
}
