@testable import CLI
import XCTest

/// The man pages, completions and help are made from `latchkey`'s command table, so every
/// command, subcommand and option must show up in each of them.
final class GeneratedDocsTests: XCTestCase {
    let commands = LatchkeyCLI.commands

    func testEveryOptionIsInItsManPageAndEveryCompletion() {
        let pages = Dictionary(uniqueKeysWithValues: ManPage.pages(commands, about: .init(version: "9.9", date: "2026-01-01", examples: LatchkeyCLI.topLevelExamples)).map { ($0.name, $0.text) })
        let bash = Completions.bash(commands), zsh = Completions.zsh(commands), fish = Completions.fish(commands)
        XCTAssertEqual(pages.count, commands.count + 1)
        var checked = 0
        for entry in commands {
            guard let page = pages["latchkey-\(entry.spec.name).1"] else { XCTFail("no page for \(entry.spec.name)"); continue }
            XCTAssertTrue(pages["latchkey.1"]!.contains("latchkey\\-\(ManPage.code(entry.spec.name)) (1)"), entry.spec.name)
            XCTAssertTrue(bash.contains("    \(entry.spec.name))"), entry.spec.name)
            XCTAssertTrue(zsh.contains("'\(entry.spec.name):"), entry.spec.name)
            XCTAssertTrue(fish.contains("-a \(entry.spec.name) -d"), entry.spec.name)
            for member in entry.group?.members ?? [] {
                XCTAssertTrue(page.contains(".SS latchkey \(ManPage.code(member.spec.name))"), member.spec.name)
                XCTAssertTrue(bash.contains("        \(member.word))"), member.spec.name)
                XCTAssertTrue(zsh.contains("        \(member.word)) _arguments"), member.spec.name)
                XCTAssertTrue(fish.contains("-a \(member.word) -d"), member.spec.name)
            }
            for spec in entry.leafSpecs {
                for option in spec.options {
                    XCTAssertTrue(page.contains("\\fB\\-\\-\(ManPage.code(option.name))\\fR"), "\(spec.name) --\(option.name) in man")
                    XCTAssertTrue(bash.contains("--\(option.name)"), "\(spec.name) --\(option.name) in bash")
                    XCTAssertTrue(zsh.contains("'--\(option.name)"), "\(spec.name) --\(option.name) in zsh")
                    XCTAssertTrue(fish.contains("-l \(option.name)"), "\(spec.name) --\(option.name) in fish")
                    XCTAssertTrue(spec.help(width: 80).contains("--\(option.name)"), "\(spec.name) --\(option.name) in help")
                    checked += 1
                }
            }
        }
        XCTAssertGreaterThan(checked, 100)
    }

    /// Every command that reports a result can report it as JSON; the exceptions run until
    /// stopped (serve, rig, proxy, native-host, uhid-broker) or write files for packagers (generate).
    func testEveryReportingCommandTakesJSON() {
        let exempt: Set<String> = ["serve", "rig", "proxy", "native-host", "uhid-broker", "generate"]
        for entry in commands where !exempt.contains(entry.spec.name) {
            for spec in entry.leafSpecs {
                XCTAssertTrue(spec.options.contains { $0.name == "json" && $0.valueName == nil }, "\(spec.name) has no --json")
            }
        }
    }

    func testHelpFitsTheWidthItIsGiven() {
        for width in [60, 80, 100] {
            var texts = [LatchkeyCLI.topLevelHelp(width: width)]
            for entry in commands {
                texts.append(entry.help(for: ParsedArguments(), width: width))
                for member in entry.group?.members ?? [] { texts.append(member.spec.help(width: width)) }
            }
            for text in texts {
                for line in text.split(separator: "\n") where line.count > width {
                    // Only an unbreakable word (a long option synopsis, a path) may stick out.
                    XCTAssertFalse(line.trimmingCharacters(in: .whitespaces).contains(" ") && !line.hasPrefix("  --"),
                                   "\(line.count) > \(width): \(line)")
                }
            }
        }
    }

    func testSuggestionsForTypos() {
        XCTAssertEqual(Suggestion.closest(to: "serv", among: commands.map(\.spec.name)), "serve")
        XCTAssertEqual(Suggestion.closest(to: "credentails", among: commands.map(\.spec.name)), "credentials")
        XCTAssertEqual(Suggestion.closest(to: "jsn", among: ["json", "store", "name"]), "json")
        XCTAssertNil(Suggestion.closest(to: "zzzzzz", among: commands.map(\.spec.name)))
        XCTAssertEqual(Suggestion.message("unknown option '--jsn'", word: "jsn", among: ["json"], prefix: "--"),
                       "unknown option '--jsn'; did you mean '--json'?")
    }

    func testManPageEscapesWhatRoffWouldRead() {
        XCTAssertEqual(ManPage.text(".hidden \\ back"), "\\&.hidden \\e back")
        XCTAssertEqual(ManPage.code("--a \"b\""), "\\-\\-a \\(dqb\\(dq")
    }

    func testValueKinds() {
        XCTAssertEqual(Completions.valueKind("auto|deny|prompt"), .choices(["auto", "deny", "prompt"]))
        XCTAssertEqual(Completions.valueKind("DIR"), .directory)
        XCTAssertEqual(Completions.valueKind("FILE"), .file)
        XCTAssertEqual(Completions.valueKind("uhid|socket:PATH"), .file)
        XCTAssertEqual(Completions.valueKind("NAME"), .none)
    }
}
