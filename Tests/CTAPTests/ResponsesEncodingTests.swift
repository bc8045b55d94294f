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
}
