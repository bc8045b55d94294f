import Foundation
import XCTest

/// Everything the CLI prints goes through `Console` (and so `TerminalText`): a source check,
/// because one stray `print` of a socket's answer is enough to let it act on the terminal.
final class ConsoleTests: XCTestCase {
    func testCLIWritesOnlyThroughConsole() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        var offenders: [String] = []
        var checked = 0
        for module in ["CLI", "latchkey"] {
            let directory = sources.appendingPathComponent(module)
            // Every file, in the module's subfolders too (Framework/, Commands/, Devices/).
            let names = try FileManager.default.subpathsOfDirectory(atPath: directory.path).sorted()
            for name in names where name.hasSuffix(".swift") {
                guard (name as NSString).lastPathComponent != "Console.swift" else { continue }
                checked += 1
                let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                    if code.range(of: #"(^|[^A-Za-z_.])print\("#, options: .regularExpression) != nil
                        || code.contains("FileHandle.standardOutput") || code.contains("FileHandle.standardError")
                        || code.contains("write(STDOUT_FILENO") || code.contains("write(STDERR_FILENO") || code.contains("fputs(") {
                        offenders.append("\(module)/\(name):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                    }
                }
            }
        }
        XCTAssertGreaterThan(checked, 20, "the check found the CLI's sources")
        XCTAssertEqual(offenders, [], "write through Console.out/err/json instead")
    }
}
