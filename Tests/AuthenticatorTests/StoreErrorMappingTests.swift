import Authenticator
import CTAP
import XCTest

/// Store failures reach the wire through one mapping, `CTAP2StatusCode.init(_: StoreError)`.
final class StoreErrorMappingTests: XCTestCase {
    func testAFullStoreIsKeyStoreFullAndEveryOtherStoreFailureIsOther() {
        XCTAssertEqual(CTAP2StatusCode(StoreError.full), .keyStoreFull)
        let others: [StoreError] = [.corrupt("row"), .io("disk"), .locked, .permissions("mode")]
        for error in others {
            XCTAssertEqual(CTAP2StatusCode(error), .other, "\(error)")
        }
    }
}
