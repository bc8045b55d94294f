@testable import CLI
import FIDOCrypto
import Foundation
import XCTest

/// LATCHKEY_PIN leaves the environment at start: zeroed where it lay, unset, held as a secret.
final class PINEnvironmentTests: XCTestCase {
    func testTakeZeroesAndUnsetsThePINVariables() throws {
        setenv("LATCHKEY_PIN", "24681357", 1)
        setenv("LATCHKEY_NEW_PIN", "97531", 1)
        let original = try XCTUnwrap(getenv("LATCHKEY_PIN"))
        SecureHeap.start()   // as runProcess does, first
        PINEnvironment.take()
        XCTAssertEqual(PINEnvironment.values["LATCHKEY_PIN"]?.isInSecureHeap, true)
        // glibc never frees a setenv string, so the old one can still be read: all zeros now.
        XCTAssertEqual(Array(UnsafeRawBufferPointer(start: original, count: 8)), [UInt8](repeating: 0, count: 8))
        XCTAssertNil(getenv("LATCHKEY_PIN"))
        XCTAssertNil(getenv("LATCHKEY_NEW_PIN"))
        XCTAssertNil(ProcessInfo.processInfo.environment["LATCHKEY_PIN"])
        XCTAssertEqual(PINEnvironment.values["LATCHKEY_PIN"]?.copyBytes(), Array("24681357".utf8))
        XCTAssertEqual(PINEnvironment.values["LATCHKEY_NEW_PIN"]?.copyBytes(), Array("97531".utf8))
        // What a command then reads: the taken PIN, and an environment without it.
        let io = CommandIO.standard
        XCTAssertEqual(io.pins["LATCHKEY_PIN"]?.copyBytes(), Array("24681357".utf8))
        XCTAssertNil(io.environment["LATCHKEY_PIN"])
    }

    func testAnEnvironmentDictionaryKeepsNoPINString() {
        let io = CommandIO(out: { _ in }, err: { _ in }, environment: ["LATCHKEY_PIN": "1234", "HOME": "/h"], terminal: nil)
        XCTAssertEqual(io.environment, ["HOME": "/h"])
        XCTAssertEqual(io.pins["LATCHKEY_PIN"]?.copyBytes(), Array("1234".utf8))
    }
}
