import XCTest
import FIDOCrypto

final class SecretBytesTests: XCTestCase {
    func testDescriptionsNeverShowBytes() {
        let secret = SecretBytes([UInt8](repeating: 0xAB, count: 32))
        XCTAssertEqual(secret.description, "SecretBytes(32 bytes)")
        XCTAssertEqual(secret.debugDescription, "SecretBytes(32 bytes)")
        XCTAssertEqual("\(secret)", "SecretBytes(32 bytes)")
        XCTAssertEqual(String(reflecting: secret), "SecretBytes(32 bytes)")
        var dumped = ""
        dump(secret, to: &dumped)
        for rendering in [dumped, "\([secret])", "\(Optional(secret) as Any)"] {
            XCTAssertFalse(rendering.lowercased().contains("ab, "), rendering)
            XCTAssertFalse(rendering.contains("171"), rendering)   // 0xAB in decimal
            XCTAssertFalse(rendering.lowercased().contains("abab"), rendering)
        }
        let key = try? P256.Signing.PrivateKey()
        XCTAssertEqual(key.map { "\($0.rawRepresentation)" }, "SecretBytes(32 bytes)")
    }

    func testContentsAndCopies() {
        let bytes: [UInt8] = [1, 2, 3, 4]
        let secret = SecretBytes(bytes)
        XCTAssertEqual(secret.count, 4)
        XCTAssertEqual(secret.copyBytes(), bytes)
        XCTAssertEqual(secret.withUnsafeBytes { Array($0) }, bytes)
        struct Marker: Error {}
        XCTAssertThrowsError(try secret.withUnsafeBytes { _ in throw Marker() })
        let empty = SecretBytes([])
        XCTAssertEqual(empty.count, 0)
        XCTAssertEqual(empty.copyBytes(), [])
        XCTAssertEqual(empty.description, "SecretBytes(0 bytes)")
    }

    func testRandom() {
        let first = SecretBytes(randomCount: 32)
        let second = SecretBytes(randomCount: 32)
        XCTAssertEqual(first.count, 32)
        XCTAssertNotEqual(first.copyBytes(), second.copyBytes())
        XCTAssertEqual(SecretBytes(randomCount: 0).count, 0)
        XCTAssertEqual(SecureRandom.bytes(count: 0), [])
        XCTAssertEqual(SecureRandom.bytes(count: 48).count, 48)
        XCTAssertNotEqual(SecureRandom.bytes(count: 16), SecureRandom.bytes(count: 16))
    }

    func testConstantTimeEquals() {
        XCTAssertTrue(constantTimeEquals([], []))
        XCTAssertTrue(constantTimeEquals([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(constantTimeEquals([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(constantTimeEquals([1, 2, 3], [1, 2]))
        XCTAssertFalse(constantTimeEquals([], [0]))
    }
}

final class SecretBytesCopyTests: XCTestCase {
    func testWipingInitLeavesOnlyItsOwnCopy() {
        var source: [UInt8] = [0x11, 0x22, 0x33, 0x44]
        let secret = source.withUnsafeMutableBytes { buffer in
            SecretBytes(copying: UnsafeRawBufferPointer(buffer))
        }
        XCTAssertEqual(secret.copyBytes(), [0x11, 0x22, 0x33, 0x44])
        source.wipe()
        XCTAssertEqual(source, [0, 0, 0, 0])
        XCTAssertEqual(SecretBytes(wiping: [5, 6, 7]).copyBytes(), [5, 6, 7])
        XCTAssertEqual(SecretBytes([1, 2, 3, 4, 5][2...]).copyBytes(), [3, 4, 5])
    }

    func testAppendWritesInPlace() {
        let secret = SecretBytes([0xAA, 0xBB])
        var buffer: [UInt8] = [1]
        buffer.reserveCapacity(3)
        let base = buffer.withUnsafeBytes { $0.baseAddress }
        secret.append(to: &buffer)
        XCTAssertEqual(buffer, [1, 0xAA, 0xBB])
        XCTAssertEqual(buffer.withUnsafeBytes { $0.baseAddress }, base, "append reallocated the buffer")
    }
}
