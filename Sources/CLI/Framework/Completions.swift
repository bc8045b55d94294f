/// Shell completion scripts for bash, zsh and fish, made from the command table: commands,
/// subcommands, every option (with its help in zsh and fish), the choices of an option whose
/// value is one of a few words (`--presence auto|deny|…`), and file or directory names where a
/// value or an argument is a path.
enum Completions {
    /// What a value or argument completes to.
    enum ValueKind: Equatable {
        case choices([String]), directory, file, none
    }

    static func valueKind(_ valueName: String) -> ValueKind {
        let words = valueName.split(separator: "|").map(String.init)
        if words.count > 1, words.allSatisfy({ $0.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" } }) {
            return .choices(words)
        }
        if valueName == "DIR" { return .directory }
        if valueName.contains("FILE") || valueName.contains("PATH") { return .file }
        return .none
    }

    /// Every (words, spec) a command line can name: `serve`, `credentials list`, …
    static func leaves(_ commands: [CommandEntry]) -> [(words: [String], spec: CommandSpec)] {
        commands.flatMap { entry in
            entry.group.map { group in group.members.map { ([entry.spec.name, $0.word], $0.spec) } }
                ?? [([entry.spec.name], entry.spec)]
        }
    }

    /// The first sentence of a help text, short enough for a completion menu, with nothing a shell
    /// or zsh's `_arguments` would read as syntax.
    static func brief(_ help: String) -> String {
        var text = help
        if let end = text.range(of: ". ") { text = String(text[..<end.lowerBound]) }
        if text.hasSuffix(".") { text.removeLast() }
        if text.count > 70 { text = String(text.prefix(67)) + "..." }
        return String(text.map { "[]:\\'\"`$\n".contains($0) ? " " : $0 })
    }

    // MARK: bash

    static func bash(_ commands: [CommandEntry]) -> String {
        var lines = ["# bash completion for latchkey(1). Made by `latchkey generate --bash-completion`; do not edit.",
                     "_latchkey() {",
                     "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"",
                     "    local command=\"${COMP_WORDS[1]}\" sub=\"${COMP_WORDS[2]}\" options=\"\"",
                     "    if [ \"$COMP_CWORD\" -eq 1 ]; then",
                     "        COMPREPLY=($(compgen -W \"\(commands.map(\.spec.name).joined(separator: " ")) help --help --version\" -- \"$cur\"))",
                     "        return",
                     "    fi",
                     "    case \"$command\" in"]
        for entry in commands {
            lines.append("    \(entry.spec.name))")
            if let group = entry.group {
                let words = group.members.map(\.word)
                lines += ["        if [ \"$COMP_CWORD\" -eq 2 ]; then",
                          "            COMPREPLY=($(compgen -W \"\(words.joined(separator: " ")) help --help\" -- \"$cur\"))",
                          "            return",
                          "        fi",
                          "        case \"$sub\" in"]
                for member in group.members {
                    lines.append("        \(member.word))")
                    lines += bashOptions(member.spec, indent: "            ")
                    lines.append("            ;;")
                }
                lines.append("        esac")
            } else {
                lines += bashOptions(entry.spec, indent: "        ")
            }
            lines.append("        ;;")
        }
        lines += ["    help)",
                  "        COMPREPLY=($(compgen -W \"\(commands.map(\.spec.name).joined(separator: " "))\" -- \"$cur\"))",
                  "        return",
                  "        ;;",
                  "    esac",
                  "    if [[ \"$cur\" == -* ]]; then",
                  "        COMPREPLY=($(compgen -W \"$options --help\" -- \"$cur\"))",
                  "    else",
                  "        COMPREPLY=($(compgen -f -- \"$cur\"))",
                  "    fi",
                  "}",
                  "complete -o filenames -F _latchkey latchkey"]
        return lines.joined(separator: "\n") + "\n"
    }

    static func bashOptions(_ spec: CommandSpec, indent: String) -> [String] {
        var lines = ["\(indent)options=\"\(spec.options.map { "--" + $0.name }.joined(separator: " "))\""]
        let valued = spec.options.filter { $0.valueName != nil }
        guard !valued.isEmpty else { return lines }
        lines.append("\(indent)case \"$prev\" in")
        for option in valued {
            let reply: String
            switch valueKind(option.valueName ?? "") {
            case .choices(let words): reply = "COMPREPLY=($(compgen -W \"\(words.joined(separator: " "))\" -- \"$cur\"))"
            case .directory: reply = "COMPREPLY=($(compgen -d -- \"$cur\"))"
            case .file: reply = "COMPREPLY=($(compgen -f -- \"$cur\"))"
            case .none: reply = "COMPREPLY=()"
            }
            lines.append("\(indent)--\(option.name)) \(reply); return ;;")
        }
        lines.append("\(indent)esac")
        return lines
    }

    // MARK: zsh

    static func zsh(_ commands: [CommandEntry]) -> String {
        var lines = ["#compdef latchkey",
                     "# zsh completion for latchkey(1). Made by `latchkey generate --zsh-completion`; do not edit.",
                     "_latchkey() {",
                     "    local -a commands",
                     "    commands=("]
        lines += commands.map { "        '\($0.spec.name):\(brief($0.spec.abstract))'" }
        lines += ["        'help:Show a command s help'",
                  "    )",
                  "    if (( CURRENT == 2 )); then",
                  "        _describe -t commands 'latchkey command' commands",
                  "        return",
                  "    fi",
                  "    case $words[2] in"]
        for entry in commands {
            lines.append("    \(entry.spec.name))")
            if let group = entry.group {
                lines += ["        if (( CURRENT == 3 )); then",
                          "            local -a subcommands",
                          "            subcommands=(" + group.members.map { "'\($0.word):\(brief($0.spec.abstract))'" }.joined(separator: " ") + ")",
                          "            _describe -t subcommands 'latchkey \(entry.spec.name) subcommand' subcommands",
                          "            return",
                          "        fi",
                          "        case $words[3] in"]
                for member in group.members {
                    lines.append("        \(member.word)) \(zshArguments(member.spec)) ;;")
                }
                lines.append("        esac")
            } else {
                lines.append("        \(zshArguments(entry.spec))")
            }
            lines.append("        ;;")
        }
        lines += ["    help) _describe -t commands 'latchkey command' commands ;;",
                  "    esac",
                  "}",
                  "_latchkey \"$@\""]
        return lines.joined(separator: "\n") + "\n"
    }

    static func zshArguments(_ spec: CommandSpec) -> String {
        var specs = spec.options.map { option -> String in
            guard let valueName = option.valueName else { return "'--\(option.name)[\(brief(option.help))]'" }
            let action: String
            switch valueKind(valueName) {
            case .choices(let words): action = "(\(words.joined(separator: " ")))"
            case .directory: action = "_files -/"
            case .file: action = "_files"
            case .none: action = " "
            }
            let message = valueName.map { ":[]'\\\"`$".contains($0) ? "_" : $0 }
            return "'--\(option.name)=[\(brief(option.help))]:\(String(message)):\(action)'"
        }
        specs.append("'(- *)'{-h,--help}'[Show help]'")
        specs.append("'*:argument:_files'")
        return "_arguments -S " + specs.joined(separator: " ")
    }

    // MARK: fish

    static func fish(_ commands: [CommandEntry]) -> String {
        var lines = ["# fish completion for latchkey(1). Made by `latchkey generate --fish-completion`; do not edit.",
                     "complete -c latchkey -f"]
        let names = commands.map(\.spec.name).joined(separator: " ")
        for entry in commands {
            lines.append("complete -c latchkey -n 'not __fish_seen_subcommand_from \(names) help' -a \(entry.spec.name) -d \(fishQuote(brief(entry.spec.abstract)))")
        }
        lines.append("complete -c latchkey -n 'not __fish_seen_subcommand_from \(names) help' -a help -d 'Show a command s help'")
        lines.append("complete -c latchkey -n '__fish_seen_subcommand_from help' -a '\(names)'")
        for entry in commands {
            if let group = entry.group {
                let words = group.members.map(\.word).joined(separator: " ")
                for member in group.members {
                    lines.append("complete -c latchkey -n '__fish_seen_subcommand_from \(entry.spec.name); and not __fish_seen_subcommand_from \(words)' -a \(member.word) -d \(fishQuote(brief(member.spec.abstract)))")
                    let condition = "__fish_seen_subcommand_from \(entry.spec.name); and __fish_seen_subcommand_from \(member.word)"
                    lines += fishOptions(member.spec, condition: condition)
                }
            } else {
                lines += fishOptions(entry.spec, condition: "__fish_seen_subcommand_from \(entry.spec.name)")
                if !entry.spec.positionals.isEmpty {
                    lines.append("complete -c latchkey -n '\(condition(entry.spec.name))' -F")
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func condition(_ name: String) -> String { "__fish_seen_subcommand_from \(name)" }

    static func fishOptions(_ spec: CommandSpec, condition: String) -> [String] {
        spec.options.map { option in
            var line = "complete -c latchkey -n '\(condition)' -l \(option.name)"
            if let valueName = option.valueName {
                switch valueKind(valueName) {
                case .choices(let words): line += " -x -a '\(words.joined(separator: " "))'"
                case .directory: line += " -r -a '(__fish_complete_directories)'"
                case .file: line += " -r -F"
                case .none: line += " -x"
                }
            }
            return line + " -d " + fishQuote(brief(option.help))
        }
    }

    static func fishQuote(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
