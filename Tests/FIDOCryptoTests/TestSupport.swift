import XCTest

extension Array where Element == UInt8 {
    /// Decodes hex, ignoring whitespace. Traps on malformed input (test data only).
    init(hex: String) {
        let digits = hex.filter { !$0.isWhitespace }
        precondition(digits.count % 2 == 0, "odd-length hex")
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            bytes.append(UInt8(digits[index..<next], radix: 16)!)
            index = next
        }
        self = bytes
    }

    var hex: String {
        let digits = [Character]("0123456789abcdef")
        var text = ""
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return text
    }
}

extension String {
    var bytes: [UInt8] { Array(utf8) }
}

/// Asserts that `body` throws exactly `expected`.
func XCTAssertThrowsCryptoError<R>(_ expected: CryptoErrorMatch,
                                   file: StaticString = #filePath, line: UInt = #line,
                                   _ body: () throws -> R) {
    do {
        _ = try body()
        XCTFail("expected \(expected) to be thrown", file: file, line: line)
    } catch {
        XCTAssertTrue(expected.matches(error), "expected \(expected), got \(error)", file: file, line: line)
    }
}

import FIDOCrypto

struct CryptoErrorMatch: CustomStringConvertible, Sendable {
    let matches: @Sendable (Error) -> Bool
    let description: String

    static func exactly(_ error: CryptoError) -> CryptoErrorMatch {
        CryptoErrorMatch(matches: { ($0 as? CryptoError) == error }, description: "\(error)")
    }
    static let anyCertificateError = CryptoErrorMatch(matches: {
        if case .certificate = $0 as? CryptoError { return true }
        return false
    }, description: "CryptoError.certificate(_)")
}

/// Rough wall-clock timing of `body`, in microseconds per iteration (debug build).
func microsecondsPerIteration(_ iterations: Int, _ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let elapsed = try clock.measure {
        for _ in 0..<iterations { try body() }
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return seconds * 1e6 / Double(iterations)
}
