import CLI
import Glibc

/// `latchkey <subcommand> …` — see `latchkey --help` (CLI.LatchkeyCLI).
exit(LatchkeyCLI.main(Array(CommandLine.arguments.dropFirst())))
