import Glibc
import SystemIO

/// `latchkey generate`: the man pages and shell completions, made from the command table (as
/// restic's `generate` does), for packagers and for installs from source.
enum GenerateCommand {
    static let spec = CommandSpec(
        name: "generate",
        abstract: "Write the man pages and bash, zsh and fish completions (for packaging and source installs).",
        options: [
            .init("man", value: "DIR", help: "Write latchkey.1 and one page per command into DIR (created if missing)."),
            .init("bash-completion", value: "FILE", help: "Write the bash completion script to FILE (- for standard output)."),
            .init("zsh-completion", value: "FILE", help: "Write the zsh completion script to FILE (- for standard output)."),
            .init("fish-completion", value: "FILE", help: "Write the fish completion script to FILE (- for standard output)."),
        ],
        examples: [
            .init("latchkey generate --man ~/.local/share/man/man1",
                  "Man pages for an install from source (then `man latchkey`)."),
            .init("latchkey generate --bash-completion ~/.local/share/bash-completion/completions/latchkey",
                  "Completion for bash, loaded the next time a shell starts."),
        ])

    static func run(_ parsed: ParsedArguments, commands: [CommandEntry], about: ManPage.About, io: CommandIO = .standard) throws(UsageError) -> Int32 {
        let scripts: [(option: String, shell: String, make: ([CommandEntry]) -> String)] = [
            ("bash-completion", "bash", Completions.bash), ("zsh-completion", "zsh", Completions.zsh),
            ("fish-completion", "fish", Completions.fish),
        ]
        let manDirectory = parsed.value("man")
        guard manDirectory != nil || scripts.contains(where: { parsed.value($0.option) != nil }) else {
            throw UsageError("nothing to write: give --man DIR, --bash-completion FILE, --zsh-completion FILE or --fish-completion FILE")
        }
        return try CLIError.run(io) { () throws(CLIError) -> Int32 in
            if let manDirectory {
                guard !manDirectory.isEmpty else { throw .usage("invalid --man '': give a directory") }
                let pages = ManPage.pages(commands, about: about)
                do throws(Errno) {
                    try FileSystem.createDirectories(manDirectory, mode: 0o755)
                } catch {
                    throw .failure("cannot create the directory \(manDirectory): \(error.message)")
                }
                for page in pages {
                    try write(page.text, to: manDirectory + "/" + page.name)
                }
                io.err("wrote \(pages.count) man pages to \(manDirectory)")
            }
            for script in scripts {
                guard let path = parsed.value(script.option) else { continue }
                guard !path.isEmpty else { throw .usage("invalid --\(script.option) '': give a file, or - for standard output") }
                let text = script.make(commands)
                if path == "-" {
                    io.out(String(text.dropLast()))
                } else {
                    try write(text, to: path)
                    io.err("wrote the \(script.shell) completion to \(path)")
                }
            }
            return 0
        }
    }

    /// Writes `text` to `path` (mode 0644: these are for everyone to read), replacing it whole,
    /// its directory created if missing.
    static func write(_ text: String, to path: String) throws(CLIError) {
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let temporary = path + ".tmp-\(getpid())"
        do throws(Errno) {
            if !directory.isEmpty { try FileSystem.createDirectories(directory, mode: 0o755) }
            let file = try FileDescriptor.open(temporary, flags: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, permissions: 0o644)
            defer { file.close() }
            try file.writeAll(Array(text.utf8))
            try FileSystem.rename(temporary, to: path)
        } catch {
            try? FileSystem.remove(temporary)
            throw .failure("cannot write \(path): \(error.message)")
        }
    }
}
