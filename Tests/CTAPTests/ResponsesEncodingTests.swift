import CBOR
import CTAP
import XCTest

/// GetAssertionResponse.encoded() writes the response directly; it must be byte for byte the
/// canonical encoding of the map (cborValue), whichever members are present.
final class ResponsesEncodingTests: XCTestCase {
    func testDirectEncodingIsTheCanonicalEncodingOfTheMap() {
        let user: CBORValue = .map(["id": .byteString([1, 2, 3]), "name": "alice", "displayName": "Alice"])
        for id in [[UInt8](repeating: 7, count: 16), [UInt8](repeating: 8, count: 64), [UInt8](repeating: 9, count: 300)] {
            for numberOfCredentials in [nil, 1, 30, 1_000] as [Int?] {
                for (withUser, selected, blobKey) in [(false, nil, nil), (true, true, [UInt8](repeating: 1, count: 32)),
                                                      (true, false, nil)] as [(Bool, Bool?, [UInt8]?)] {
                    let response = GetAssertionResponse(
                        credential: CredentialDescriptor(id: id), authenticatorData: [UInt8](repeating: 0xAB, count: 37),
                        signature: [UInt8](repeating: 0xCD, count: 72), user: withUser ? user : nil,
                        numberOfCredentials: numberOfCredentials, userSelected: selected, largeBlobKey: blobKey)
                    XCTAssertEqual(response.encoded(), response.cborValue.encoded())
                }
            }
        }
        // A 4,627-byte ML-DSA-87 signature needs a two-byte length.
        let long = GetAssertionResponse(credential: CredentialDescriptor(id: [1]), authenticatorData: [UInt8](repeating: 2, count: 300),
                                        signature: [UInt8](repeating: 3, count: 4_627))
        XCTAssertEqual(long.encoded(), long.cborValue.encoded())
    }

    /// MakeCredentialResponse.encoded() likewise, for every combination of its optional members
    /// and each attestation statement shape the key makes (none, packed self and with x5c).
    func testMakeCredentialDirectEncodingIsTheCanonicalEncodingOfTheMap() {
        let statements: [CBORValue] = [
            .map([:]),
            .map(["alg": CBORValue(-7), "sig": .byteString([UInt8](repeating: 5, count: 71))]),
            .map(["alg": CBORValue(-7), "sig": .byteString([UInt8](repeating: 5, count: 72)),
                  "x5c": .array([.byteString([UInt8](repeating: 6, count: 600))])]),
        ]
        let outputs: [CBORValue: CBORValue] = ["hmac-secret": .boolean(true), "credProps": .map(["rk": .boolean(true)])]
        for (format, statement) in zip(["none", "packed", "packed"], statements) {
            for authenticatorData in [[UInt8](repeating: 0xAB, count: 164), [UInt8](repeating: 0xAC, count: 2_700)] {
                for (enterprise, blobKey, unsigned) in [(nil, nil, nil), (true, [UInt8](repeating: 1, count: 32), outputs),
                                                        (false, nil, outputs)] as [(Bool?, [UInt8]?, [CBORValue: CBORValue]?)] {
                    let response = MakeCredentialResponse(format: format, authenticatorData: authenticatorData,
                                                          attestationStatement: statement, largeBlobKey: blobKey,
                                                          enterpriseAttestation: enterprise, unsignedExtensionOutputs: unsigned)
                    XCTAssertEqual(response.encoded(), response.cborValue.encoded())
                    XCTAssertEqual(Result<CTAP2Response, CTAP2StatusCode>.success(.credential(response)).encoded(),
                                   [0] + response.cborValue.encoded())
                }
            }
        }
    }

    /// A response given its user as the entity reads and encodes exactly as one given the map.
    func testAUserEntityIsTheMapItStandsFor() {
        let entities = [UserEntity(id: [1, 2, 3], name: "alice", displayName: "Alice"),
                        UserEntity(id: [UInt8](repeating: 4, count: 64), name: "", displayName: nil),
                        UserEntity(id: [5], name: nil, displayName: "Zoë Ünïcode"),
                        UserEntity(id: [], name: String(repeating: "n", count: 300), displayName: "d")]
        for entity in entities {
            for identifying in [false, true] {
                let map = entity.cborValue(includeIdentifyingInfo: identifying)
                let given = GetAssertionResponse(credential: CredentialDescriptor(id: [9]), authenticatorData: [1, 2],
                                                 signature: [3], user: map, numberOfCredentials: 2)
                var fromEntity = GetAssertionResponse(credential: CredentialDescriptor(id: [9]), authenticatorData: [1, 2],
                                                      signature: [3], userEntity: entity, identifying: identifying,
                                                      numberOfCredentials: 2)
                XCTAssertEqual(fromEntity.user, map)
                XCTAssertEqual(fromEntity, given)
                XCTAssertEqual(fromEntity.encoded(), given.encoded())
                XCTAssertEqual(fromEntity.encoded(), fromEntity.cborValue.encoded())
                fromEntity.user = nil
                XCTAssertNil(fromEntity.user)
                XCTAssertEqual(fromEntity.encoded(), fromEntity.cborValue.encoded())
            }
        }
        XCTAssertNil(GetAssertionResponse(credential: CredentialDescriptor(id: [9]), authenticatorData: [], signature: [],
                                          userEntity: nil, identifying: true).user)
    }

    /// Every COSE key shape written directly is its map's canonical encoding, and authenticator
    /// data given the key reads, compares and encodes as authenticator data given the map.
    func testCOSEKeysWrittenDirectlyAreTheirMapsEncoding() {
        let keys: [COSEKey] = [
            .ec2P256(algorithm: .es256, x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32)),
            .ec2(curve: .p384, algorithm: .es384, x: [UInt8](repeating: 3, count: 48), y: [UInt8](repeating: 4, count: 48)),
            .ec2(curve: .p521, algorithm: .es512, x: [UInt8](repeating: 5, count: 66), y: [UInt8](repeating: 6, count: 66)),
            .ec2(curve: .secp256k1, algorithm: .es256K, x: [UInt8](repeating: 7, count: 32), y: [UInt8](repeating: 8, count: 32)),
            .okpEd25519(x: [UInt8](repeating: 9, count: 32)),
            .rsa(algorithm: .rs256, n: [UInt8](repeating: 10, count: 256), e: [1, 0, 1]),
            .rsa(algorithm: .ps256, n: [UInt8](repeating: 11, count: 512), e: [3]),
            .akp(algorithm: .mlDSA44, publicKey: [UInt8](repeating: 12, count: 1_312)),
            .akp(algorithm: .mlDSA87, publicKey: [UInt8](repeating: 13, count: 2_592)),
        ]
        for key in keys {
            var direct: [UInt8] = []
            key.encode(into: &direct)
            XCTAssertEqual(direct, key.cborValue.encoded(), "\(key)")
            let fromKey = AuthenticatorData.AttestedCredentialData(aaguid: [UInt8](repeating: 0xAA, count: 16),
                                                                   credentialID: [1, 2, 3], coseKey: key)
            let fromMap = AuthenticatorData.AttestedCredentialData(aaguid: [UInt8](repeating: 0xAA, count: 16),
                                                                   credentialID: [1, 2, 3], publicKey: key.cborValue)
            XCTAssertEqual(fromKey, fromMap)
            XCTAssertEqual(fromKey.publicKey, key.cborValue)
            let data = { (attested: AuthenticatorData.AttestedCredentialData) in
                AuthenticatorData(rpIDHash: [UInt8](repeating: 0x11, count: 32), flags: [.userPresent], signCount: 0x0102_0304,
                                  attestedCredentialData: attested, extensions: .map(["credProtect": 2]))
            }
            XCTAssertEqual(data(fromKey).encoded(), data(fromMap).encoded())
            XCTAssertEqual(try AuthenticatorData(decoding: data(fromKey).encoded()), data(fromMap))
        }
    }
}

