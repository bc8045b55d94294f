import XCTest
@testable import Authenticator

final class ByteKeyTests: XCTestCase {
    /// Every length around the eight-byte steps, and a difference in each position: equal bytes
    /// are equal keys with equal hashes, any other bytes are not equal.
    func testEqualityAndHashFollowTheBytes() {
        for length in [0, 1, 7, 8, 9, 31, 32, 33, 64, 65] {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 5) }
            XCTAssertEqual(ByteKey(bytes), ByteKey(Array(bytes)))
            XCTAssertEqual(ByteKey(bytes).hashValue, ByteKey(Array(bytes)).hashValue)
            XCTAssertNotEqual(ByteKey(bytes), ByteKey(bytes + [0]), "a longer key with a zero byte more")
            for position in 0..<length {
                var other = bytes
                other[position] ^= 0x80
                XCTAssertNotEqual(ByteKey(bytes), ByteKey(other), "length \(length), byte \(position)")
            }
        }
    }

    func testDictionaryFindsByContentNotByArrayIdentity() {
        var table: [ByteKey: Int] = [:]
        table[ByteKey([1, 2, 3])] = 1
        table[ByteKey([1, 2, 3, 4, 5, 6, 7, 8, 9])] = 2
        XCTAssertEqual(table[ByteKey([1, 2] + [3])], 1)
        XCTAssertEqual(table[ByteKey(Array(1...9))], 2)
        XCTAssertNil(table[ByteKey([1, 2])])
    }
}
