import Foundation
import Service

/// `latchkey <subcommand> …` — see `latchkey --help`.
let version = "0.1.0"
let subcommands: [(spec: CommandSpec, run: (ParsedArguments) throws(UsageError) -> Int32)] = [
    (ServeCommand.spec, { parsed throws(UsageError) in ServeCommand.run(try ServeCommand.options(from: parsed)) }),
]

@MainActor func topLevelHelp() -> String {
    var lines = [
        "latchkey \(version): a software FIDO2 security key for Linux.",
        "",
        "Usage: latchkey <subcommand> [options]",
        "",
        "Subcommands:",
    ]
    for entry in subcommands {
        lines.append("  " + entry.spec.name.padding(toLength: 12, withPad: " ", startingAt: 0) + entry.spec.abstract)
    }
    lines += ["", "Options:", "  -h, --help  Show help (also after a subcommand).", "  --version   Show the version."]
    return lines.joined(separator: "\n")
}

func fail(_ message: String, usage: String) -> Never {
    FileHandle.standardError.write(Data("Error: \(message)\n\(usage)\n".utf8))
    exit(64)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let first = arguments.first else {
    fail("missing subcommand", usage: "Usage: latchkey <subcommand> [options] (see latchkey --help)")
}
if first == "-h" || first == "--help" || first == "help" {
    print(topLevelHelp())
    exit(0)
}
if first == "--version" || first == "version" {
    print("latchkey \(version)")
    exit(0)
}
guard let entry = subcommands.first(where: { $0.spec.name == first }) else {
    fail("unknown subcommand '\(first)'", usage: "Usage: latchkey <subcommand> [options] (see latchkey --help)")
}
arguments.removeFirst()
do {
    let parsed = try CommandLineParser.parse(arguments, spec: entry.spec)
    if parsed.wantsHelp {
        print(entry.spec.help)
        exit(0)
    }
    exit(try entry.run(parsed))
} catch {
    fail(error.message, usage: entry.spec.usage)
}
