/// Man pages in roff (man(7) macros), made from the command table: `latchkey(1)` with every
/// command by section, and `latchkey-COMMAND(1)` with a command's options (for a group, each
/// subcommand's) and examples. `latchkey generate --man DIR` writes them; the Debian package
/// installs them.
enum ManPage {
    /// What the pages say about the program as a whole.
    struct About {
        var version: String
        var date: String
        var examples: [CommandSpec.Example]
    }

    /// The page's file name and its text, for `latchkey(1)` then each command's page.
    static func pages(_ commands: [CommandEntry], about: About) -> [(name: String, text: String)] {
        [("latchkey.1", main(commands, about: about))]
            + commands.map { ("latchkey-\($0.spec.name).1", page($0, version: about.version, date: about.date)) }
    }

    static func main(_ commands: [CommandEntry], about: About) -> String {
        let (version, date) = (about.version, about.date)
        var lines = header("LATCHKEY", version: version, date: date)
        lines += [".SH NAME", "latchkey \\- a software FIDO2 security key for Linux", ".SH SYNOPSIS",
                  ".B latchkey", ".I command", ".RI [ options ]", ".br", ".B latchkey help", ".RI [ command ]",
                  ".SH DESCRIPTION",
                  text("Latchkey is a FIDO2 security key in software. It creates a virtual HID device through the kernel's "
                       + "/dev/uhid (or, where there is none, a UNIX socket that carries the same 64-byte reports) and speaks "
                       + "CTAPHID, CTAP 2.1 to 2.3 and U2F on it, so browsers, libfido2's tools, OpenSSH and python-fido2 see an "
                       + "ordinary roaming security key. Its credentials live in an encrypted store, one directory per key, "
                       + "whose master key can be sealed to the TPM, the login keyring or a passphrase."),
                  ".PP", text("Each command has its own page, named below; `latchkey help COMMAND` shows the same options.")]
        lines.append(".SH COMMANDS")
        for section in CommandEntry.Section.allCases {
            lines += [".SS " + text(section.title)]
            for entry in commands where entry.section == section {
                lines += [".TP", ".BR latchkey\\-\(code(entry.spec.name)) (1)", text(entry.spec.abstract)]
            }
        }
        lines += [".SH OPTIONS", ".TP", ".BR \\-h \", \" \\-\\-help", "Show help (also after a command).",
                  ".TP", ".B \\-\\-version", "Show the version."]
        lines += examples(about.examples)
        lines += [".SH FILES",
                  ".TP", ".I ~/.local/share/latchkey/NAME/",
                  text("A key's store ($XDG_DATA_HOME/latchkey/NAME): credentials.sqlite and master.key, mode 0600 in a 0700 directory."),
                  ".TP", ".I $XDG_RUNTIME_DIR/latchkey/",
                  text("Control sockets of keys run with --presence control, and of latchkey rig."),
                  ".SH ENVIRONMENT",
                  ".TP", ".B LATCHKEY_PIN", text("The PIN for commands that need one (else asked on the terminal)."),
                  ".TP", ".B LATCHKEY_NEW_PIN", text("The new PIN for pin set and pin change (pin set also reads LATCHKEY_PIN when this is unset, as older scripts expect)."),
                  ".TP", ".B LATCHKEY_PASSPHRASE_FILE", text("A file holding the passphrase of a store sealed with one."),
                  ".TP", ".B LATCHKEY_SEAL", text("How serve, restore and import seal a store they create, from its first byte: tpm, tpm:PCR[,PCR], keyring or passphrase (its passphrase from LATCHKEY_PASSPHRASE_FILE or the terminal). Unset, a new store keeps its master key unsealed, as test rigs want; latchkey init chooses for you."),
                  ".TP", ".B COLUMNS", text("The width help is wrapped to (else the terminal's, or 80)."),
                  ".SH EXIT STATUS",
                  text("0 on success, 1 when a command fails, 64 for a usage error (an unknown command or option, a missing argument)."),
                  ".SH SEE ALSO"]
        let references = commands.map { "latchkey\\-\(code($0.spec.name)) (1)" } + ["fido2\\-token (1)", "ssh\\-keygen (1)"]
        lines += references.enumerated().map { index, reference in
            ".BR " + reference + (index < references.count - 1 ? " ," : "")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func page(_ entry: CommandEntry, version: String, date: String) -> String {
        let name = entry.spec.name
        var lines = header("LATCHKEY-" + name.uppercased(), version: version, date: date)
        lines += [".SH NAME", "latchkey\\-\(code(name)) \\- " + text(summary(entry.spec.abstract)), ".SH SYNOPSIS"]
        for (index, spec) in entry.leafSpecs.enumerated() {
            if index > 0 { lines.append(".br") }
            lines.append(synopsis(spec))
        }
        lines += [".SH DESCRIPTION", text(entry.spec.abstract)]
        if let group = entry.group {
            lines.append(".SH COMMANDS")
            for member in group.members {
                lines += [".SS latchkey \(code(member.spec.name))", text(member.spec.abstract)]
                lines += options(member.spec.options)
            }
        } else {
            lines += [".SH OPTIONS"] + options(entry.spec.options)
        }
        lines += examples(entry.leafSpecs.flatMap(\.examples))
        lines += [".SH SEE ALSO", ".BR latchkey (1)"]
        return lines.joined(separator: "\n") + "\n"
    }

    static func header(_ title: String, version: String, date: String) -> [String] {
        [".\\\" Made by `latchkey generate --man` from the command table; do not edit.",
         ".TH \(code(title)) 1 \"\(date)\" \"latchkey \(version)\" \"Latchkey Manual\""]
    }

    static func synopsis(_ spec: CommandSpec) -> String {
        var parts = [".B latchkey \(code(spec.name))"]
        if !spec.options.isEmpty { parts.append(".RI [ options ]") }
        for (index, positional) in spec.positionals.enumerated() {
            parts.append(index < spec.minimumPositionals ? ".I \(code(positional))" : ".RI [ \(code(positional)) ]")
        }
        return parts.joined(separator: "\n")
    }

    static func options(_ options: [CommandSpec.Option]) -> [String] {
        var lines: [String] = []
        for option in options {
            let value = option.valueName.map { " \\fI" + code($0) + "\\fR" } ?? ""
            lines += [".TP", "\\fB\\-\\-\(code(option.name))\\fR" + value, text(option.help)]
        }
        return lines + [".TP", ".BR \\-h \", \" \\-\\-help", "Show the command's help."]
    }

    static func examples(_ examples: [CommandSpec.Example]) -> [String] {
        guard !examples.isEmpty else { return [] }
        var lines = [".SH EXAMPLES"]
        for example in examples {
            lines += [".TP", ".B " + code(example.command), text(example.explanation)]
        }
        return lines
    }

    /// The abstract without its full stop, for the NAME line.
    static func summary(_ abstract: String) -> String {
        var text = abstract
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// Prose: backslashes escaped, and a line that would start with a control character made safe.
    static func text(_ string: String) -> String {
        var escaped = string.replacingOccurrences(of: "\\", with: "\\e")
        if escaped.hasPrefix(".") || escaped.hasPrefix("'") { escaped = "\\&" + escaped }
        return escaped.replacingOccurrences(of: "\n", with: " ")
    }

    /// Words to type (commands, options): also every hyphen a minus sign, so the text copies as typed.
    static func code(_ string: String) -> String {
        text(string).replacingOccurrences(of: "-", with: "\\-").replacingOccurrences(of: "\"", with: "\\(dq")
    }
}
