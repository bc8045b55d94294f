import Authenticator
import CBOR
import CTAP
import FIDOCrypto
import XCTest

/// A seeded key (the rig's `seed`) makes the same credentials from the same requests on a fresh
/// store: reproducible fixtures. Another seed, other credentials.
final class DeterministicRandomTests: XCTestCase {
    func register(seed: String, algorithm: Int, resident: Bool) throws -> (id: [UInt8], publicKey: CBORValue) {
        let store = InMemoryCredentialStore()
        let authenticator = try Authenticator(store: store, presence: ScriptedPresence(), clock: ManualClock(),
                                              random: DeterministicRandom(seed: Array(seed.utf8)))
        let request = MakeCredentialRequest(
            clientDataHash: SHA256.hash([1]), rp: RelyingPartyEntity(id: "fixture.example", name: nil),
            user: UserEntity(id: [1], name: "f", displayName: nil), pubKeyCredParams: [CredentialParameters(algorithm: algorithm)],
            excludeList: [], extensions: .init(), options: resident ? RequestOptions(["rk": true]) : RequestOptions(),
            attestationFormatsPreference: ["none"])
        let response = authenticator.handleCTAP2([CTAPCommand.makeCredential.rawValue] + request.cborValue.encoded(),
                                                 context: RequestContext(channel: 1))
        XCTAssertEqual(response.first, 0)
        let body = try CBORDecoder.decode(Array(response.dropFirst()))
        let authData = try AuthenticatorData(decoding: try XCTUnwrap(body[2]?.bytesValue))
        let attested = try XCTUnwrap(authData.attestedCredentialData)
        return (attested.credentialID, attested.publicKey)
    }

    func testSameSeedSameCredentialsOtherSeedOthers() throws {
        for (algorithm, resident) in [(-7, false), (-7, true), (-8, false), (-35, false), (-36, true), (-47, false)] {
            let first = try register(seed: "fixture-1", algorithm: algorithm, resident: resident)
            let again = try register(seed: "fixture-1", algorithm: algorithm, resident: resident)
            let other = try register(seed: "fixture-2", algorithm: algorithm, resident: resident)
            XCTAssertEqual(first.id, again.id)
            XCTAssertEqual(first.publicKey, again.publicKey)
            XCTAssertNotEqual(first.id, other.id)
            XCTAssertNotEqual(first.publicKey, other.publicKey)
        }
    }

    func testTheStreamNeverRepeats() {
        let random = DeterministicRandom(seed: Array("s".utf8))
        let chunks = (0..<200).map { _ in random.bytes(count: 12) }
        XCTAssertEqual(Set(chunks).count, 200)
        XCTAssertEqual(DeterministicRandom(seed: Array("s".utf8)).bytes(count: 2_400), chunks.flatMap { $0 })
    }
}
