import Authenticator
import XCTest

/// What a person is shown of a site's text (DisplayText): nothing in it acts on a terminal.
final class DisplayTextTests: XCTestCase {
    func testControlCharactersAndTerminalEscapesAreShownNotObeyed() {
        // OSC 52 (set the clipboard), CSI (move the cursor, clear the screen), a bell, a newline.
        XCTAssertEqual(DisplayText.safe("\u{1B}]52;c;ZXZpbA==\u{07}alice"), "\\x1B]52;c;ZXZpbA==\\x07alice")
        XCTAssertEqual(DisplayText.safe("bob\u{1B}[2J\u{1B}[H\r\nApprove? [y/N] y"), "bob\\x1B[2J\\x1B[H\\x0D\\x0AApprove? [y/N] y")
        XCTAssertEqual(DisplayText.safe("a\u{0}b\u{7F}c\u{9B}d"), "a\\x00b\\x7Fc\\x9Bd", "C0, DEL and C1 (the 8-bit CSI)")
        for character in "\u{1B}\u{07}\u{0A}\u{0D}\u{9B}" {
            XCTAssertFalse(DisplayText.safe("x\(character)y").unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        }
    }

    func testBidirectionalOverridesCannotDisguiseAnRPOrAName() {
        // "example.com" followed by RLO makes a terminal show the rest reversed.
        XCTAssertEqual(DisplayText.safe("evil.example\u{202E}moc.elpmaxe"), "evil.example\\u{202E}moc.elpmaxe")
        XCTAssertEqual(DisplayText.safe("\u{2066}x\u{2069}\u{200F}\u{061C}\u{2028}"), "\\u{2066}x\\u{2069}\\u{200F}\\u{61C}\\u{2028}")
    }

    func testInvisibleCharactersBackslashesAndPilesOfMarksAreShown() {
        XCTAssertEqual(DisplayText.safe("pay\u{200B}pal"), "pay\\u{200B}pal", "zero-width space")
        XCTAssertEqual(DisplayText.safe("a\u{00AD}b\u{2060}c\u{FEFF}"), "a\\xADb\\u{2060}c\\u{FEFF}")
        // A backslash a site typed cannot pass for an escape made here.
        XCTAssertEqual(DisplayText.safe("\\x1B]52"), "\\\\x1B]52")
        // One character with a thousand combining marks is cut.
        let pile = "a" + String(repeating: "\u{0301}", count: 1_000)
        XCTAssertLessThanOrEqual(DisplayText.safe(pile).unicodeScalars.count, 4 * DisplayText.maximumLength + 1)
        XCTAssertTrue(DisplayText.safe(pile).hasSuffix("…"))
    }

    func testOrdinaryNamesAreUntouchedAndLongOnesCut() {
        for name in ["alice", "Zoë Ångström", "山田太郎", "👩🏽‍💻 dev", "café\u{301}"] {
            XCTAssertEqual(DisplayText.safe(name), name)
        }
        let long = String(repeating: "a", count: 1_024)
        XCTAssertEqual(DisplayText.safe(long), String(repeating: "a", count: DisplayText.maximumLength) + "…")
        XCTAssertEqual(DisplayText.safe("abcdef", limit: 3), "abc…")
    }

    func testARequestSaysOperationRPAndUser() {
        XCTAssertEqual(DisplayText.request("register", rpID: "example.com", userName: "alice"), "register at example.com for alice")
        XCTAssertEqual(DisplayText.request("sign in", rpID: "example.com", userName: ""), "sign in at example.com")
        XCTAssertEqual(DisplayText.request("reset", rpID: nil, userName: nil), "reset")
        XCTAssertEqual(DisplayText.request("register", rpID: "x.example", userName: "\u{1B}]0;pwned\u{07}"),
                       "register at x.example for \\x1B]0;pwned\\x07")
    }
}
