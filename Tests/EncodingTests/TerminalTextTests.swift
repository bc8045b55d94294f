import Encoding
import Foundation
import XCTest

/// The one sanitiser for printed text (issue 34: a control socket's answer reached the terminal
/// raw, writing its clipboard and faking an "approved" line).
final class TerminalTextTests: XCTestCase {
    static let hostile = "\u{1B}]52;c;aGk=\u{07}\u{1B}[2K\rapproved: login at bank.example"

    func testLinesEscapeWhatActsAndKeepLayout() {
        XCTAssertEqual(TerminalText.lines(Self.hostile), "\\x1B]52;c;aGk=\\x07\\x1B[2K\\x0Dapproved: login at bank.example")
        XCTAssertEqual(TerminalText.lines("a\n\tb"), "a\n\tb")
        XCTAssertEqual(TerminalText.lines("evil\u{202E}moc.elgoog"), "evil\\u{202E}moc.elgoog")
        XCTAssertEqual(TerminalText.lines("\u{9B}31m \u{7F} \u{E0041}"), "\\x9B31m \\x7F \\u{E0041}")
        XCTAssertEqual(TerminalText.lines("C:\\path ünïcødé 🧑‍💻"), "C:\\path ünïcødé 🧑‍💻", "plain text is untouched")
        XCTAssertEqual(TerminalText.line("one\ntwo"), "one\\x0Atwo")
    }

    func testJSONStaysValidAndMeansTheSame() throws {
        var literal = ""
        JSONStringLiteral.append(Self.hostile + "\u{202E}\u{E0041}\u{85}", to: &literal)
        XCTAssertFalse(literal.unicodeScalars.contains { TerminalText.isActive($0) }, literal)
        XCTAssertTrue(literal.contains("\\u001b]52") && literal.contains("\\u202e") && literal.contains("\\udb40\\udc41"))
        let decoded = try JSONDecoder().decode(String.self, from: Data(literal.utf8))
        XCTAssertEqual(decoded, Self.hostile + "\u{202E}\u{E0041}\u{85}")

        // Raw JSON from elsewhere (a rig's answer): escaped the JSON way, still the same document.
        let raw = "{\n  \"m\" : \"x\u{1B}[2K\u{202E}y\"\n}"
        let shown = TerminalText.json(raw)
        XCTAssertFalse(shown.unicodeScalars.contains { TerminalText.isActive($0) && $0 != "\n" })
        let object = try JSONSerialization.jsonObject(with: Data(shown.utf8)) as? [String: String]
        XCTAssertEqual(object?["m"], "x\u{1B}[2K\u{202E}y")
    }
}
